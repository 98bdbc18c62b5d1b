//! Shape, index and element helpers shared by the kernels: operand access, row-major
//! strides, per-element copies between typed vectors, literal construction.

use super::KernelError;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::Literal;

/// Operand `i` as an array literal.
pub(crate) fn operand<'a>(
    operands: &[&'a Literal],
    i: usize,
    what: &str,
) -> Result<&'a ArrayLiteral, KernelError> {
    let lit = operands
        .get(i)
        .ok_or_else(|| KernelError::Invalid(format!("{what}: missing operand {i}")))?;
    match lit {
        Literal::Array(a) => Ok(a),
        Literal::Tuple(_) => Err(KernelError::Invalid(format!(
            "{what}: operand {i} is a tuple, expected an array"
        ))),
        Literal::Elided(_) => Err(KernelError::Invalid(format!(
            "{what}: operand {i} has elided values"
        ))),
    }
}

/// A literal's array, or an error naming `what`.
pub(crate) fn as_array<'a>(lit: &'a Literal, what: &str) -> Result<&'a ArrayLiteral, KernelError> {
    match lit {
        Literal::Array(a) => Ok(a),
        _ => Err(KernelError::Invalid(format!(
            "{what}: expected an array value"
        ))),
    }
}

/// Dimension sizes as `usize` (negative or unbounded sizes are errors).
pub(crate) fn dims_of(shape: &Shape, what: &str) -> Result<Vec<usize>, KernelError> {
    shape
        .dims()
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| KernelError::Invalid(format!("{what}: dimension size {d}")))
        })
        .collect()
}

/// Row-major strides of `dims`.
pub(crate) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * dims[k + 1];
    }
    s
}

/// Product of `dims`.
pub(crate) fn product(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// Advances the row-major multi-index `idx` within `dims`; false after the last index.
pub(crate) fn next_index(idx: &mut [usize], dims: &[usize]) -> bool {
    for k in (0..dims.len()).rev() {
        idx[k] += 1;
        if idx[k] < dims[k] {
            return true;
        }
        idx[k] = 0;
    }
    false
}

/// A dimension number from an attribute, checked against `rank`.
pub(crate) fn dim(d: i64, rank: usize, what: &str) -> Result<usize, KernelError> {
    usize::try_from(d)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| {
            KernelError::Invalid(format!(
                "{what}: dimension {d} out of range for rank {rank}"
            ))
        })
}

/// Dimension numbers from an attribute list, checked against `rank`.
pub(crate) fn dim_list(ds: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, KernelError> {
    ds.iter().map(|&d| dim(d, rank, what)).collect()
}

/// The array shape of `shape`, or of its tuple element `i` for tuple shapes.
pub(crate) fn result_part<'a>(
    shape: &'a Shape,
    i: usize,
    what: &str,
) -> Result<&'a Shape, KernelError> {
    if shape.is_tuple() {
        shape
            .tuple_shapes()
            .get(i)
            .ok_or_else(|| KernelError::Invalid(format!("{what}: result has no tuple element {i}")))
    } else if i == 0 {
        Ok(shape)
    } else {
        Err(KernelError::Invalid(format!(
            "{what}: result is not a tuple"
        )))
    }
}

/// An array literal of `shape` holding `data`, checking counts and storage kind.
pub(crate) fn make_array(
    shape: &Shape,
    data: ArrayData,
    what: &str,
) -> Result<Literal, KernelError> {
    ArrayLiteral::new(shape.clone(), data)
        .map(Literal::Array)
        .ok_or_else(|| {
            KernelError::Invalid(format!(
                "{what}: computed values do not fit the result shape {shape}"
            ))
        })
}

/// Element type of an array shape.
pub(crate) fn elem_type(shape: &Shape, what: &str) -> Result<ElementType, KernelError> {
    shape.element_type().ok_or_else(|| {
        KernelError::Invalid(format!("{what}: expected an array shape, got {shape}"))
    })
}

macro_rules! each_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            ArrayData::Pred($v) => $body,
            ArrayData::S8($v) => $body,
            ArrayData::S16($v) => $body,
            ArrayData::S32($v) => $body,
            ArrayData::S64($v) => $body,
            ArrayData::U8($v) => $body,
            ArrayData::U16($v) => $body,
            ArrayData::U32($v) => $body,
            ArrayData::U64($v) => $body,
            ArrayData::Bits16($v) => $body,
            ArrayData::Bits8($v) => $body,
            ArrayData::F32($v) => $body,
            ArrayData::F64($v) => $body,
            ArrayData::C64($v) => $body,
            ArrayData::C128($v) => $body,
        }
    };
}

macro_rules! each_pair {
    ($dst:expr, $src:expr, $d:ident, $s:ident => $body:expr, $mismatch:expr) => {
        match ($dst, $src) {
            (ArrayData::Pred($d), ArrayData::Pred($s)) => $body,
            (ArrayData::S8($d), ArrayData::S8($s)) => $body,
            (ArrayData::S16($d), ArrayData::S16($s)) => $body,
            (ArrayData::S32($d), ArrayData::S32($s)) => $body,
            (ArrayData::S64($d), ArrayData::S64($s)) => $body,
            (ArrayData::U8($d), ArrayData::U8($s)) => $body,
            (ArrayData::U16($d), ArrayData::U16($s)) => $body,
            (ArrayData::U32($d), ArrayData::U32($s)) => $body,
            (ArrayData::U64($d), ArrayData::U64($s)) => $body,
            (ArrayData::Bits16($d), ArrayData::Bits16($s)) => $body,
            (ArrayData::Bits8($d), ArrayData::Bits8($s)) => $body,
            (ArrayData::F32($d), ArrayData::F32($s)) => $body,
            (ArrayData::F64($d), ArrayData::F64($s)) => $body,
            (ArrayData::C64($d), ArrayData::C64($s)) => $body,
            (ArrayData::C128($d), ArrayData::C128($s)) => $body,
            _ => $mismatch,
        }
    };
}

/// The elements of `data` at `indices`, in that order.
pub(crate) fn take(data: &ArrayData, indices: &[usize]) -> ArrayData {
    each_data!(data, v => {
        let out = indices.iter().map(|&i| v[i]).collect();
        rewrap(data, out)
    })
}

/// `n` copies of element `i` of `data`.
pub(crate) fn splat(data: &ArrayData, i: usize, n: usize) -> ArrayData {
    each_data!(data, v => rewrap(data, vec![v[i]; n]))
}

/// Copies element `si` of `src` over element `di` of `dst` (same storage kind).
pub(crate) fn copy_elem(
    dst: &mut ArrayData,
    di: usize,
    src: &ArrayData,
    si: usize,
) -> Result<(), KernelError> {
    each_pair!(dst, src, d, s => { d[di] = s[si]; Ok(()) },
        Err(KernelError::Invalid("element types of a copy differ".into())))
}

/// Appends element `si` of `src` to `dst` (same storage kind).
pub(crate) fn push_elem(
    dst: &mut ArrayData,
    src: &ArrayData,
    si: usize,
) -> Result<(), KernelError> {
    each_pair!(dst, src, d, s => { d.push(s[si]); Ok(()) },
        Err(KernelError::Invalid("element types differ".into())))
}

/// Storage of the same kind as `like` holding `v` (the caller guarantees the kinds agree).
fn rewrap<T: Wrap>(like: &ArrayData, v: Vec<T>) -> ArrayData {
    T::wrap(like, v)
}

/// Turns a typed vector back into [`ArrayData`] of the variant it came from.
trait Wrap: Sized {
    fn wrap(like: &ArrayData, v: Vec<Self>) -> ArrayData;
}

macro_rules! impl_wrap {
    ($t:ty, $($variant:ident),+) => {
        impl Wrap for $t {
            fn wrap(like: &ArrayData, v: Vec<$t>) -> ArrayData {
                match like {
                    $(ArrayData::$variant(_) => ArrayData::$variant(v),)+
                    _ => unreachable!("storage kind mismatch"),
                }
            }
        }
    };
}
impl_wrap!(bool, Pred);
impl_wrap!(i8, S8);
impl_wrap!(i16, S16);
impl_wrap!(i32, S32);
impl_wrap!(i64, S64);
impl_wrap!(u8, U8, Bits8);
impl_wrap!(u16, U16, Bits16);
impl_wrap!(u32, U32);
impl_wrap!(u64, U64);
impl_wrap!(f32, F32);
impl_wrap!(f64, F64);
impl_wrap!([f32; 2], C64);
impl_wrap!([f64; 2], C128);

/// Element `i` of `a` as a rank-0 literal.
pub(crate) fn scalar_at(a: &ArrayLiteral, i: usize) -> Literal {
    let shape = Shape::scalar(a.element_type());
    let data = take(a.data(), &[i]);
    // The shape and data agree by construction.
    Literal::Array(ArrayLiteral::new(shape, data).unwrap_or_else(|| unreachable!()))
}

/// The value of a rank-0 `pred` literal (the result of a comparator).
pub(crate) fn pred_value(lit: &Literal, what: &str) -> Result<bool, KernelError> {
    match lit {
        Literal::Array(a) => match a.data() {
            ArrayData::Pred(v) if v.len() == 1 => Ok(v[0]),
            _ => Err(KernelError::Invalid(format!(
                "{what}: comparator must return pred[]"
            ))),
        },
        _ => Err(KernelError::Invalid(format!(
            "{what}: comparator must return pred[]"
        ))),
    }
}

/// Values of an integer (or pred) array as `i64` (unsigned 64-bit values above
/// `i64::MAX` saturate, which only matters for index clamping).
pub(crate) fn int_values(a: &ArrayLiteral, what: &str) -> Result<Vec<i64>, KernelError> {
    Ok(match a.data() {
        ArrayData::Pred(v) => v.iter().map(|&b| i64::from(b)).collect(),
        ArrayData::S8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ArrayData::S16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ArrayData::S32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ArrayData::S64(v) => v.clone(),
        ArrayData::U8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ArrayData::U16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ArrayData::U32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ArrayData::U64(v) => v
            .iter()
            .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
            .collect(),
        _ => {
            return Err(KernelError::Invalid(format!(
                "{what}: expected integer indices, got {}",
                a.element_type()
            )))
        }
    })
}

/// The literal as a list of its leaves: the elements of a tuple, or itself.
pub(crate) fn leaves(lit: Literal) -> Vec<Literal> {
    match lit {
        Literal::Tuple(t) => t,
        other => vec![other],
    }
}

/// Wraps several results as a tuple, a single one as itself when `tuple` is false.
pub(crate) fn wrap_results(mut parts: Vec<Literal>, tuple: bool) -> Literal {
    if !tuple && parts.len() == 1 {
        parts.pop().unwrap_or(Literal::Tuple(Vec::new()))
    } else {
        Literal::Tuple(parts)
    }
}
