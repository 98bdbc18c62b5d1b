//! Literals to and from buffer bytes: literals hold elements in row-major order, buffers
//! in the physical order of their layout.

use codegen::kir::ScalarType;
use codegen::thunk::ArraySpec;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{Layout, Shape};

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
pub fn permute(bytes: &[u8], elem: usize, dims: &[i64], m2m: &[i64], to_physical: bool) -> Vec<u8> {
    if is_row_major(m2m) || dims.len() <= 1 {
        return bytes.to_vec();
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
    out
}

/// The row-major bytes of a literal of a kernel type (`None` for other storage).
pub fn literal_bytes(a: &ArrayLiteral) -> Option<Vec<u8>> {
    fn flat<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    Some(match a.data() {
        ArrayData::Pred(v) => v.iter().map(|&b| u8::from(b)).collect(),
        ArrayData::S8(v) => flat(v, i8::to_ne_bytes),
        ArrayData::S16(v) => flat(v, i16::to_ne_bytes),
        ArrayData::S32(v) => flat(v, i32::to_ne_bytes),
        ArrayData::S64(v) => flat(v, i64::to_ne_bytes),
        ArrayData::U8(v) => v.clone(),
        ArrayData::U16(v) | ArrayData::Bits16(v) => flat(v, u16::to_ne_bytes),
        ArrayData::U32(v) => flat(v, u32::to_ne_bytes),
        ArrayData::U64(v) => flat(v, u64::to_ne_bytes),
        ArrayData::F32(v) => flat(v, f32::to_ne_bytes),
        ArrayData::F64(v) => flat(v, f64::to_ne_bytes),
        ArrayData::C64(v) => v
            .iter()
            .flat_map(|c| c.iter().flat_map(|x| x.to_ne_bytes()))
            .collect(),
        ArrayData::C128(v) => v
            .iter()
            .flat_map(|c| c.iter().flat_map(|x| x.to_ne_bytes()))
            .collect(),
        ArrayData::Bits8(v) => v.clone(),
    })
}

/// The physical-order bytes of a literal laid out as `spec`.
pub fn to_buffer(a: &ArrayLiteral, spec: &ArraySpec) -> Option<Vec<u8>> {
    let bytes = literal_bytes(a)?;
    Some(permute(
        &bytes,
        spec.ty.byte_width() as usize,
        &spec.dims,
        &spec.minor_to_major,
        true,
    ))
}

/// A literal of `spec`'s shape from its buffer bytes (physical order).
pub fn from_buffer(bytes: &[u8], spec: &ArraySpec) -> Option<ArrayLiteral> {
    let w = spec.ty.byte_width() as usize;
    let row = permute(bytes, w, &spec.dims, &spec.minor_to_major, false);
    fn chunks<T, const N: usize>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        b.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    let data = match spec.ty {
        ScalarType::Pred => ArrayData::Pred(row.iter().map(|&b| b != 0).collect()),
        ScalarType::S8 => ArrayData::S8(chunks(&row, i8::from_ne_bytes)),
        ScalarType::S16 => ArrayData::S16(chunks(&row, i16::from_ne_bytes)),
        ScalarType::S32 => ArrayData::S32(chunks(&row, i32::from_ne_bytes)),
        ScalarType::S64 => ArrayData::S64(chunks(&row, i64::from_ne_bytes)),
        ScalarType::U8 => ArrayData::U8(row),
        ScalarType::F8E4M3FN | ScalarType::F8E5M2 => ArrayData::Bits8(row),
        ScalarType::U16 => ArrayData::U16(chunks(&row, u16::from_ne_bytes)),
        ScalarType::F16 | ScalarType::BF16 => ArrayData::Bits16(chunks(&row, u16::from_ne_bytes)),
        ScalarType::U32 => ArrayData::U32(chunks(&row, u32::from_ne_bytes)),
        ScalarType::U64 => ArrayData::U64(chunks(&row, u64::from_ne_bytes)),
        ScalarType::F32 => ArrayData::F32(chunks(&row, f32::from_ne_bytes)),
        ScalarType::F64 => ArrayData::F64(chunks(&row, f64::from_ne_bytes)),
        ScalarType::C64 => ArrayData::C64(
            chunks(&row, f32::from_ne_bytes)
                .chunks_exact(2)
                .map(|c| [c[0], c[1]])
                .collect(),
        ),
        ScalarType::C128 => ArrayData::C128(
            chunks(&row, f64::from_ne_bytes)
                .chunks_exact(2)
                .map(|c| [c[0], c[1]])
                .collect(),
        ),
    };
    let shape = Shape::array_with(
        spec.element_type,
        spec.dims.clone(),
        vec![],
        Some(Layout::new(spec.minor_to_major.clone())),
    );
    ArrayLiteral::new(shape, data)
}
