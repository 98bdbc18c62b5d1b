//! Rules for elementwise opcodes. Floating-point conditions are stated per rule.

use super::rewriter::Rw;
use super::scalar::{self, Scalar};
use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, ComparisonType};
use hlo::ir::InstrId;
use hlo::shape::ElementType;
use hlo::Opcode;

fn commutative(op: Opcode) -> bool {
    use hlo::Opcode::*;
    matches!(op, Add | Multiply | Maximum | Minimum | And | Or | Xor)
}

fn elem(rw: &Rw<'_>, id: InstrId) -> Option<ElementType> {
    rw.shape(id).element_type()
}

/// Integer arithmetic on splats, wrapping like XLA's integer ops.
fn int_fold(op: Opcode, ty: ElementType, x: i128, y: i128) -> Option<i128> {
    let v = match op {
        Opcode::Add => x.checked_add(y)?,
        Opcode::Multiply => x.checked_mul(y)?,
        _ => return None,
    };
    Some(scalar::wrap_int(ty, v))
}

/// Binary arithmetic and logic.
pub(super) fn binary(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let op = rw.opcode(id);
    let (a, b) = (rw.op(id, 0), rw.op(id, 1));
    let ty = elem(rw, id)?;
    let int = ty.is_integral();
    let pred = ty.is_pred();
    let float = ty.is_float();
    let (sa, sb) = (rw.splat(a), rw.splat(b));
    let shape = rw.shape(id).clone();

    // Constants to the right: `C op A => A op C` for commutative ops (exact: the ops
    // are commutative bit for bit, NaN propagation included).
    if commutative(op) && sa.is_some() && sb.is_none() {
        return Some(rw.clone_with(id, vec![b, a]));
    }
    match op {
        Opcode::Add => {
            // `A + 0 => A`. Floats: XLA applies it for +0 and -0; `-0 + +0` is `+0`, so
            // the sign of a zero result may change (XLA permits this).
            if sb.is_some_and(Scalar::is_zero) {
                return Some(a);
            }
            // `(A + C1) + C2 => A + (C1 + C2)`: integers only (wrapping addition is
            // associative; float addition is not).
            if int {
                return reassociate(rw, id, op, ty);
            }
            None
        }
        Opcode::Subtract => {
            // `A - 0 => A` (floats: as for `A + 0`, only the sign of a zero may change).
            if sb.is_some_and(Scalar::is_zero) {
                return Some(a);
            }
            // `A - A => 0`: integers only (`inf - inf` and `NaN - NaN` are NaN).
            if int && a == b {
                return rw.splat_like(&shape, Scalar::Int(0));
            }
            None
        }
        Opcode::Multiply => {
            // `A * 1 => A`: exact for every type (NaN and inf included).
            if sb.is_some_and(Scalar::is_one) {
                return Some(a);
            }
            // `A * 0 => 0`: integers and pred only (`inf * 0` and `NaN * 0` are NaN).
            if (int || pred) && sb.is_some_and(Scalar::is_zero) {
                return Some(b)
                    .filter(|&b| rw.shape(b).compatible(&shape))
                    .or_else(|| {
                        rw.splat_like(
                            &shape,
                            if pred {
                                Scalar::Bool(false)
                            } else {
                                Scalar::Int(0)
                            },
                        )
                    });
            }
            // `exp(A) * exp(B) => exp(A + B)`: floats; XLA applies it. The result is
            // rounded once instead of three times, so it may differ in the last bits,
            // and `exp(A)` overflowing where `exp(A + B)` does not is no longer seen.
            if float && rw.opcode(a) == Opcode::Exp && rw.opcode(b) == Opcode::Exp {
                let (x, y) = (rw.op(a, 0), rw.op(b, 0));
                let sum = rw.add(Opcode::Add, shape.clone(), vec![x, y], Vec::new());
                return Some(rw.add(Opcode::Exp, shape, vec![sum], Vec::new()));
            }
            // `(A * C1) * C2 => A * (C1 * C2)`: integers only.
            if int {
                return reassociate(rw, id, op, ty);
            }
            None
        }
        Opcode::Divide => {
            // `A / 1 => A`: exact for every type.
            if sb.is_some_and(Scalar::is_one) {
                return Some(a);
            }
            // `A / C => A * (1 / C)` for f32/f64 when C is a power of two whose reciprocal
            // is a normal number of the type: both sides are the correctly rounded value
            // of the same real number, so the results are bit-identical.
            if let (true, Some(Scalar::Float(c))) =
                (matches!(ty, ElementType::F32 | ElementType::F64), sb)
            {
                let r = 1.0 / c;
                let exact = c != 0.0
                    && c.is_finite()
                    && (c.abs().log2().fract() == 0.0)
                    && r.is_normal()
                    && (ty == ElementType::F64
                        || ((r as f32) as f64 == r && (r as f32).is_normal()));
                if exact {
                    let rc = rw.splat_like(&shape, Scalar::Float(r))?;
                    return Some(rw.add(Opcode::Multiply, shape, vec![a, rc], Vec::new()));
                }
            }
            None
        }
        Opcode::Maximum | Opcode::Minimum => {
            // `max(A, A) => A`, `min(A, A) => A`: exact (NaN in, NaN out).
            (a == b).then_some(a)
        }
        Opcode::And => {
            // `A & A => A`; `A & true => A` (pred) or `A & -1 => A` (integers);
            // `A & 0 => 0`. Bitwise: exact.
            if a == b {
                return Some(a);
            }
            match sb {
                Some(s) if (pred && s.is_one()) || (int && all_ones(ty, s)) => Some(a),
                Some(s) if s.is_zero() && rw.shape(b).compatible(&shape) => Some(b),
                _ => None,
            }
        }
        Opcode::Or => {
            // `A | A => A`; `A | 0 => A`; `A | true => true` (pred). Exact.
            if a == b {
                return Some(a);
            }
            match sb {
                Some(s) if s.is_zero() => Some(a),
                Some(s) if pred && s.is_one() && rw.shape(b).compatible(&shape) => Some(b),
                _ => None,
            }
        }
        Opcode::Xor => {
            // `A ^ 0 => A`; `A ^ A => 0`. Exact.
            if sb.is_some_and(Scalar::is_zero) {
                return Some(a);
            }
            if a == b && (int || pred) {
                let z = if pred {
                    Scalar::Bool(false)
                } else {
                    Scalar::Int(0)
                };
                return rw.splat_like(&shape, z);
            }
            None
        }
        Opcode::Power => {
            let s = sb?;
            // `pow(A, 1) => A`: exact.
            if s.is_one() {
                return Some(a);
            }
            // `pow(A, 0) => 1`: IEEE `pow(x, 0)` is 1 for every x, NaN included.
            if s.is_zero() && (float || int) {
                let one = if int {
                    Scalar::Int(1)
                } else {
                    Scalar::Float(1.0)
                };
                return rw.splat_like(&shape, one);
            }
            // `pow(A, 2) => A * A`: floats; XLA applies it (one correctly rounded product
            // instead of the library's `pow`).
            if float && s.equals(2.0) {
                return Some(rw.add(Opcode::Multiply, shape, vec![a, a], Vec::new()));
            }
            // `pow(A, -1) => 1 / A`: floats; XLA applies it.
            if float && s.equals(-1.0) {
                let one = rw.splat_like(&shape, Scalar::Float(1.0))?;
                return Some(rw.add(Opcode::Divide, shape, vec![one, a], Vec::new()));
            }
            None
        }
        Opcode::Remainder => {
            // `A % 1 => 0` for integers (exact; no float rule: `inf % 1` is NaN).
            if int && sb.is_some_and(Scalar::is_one) {
                return rw.splat_like(&shape, Scalar::Int(0));
            }
            None
        }
        Opcode::ShiftLeft | Opcode::ShiftRightArithmetic | Opcode::ShiftRightLogical => {
            // Shift by 0 is the identity.
            sb.is_some_and(Scalar::is_zero).then_some(a)
        }
        _ => None,
    }
}

fn all_ones(ty: ElementType, s: Scalar) -> bool {
    match s {
        Scalar::Int(v) => scalar::wrap_int(ty, v) == scalar::wrap_int(ty, -1),
        _ => false,
    }
}

/// `(A op C1) op C2 => A op (C1 op C2)` for integer add/multiply with splat constants,
/// when `A op C1` has no other user.
fn reassociate(rw: &mut Rw<'_>, id: InstrId, op: Opcode, ty: ElementType) -> Option<InstrId> {
    let (inner, c2) = (rw.op(id, 0), rw.op(id, 1));
    // Only when the inner op has no other user: otherwise both sums stay live.
    if rw.opcode(inner) != op || rw.instr(inner).users.len() != 1 {
        return None;
    }
    let (x, c1) = (rw.op(inner, 0), rw.op(inner, 1));
    let (Some(Scalar::Int(v1)), Some(Scalar::Int(v2))) = (rw.splat(c1), rw.splat(c2)) else {
        return None;
    };
    let folded = int_fold(op, ty, v1, v2)?;
    let shape = rw.shape(id).clone();
    let c = rw.splat_like(&shape, Scalar::Int(folded))?;
    Some(rw.add(op, shape, vec![x, c], Vec::new()))
}

/// True when converting type `a` to `b` is exact for every value (so converting back,
/// or onward, gives what converting directly gives).
pub(super) fn widening_exact(a: ElementType, b: ElementType) -> bool {
    use ElementType as T;
    if a == b {
        return true;
    }
    let (Some(wa), Some(wb)) = (a.bit_width(), b.bit_width()) else {
        return false;
    };
    let mantissa = |t: ElementType| match t {
        T::F64 => Some(53),
        T::F32 => Some(24),
        T::F16 => Some(11),
        T::BF16 => Some(8),
        _ => None,
    };
    let exp_range = |t: ElementType| match t {
        T::F64 => Some(11),
        T::F32 | T::BF16 => Some(8),
        T::F16 => Some(5),
        _ => None,
    };
    if a.is_pred() {
        return b.is_integral() || mantissa(b).is_some();
    }
    if a.is_integral() && b.is_integral() {
        return if a.is_signed_integral() == b.is_signed_integral() {
            wb >= wa
        } else {
            a.is_unsigned_integral() && wb > wa
        };
    }
    if a.is_integral() {
        let value_bits = if a.is_signed_integral() { wa - 1 } else { wa };
        return mantissa(b).is_some_and(|m| value_bits <= m);
    }
    match (mantissa(a), mantissa(b), exp_range(a), exp_range(b)) {
        (Some(ma), Some(mb), Some(ea), Some(eb)) => mb >= ma && eb >= ea,
        _ => false,
    }
}

/// Unary opcodes (and convert, copy, bitcast).
pub(super) fn unary(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let op = rw.opcode(id);
    let x = rw.op(id, 0);
    let xop = rw.opcode(x);
    match op {
        // `-(-A) => A`: exact.
        Opcode::Negate if xop == Opcode::Negate => Some(rw.op(x, 0)),
        // `abs(A) => A` when A is provably non-negative (or NaN: XLA's rule ignores the
        // sign of NaN); `abs(-A) => abs(A)`: exact.
        Opcode::Abs if scalar::non_negative(rw.comp, x) => Some(x),
        Opcode::Abs if xop == Opcode::Negate => {
            let inner = rw.op(x, 0);
            Some(rw.clone_with(id, vec![inner]))
        }
        // `!!A => A`: exact.
        Opcode::Not if xop == Opcode::Not => Some(rw.op(x, 0)),
        // `log(exp(A)) => A`: floats; XLA applies it (exact except where `exp`
        // overflows or underflows).
        Opcode::Log if xop == Opcode::Exp => Some(rw.op(x, 0)),
        // Rounding is idempotent: `floor(floor(A)) => floor(A)`, same for ceil, the
        // round ops and sign. Exact.
        Opcode::Floor
        | Opcode::Ceil
        | Opcode::RoundNearestAfz
        | Opcode::RoundNearestEven
        | Opcode::Sign
            if xop == op =>
        {
            Some(x)
        }
        // `real(complex(A, B)) => A`, `imag(complex(A, B)) => B`: exact.
        Opcode::Real if xop == Opcode::Complex => Some(rw.op(x, 0)),
        Opcode::Imag if xop == Opcode::Complex => Some(rw.op(x, 1)),
        Opcode::Convert => convert(rw, id),
        // A copy or bitcast to the identical shape (layout included) is a no-op.
        Opcode::Copy | Opcode::Bitcast if rw.shape(x) == rw.shape(id) => Some(x),
        _ => None,
    }
}

/// `convert(A)` to A's own type `=> A`; `convert(convert(A: T1) -> T2) -> T3` where the
/// inner conversion is exact `=> convert(A -> T3)` (or A when T3 is T1). Exact, except for
/// an integer through a float into an integer that cannot hold all of T1's values: the
/// float converts saturating, the integer directly wraps (u8 200 -> f32 -> s8 is 127,
/// u8 200 -> s8 is -56), so that chain stays.
fn convert(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let x = rw.op(id, 0);
    let to = elem(rw, id)?;
    let mid = elem(rw, x)?;
    if mid == to {
        return Some(x);
    }
    if rw.opcode(x) != Opcode::Convert {
        return None;
    }
    let src = rw.op(x, 0);
    let from = elem(rw, src)?;
    if !widening_exact(from, mid) {
        return None;
    }
    let int = |t: ElementType| t.is_integral() || t.is_pred();
    if int(from) && !int(mid) && int(to) && !widening_exact(from, to) {
        return None;
    }
    if from == to {
        return Some(src);
    }
    Some(rw.clone_with(id, vec![src]))
}

fn swap(d: ComparisonDirection) -> ComparisonDirection {
    use ComparisonDirection::*;
    match d {
        Eq => Eq,
        Ne => Ne,
        Ge => Le,
        Gt => Lt,
        Le => Ge,
        Lt => Gt,
    }
}

/// Compare: constants to the right (`C < A => A > C`, exact); `A cmp A` folds for
/// integers and pred only (NaN compares unequal to itself); two splats fold (floats by
/// IEEE comparison, not under TOTALORDER).
pub(super) fn compare(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let (a, b) = (rw.op(id, 0), rw.op(id, 1));
    let dir = rw.instr(id).comparison_direction()?;
    let ty = elem(rw, a)?;
    let shape = rw.shape(id).clone();
    let (sa, sb) = (rw.splat(a), rw.splat(b));
    if sa.is_some() && sb.is_none() {
        let new = rw.clone_with(id, vec![b, a]);
        rw.comp.instr_mut(new).set_attr(
            AttrName::Direction,
            AttrValue::ComparisonDirection(swap(dir)),
        );
        return Some(new);
    }
    use ComparisonDirection::*;
    if a == b && (ty.is_integral() || ty.is_pred()) {
        let v = matches!(dir, Eq | Ge | Le);
        return rw.splat_like(&shape, Scalar::Bool(v));
    }
    if rw.instr(id).comparison_type() == Some(ComparisonType::TotalOrder) {
        return None;
    }
    let num = |s: Scalar| match s {
        Scalar::Bool(b) => Some(f64::from(u8::from(b))),
        Scalar::Int(i) if i.unsigned_abs() < (1u128 << 53) => Some(i as f64),
        Scalar::Int(_) => None,
        Scalar::Float(f) => Some(f),
    };
    let (x, y) = (num(sa?)?, num(sb?)?);
    let v = match dir {
        Eq => x == y,
        Ne => x != y,
        Ge => x >= y,
        Gt => x > y,
        Le => x <= y,
        Lt => x < y,
    };
    rw.splat_like(&shape, Scalar::Bool(v))
}

/// Select: a splat predicate picks a side; equal sides need no predicate;
/// `select(!P, A, B) => select(P, B, A)`. Exact.
pub(super) fn select(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let (p, t, f) = (rw.op(id, 0), rw.op(id, 1), rw.op(id, 2));
    if t == f {
        return Some(t);
    }
    match rw.splat(p) {
        Some(Scalar::Bool(true)) => return Some(t),
        Some(Scalar::Bool(false)) => return Some(f),
        _ => {}
    }
    if rw.opcode(p) == Opcode::Not {
        let q = rw.op(p, 0);
        return Some(rw.clone_with(id, vec![q, f, t]));
    }
    None
}
