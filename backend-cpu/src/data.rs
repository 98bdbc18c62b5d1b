//! Literals to and from buffer bytes: literals hold elements in row-major order, buffers
//! in the physical order of their layout.

use std::borrow::Cow;

use codegen::kir::ScalarType;

use crate::memory::{words_of, Memory};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{Layout, Shape};
use plan::ArraySpec;

/// Whether a layout is the row-major order of its rank.
pub fn is_row_major(minor_to_major: &[i64]) -> bool {
    minor_to_major
        .iter()
        .rev()
        .enumerate()
        .all(|(i, &d)| d == i as i64)
}

/// Moves elements of `elem` bytes between row-major and physical order. `to_physical`
/// chooses the direction.
pub fn permute<'a>(
    bytes: &'a [u8],
    elem: usize,
    dims: &[i64],
    m2m: &[i64],
    to_physical: bool,
) -> Cow<'a, [u8]> {
    if is_row_major(m2m) || dims.len() <= 1 {
        return Cow::Borrowed(bytes);
    }
    let rank = dims.len();
    let mut strides = vec![0usize; rank];
    let mut s = 1usize;
    for &d in m2m {
        strides[d as usize] = s;
        s *= dims[d as usize].max(0) as usize;
    }
    let n: usize = dims.iter().map(|&d| d.max(0) as usize).product();
    let mut out = vec![0u8; n * elem];
    let mut idx = vec![0usize; rank];
    for row in 0..n {
        let phys: usize = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let (src, dst) = if to_physical {
            (row, phys)
        } else {
            (phys, row)
        };
        out[dst * elem..(dst + 1) * elem].copy_from_slice(&bytes[src * elem..(src + 1) * elem]);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if (idx[d] as i64) < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Cow::Owned(out)
}

/// The row-major bytes of a literal of a kernel type (`None` for other storage): borrowed
/// for plain numbers (their native-endian bytes; bytemuck checks the cast), owned for
/// `pred` (one byte per `bool`).
pub fn literal_bytes(a: &ArrayLiteral) -> Option<Cow<'_, [u8]>> {
    let bytes: &[u8] = match a.data() {
        ArrayData::Pred(v) => return Some(Cow::Owned(v.iter().map(|&b| u8::from(b)).collect())),
        ArrayData::S8(v) => bytemuck::cast_slice(v),
        ArrayData::S16(v) => bytemuck::cast_slice(v),
        ArrayData::S32(v) => bytemuck::cast_slice(v),
        ArrayData::S64(v) => bytemuck::cast_slice(v),
        ArrayData::U8(v) | ArrayData::Bits8(v) => v,
        ArrayData::U16(v) | ArrayData::Bits16(v) => bytemuck::cast_slice(v),
        ArrayData::U32(v) => bytemuck::cast_slice(v),
        ArrayData::U64(v) => bytemuck::cast_slice(v),
        ArrayData::F32(v) => bytemuck::cast_slice(v),
        ArrayData::F64(v) => bytemuck::cast_slice(v),
        ArrayData::C64(v) => bytemuck::cast_slice(v),
        ArrayData::C128(v) => bytemuck::cast_slice(v),
    };
    Some(Cow::Borrowed(bytes))
}

/// The physical-order bytes of `a` for `spec`'s layout.
pub fn to_buffer(a: &ArrayLiteral, spec: &ArraySpec) -> Option<Vec<u8>> {
    let bytes = literal_bytes(a)?;
    let w = spec.ty.byte_width() as usize;
    Some(permute(&bytes, w, &spec.dims, &spec.minor_to_major, true).into_owned())
}

/// `a` as a run's parameter memory in `spec`'s layout: the literal's own elements when
/// they are already in that order (no copy; their alignment is the element type's), else
/// aligned words holding the permuted bytes.
pub fn to_memory<'a>(a: &'a ArrayLiteral, spec: &ArraySpec) -> Option<Memory<'a>> {
    let bytes = literal_bytes(a)?;
    let w = spec.ty.byte_width() as usize;
    Some(
        match (
            bytes,
            is_row_major(&spec.minor_to_major) || spec.dims.len() <= 1,
        ) {
            (Cow::Borrowed(b), true) => Memory::Borrowed(b),
            (bytes, _) => Memory::Owned(words_of(&permute(
                &bytes,
                w,
                &spec.dims,
                &spec.minor_to_major,
                true,
            ))),
        },
    )
}

/// A literal of `spec`'s shape from its buffer bytes (physical order).
pub fn from_buffer(bytes: &[u8], spec: &ArraySpec) -> Option<ArrayLiteral> {
    let w = spec.ty.byte_width() as usize;
    let row = permute(bytes, w, &spec.dims, &spec.minor_to_major, false);
    // Native-endian bytes to elements, one copy (bytemuck aligns as it collects).
    fn pod<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
        bytemuck::pod_collect_to_vec(b)
    }
    let data = match spec.ty {
        ScalarType::Pred => ArrayData::Pred(row.iter().map(|&b| b != 0).collect()),
        ScalarType::S8 => ArrayData::S8(pod(&row)),
        ScalarType::S16 => ArrayData::S16(pod(&row)),
        ScalarType::S32 => ArrayData::S32(pod(&row)),
        ScalarType::S64 => ArrayData::S64(pod(&row)),
        ScalarType::U8 => ArrayData::U8(row.into_owned()),
        ScalarType::F8E4M3FN | ScalarType::F8E5M2 => ArrayData::Bits8(row.into_owned()),
        ScalarType::U16 => ArrayData::U16(pod(&row)),
        ScalarType::F16 | ScalarType::BF16 => ArrayData::Bits16(pod(&row)),
        ScalarType::U32 => ArrayData::U32(pod(&row)),
        ScalarType::U64 => ArrayData::U64(pod(&row)),
        ScalarType::F32 => ArrayData::F32(pod(&row)),
        ScalarType::F64 => ArrayData::F64(pod(&row)),
        ScalarType::C64 => ArrayData::C64(pod(&row)),
        ScalarType::C128 => ArrayData::C128(pod(&row)),
    };
    let shape = Shape::array_with(
        spec.element_type,
        spec.dims.clone(),
        vec![],
        Some(Layout::new(spec.minor_to_major.clone())),
    );
    ArrayLiteral::new(shape, data)
}
