//! Reports of one output against an expected array (`hloc run --expect`,
//! `--check-reference`): every element compared under the [`crate::tolerance`] of the
//! precision the value was last rounded to, with the count of mismatches, the largest
//! absolute and relative errors and the first differing index.
//!
//! Two rules keep correct programs from false alarms:
//!
//! - **The precision of the last rounding.** An `f32` result converted to `f64` carries
//!   only `f32`'s precision: [`rounding_types`] follows each output back through widening
//!   float converts and data movement (copy, reshape, transpose, broadcast, slice,
//!   bitcast, reverse) and the output is checked at the loosest tolerance met on the way.
//! - **Infinity versus NaN** (one side `±inf`, the other NaN) is not counted as a mismatch
//!   but reported apart ([`OutputReport::inf_vs_nan`]): a fused multiply-add keeps an
//!   overflowing product exact where a separate multiply rounds it to infinity (and an
//!   `inf - inf` then gives NaN), so two correct evaluations of one program can differ
//!   there.

use hlo::literal::{format_g, ArrayData, ArrayLiteral};
use hlo::shape::ElementType;
use hlo::{Module, Opcode};

use crate::tolerance::{close, tolerance, value_text, Tolerance};

/// One output compared with its expected value.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputReport {
    /// Every element matches (infinity versus NaN included, see the module docs).
    pub matches: bool,
    /// Elements compared.
    pub elements: usize,
    /// Elements that do not match.
    pub mismatches: usize,
    /// Largest `|got - want|` over elements finite on both sides.
    pub max_abs_error: f64,
    /// Largest `|got - want| / |want|` over elements finite on both sides, `want` not 0.
    pub max_rel_error: f64,
    /// The first mismatch: its index (one coordinate per dimension), got and want as text;
    /// for different shapes or types, an empty index and the two shapes.
    pub first_mismatch: Option<(Vec<i64>, String, String)>,
    /// Elements where one side is `±inf` and the other NaN (not mismatches).
    pub inf_vs_nan: usize,
    /// The tolerance applied (`None`: exact).
    pub tolerance: Option<Tolerance>,
}

impl OutputReport {
    /// One line for output `name` (e.g. `out0`), `what` naming the expected side
    /// (`expected`, `reference`): `out0: f32[4] ok (max abs error 1e-07, max rel error
    /// 2e-07)` or `out0: f32[4] DIFFERS in 3 of 4 elements (...); first at [1]: got 3,
    /// expected 1`, then a note on infinity versus NaN where there is any.
    pub fn line(&self, name: &str, shape: &str, what: &str) -> String {
        let errors = format!(
            "max abs error {}, max rel error {}",
            format_g(self.max_abs_error, 3),
            format_g(self.max_rel_error, 3)
        );
        let tol = match self.tolerance {
            Some(t) => format!(
                "tolerance |got - {what}| <= {} + {} * |{what}|",
                format_g(t.atol, 3),
                format_g(t.rtol, 3)
            ),
            None => "exact".to_string(),
        };
        let mut s = if self.matches {
            format!("{name}: {shape} ok ({errors}; {tol})")
        } else {
            let first = match &self.first_mismatch {
                Some((idx, got, want)) if idx.is_empty() && self.elements == 0 => {
                    format!("got {got}, {what} {want}")
                }
                Some((idx, got, want)) => format!(
                    "first at [{}]: got {got}, {what} {want}",
                    idx.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
                ),
                None => String::new(),
            };
            format!(
                "{name}: {shape} DIFFERS in {} of {} elements ({errors}; {tol}); {first}",
                self.mismatches, self.elements
            )
        };
        if self.inf_vs_nan > 0 {
            s.push_str(&format!(
                "; note: {} element(s) infinite on one side and NaN on the other, not counted \
                 (a fused multiply-add keeps an overflowing product exact where a separate \
                 multiply rounds it to infinity)",
                self.inf_vs_nan
            ));
        }
        s
    }
}

/// Compares `got` with `want` at the tolerance of element type `precision` (the loosest of
/// it and `want`'s own type; see [`rounding_types`]), or exactly for integers and `pred`.
pub fn compare_report(
    got: &ArrayLiteral,
    want: &ArrayLiteral,
    precision: Option<ElementType>,
) -> OutputReport {
    let ty = want.element_type();
    let tol = loosest(tolerance(ty), precision.and_then(tolerance));
    let elements = want.data().len();
    let mut r = OutputReport {
        matches: true,
        elements,
        mismatches: 0,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        first_mismatch: None,
        inf_vs_nan: 0,
        tolerance: tol,
    };
    if got.element_type() != ty || got.shape().dims() != want.shape().dims() {
        r.matches = false;
        r.elements = 0;
        r.mismatches = elements;
        r.max_abs_error = f64::INFINITY;
        r.first_mismatch = Some((
            vec![],
            got.shape().to_string_without_layout(),
            want.shape().to_string_without_layout(),
        ));
        return r;
    }
    let complex = ty.is_complex();
    for i in 0..elements {
        let (g, w) = (parts(got, i), parts(want, i));
        let mut bad = false;
        let mut odd = false;
        for k in 0..if complex { 2 } else { 1 } {
            let (a, b) = (g[k], w[k]);
            if a.is_finite() && b.is_finite() {
                let d = (a - b).abs();
                r.max_abs_error = r.max_abs_error.max(d);
                if b != 0.0 {
                    r.max_rel_error = r.max_rel_error.max(d / b.abs());
                }
            }
            let same = match tol {
                Some(t) => close(a, b, t),
                None => a.to_bits() == b.to_bits() || a == b,
            };
            if !same {
                if (a.is_nan() && b.is_infinite()) || (a.is_infinite() && b.is_nan()) {
                    odd = true;
                } else {
                    bad = true;
                }
            }
        }
        if bad {
            r.matches = false;
            r.mismatches += 1;
            if r.first_mismatch.is_none() {
                let show = |v: [f64; 2]| value_text(v, complex, tol.is_some());
                r.first_mismatch = Some((unravel(i, want.shape().dims()), show(g), show(w)));
            }
        } else if odd {
            r.inf_vs_nan += 1;
        }
    }
    r
}

/// The looser of two tolerances (the larger relative part).
fn loosest(a: Option<Tolerance>, b: Option<Tolerance>) -> Option<Tolerance> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.rtol > a.rtol { b } else { a }),
        (a, None) => a,
        (None, _) => None,
    }
}

/// Element `i` as (real, imaginary) parts (imaginary 0 for real types).
fn parts(a: &ArrayLiteral, i: usize) -> [f64; 2] {
    match a.data() {
        ArrayData::C64(v) => [f64::from(v[i][0]), f64::from(v[i][1])],
        ArrayData::C128(v) => v[i],
        _ => [a.get_f64(i).unwrap_or(f64::NAN), 0.0],
    }
}

/// The coordinates of row-major element `i` of an array of `dims`.
fn unravel(mut i: usize, dims: &[i64]) -> Vec<i64> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        let n = dims[d].max(1) as usize;
        idx[d] = (i % n) as i64;
        i /= n;
    }
    idx
}

/// For each leaf of the entry root (flattened tuple order), the float type whose
/// tolerance it is checked at: the loosest float type met following the value back
/// through widening float converts and data movement, or `None` (the leaf's own type).
pub fn rounding_types(module: &Module) -> Vec<Option<ElementType>> {
    let entry = module.entry();
    let mut out = Vec::new();
    let mut stack = vec![entry.root()];
    // Depth-first, left to right: the flattened tuple order.
    while let Some(id) = stack.pop() {
        let instr = entry.instr(id);
        if instr.opcode() == Opcode::Tuple {
            stack.extend(instr.operands().iter().rev());
            continue;
        }
        if instr.shape().is_tuple() {
            // Leaves of a tuple-valued instruction: their own types.
            let mut n = 0;
            count_leaves(instr.shape(), &mut n);
            out.extend(std::iter::repeat_n(None, n));
            continue;
        }
        out.push(last_rounding(module, id));
    }
    out
}

fn count_leaves(s: &hlo::Shape, n: &mut usize) {
    if s.is_tuple() {
        s.tuple_shapes().iter().for_each(|t| count_leaves(t, n));
    } else {
        *n += 1;
    }
}

/// The loosest float type of `id`'s value back through widening converts and data
/// movement (`None` when that is the value's own type or it is no float).
fn last_rounding(module: &Module, id: hlo::InstrId) -> Option<ElementType> {
    let entry = module.entry();
    let own = entry.instr(id).shape().element_type()?;
    let mut loosest_ty = own;
    let mut cur = id;
    for _ in 0..64 {
        let instr = entry.instr(cur);
        let Some(&op) = instr.operands().first() else {
            break;
        };
        let from = entry.instr(op).shape().element_type();
        let movement = matches!(
            instr.opcode(),
            Opcode::Copy
                | Opcode::Reshape
                | Opcode::Transpose
                | Opcode::Broadcast
                | Opcode::Slice
                | Opcode::Bitcast
                | Opcode::Reverse
        );
        let widening = instr.opcode() == Opcode::Convert
            && from.is_some_and(|f| f.is_float() && !f.is_complex());
        if !(movement || widening) || from.is_none() {
            break;
        }
        if let Some(f) = from {
            let looser = match (tolerance(f), tolerance(loosest_ty)) {
                (Some(a), Some(b)) => a.rtol > b.rtol,
                _ => false,
            };
            if looser {
                loosest_ty = f;
            }
        }
        cur = op;
    }
    (loosest_ty != own).then_some(loosest_ty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::Shape;

    fn f32s(v: Vec<f32>) -> ArrayLiteral {
        let n = v.len() as i64;
        ArrayLiteral::new(Shape::array(ElementType::F32, vec![n]), ArrayData::F32(v)).unwrap()
    }

    #[test]
    fn counts_every_mismatch_and_names_the_first_by_coordinates() {
        let want = ArrayLiteral::new(
            Shape::array(ElementType::F32, vec![2, 2]),
            ArrayData::F32(vec![1.0, 2.0, 3.0, 4.0]),
        )
        .unwrap();
        let got = ArrayLiteral::new(
            Shape::array(ElementType::F32, vec![2, 2]),
            ArrayData::F32(vec![1.0, 2.0, 5.0, 0.0]),
        )
        .unwrap();
        let r = compare_report(&got, &want, None);
        assert_eq!((r.matches, r.mismatches, r.elements), (false, 2, 4));
        assert_eq!(r.max_abs_error, 4.0);
        assert_eq!(r.max_rel_error, 1.0);
        assert_eq!(
            r.first_mismatch,
            Some((vec![1, 0], "5".to_string(), "3".to_string()))
        );
        assert!(r
            .line("out0", "f32[2,2]", "expected")
            .starts_with("out0: f32[2,2] DIFFERS in 2 of 4 elements"));
    }

    #[test]
    fn infinity_against_nan_is_a_note_not_a_mismatch() {
        let r = compare_report(
            &f32s(vec![f32::INFINITY, 1.0]),
            &f32s(vec![f32::NAN, 1.0]),
            None,
        );
        assert!(r.matches);
        assert_eq!(r.inf_vs_nan, 1);
        assert!(r
            .line("out0", "f32[2]", "reference")
            .contains("note: 1 element"));
        // A finite value against NaN stays a mismatch.
        let r = compare_report(&f32s(vec![2.0]), &f32s(vec![f32::NAN]), None);
        assert!(!r.matches);
    }

    #[test]
    fn a_widened_f32_is_checked_at_f32_precision() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  e = f32[2] exponential(p)\n  \
             c = f64[2] convert(e)\n  r = f64[1,2] reshape(c)\n  ROOT t = (f64[1,2], f32[2]) tuple(r, e)\n}",
        )
        .unwrap();
        assert_eq!(rounding_types(&m), vec![Some(ElementType::F32), None]);
        let want = ArrayLiteral::new(
            Shape::array(ElementType::F64, vec![1]),
            ArrayData::F64(vec![1.0]),
        )
        .unwrap();
        let got = ArrayLiteral::new(
            Shape::array(ElementType::F64, vec![1]),
            ArrayData::F64(vec![1.0 + 1e-7]),
        )
        .unwrap();
        assert!(!compare_report(&got, &want, None).matches);
        assert!(compare_report(&got, &want, Some(ElementType::F32)).matches);
    }

    #[test]
    fn integers_are_exact_and_print_without_a_fraction() {
        let a = |v| ArrayLiteral::new(Shape::array(ElementType::S32, vec![2]), ArrayData::S32(v));
        let r = compare_report(&a(vec![1, 7]).unwrap(), &a(vec![1, 8]).unwrap(), None);
        assert_eq!(
            r.first_mismatch,
            Some((vec![1], "7".to_string(), "8".to_string()))
        );
        assert!(r.line("out1", "s32[2]", "expected").contains("exact"));
    }
}
