//! Type-generic plumbing over [`ArrayData`]: macros that run one generic body for every
//! storage variant (monomorphized, no boxed elements), literal construction and the
//! strided copy that every data-movement op reduces to.

use super::EvalError;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::Shape;
use hlo::Literal;

/// Runs `$body` with `$v` bound to the vector inside any variant and rebuilds the same
/// variant from the body's vector.
macro_rules! map_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            ArrayData::Pred($v) => ArrayData::Pred($body),
            ArrayData::S8($v) => ArrayData::S8($body),
            ArrayData::S16($v) => ArrayData::S16($body),
            ArrayData::S32($v) => ArrayData::S32($body),
            ArrayData::S64($v) => ArrayData::S64($body),
            ArrayData::U8($v) => ArrayData::U8($body),
            ArrayData::U16($v) => ArrayData::U16($body),
            ArrayData::U32($v) => ArrayData::U32($body),
            ArrayData::U64($v) => ArrayData::U64($body),
            ArrayData::Bits16($v) => ArrayData::Bits16($body),
            ArrayData::Bits8($v) => ArrayData::Bits8($body),
            ArrayData::F32($v) => ArrayData::F32($body),
            ArrayData::F64($v) => ArrayData::F64($body),
            ArrayData::C64($v) => ArrayData::C64($body),
            ArrayData::C128($v) => ArrayData::C128($body),
        }
    };
}

/// Like [`map_data`] for two operands of the same variant; `$mismatch` when they differ.
macro_rules! zip_data {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr, $mismatch:expr) => {
        match ($a, $b) {
            (ArrayData::Pred($x), ArrayData::Pred($y)) => ArrayData::Pred($body),
            (ArrayData::S8($x), ArrayData::S8($y)) => ArrayData::S8($body),
            (ArrayData::S16($x), ArrayData::S16($y)) => ArrayData::S16($body),
            (ArrayData::S32($x), ArrayData::S32($y)) => ArrayData::S32($body),
            (ArrayData::S64($x), ArrayData::S64($y)) => ArrayData::S64($body),
            (ArrayData::U8($x), ArrayData::U8($y)) => ArrayData::U8($body),
            (ArrayData::U16($x), ArrayData::U16($y)) => ArrayData::U16($body),
            (ArrayData::U32($x), ArrayData::U32($y)) => ArrayData::U32($body),
            (ArrayData::U64($x), ArrayData::U64($y)) => ArrayData::U64($body),
            (ArrayData::Bits16($x), ArrayData::Bits16($y)) => ArrayData::Bits16($body),
            (ArrayData::Bits8($x), ArrayData::Bits8($y)) => ArrayData::Bits8($body),
            (ArrayData::F32($x), ArrayData::F32($y)) => ArrayData::F32($body),
            (ArrayData::F64($x), ArrayData::F64($y)) => ArrayData::F64($body),
            (ArrayData::C64($x), ArrayData::C64($y)) => ArrayData::C64($body),
            (ArrayData::C128($x), ArrayData::C128($y)) => ArrayData::C128($body),
            _ => return Err($mismatch),
        }
    };
}

pub(crate) use map_data;
pub(crate) use zip_data;

/// The array operand `i`, or an error naming the instruction.
pub(crate) fn array<'a>(lit: &'a Literal, what: &str) -> Result<&'a ArrayLiteral, EvalError> {
    lit.as_array()
        .ok_or_else(|| EvalError::invalid(what, "expected an array operand, got a tuple or token"))
}

/// Builds an array literal of `shape` from `data`, checking that they agree.
pub(crate) fn make(shape: &Shape, data: ArrayData, what: &str) -> Result<Literal, EvalError> {
    let n = data.len();
    ArrayLiteral::new(shape.clone(), data)
        .map(Literal::Array)
        .ok_or_else(|| {
            EvalError::invalid(
                what,
                format!("internal: {n} computed elements do not form the result shape {shape}"),
            )
        })
}

/// Dimension sizes as `usize` (checked non-negative).
pub(crate) fn udims(shape: &Shape, what: &str) -> Result<Vec<usize>, EvalError> {
    shape
        .dims()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| EvalError::invalid(what, "negative dimension")))
        .collect()
}

/// Row-major strides of `dims`.
pub(crate) fn row_major_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// A strided view: element `idx` of the `dims`-shaped result is
/// `src[offset + sum(idx[d] * strides[d])]`.
#[derive(Clone, Debug)]
pub(crate) struct View {
    /// Result dimensions.
    pub dims: Vec<usize>,
    /// Source stride per result dimension (0 broadcasts, negative reverses).
    pub strides: Vec<isize>,
    /// Source index of the first element.
    pub offset: isize,
}

impl View {
    /// Number of elements of the view.
    pub fn count(&self) -> usize {
        self.dims.iter().product()
    }

    /// True when every reachable position lies in `0..len`.
    pub fn fits(&self, len: usize) -> bool {
        if self.count() == 0 {
            return true;
        }
        let (mut lo, mut hi) = (self.offset, self.offset);
        for (&n, &s) in self.dims.iter().zip(&self.strides) {
            let span = s * (n as isize - 1);
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        lo >= 0 && (hi as usize) < len
    }

    /// Calls `f(position)` for every element of the view, in row-major order of the view.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(usize)) {
        if self.count() == 0 {
            return;
        }
        let rank = self.dims.len();
        if rank == 0 {
            f(self.offset as usize);
            return;
        }
        let inner = self.dims[rank - 1];
        let inner_stride = self.strides[rank - 1];
        let mut idx = vec![0usize; rank - 1];
        let mut base = self.offset;
        loop {
            let mut p = base;
            for _ in 0..inner {
                f(p as usize);
                p += inner_stride;
            }
            let mut d = rank - 1;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                base += self.strides[d];
                if idx[d] < self.dims[d] {
                    break;
                }
                base -= self.strides[d] * self.dims[d] as isize;
                idx[d] = 0;
            }
        }
    }

    /// Copies the view out of `src` (checked to fit).
    pub fn gather<T: Copy>(&self, src: &[T], what: &str) -> Result<Vec<T>, EvalError> {
        if !self.fits(src.len()) {
            return Err(EvalError::invalid(what, "internal: index out of bounds"));
        }
        let mut out = Vec::with_capacity(self.count());
        self.for_each(|p| out.push(src[p]));
        Ok(out)
    }

    /// Writes `values` (row-major over the view) into `dst` through the view.
    pub fn scatter<T: Copy>(
        &self,
        dst: &mut [T],
        values: &[T],
        what: &str,
    ) -> Result<(), EvalError> {
        if !self.fits(dst.len()) || values.len() != self.count() {
            return Err(EvalError::invalid(what, "internal: index out of bounds"));
        }
        let mut k = 0;
        self.for_each(|p| {
            dst[p] = values[k];
            k += 1;
        });
        Ok(())
    }
}

/// Applies a view to any array data.
pub(crate) fn gather_data(
    data: &ArrayData,
    view: &View,
    what: &str,
) -> Result<ArrayData, EvalError> {
    Ok(map_data!(data, v => view.gather(v, what)?))
}

/// A scalar literal holding element `i` of `a`.
pub(crate) fn scalar_at(a: &ArrayLiteral, i: usize, what: &str) -> Result<Literal, EvalError> {
    let data = map_data!(a.data(), v => vec![v[i]]);
    make(&Shape::scalar(a.element_type()), data, what)
}

/// Data of `n` copies of element `i` of `src`.
pub(crate) fn splat(src: &ArrayData, i: usize, n: usize) -> ArrayData {
    map_data!(src, v => vec![v[i]; n])
}
