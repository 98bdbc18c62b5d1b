//! Text of literals, reproducing XLA's `Literal::ToStringWithoutShapeOneline`.

use std::fmt::{self, Write};

use super::float_text::{f32_to_string, f64_to_string, small_to_string};
use super::minifloat::MiniFloat;
use super::{ArrayData, ArrayLiteral, Literal};

/// The most elements a splat literal prints one by one (XLA prints constants of up to
/// ten elements in full by default); larger splats print their one value.
pub const SPLAT_PRINT_LIMIT: usize = 10;

impl ArrayLiteral {
    /// The text of element `i` (row-major) as XLA prints it.
    fn element_text(&self, i: usize, out: &mut String) {
        self.element_text_at_rank(i, self.shape.rank(), out);
    }

    /// [`Self::element_text`] as printed in a literal of rank `rank` (`pred` prints
    /// `true`/`false` at rank 0 and `1`/`0` in arrays). A splat's one value serves every
    /// index.
    fn element_text_at_rank(&self, i: usize, rank: usize, out: &mut String) {
        let i = if self.splat { 0 } else { i };
        let ty = self.element_type();
        let small = |bits: u32, out: &mut String| match MiniFloat::of(ty) {
            Some(f) => {
                let payload = f.quiet_nan_mantissa().map(|q| (f.nan_mantissa(bits), q));
                out.push_str(&small_to_string(f.decode(bits), f.max_digits10, payload));
            }
            None => out.push('0'),
        };
        let _ = match &self.data {
            ArrayData::Pred(v) => {
                let b = v.get(i).copied().unwrap_or(false);
                out.push_str(match (rank, b) {
                    (0, true) => "true",
                    (0, false) => "false",
                    (_, true) => "1",
                    (_, false) => "0",
                });
                Ok(())
            }
            ArrayData::S8(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::S16(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::S32(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::S64(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::U8(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::U16(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::U32(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::U64(v) => write!(out, "{}", v.get(i).copied().unwrap_or(0)),
            ArrayData::Bits16(v) => {
                small(u32::from(v.get(i).copied().unwrap_or(0)), out);
                Ok(())
            }
            ArrayData::Bits8(v) => {
                small(u32::from(v.get(i).copied().unwrap_or(0)), out);
                Ok(())
            }
            ArrayData::F32(v) => {
                out.push_str(&f32_to_string(v.get(i).copied().unwrap_or(0.0)));
                Ok(())
            }
            ArrayData::F64(v) => {
                out.push_str(&f64_to_string(v.get(i).copied().unwrap_or(0.0)));
                Ok(())
            }
            ArrayData::C64(v) => {
                let [re, im] = v.get(i).copied().unwrap_or([0.0; 2]);
                write!(out, "({}, {})", f32_to_string(re), f32_to_string(im))
            }
            ArrayData::C128(v) => {
                let [re, im] = v.get(i).copied().unwrap_or([0.0; 2]);
                write!(out, "({}, {})", f64_to_string(re), f64_to_string(im))
            }
        };
    }

    /// Appends the values (no shape) on one line, exactly as XLA prints constants:
    /// `1`, `{1, 2}`, `{ { 1, 2 }, { 3, 4 } }`, with `/*iK=N*/` comments above rank 3.
    ///
    /// A splat (one value for every element, [`ArrayLiteral::splat`]) of at most
    /// [`SPLAT_PRINT_LIMIT`] elements prints every element, as XLA prints the constant
    /// its parser built; a larger one prints its one value (`1`, as it was written),
    /// which XLA's parser reads back as the same constant (XLA itself prints `{...}`
    /// there unless asked for large constants, and then every element).
    pub fn write_values(&self, out: &mut String) {
        let dims = self.shape.dims();
        let r = dims.len();
        if r == 0 || (self.splat && self.element_count() > SPLAT_PRINT_LIMIT) {
            self.element_text_at_rank(0, 0, out);
            return;
        }
        // Build XLA's multi-line text, then compact it the way `CompactOneline` does.
        let mut pieces = String::new();
        let open = |k: usize, stack: &[i64], p: &mut String| {
            if r == 1 {
                p.push('{');
            } else if r - k == 1 {
                p.push_str(if dims[k] <= 1 { "  {" } else { "  { " });
            } else if r > 3 && k > 0 {
                let _ = writeln!(p, "{{ /*i{}={}*/", k - 1, stack[k - 1]);
            } else {
                p.push_str("{\n");
            }
        };
        let close = |k: usize, p: &mut String| {
            if r == 1 {
                p.push('}');
            } else if r - k == 1 {
                p.push_str(if dims[k] <= 1 { "}" } else { " }" });
            } else {
                p.push_str("\n}");
            }
        };
        let sep = |k: usize, p: &mut String| {
            p.push(',');
            p.push(if r - k > 1 { '\n' } else { ' ' });
        };
        let mut stack: Vec<i64> = Vec::with_capacity(r);
        let mut linear = 0usize;
        open(0, &stack, &mut pieces);
        stack.push(0);
        while let Some(&i) = stack.last() {
            let k = stack.len() - 1;
            if i >= dims[k] {
                close(k, &mut pieces);
                stack.pop();
                if let Some(j) = stack.last_mut() {
                    let kk = k - 1;
                    if *j < dims[kk] - 1 {
                        sep(kk, &mut pieces);
                    }
                    *j += 1;
                }
                continue;
            }
            if k + 1 == r {
                self.element_text(linear, &mut pieces);
                linear += 1;
                if i < dims[k] - 1 {
                    sep(k, &mut pieces);
                }
                if let Some(j) = stack.last_mut() {
                    *j += 1;
                }
            } else {
                open(k + 1, &stack, &mut pieces);
                stack.push(0);
            }
        }
        let mut first = true;
        for word in pieces.split([' ', '\n']).filter(|w| !w.is_empty()) {
            if !first {
                out.push(' ');
            }
            out.push_str(word);
            first = false;
        }
    }
}

impl Literal {
    /// Appends the literal's values without its shape: arrays as XLA prints them, `{...}`
    /// for elided values, tuples as `(a, b)`.
    pub fn write_values(&self, out: &mut String) {
        match self {
            Literal::Array(a) => a.write_values(out),
            Literal::Elided(_) => out.push_str("{...}"),
            Literal::Tuple(t) => {
                out.push('(');
                for (i, e) in t.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    e.write_values(out);
                }
                out.push(')');
            }
        }
    }

    /// Appends the literal with its shape (`s32[2]{0} {1, 2}`; tuples as `(lit, lit)`), the
    /// form of custom-call `literal=` attributes.
    pub fn write_with_shape(&self, out: &mut String) {
        match self {
            Literal::Tuple(t) => {
                out.push('(');
                for (i, e) in t.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    e.write_with_shape(out);
                }
                out.push(')');
            }
            _ => {
                self.shape().write_to(out, true);
                out.push(' ');
                self.write_values(out);
            }
        }
    }
}

impl fmt::Display for Literal {
    /// The values without the shape (as inside `constant(...)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_values(&mut s);
        f.write_str(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ArrayData;
    use super::*;
    use crate::shape::{ElementType, Shape};

    fn lit(dims: Vec<i64>, v: Vec<i32>) -> String {
        let a = ArrayLiteral::new(Shape::array(ElementType::S32, dims), ArrayData::S32(v)).unwrap();
        Literal::Array(a).to_string()
    }

    #[test]
    fn nested_arrays() {
        assert_eq!(lit(vec![], vec![5]), "5");
        assert_eq!(lit(vec![3], vec![1, 2, 3]), "{1, 2, 3}");
        assert_eq!(lit(vec![0], vec![]), "{}");
        assert_eq!(lit(vec![2, 2], vec![1, 2, 3, 4]), "{ { 1, 2 }, { 3, 4 } }");
        assert_eq!(lit(vec![2, 1], vec![1, 2]), "{ {1}, {2} }");
        assert_eq!(lit(vec![0, 3], vec![]), "{ }");
        assert_eq!(
            lit(vec![1, 2, 2], vec![1, 2, 3, 4]),
            "{ { { 1, 2 }, { 3, 4 } } }"
        );
        assert_eq!(
            lit(vec![1, 1, 2, 1], vec![1, 2]),
            "{ { /*i0=0*/ { /*i1=0*/ {1}, {2} } } }"
        );
    }

    #[test]
    fn elements() {
        let a = ArrayLiteral::new(
            Shape::array(ElementType::Pred, vec![2]),
            ArrayData::Pred(vec![true, false]),
        )
        .unwrap();
        assert_eq!(Literal::Array(a).to_string(), "{1, 0}");
        let a = ArrayLiteral::new(
            Shape::scalar(ElementType::C64),
            ArrayData::C64(vec![[1.5, -2.0]]),
        )
        .unwrap();
        assert_eq!(Literal::Array(a).to_string(), "(1.5, -2)");
        let a = ArrayLiteral::new(
            Shape::scalar(ElementType::F16),
            ArrayData::Bits16(vec![0x2e66]),
        )
        .unwrap();
        assert_eq!(Literal::Array(a).to_string(), "0.099976");
        let a = ArrayLiteral::new(
            Shape::scalar(ElementType::BF16),
            ArrayData::Bits16(vec![0x7fc1]),
        )
        .unwrap();
        assert_eq!(Literal::Array(a).to_string(), "nan(0x41)");
    }
}
