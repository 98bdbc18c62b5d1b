//! Native evaluation of small scalar computations (sort and top-k comparators): the
//! computation is compiled once into a list of scalar operations and run without
//! building literals, which makes sorting large arrays cheap. Computations using any
//! other operation are not compiled; the kernels then call them through
//! [`super::CallComputation`].

use super::widen::{f64_to_small, small_to_f64};
use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, ComparisonType};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::ElementType;
use hlo::{CompId, Module, Opcode};

/// A scalar value: `pred`, an integer (any width, kept sign- or zero-extended), or a
/// floating-point value (exact in `f64` for every supported real type).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    /// `pred`.
    B(bool),
    /// Integers.
    I(i128),
    /// Floating point.
    F(f64),
}

#[derive(Clone, Copy, Debug)]
enum Cmp {
    Float,
    Total,
    Int,
}

#[derive(Clone, Debug)]
enum Op {
    Param(usize),
    Const(Scalar),
    Compare(ComparisonDirection, Cmp, usize, usize),
    Select(usize, usize, usize),
    And(usize, usize),
    Or(usize, usize),
    Xor(usize, usize),
    Not(usize),
    Negate(usize),
    Add(usize, usize),
    Subtract(usize, usize),
    Multiply(usize, usize),
    Max(usize, usize),
    Min(usize, usize),
    /// Reinterpret the bits of a value of type `from` as type `to`.
    Bitcast(ElementType, usize),
    Convert(usize),
}

/// A compiled scalar computation.
pub(crate) struct ScalarFn {
    ops: Vec<(Op, ElementType)>,
    root: usize,
    params: usize,
}

fn supported(t: ElementType) -> bool {
    t == ElementType::Pred
        || t.is_integral()
        || matches!(
            t,
            ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16
        )
}

/// Reads element `i` of `a`; `None` for complex and unsupported types.
pub(crate) fn read(a: &ArrayLiteral, i: usize) -> Option<Scalar> {
    Some(match a.data() {
        ArrayData::Pred(v) => Scalar::B(v[i]),
        ArrayData::S8(v) => Scalar::I(i128::from(v[i])),
        ArrayData::S16(v) => Scalar::I(i128::from(v[i])),
        ArrayData::S32(v) => Scalar::I(i128::from(v[i])),
        ArrayData::S64(v) => Scalar::I(i128::from(v[i])),
        ArrayData::U8(v) => Scalar::I(i128::from(v[i])),
        ArrayData::U16(v) => Scalar::I(i128::from(v[i])),
        ArrayData::U32(v) => Scalar::I(i128::from(v[i])),
        ArrayData::U64(v) => Scalar::I(i128::from(v[i])),
        ArrayData::F32(v) => Scalar::F(f32_exact(v[i])),
        ArrayData::F64(v) => Scalar::F(v[i]),
        ArrayData::Bits16(v) if supported(a.element_type()) => {
            Scalar::F(small_exact(a.element_type(), u32::from(v[i])))
        }
        _ => return None,
    })
}

/// `value`, the widening of a float whose `width` bits are `bits` (`fraction` of them the
/// fraction), with a NaN's sign, quiet bit and payload kept in the `f64`'s bits, where the
/// hardware widening sets the quiet bit. TOTALORDER compares bits: a signaling NaN
/// (0x7f800001) stays below the quiet NaN 0x7fc00000, as in XLA.
fn keep_nan_bits(value: f64, bits: u64, width: u32, fraction: u32) -> f64 {
    if !value.is_nan() {
        return value;
    }
    let sign = (bits >> (width - 1)) & 1;
    let payload = bits & ((1 << fraction) - 1);
    f64::from_bits((sign << 63) | (0x7ff << 52) | (payload << (52 - fraction)))
}

/// An `f32` as an `f64`, a NaN's bits kept (see [`keep_nan_bits`]).
fn f32_exact(x: f32) -> f64 {
    keep_nan_bits(f64::from(x), u64::from(x.to_bits()), 32, 23)
}

/// An `f16`/`bf16` (`bits`) as an `f64`, a NaN's bits kept (see [`keep_nan_bits`]).
fn small_exact(t: ElementType, bits: u32) -> f64 {
    let value = small_to_f64(t, bits);
    match t {
        ElementType::F16 => keep_nan_bits(value, u64::from(bits), 16, 10),
        ElementType::BF16 => keep_nan_bits(value, u64::from(bits), 16, 7),
        _ => value,
    }
}

fn wrap(t: ElementType, x: i128) -> i128 {
    let Some(bits) = t.bit_width() else { return x };
    if bits >= 128 {
        return x;
    }
    let m = x & ((1i128 << bits) - 1);
    if t.is_signed_integral() && m >= 1i128 << (bits - 1) {
        m - (1i128 << bits)
    } else {
        m
    }
}

fn to_bits(t: ElementType, v: Scalar) -> Option<u64> {
    Some(match (t, v) {
        (ElementType::F32, Scalar::F(x)) => u64::from((x as f32).to_bits()),
        (ElementType::F64, Scalar::F(x)) => x.to_bits(),
        (ElementType::F16 | ElementType::BF16, Scalar::F(x)) => u64::from(f64_to_small(t, x)),
        (_, Scalar::I(i)) => i as u64,
        (_, Scalar::B(b)) => u64::from(b),
        _ => return None,
    })
}

fn from_bits(t: ElementType, bits: u64) -> Option<Scalar> {
    let w = t.bit_width()?;
    let bits = if w >= 64 {
        bits
    } else {
        bits & ((1u64 << w) - 1)
    };
    Some(match t {
        ElementType::F32 => Scalar::F(f32_exact(f32::from_bits(bits as u32))),
        ElementType::F64 => Scalar::F(f64::from_bits(bits)),
        ElementType::F16 | ElementType::BF16 => Scalar::F(small_exact(t, bits as u32)),
        ElementType::Pred => Scalar::B(bits != 0),
        _ if t.is_integral() => Scalar::I(wrap(t, i128::from(bits))),
        _ => return None,
    })
}

fn total_key(x: f64) -> i128 {
    let b = x.to_bits();
    let mag = i128::from(b & !(1 << 63));
    if b >> 63 == 1 {
        -mag - 1
    } else {
        mag
    }
}

impl ScalarFn {
    /// Compiles `comp` if every instruction is a supported scalar operation.
    pub(crate) fn compile(module: &Module, comp: CompId) -> Option<ScalarFn> {
        let c = module.get_computation(comp)?;
        let order = c.def_before_use_order();
        let mut slot = vec![usize::MAX; order.iter().map(|i| i.index() + 1).max()?];
        let mut ops = Vec::with_capacity(order.len());
        for &id in order.iter() {
            let ins = c.instr(id);
            let shape = ins.shape();
            if !shape.is_scalar() {
                return None;
            }
            let ty = shape.element_type().filter(|&t| supported(t))?;
            let o = |k: usize| -> Option<usize> {
                let s = *slot.get(ins.operand(k)?.index())?;
                (s != usize::MAX).then_some(s)
            };
            let op = match ins.opcode() {
                Opcode::Parameter => Op::Param(usize::try_from(ins.parameter_number()?).ok()?),
                Opcode::Constant => {
                    let a = ins.literal()?.as_array()?;
                    Op::Const(read(a, 0)?)
                }
                Opcode::Compare => {
                    let operand_ty = c.instr(ins.operand(0)?).shape().element_type()?;
                    let total = matches!(ins.comparison_type(), Some(ComparisonType::TotalOrder))
                        || matches!(ins.attr(&AttrName::Order), Some(AttrValue::Ident(s)) if s == "TOTAL");
                    let cmp = if operand_ty.is_float() {
                        if total {
                            Cmp::Total
                        } else {
                            Cmp::Float
                        }
                    } else {
                        Cmp::Int
                    };
                    Op::Compare(ins.comparison_direction()?, cmp, o(0)?, o(1)?)
                }
                Opcode::Select => Op::Select(o(0)?, o(1)?, o(2)?),
                Opcode::And => Op::And(o(0)?, o(1)?),
                Opcode::Or => Op::Or(o(0)?, o(1)?),
                Opcode::Xor => Op::Xor(o(0)?, o(1)?),
                Opcode::Not => Op::Not(o(0)?),
                Opcode::Negate => Op::Negate(o(0)?),
                Opcode::Add => Op::Add(o(0)?, o(1)?),
                Opcode::Subtract => Op::Subtract(o(0)?, o(1)?),
                Opcode::Multiply => Op::Multiply(o(0)?, o(1)?),
                Opcode::Maximum => Op::Max(o(0)?, o(1)?),
                Opcode::Minimum => Op::Min(o(0)?, o(1)?),
                Opcode::Bitcast | Opcode::BitcastConvert => {
                    let from = c.instr(ins.operand(0)?).shape().element_type()?;
                    if from.bit_width() != ty.bit_width() {
                        return None;
                    }
                    Op::Bitcast(from, o(0)?)
                }
                Opcode::Convert => Op::Convert(o(0)?),
                _ => return None,
            };
            slot[id.index()] = ops.len();
            ops.push((op, ty));
        }
        let root = *slot.get(c.root().index())?;
        (root != usize::MAX).then_some(ScalarFn {
            ops,
            root,
            params: c.parameters().len(),
        })
    }

    /// Number of parameters.
    pub(crate) fn params(&self) -> usize {
        self.params
    }

    /// Runs the computation; `vals` is scratch space reused between calls. `None` when a
    /// value has an unexpected kind (the caller falls back to calling the computation).
    pub(crate) fn eval(&self, args: &[Scalar], vals: &mut Vec<Scalar>) -> Option<Scalar> {
        use Scalar::{B, F, I};
        vals.clear();
        for (op, ty) in &self.ops {
            let ty = *ty;
            let v = |k: usize| vals[k];
            let r = match *op {
                Op::Param(p) => *args.get(p)?,
                Op::Const(c) => c,
                Op::Compare(dir, cmp, a, b) => {
                    let ord = match (cmp, v(a), v(b)) {
                        (Cmp::Total, F(x), F(y)) => Some(total_key(x).cmp(&total_key(y))),
                        (Cmp::Float, F(x), F(y)) => x.partial_cmp(&y),
                        (Cmp::Int, I(x), I(y)) => Some(x.cmp(&y)),
                        (Cmp::Int, B(x), B(y)) => Some(x.cmp(&y)),
                        _ => return None,
                    };
                    use std::cmp::Ordering::{Equal, Greater, Less};
                    B(match (dir, ord) {
                        (ComparisonDirection::Ne, None) => true,
                        (_, None) => false,
                        (ComparisonDirection::Eq, Some(o)) => o == Equal,
                        (ComparisonDirection::Ne, Some(o)) => o != Equal,
                        (ComparisonDirection::Lt, Some(o)) => o == Less,
                        (ComparisonDirection::Le, Some(o)) => o != Greater,
                        (ComparisonDirection::Gt, Some(o)) => o == Greater,
                        (ComparisonDirection::Ge, Some(o)) => o != Less,
                    })
                }
                Op::Select(p, a, b) => match v(p) {
                    B(true) => v(a),
                    B(false) => v(b),
                    _ => return None,
                },
                Op::And(a, b) | Op::Or(a, b) | Op::Xor(a, b) => match (v(a), v(b)) {
                    (B(x), B(y)) => B(match op {
                        Op::And(..) => x & y,
                        Op::Or(..) => x | y,
                        _ => x ^ y,
                    }),
                    (I(x), I(y)) => I(wrap(
                        ty,
                        match op {
                            Op::And(..) => x & y,
                            Op::Or(..) => x | y,
                            _ => x ^ y,
                        },
                    )),
                    _ => return None,
                },
                Op::Not(a) => match v(a) {
                    B(x) => B(!x),
                    I(x) => I(wrap(ty, !x)),
                    F(_) => return None,
                },
                Op::Negate(a) => match v(a) {
                    I(x) => I(wrap(ty, -x)),
                    F(x) => F(round(ty, -x)),
                    B(_) => return None,
                },
                Op::Add(a, b)
                | Op::Subtract(a, b)
                | Op::Multiply(a, b)
                | Op::Max(a, b)
                | Op::Min(a, b) => match (v(a), v(b)) {
                    (I(x), I(y)) => I(wrap(
                        ty,
                        match op {
                            Op::Add(..) => x.wrapping_add(y),
                            Op::Subtract(..) => x.wrapping_sub(y),
                            Op::Multiply(..) => x.wrapping_mul(y),
                            Op::Max(..) => x.max(y),
                            _ => x.min(y),
                        },
                    )),
                    (F(x), F(y)) => F(round(
                        ty,
                        match op {
                            Op::Add(..) => x + y,
                            Op::Subtract(..) => x - y,
                            Op::Multiply(..) => x * y,
                            _ if x.is_nan() || y.is_nan() => f64::NAN,
                            Op::Max(..) => x.max(y),
                            _ => x.min(y),
                        },
                    )),
                    _ => return None,
                },
                Op::Bitcast(from, a) => from_bits(ty, to_bits(from, v(a))?)?,
                Op::Convert(a) => match (v(a), ty) {
                    (B(x), t) if t.is_float() => F(f64::from(u8::from(x))),
                    (B(x), _) => I(i128::from(x)),
                    (I(x), ElementType::Pred) => B(x != 0),
                    (I(x), t) if t.is_float() => F(round(t, x as f64)),
                    (I(x), t) => I(wrap(t, x)),
                    (F(x), ElementType::Pred) => B(x != 0.0),
                    (F(x), t) if t.is_float() => F(round(t, x)),
                    (F(_), _) => return None,
                },
            };
            vals.push(r);
        }
        vals.get(self.root).copied()
    }
}

/// Rounds an `f64` result to the precision of `ty`.
fn round(ty: ElementType, x: f64) -> f64 {
    match ty {
        ElementType::F32 => f64::from(x as f32),
        ElementType::F16 | ElementType::BF16 => small_to_f64(ty, f64_to_small(ty, x)),
        _ => x,
    }
}
