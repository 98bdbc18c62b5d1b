//! The one float tolerance every comparison with XLA's recorded outputs uses.
//!
//! Integers and `pred` must match exactly. A floating-point element `got` matches `want`
//! when both are NaN, when both are the same infinity, or when
//!
//! ```text
//! |got - want| <= atol(T) + rtol(T) * |want|
//! ```
//!
//! with, per element type `T` (complex types per component, with their component type):
//!
//! | type            | rtol   | atol   |
//! |-----------------|--------|--------|
//! | `f64`           | 1e-9   | 1e-12  |
//! | `f32`           | 1e-4   | 1e-5   |
//! | `f16`           | 4e-3   | 1e-3   |
//! | `bf16`          | 1.6e-2 | 1e-2   |
//! | `f8*`, `f4*`    | 0.25   | 1/64   |
//!
//! Why not exact: XLA:CPU computes transcendental functions with its own polynomial
//! approximations, vectorizes reductions and dot products in a different summation order,
//! and may fuse multiply-adds; the evaluator computes in `f64` and rounds once. The
//! relative part is about a thousand ulps of `f32` (a few ulps for the small types, two
//! for bf16), enough for those differences after a few dozen dependent operations and
//! far below any semantic error (a wrong op, index or rounding mode).

use hlo::literal::{format_g, ArrayData, ArrayLiteral};
use hlo::shape::ElementType;

/// Relative and absolute tolerance of one element type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative part (times `|want|`).
    pub rtol: f64,
    /// Absolute part.
    pub atol: f64,
}

/// The tolerance of a float (or complex) element type; `None` for exact types.
pub fn tolerance(ty: ElementType) -> Option<Tolerance> {
    use ElementType as T;
    let (rtol, atol) = match ty {
        T::F64 | T::C128 => (1e-9, 1e-12),
        T::F32 | T::C64 => (1e-4, 1e-5),
        T::F16 => (4e-3, 1e-3),
        T::BF16 => (1.6e-2, 1e-2),
        t if t.is_float() => (0.25, 1.0 / 64.0),
        _ => return None,
    };
    Some(Tolerance { rtol, atol })
}

/// The outcome of comparing two arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// True when every element matches.
    pub matches: bool,
    /// Largest `|got - want|` over finite elements (0 for exact types that match).
    pub max_abs_error: f64,
    /// The first mismatching element: (row-major index, got, want), as text.
    pub first_mismatch: Option<(usize, String, String)>,
}

/// Float element match under `t`.
pub fn close(got: f64, want: f64, t: Tolerance) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if got.is_infinite() || want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= t.atol + t.rtol * want.abs()
}

fn components(a: &ArrayLiteral, i: usize) -> [f64; 2] {
    match a.data() {
        ArrayData::C64(v) => [f64::from(v[i][0]), f64::from(v[i][1])],
        ArrayData::C128(v) => v[i],
        _ => [a.get_f64(i).unwrap_or(f64::NAN), 0.0],
    }
}

/// Compares `got` with `want` (same element type and dimensions required).
pub fn compare(got: &ArrayLiteral, want: &ArrayLiteral) -> Comparison {
    let ty = want.element_type();
    if got.element_type() != ty || got.shape().dims() != want.shape().dims() {
        return Comparison {
            matches: false,
            max_abs_error: f64::INFINITY,
            first_mismatch: Some((
                0,
                got.shape().to_string_without_layout(),
                want.shape().to_string_without_layout(),
            )),
        };
    }
    let mut out = Comparison {
        matches: true,
        max_abs_error: 0.0,
        first_mismatch: None,
    };
    let n = want.data().len();
    match tolerance(ty) {
        None => {
            if got.data() != want.data() {
                out.matches = false;
                let i = (0..n)
                    .find(|&i| {
                        got.get_f64(i).map(f64::to_bits) != want.get_f64(i).map(f64::to_bits)
                    })
                    .unwrap_or(0);
                let show = |a: &ArrayLiteral| a.get_f64(i).map_or("?".into(), |v| v.to_string());
                out.first_mismatch = Some((i, show(got), show(want)));
                out.max_abs_error = (0..n)
                    .filter_map(|i| Some((got.get_f64(i)? - want.get_f64(i)?).abs()))
                    .fold(0.0, f64::max);
            }
        }
        Some(t) => {
            for i in 0..n {
                let (g, w) = (components(got, i), components(want, i));
                for k in 0..2 {
                    if g[k].is_finite() && w[k].is_finite() {
                        out.max_abs_error = out.max_abs_error.max((g[k] - w[k]).abs());
                    }
                    if !close(g[k], w[k], t) && out.matches {
                        out.matches = false;
                        let show = |v| value_text(v, ty.is_complex(), true);
                        out.first_mismatch = Some((i, show(g), show(w)));
                    }
                }
            }
        }
    }
    out
}

/// Whether two results match within the tolerance: tuples element by element (same
/// length), arrays by [`compare`]; a tuple never matches an array.
pub fn literals_match(got: &hlo::Literal, want: &hlo::Literal) -> bool {
    use hlo::Literal;
    match (got, want) {
        (Literal::Tuple(g), Literal::Tuple(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| literals_match(a, b))
        }
        (Literal::Array(g), Literal::Array(w)) => compare(g, w).matches,
        _ => false,
    }
}

/// A value as text: a number (integers without a fraction), a complex one as `(re, im)`.
pub(crate) fn value_text(v: [f64; 2], complex: bool, float: bool) -> String {
    let one = |x: f64| {
        if float {
            format_g(x, 9)
        } else {
            format!("{x:.0}")
        }
    };
    if complex {
        format!("({}, {})", one(v[0]), one(v[1]))
    } else {
        one(v[0])
    }
}
