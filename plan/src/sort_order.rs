//! Sort comparators recognized as key orders: a pure function over the comparator
//! computation that says whether it is a lexicographic comparison of per-operand keys,
//! so the runtime can sort typed keys instead of calling the compiled comparator for
//! every pair.
//!
//! Recognized, for each key (operand `i`, comparator parameters `2i` and `2i + 1`):
//! - `compare(p2i, p2i+1)` (ascending) or the operands swapped (descending), direction
//!   `LT` or `GT`, with the element type's comparison or `type=TOTALORDER`;
//! - each side first canonicalized as JAX does for floats
//!   (`select(ne(x, x), nan, select(eq(x, 0), 0, x))`, either nesting): every NaN one
//!   positive NaN, `-0` equal to `+0`;
//! - each side the float's bits as a signed integer with the magnitude of negative values
//!   flipped (`select(lt(b, 0), xor(b, MAX), b)` with `b = bitcast(x)`, the form XLA's
//!   comparison expander gives a total-order compare): the total order of `x`;
//!
//! and several keys as `or(lt(k0), and(eq(k0), REST))` (operands of `or` and `and` in
//! either order), the equality over the same key. Anything else (`LE`, arithmetic on the
//! keys, mixed operands, `f8` or complex keys) is not recognized and keeps the compiled
//! comparator.

use hlo::attrs::{ComparisonDirection, ComparisonType};
use hlo::literal::ArrayData;
use hlo::{CompId, Computation, InstrId, Module, Opcode};

use codegen::kir::ScalarType;

/// A comparator that is a lexicographic comparison of keys: `a` sorts before `b` when,
/// at the first key where they are not equal, `a`'s key is before `b`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortOrder {
    /// The keys, most significant first (at least one).
    pub keys: Vec<SortKey>,
}

/// One key of a [`SortOrder`]: an operand's elements, compared in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The sort operand whose elements are the key (comparator parameters `2 * operand`
    /// and `2 * operand + 1`).
    pub operand: usize,
    /// The element type the comparator reads.
    pub ty: ScalarType,
    /// How two keys compare.
    pub compare: KeyCompare,
    /// JAX's canonicalization first (floats): every NaN becomes one positive NaN (after
    /// every number in the total order) and `-0` becomes `+0`.
    pub canonical: bool,
    /// Larger keys first.
    pub descending: bool,
}

/// How the keys of a [`SortKey`] compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCompare {
    /// Integers by value (signed or unsigned as the type is; `pred` as `false < true`).
    Integer,
    /// IEEE comparison of floats: `-0 == +0`, a NaN neither less, greater nor equal (not
    /// a strict weak order where NaNs occur).
    Float,
    /// XLA's total order of floats: `-NaN < -inf < ... < -0 < +0 < ... < inf < +NaN`.
    TotalOrder,
}

/// The key order of sort comparator `comp`, if it is one this module recognizes (see the
/// module documentation); `None` otherwise.
pub fn recognize_comparator(module: &Module, comp: CompId) -> Option<SortOrder> {
    let c = module.get_computation(comp)?;
    if c.parameters().len() % 2 != 0 {
        return None;
    }
    let keys = order(c, c.root())?;
    // A later key on an operand already compared is redundant but harmless; an empty
    // order cannot happen (every branch yields at least one key).
    Some(SortOrder { keys })
}

/// The keys of the lexicographic comparison rooted at `id`.
fn order(c: &Computation, id: InstrId) -> Option<Vec<SortKey>> {
    if let Some(k) = strict_key(c, id) {
        return Some(vec![k]);
    }
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Or {
        return None;
    }
    let [a, b] = instr.operands() else {
        return None;
    };
    for (first, tie) in [(*a, *b), (*b, *a)] {
        let Some(k) = strict_key(c, first) else {
            continue;
        };
        let t = c.instr(tie);
        let [x, y] = t.operands() else { continue };
        if t.opcode() != Opcode::And {
            continue;
        }
        for (eq, rest) in [(*x, *y), (*y, *x)] {
            if equal_key(c, eq).is_some_and(|e| e == k.unordered()) {
                if let Some(more) = order(c, rest) {
                    let mut keys = vec![k];
                    keys.extend(more);
                    return Some(keys);
                }
            }
        }
    }
    None
}

impl SortKey {
    /// The key without its direction (what an equality over it compares).
    fn unordered(self) -> SortKey {
        SortKey {
            descending: false,
            ..self
        }
    }
}

/// A side of a key comparison: a comparator parameter, perhaps canonicalized, perhaps
/// as its total-order integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Side {
    param: usize,
    ty: ScalarType,
    canonical: bool,
    total_bits: bool,
}

/// `compare(sa, sb)` over the two parameters of one operand: the key and the direction
/// (`a` before `b` when the compare holds) for `LT`/`GT`, `descending: false` for `EQ`.
fn key_compare(c: &Computation, id: InstrId) -> Option<(SortKey, ComparisonDirection)> {
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Compare {
        return None;
    }
    let [a, b] = instr.operands() else {
        return None;
    };
    let (sa, sb) = (side(c, *a)?, side(c, *b)?);
    if (sa.ty, sa.canonical, sa.total_bits) != (sb.ty, sb.canonical, sb.total_bits)
        || sa.param / 2 != sb.param / 2
        || sa.param == sb.param
    {
        return None;
    }
    let ctype = instr.comparison_type();
    let compare = if sa.total_bits {
        // Signed integers compared: the operands' total order.
        if !matches!(ctype, None | Some(ComparisonType::Signed)) {
            return None;
        }
        KeyCompare::TotalOrder
    } else if is_float(sa.ty) {
        match ctype {
            None | Some(ComparisonType::Float) => KeyCompare::Float,
            Some(ComparisonType::TotalOrder) => KeyCompare::TotalOrder,
            _ => return None,
        }
    } else {
        match ctype {
            None => KeyCompare::Integer,
            Some(ComparisonType::Signed) if is_signed(sa.ty) => KeyCompare::Integer,
            Some(ComparisonType::Unsigned) if !is_signed(sa.ty) => KeyCompare::Integer,
            _ => return None,
        }
    };
    let dir = instr.comparison_direction()?;
    // `a` (the earlier element) on the left with `LT` is ascending.
    let swapped = sa.param % 2 == 1;
    let descending = match dir {
        ComparisonDirection::Lt => swapped,
        ComparisonDirection::Gt => !swapped,
        ComparisonDirection::Eq => false,
        _ => return None,
    };
    Some((
        SortKey {
            operand: sa.param / 2,
            ty: sa.ty,
            compare,
            canonical: sa.canonical,
            descending,
        },
        dir,
    ))
}

/// A strict comparison (`LT` or `GT`) of one key.
fn strict_key(c: &Computation, id: InstrId) -> Option<SortKey> {
    match key_compare(c, id)? {
        (k, ComparisonDirection::Lt | ComparisonDirection::Gt) => Some(k),
        _ => None,
    }
}

/// An equality (`EQ`) of one key.
fn equal_key(c: &Computation, id: InstrId) -> Option<SortKey> {
    match key_compare(c, id)? {
        (k, ComparisonDirection::Eq) => Some(k),
        _ => None,
    }
}

/// The kernel type of a scalar instruction's result, among the types keys may have.
fn key_type(c: &Computation, id: InstrId) -> Option<ScalarType> {
    let shape = c.instr(id).shape();
    if !shape.dims().is_empty() {
        return None;
    }
    let t = ScalarType::from_element(shape.element_type()?)?;
    matches!(
        t,
        ScalarType::Pred
            | ScalarType::S8
            | ScalarType::S16
            | ScalarType::S32
            | ScalarType::S64
            | ScalarType::U8
            | ScalarType::U16
            | ScalarType::U32
            | ScalarType::U64
            | ScalarType::F16
            | ScalarType::BF16
            | ScalarType::F32
            | ScalarType::F64
    )
    .then_some(t)
}

fn is_float(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64
    )
}

fn is_signed(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::S8 | ScalarType::S16 | ScalarType::S32 | ScalarType::S64
    )
}

/// One side of a key comparison.
fn side(c: &Computation, id: InstrId) -> Option<Side> {
    if let Some(s) = float_value(c, id) {
        return Some(s);
    }
    let instr = c.instr(id);
    if instr.opcode() == Opcode::Parameter {
        return Some(Side {
            param: usize::try_from(instr.parameter_number()?).ok()?,
            ty: key_type(c, id)?,
            canonical: false,
            total_bits: false,
        });
    }
    total_bits(c, id)
}

/// A float parameter, or one canonicalized as JAX does.
fn float_value(c: &Computation, id: InstrId) -> Option<Side> {
    let instr = c.instr(id);
    if instr.opcode() == Opcode::Parameter {
        let ty = key_type(c, id)?;
        return is_float(ty).then_some(Side {
            param: usize::try_from(instr.parameter_number()?).ok()?,
            ty,
            canonical: false,
            total_bits: false,
        });
    }
    let x = canonicalized(c, id)?;
    let p = c.instr(x);
    Some(Side {
        param: usize::try_from(p.parameter_number()?).ok()?,
        ty: key_type(c, x)?,
        canonical: true,
        total_bits: false,
    })
}

/// The float parameter `x` of `select(ne(x, x), nan, select(eq(x, 0), 0, x))` (or the
/// selects nested the other way), with IEEE compares, a positive NaN and `+0`.
fn canonicalized(c: &Computation, id: InstrId) -> Option<InstrId> {
    let (p1, v1, inner) = select_parts(c, id)?;
    let (p2, v2, x) = select_parts(c, inner)?;
    let xi = c.instr(x);
    if xi.opcode() != Opcode::Parameter || !is_float(key_type(c, x)?) {
        return None;
    }
    let is_nan_test = |p: InstrId, v: InstrId| {
        ieee_compare(c, p, ComparisonDirection::Ne).is_some_and(|(l, r)| l == x && r == x)
            && float_const(c, v).is_some_and(|f| f.is_nan() && f.is_sign_positive())
    };
    let is_zero_test = |p: InstrId, v: InstrId| {
        let positive_zero =
            |i: InstrId| float_const(c, i).is_some_and(|f| f == 0.0 && f.is_sign_positive());
        positive_zero(v)
            && ieee_compare(c, p, ComparisonDirection::Eq)
                .is_some_and(|(l, r)| (l == x && positive_zero(r)) || (r == x && positive_zero(l)))
    };
    ((is_nan_test(p1, v1) && is_zero_test(p2, v2)) || (is_zero_test(p1, v1) && is_nan_test(p2, v2)))
        .then_some(x)
}

/// `select(p, on_true, on_false)`'s operands.
fn select_parts(c: &Computation, id: InstrId) -> Option<(InstrId, InstrId, InstrId)> {
    let instr = c.instr(id);
    match (instr.opcode(), instr.operands()) {
        (Opcode::Select, [p, t, f]) => Some((*p, *t, *f)),
        _ => None,
    }
}

/// The operands of a compare in `dir` with the type's own comparison (no total order).
fn ieee_compare(
    c: &Computation,
    id: InstrId,
    dir: ComparisonDirection,
) -> Option<(InstrId, InstrId)> {
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Compare
        || instr.comparison_direction() != Some(dir)
        || matches!(instr.comparison_type(), Some(ComparisonType::TotalOrder))
    {
        return None;
    }
    match instr.operands() {
        [l, r] => Some((*l, *r)),
        _ => None,
    }
}

/// A scalar float constant's value.
fn float_const(c: &Computation, id: InstrId) -> Option<f64> {
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Constant || !is_float(key_type(c, id)?) {
        return None;
    }
    instr.literal()?.as_array()?.get_f64(0)
}

/// A scalar integer constant's value.
fn int_const(c: &Computation, id: InstrId) -> Option<i128> {
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Constant || !instr.shape().dims().is_empty() {
        return None;
    }
    Some(match instr.literal()?.as_array()?.data() {
        ArrayData::S8(v) => i128::from(*v.first()?),
        ArrayData::S16(v) => i128::from(*v.first()?),
        ArrayData::S32(v) => i128::from(*v.first()?),
        ArrayData::S64(v) => i128::from(*v.first()?),
        _ => return None,
    })
}

/// `select(lt(b, 0), xor(MAX, b), b)` with `b` the bits of a float side as a signed
/// integer of its width (`bitcast` or `bitcast-convert`): the float's total order as a
/// signed integer.
fn total_bits(c: &Computation, id: InstrId) -> Option<Side> {
    let (p, t, b) = select_parts(c, id)?;
    let bi = c.instr(b);
    let [x] = bi.operands() else { return None };
    if !matches!(bi.opcode(), Opcode::Bitcast | Opcode::BitcastConvert) {
        return None;
    }
    let int_ty = key_type(c, b)?;
    let float = float_value(c, *x)?;
    if !is_signed(int_ty) || int_ty.bits() != float.ty.bits() {
        return None;
    }
    let max = (1i128 << (int_ty.bits() - 1)) - 1;
    let pi = c.instr(p);
    let negative = pi.opcode() == Opcode::Compare
        && matches!(pi.comparison_type(), None | Some(ComparisonType::Signed))
        && match (pi.comparison_direction(), pi.operands()) {
            (Some(ComparisonDirection::Lt), [l, r]) => *l == b && int_const(c, *r) == Some(0),
            (Some(ComparisonDirection::Gt), [l, r]) => *r == b && int_const(c, *l) == Some(0),
            _ => false,
        };
    let ti = c.instr(t);
    let flipped = ti.opcode() == Opcode::Xor
        && match ti.operands() {
            [l, r] => {
                (*l == b && int_const(c, *r) == Some(max))
                    || (*r == b && int_const(c, *l) == Some(max))
            }
            _ => false,
        };
    (negative && flipped).then_some(Side {
        total_bits: true,
        ..float
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order recognized in the comparator `cmp` of `text`.
    fn recognize(text: &str) -> Option<SortOrder> {
        let m = hlo::parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let id = m
            .computation_by_name("cmp")
            .expect("a computation named cmp");
        recognize_comparator(&m, id)
    }

    /// A module whose comparator `cmp` has parameters of `types` (two each) and `body`.
    fn module(types: &[&str], body: &str) -> String {
        let mut params = String::new();
        for (i, t) in types.iter().enumerate() {
            params += &format!("  p{} = {t}[] parameter({})\n", 2 * i, 2 * i);
            params += &format!("  p{} = {t}[] parameter({})\n", 2 * i + 1, 2 * i + 1);
        }
        let ins: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| format!("  x{i} = {t}[4] parameter({i})"))
            .collect();
        let names: Vec<String> = (0..types.len()).map(|i| format!("x{i}")).collect();
        let shapes: Vec<String> = types.iter().map(|t| format!("{t}[4]")).collect();
        format!(
            "HloModule m\ncmp {{\n{params}{body}\n}}\nENTRY e {{\n{}\n  ROOT s = ({}) sort({}), dimensions={{0}}, to_apply=cmp\n}}\n",
            ins.join("\n"),
            shapes.join(", "),
            names.join(", ")
        )
    }

    fn key(
        operand: usize,
        ty: ScalarType,
        compare: KeyCompare,
        canonical: bool,
        descending: bool,
    ) -> SortKey {
        SortKey {
            operand,
            ty,
            compare,
            canonical,
            descending,
        }
    }

    /// JAX's canonicalization of parameter `p` (as `c{p}`), with constants `nan` and `zero`.
    fn canon(p: usize, t: &str) -> String {
        format!(
            "  ne{p} = pred[] compare(p{p}, p{p}), direction=NE\n  eq{p} = pred[] compare(p{p}, zero), direction=EQ\n  \
             sel{p} = {t}[] select(eq{p}, zero, p{p})\n  c{p} = {t}[] select(ne{p}, nan, sel{p})\n"
        )
    }

    #[test]
    fn plain_compares_in_both_directions() {
        use KeyCompare::*;
        use ScalarType as T;
        let cases = [
            (
                "f32",
                "p0, p1), direction=LT",
                key(0, T::F32, Float, false, false),
            ),
            (
                "f32",
                "p0, p1), direction=GT",
                key(0, T::F32, Float, false, true),
            ),
            (
                "f32",
                "p1, p0), direction=LT",
                key(0, T::F32, Float, false, true),
            ),
            (
                "f32",
                "p1, p0), direction=GT",
                key(0, T::F32, Float, false, false),
            ),
            (
                "f64",
                "p0, p1), direction=LT, type=TOTALORDER",
                key(0, T::F64, TotalOrder, false, false),
            ),
            (
                "bf16",
                "p0, p1), direction=GT, type=TOTALORDER",
                key(0, T::BF16, TotalOrder, false, true),
            ),
            (
                "s8",
                "p0, p1), direction=LT",
                key(0, T::S8, Integer, false, false),
            ),
            (
                "u32",
                "p0, p1), direction=GT",
                key(0, T::U32, Integer, false, true),
            ),
            (
                "pred",
                "p0, p1), direction=LT",
                key(0, T::Pred, Integer, false, false),
            ),
        ];
        for (t, cmp, want) in cases {
            let text = module(&[t], &format!("  ROOT c = pred[] compare({cmp}"));
            assert_eq!(
                recognize(&text),
                Some(SortOrder { keys: vec![want] }),
                "{text}"
            );
        }
    }

    #[test]
    fn a_key_with_payload_operands() {
        let text = module(
            &["s32", "f32", "u8"],
            "  ROOT c = pred[] compare(p2, p3), direction=GT",
        );
        let want = key(1, ScalarType::F32, KeyCompare::Float, false, true);
        assert_eq!(recognize(&text), Some(SortOrder { keys: vec![want] }));
    }

    #[test]
    fn jax_canonicalized_total_order() {
        let body = format!(
            "  nan = f32[] constant(nan)\n  zero = f32[] constant(0)\n{}{}  ROOT c = pred[] compare(c0, c1), direction=LT, type=TOTALORDER",
            canon(0, "f32"),
            canon(1, "f32")
        );
        let text = module(&["f32", "s32"], &body);
        let want = key(0, ScalarType::F32, KeyCompare::TotalOrder, true, false);
        assert_eq!(recognize(&text), Some(SortOrder { keys: vec![want] }));
    }

    #[test]
    fn xla_total_order_bits_of_canonicalized_values() {
        // As in XLA's optimized modules (comparison expander): the corpus's `sort`.
        let body = format!(
            "  nan = f64[] constant(nan)\n  zero = f64[] constant(0)\n  z = s64[] constant(0)\n  \
             max = s64[] constant(9223372036854775807)\n{}{}  b0 = s64[] bitcast(c0)\n  b1 = s64[] bitcast(c1)\n  \
             x0 = s64[] xor(max, b0)\n  n0 = pred[] compare(b0, z), direction=LT\n  x1 = s64[] xor(b1, max)\n  \
             n1 = pred[] compare(b1, z), direction=LT\n  t0 = s64[] select(n0, x0, b0)\n  t1 = s64[] select(n1, x1, b1)\n  \
             ROOT c = pred[] compare(t0, t1), direction=LT",
            canon(0, "f64"),
            canon(1, "f64")
        );
        let text = module(&["f64"], &body);
        let want = key(0, ScalarType::F64, KeyCompare::TotalOrder, true, false);
        assert_eq!(recognize(&text), Some(SortOrder { keys: vec![want] }));
    }

    #[test]
    fn xla_top_k_comparator() {
        // XLA:CPU's TopK custom call: total-order bits, GT, index parameters unused.
        let text = "HloModule m\ncmp {\n  p0 = f32[] parameter(0)\n  p1 = f32[] parameter(1)\n  \
             i0 = s32[] parameter(2)\n  i1 = s32[] parameter(3)\n  z = s32[] constant(0)\n  \
             max = s32[] constant(2147483647)\n  b0 = s32[] bitcast(p0)\n  b1 = s32[] bitcast(p1)\n  \
             x0 = s32[] xor(max, b0)\n  n0 = pred[] compare(b0, z), direction=LT\n  x1 = s32[] xor(max, b1)\n  \
             n1 = pred[] compare(b1, z), direction=LT\n  t0 = s32[] select(n0, x0, b0)\n  t1 = s32[] select(n1, x1, b1)\n  \
             ROOT c = pred[] compare(t0, t1), direction=GT\n}\nENTRY e {\n  x = f32[2,8] parameter(0)\n  \
             ROOT t = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target=\"TopK\", called_computations={cmp}\n}\n";
        let want = key(0, ScalarType::F32, KeyCompare::TotalOrder, false, true);
        assert_eq!(recognize(text), Some(SortOrder { keys: vec![want] }));
    }

    #[test]
    fn lexicographic_keys() {
        // lax.sort(num_keys=2) as JAX emits it, and with the or/and operands swapped.
        let eq = "  e = pred[] compare(c0, c1), direction=EQ, type=TOTALORDER\n";
        let lt0 = "  l0 = pred[] compare(c0, c1), direction=LT, type=TOTALORDER\n";
        let lt1 = "  l1 = pred[] compare(p3, p2), direction=LT\n";
        let consts = "  nan = f32[] constant(nan)\n  zero = f32[] constant(0)\n";
        for root in [
            "  a = pred[] and(e, l1)\n  ROOT o = pred[] or(l0, a)",
            "  a = pred[] and(l1, e)\n  ROOT o = pred[] or(a, l0)",
        ] {
            let body = format!(
                "{consts}{}{}{eq}{lt0}{lt1}{root}",
                canon(0, "f32"),
                canon(1, "f32")
            );
            let text = module(&["f32", "s32"], &body);
            let want = vec![
                key(0, ScalarType::F32, KeyCompare::TotalOrder, true, false),
                key(1, ScalarType::S32, KeyCompare::Integer, false, true),
            ];
            assert_eq!(recognize(&text), Some(SortOrder { keys: want }), "{text}");
        }
    }

    #[test]
    fn comparators_that_are_not_key_orders() {
        let consts = "  nan = f32[] constant(nan)\n  zero = f32[] constant(0)\n  negzero = f32[] constant(-0)\n  \
                      negnan = f32[] constant(-nan)\n";
        let cases = [
            // Not strict.
            "  ROOT c = pred[] compare(p0, p1), direction=LE".to_string(),
            "  ROOT c = pred[] compare(p0, p1), direction=NE".to_string(),
            // Two operands' parameters.
            "  ROOT c = pred[] compare(p0, p3), direction=LT".to_string(),
            // The same element twice.
            "  ROOT c = pred[] compare(p0, p0), direction=LT".to_string(),
            // Arithmetic on a key.
            "  n = f32[] negate(p0)\n  ROOT c = pred[] compare(n, p1), direction=LT".to_string(),
            // A canonicalization on one side only.
            format!("{}  ROOT c = pred[] compare(c0, p1), direction=LT, type=TOTALORDER", canon(0, "f32")),
            // Canonicalization to a negative NaN.
            format!(
                "{}  ROOT c = pred[] compare(c0, c1), direction=LT, type=TOTALORDER",
                (canon(0, "f32") + &canon(1, "f32")).replace("ne0, nan", "ne0, negnan").replace("ne1, nan", "ne1, negnan")
            ),
            // -0 as the zero.
            format!(
                "{}  ROOT c = pred[] compare(c0, c1), direction=LT, type=TOTALORDER",
                (canon(0, "f32") + &canon(1, "f32")).replace("zero, p", "negzero, p")
            ),
            // A tie broken by an equality of another key.
            "  l = pred[] compare(p0, p1), direction=LT\n  e = pred[] compare(p2, p3), direction=EQ\n  \
             l1 = pred[] compare(p2, p3), direction=LT\n  a = pred[] and(e, l1)\n  ROOT o = pred[] or(l, a)"
                .to_string(),
            // `and` of the key's equality with something else than an order.
            "  l = pred[] compare(p0, p1), direction=LT\n  e = pred[] compare(p0, p1), direction=EQ\n  \
             a = pred[] and(e, e)\n  ROOT o = pred[] or(l, a)"
                .to_string(),
        ];
        for body in cases {
            let text = module(&["f32", "f32"], &format!("{consts}{body}"));
            assert_eq!(recognize(&text), None, "{text}");
        }
    }

    #[test]
    fn total_order_bits_must_be_exact() {
        let bits = |max: &str, dir: &str| {
            format!(
                "  z = s32[] constant(0)\n  max = s32[] constant({max})\n  b0 = s32[] bitcast(p0)\n  \
                 b1 = s32[] bitcast(p1)\n  x0 = s32[] xor(max, b0)\n  n0 = pred[] compare(b0, z), direction={dir}\n  \
                 x1 = s32[] xor(max, b1)\n  n1 = pred[] compare(b1, z), direction={dir}\n  t0 = s32[] select(n0, x0, b0)\n  \
                 t1 = s32[] select(n1, x1, b1)\n  ROOT c = pred[] compare(t0, t1), direction=LT"
            )
        };
        let ok = module(&["f32"], &bits("2147483647", "LT"));
        assert!(recognize(&ok).is_some());
        for bad in [
            bits("2147483646", "LT"),
            bits("2147483647", "LE"),
            bits("2147483647", "GT"),
        ] {
            assert_eq!(recognize(&module(&["f32"], &bad)), None, "{bad}");
        }
    }
}
