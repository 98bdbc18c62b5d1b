//! Data movement: broadcast, reshape, bitcast (layout-aware), transpose, reverse, slice,
//! dynamic-slice, dynamic-update-slice, concatenate, pad and iota. Each computes a strided
//! [`View`] once and copies with typed loops.

use super::data::{gather_data, make, map_data, row_major_strides, udims, zip_data, View};
use super::EvalError;
use hlo::attrs::{PaddingConfig, SliceDim};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::Literal;

fn strides_of(a: &ArrayLiteral, what: &str) -> Result<(Vec<usize>, Vec<isize>), EvalError> {
    let dims = udims(a.shape(), what)?;
    let strides = row_major_strides(&dims)
        .into_iter()
        .map(|s| s as isize)
        .collect();
    Ok((dims, strides))
}

/// `broadcast` with `dimensions` mapping operand dimensions to result dimensions.
pub(crate) fn broadcast(
    a: &ArrayLiteral,
    dims_map: &[i64],
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let (in_dims, in_strides) = strides_of(a, what)?;
    let out_dims = udims(shape, what)?;
    if dims_map.len() != in_dims.len() {
        return Err(EvalError::invalid(
            what,
            "broadcast dimensions do not match the operand rank",
        ));
    }
    let mut strides = vec![0isize; out_dims.len()];
    for (i, &d) in dims_map.iter().enumerate() {
        let d = usize::try_from(d)
            .ok()
            .filter(|&d| d < out_dims.len() && out_dims[d] == in_dims[i]);
        let d = d.ok_or_else(|| EvalError::invalid(what, "bad broadcast dimension"))?;
        strides[d] = in_strides[i];
    }
    let view = View {
        dims: out_dims,
        strides,
        offset: 0,
    };
    make(shape, gather_data(a.data(), &view, what)?, what)
}

/// `reshape` (row-major reinterpretation of the element order).
pub(crate) fn reshape(a: &ArrayLiteral, shape: &Shape, what: &str) -> Result<Literal, EvalError> {
    make(shape, a.data().clone(), what)
}

/// `transpose` with `perm`: result dimension `i` is operand dimension `perm[i]`.
pub(crate) fn transpose_data(
    data: &ArrayData,
    in_dims: &[usize],
    perm: &[usize],
    what: &str,
) -> Result<ArrayData, EvalError> {
    let in_strides = row_major_strides(in_dims);
    if perm.len() != in_dims.len() || perm.iter().any(|&p| p >= in_dims.len()) {
        return Err(EvalError::invalid(what, "bad permutation"));
    }
    let view = View {
        dims: perm.iter().map(|&p| in_dims[p]).collect(),
        strides: perm.iter().map(|&p| in_strides[p] as isize).collect(),
        offset: 0,
    };
    gather_data(data, &view, what)
}

fn perm_of(dims: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, EvalError> {
    let mut seen = vec![false; rank];
    dims.iter()
        .map(|&d| {
            let d = usize::try_from(d).ok().filter(|&d| d < rank && !seen[d]);
            let d =
                d.ok_or_else(|| EvalError::invalid(what, "dimensions are not a permutation"))?;
            seen[d] = true;
            Ok(d)
        })
        .collect()
}

/// `transpose`.
pub(crate) fn transpose(
    a: &ArrayLiteral,
    dims: &[i64],
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let in_dims = udims(a.shape(), what)?;
    let perm = perm_of(dims, in_dims.len(), what)?;
    make(
        shape,
        transpose_data(a.data(), &in_dims, &perm, what)?,
        what,
    )
}

/// Physical (major-to-minor) dimension order of a shape's layout; row-major without one.
fn major_to_minor(shape: &Shape, what: &str) -> Result<Vec<usize>, EvalError> {
    let rank = shape.rank();
    match shape.layout() {
        Some(l) if !l.minor_to_major.is_empty() || rank == 0 => {
            let m2m = perm_of(&l.minor_to_major, rank, what)?;
            if m2m.len() != rank {
                return Err(EvalError::invalid(what, "layout does not match the rank"));
            }
            Ok(m2m.into_iter().rev().collect())
        }
        _ => Ok((0..rank).collect()),
    }
}

/// `bitcast`: the operand's bytes in its physical layout, read back in the result's
/// physical layout (a reshape when both layouts are row-major).
pub(crate) fn bitcast(
    a: &ArrayLiteral,
    from: &Shape,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    if shape.element_type() != Some(a.element_type()) {
        let conv = super::convert::bitcast_convert(a, shape, what);
        return conv
            .map_err(|_| EvalError::invalid(what, "bitcast between different element types"));
    }
    let in_dims = udims(a.shape(), what)?;
    let out_dims = udims(shape, what)?;
    if from.dims() != a.shape().dims() {
        return Err(EvalError::invalid(
            what,
            "operand value does not match its shape",
        ));
    }
    let in_order = major_to_minor(from, what)?;
    let out_order = major_to_minor(shape, what)?;
    // Logical -> physical for the operand.
    let physical = transpose_data(a.data(), &in_dims, &in_order, what)?;
    // Physical -> logical for the result: the physical array has dims out_dims[out_order[k]];
    // logical dimension d is physical position inv[d].
    let phys_dims: Vec<usize> = out_order.iter().map(|&d| out_dims[d]).collect();
    let mut inv = vec![0usize; out_order.len()];
    for (k, &d) in out_order.iter().enumerate() {
        inv[d] = k;
    }
    let logical = transpose_data(&physical, &phys_dims, &inv, what)?;
    make(shape, logical, what)
}

/// `reverse` along `dims`.
pub(crate) fn reverse(
    a: &ArrayLiteral,
    dims: &[i64],
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let (in_dims, mut strides) = strides_of(a, what)?;
    let mut offset = 0isize;
    for &d in dims {
        let d = usize::try_from(d).ok().filter(|&d| d < in_dims.len());
        let d = d.ok_or_else(|| EvalError::invalid(what, "bad reverse dimension"))?;
        if in_dims[d] > 0 {
            offset += strides[d] * (in_dims[d] as isize - 1);
        }
        strides[d] = -strides[d];
    }
    let view = View {
        dims: in_dims,
        strides,
        offset,
    };
    make(shape, gather_data(a.data(), &view, what)?, what)
}

/// `slice` with `[start:limit:stride]` per dimension.
pub(crate) fn slice(
    a: &ArrayLiteral,
    sl: &[SliceDim],
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let (in_dims, in_strides) = strides_of(a, what)?;
    if sl.len() != in_dims.len() {
        return Err(EvalError::invalid(
            what,
            "slice rank does not match the operand",
        ));
    }
    let mut dims = Vec::with_capacity(sl.len());
    let mut strides = Vec::with_capacity(sl.len());
    let mut offset = 0isize;
    for (i, s) in sl.iter().enumerate() {
        if s.start < 0 || s.limit < s.start || s.limit as usize > in_dims[i] || s.stride < 1 {
            return Err(EvalError::invalid(
                what,
                format!(
                    "slice [{}:{}:{}] is out of bounds",
                    s.start, s.limit, s.stride
                ),
            ));
        }
        let n = (s.limit - s.start + s.stride - 1) / s.stride;
        dims.push(n as usize);
        strides.push(in_strides[i] * s.stride as isize);
        offset += in_strides[i] * s.start as isize;
    }
    let view = View {
        dims,
        strides,
        offset,
    };
    make(shape, gather_data(a.data(), &view, what)?, what)
}

/// Scalar integer index values (any integer type) from the start-index operands.
fn start_indices(idx: &[&ArrayLiteral], what: &str) -> Result<Vec<i64>, EvalError> {
    idx.iter()
        .map(|a| {
            let v = match a.data() {
                ArrayData::S8(v) => v.first().map(|&x| i64::from(x)),
                ArrayData::S16(v) => v.first().map(|&x| i64::from(x)),
                ArrayData::S32(v) => v.first().map(|&x| i64::from(x)),
                ArrayData::S64(v) => v.first().copied(),
                ArrayData::U8(v) => v.first().map(|&x| i64::from(x)),
                ArrayData::U16(v) => v.first().map(|&x| i64::from(x)),
                ArrayData::U32(v) => v.first().map(|&x| i64::from(x)),
                ArrayData::U64(v) => v.first().map(|&x| x.min(i64::MAX as u64) as i64),
                _ => None,
            };
            v.ok_or_else(|| EvalError::invalid(what, "start indices must be integer scalars"))
        })
        .collect()
}

/// `dynamic-slice`: starts clamped to `[0, dim - size]`.
pub(crate) fn dynamic_slice(
    a: &ArrayLiteral,
    idx: &[&ArrayLiteral],
    sizes: &[i64],
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let (in_dims, in_strides) = strides_of(a, what)?;
    let starts = start_indices(idx, what)?;
    if starts.len() != in_dims.len() || sizes.len() != in_dims.len() {
        return Err(EvalError::invalid(
            what,
            "dynamic-slice needs one start index and size per dimension",
        ));
    }
    let mut offset = 0isize;
    let mut dims = Vec::with_capacity(sizes.len());
    for i in 0..in_dims.len() {
        let size = sizes[i];
        if size < 0 || size as usize > in_dims[i] {
            return Err(EvalError::invalid(
                what,
                "dynamic slice size exceeds the operand",
            ));
        }
        let start = starts[i].clamp(0, in_dims[i] as i64 - size);
        offset += in_strides[i] * start as isize;
        dims.push(size as usize);
    }
    let view = View {
        dims,
        strides: in_strides,
        offset,
    };
    make(shape, gather_data(a.data(), &view, what)?, what)
}

/// `dynamic-update-slice`: starts clamped to `[0, dim - update_dim]`. Takes the operand by
/// value so that it is updated in place.
pub(crate) fn dynamic_update_slice(
    a: ArrayLiteral,
    upd: &ArrayLiteral,
    idx: &[&ArrayLiteral],
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let (in_dims, in_strides) = strides_of(&a, what)?;
    let up_dims = udims(upd.shape(), what)?;
    let starts = start_indices(idx, what)?;
    if starts.len() != in_dims.len() || up_dims.len() != in_dims.len() {
        return Err(EvalError::invalid(
            what,
            "dynamic-update-slice needs one start index per dimension",
        ));
    }
    let mut offset = 0isize;
    for i in 0..in_dims.len() {
        if up_dims[i] > in_dims[i] {
            return Err(EvalError::invalid(
                what,
                "update is larger than the operand",
            ));
        }
        let start = starts[i].clamp(0, (in_dims[i] - up_dims[i]) as i64);
        offset += in_strides[i] * start as isize;
    }
    let view = View {
        dims: up_dims,
        strides: in_strides,
        offset,
    };
    let mismatch = EvalError::invalid(what, "update type differs from the operand");
    let mut data = a.data().clone();
    drop(a);
    scatter_into(&mut data, upd.data(), &view, mismatch, what)?;
    make(shape, data, what)
}

/// Writes `src` through `view` into `dst` (same storage variant).
fn scatter_into(
    dst: &mut ArrayData,
    src: &ArrayData,
    view: &View,
    mismatch: EvalError,
    what: &str,
) -> Result<(), EvalError> {
    macro_rules! go {
        ($($v:ident),*) => {
            match (dst, src) {
                $((ArrayData::$v(d), ArrayData::$v(s)) => view.scatter(d, s, what),)*
                _ => Err(mismatch),
            }
        };
    }
    go!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, Bits16, Bits8, F32, F64, C64, C128)
}

/// `concatenate` along `dim`.
pub(crate) fn concatenate(
    ops: &[&ArrayLiteral],
    dim: i64,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let out_dims = udims(shape, what)?;
    let d = usize::try_from(dim).ok().filter(|&d| d < out_dims.len());
    let d = d.ok_or_else(|| EvalError::invalid(what, "bad concatenate dimension"))?;
    let first = ops
        .first()
        .ok_or_else(|| EvalError::invalid(what, "concatenate needs operands"))?;
    let n: usize = out_dims.iter().product();
    let mut data = ArrayData::new(first.element_type())
        .ok_or_else(|| EvalError::invalid(what, "concatenate of tokens"))?;
    data = map_data!(&data, _v => Vec::with_capacity(n));
    // Build by rows: the result is `outer` blocks, each the concatenation of each operand's
    // block of `dim_i * inner` elements.
    let outer: usize = out_dims[..d].iter().product();
    let inner: usize = out_dims[d + 1..].iter().product();
    let mut total = 0;
    for op in ops {
        let od = udims(op.shape(), what)?;
        if od.len() != out_dims.len()
            || od
                .iter()
                .enumerate()
                .any(|(i, &x)| i != d && x != out_dims[i])
        {
            return Err(EvalError::invalid(
                what,
                "concatenate operand shapes do not match",
            ));
        }
        total += od[d];
    }
    if total != out_dims[d] {
        return Err(EvalError::invalid(
            what,
            "concatenate result size does not match",
        ));
    }
    for o in 0..outer {
        for op in ops {
            let block = op.shape().dims()[d] as usize * inner;
            let mismatch = EvalError::invalid(what, "concatenate operand types differ");
            let src = op.data();
            macro_rules! ext {
                ($($v:ident),*) => {
                    match (&mut data, src) {
                        $((ArrayData::$v(dst), ArrayData::$v(s)) => dst.extend_from_slice(&s[o * block..(o + 1) * block]),)*
                        _ => return Err(mismatch),
                    }
                };
            }
            ext!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, Bits16, Bits8, F32, F64, C64, C128);
        }
    }
    make(shape, data, what)
}

/// `pad` with low/high (possibly negative) and interior padding.
pub(crate) fn pad(
    a: &ArrayLiteral,
    value: &ArrayLiteral,
    cfg: &PaddingConfig,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let in_dims = udims(a.shape(), what)?;
    let out_dims = udims(shape, what)?;
    if cfg.dims.len() != in_dims.len() || out_dims.len() != in_dims.len() || value.data().len() != 1
    {
        return Err(EvalError::invalid(
            what,
            "padding config does not match the operand",
        ));
    }
    let n: usize = out_dims.iter().product();
    // Per dimension: result position of each operand index, or None when cut off.
    let mut pos: Vec<Vec<Option<usize>>> = Vec::with_capacity(in_dims.len());
    for (i, p) in cfg.dims.iter().enumerate() {
        if p.interior < 0 {
            return Err(EvalError::invalid(what, "negative interior padding"));
        }
        let expect =
            p.low + p.high + in_dims[i] as i64 + (in_dims[i] as i64 - 1).max(0) * p.interior;
        if expect != out_dims[i] as i64 {
            return Err(EvalError::invalid(
                what,
                "padding does not give the result shape",
            ));
        }
        pos.push(
            (0..in_dims[i] as i64)
                .map(|k| {
                    let q = p.low + k * (p.interior + 1);
                    (q >= 0 && q < out_dims[i] as i64).then_some(q as usize)
                })
                .collect(),
        );
    }
    let out_strides = row_major_strides(&out_dims);
    // Result positions of every operand element (None when cut off), row-major.
    let mut targets: Vec<Option<usize>> = Vec::with_capacity(a.data().len());
    let mut idx = vec![0usize; in_dims.len()];
    for _ in 0..a.data().len() {
        let mut t = Some(0usize);
        for d in 0..idx.len() {
            t = match (t, pos[d][idx[d]]) {
                (Some(t), Some(q)) => Some(t + q * out_strides[d]),
                _ => None,
            };
        }
        targets.push(t);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < in_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let mismatch = EvalError::invalid(what, "padding value type differs from the operand");
    let data = zip_data!(a.data(), value.data(), src, pv => {
        let mut out = vec![pv[0]; n];
        for (k, t) in targets.iter().enumerate() {
            if let Some(t) = t {
                out[*t] = src[k];
            }
        }
        out
    }, mismatch);
    make(shape, data, what)
}

/// `iota` along `dim`.
pub(crate) fn iota(shape: &Shape, dim: i64, what: &str) -> Result<Literal, EvalError> {
    let dims = udims(shape, what)?;
    let d = usize::try_from(dim).ok().filter(|&d| d < dims.len());
    let d = d.ok_or_else(|| EvalError::invalid(what, "bad iota dimension"))?;
    let ty = shape.element_type().unwrap_or(ElementType::F32);
    let n: usize = dims.iter().product();
    let inner: usize = dims[d + 1..].iter().product();
    let values: Vec<i64> = (0..n)
        .map(|i| ((i / inner.max(1)) % dims[d].max(1)) as i64)
        .collect();
    let index = ArrayLiteral::new(
        Shape::array(ElementType::S64, shape.dims().to_vec()),
        ArrayData::S64(values),
    )
    .ok_or_else(|| EvalError::invalid(what, "internal: iota"))?;
    if ty == ElementType::S64 {
        return make(shape, index.data().clone(), what);
    }
    super::convert::convert(&index, shape, what)
}
