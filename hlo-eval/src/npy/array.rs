//! One `.npy` array: header parsing and writing, dtype mapping.

use super::NpyError;
use crate::transpose_for_npy;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};

const MAGIC: &[u8] = b"\x93NUMPY";

/// The element type a NumPy dtype string (`<f4`, `|b1`, ...) maps to.
fn dtype_to_type(descr: &str) -> Result<ElementType, NpyError> {
    let (order, code) = descr.split_at(descr.len().min(1));
    if order == ">" && !matches!(code, "i1" | "u1" | "b1") {
        return Err(NpyError::Dtype(format!(
            "'{descr}' (big-endian data is not supported)"
        )));
    }
    if !matches!(order, "<" | "|" | "=" | ">") {
        return Err(NpyError::Dtype(format!("'{descr}'")));
    }
    Ok(match code {
        "b1" => ElementType::Pred,
        "i1" => ElementType::S8,
        "i2" => ElementType::S16,
        "i4" => ElementType::S32,
        "i8" => ElementType::S64,
        "u1" => ElementType::U8,
        "u2" => ElementType::U16,
        "u4" => ElementType::U32,
        "u8" => ElementType::U64,
        "f2" => ElementType::F16,
        "f4" => ElementType::F32,
        "f8" => ElementType::F64,
        "c8" => ElementType::C64,
        "c16" => ElementType::C128,
        _ => return Err(NpyError::Dtype(format!("'{descr}'"))),
    })
}

/// The NumPy dtype string an element type is written as (bit patterns for the types
/// NumPy lacks).
fn type_to_dtype(ty: ElementType) -> Result<&'static str, NpyError> {
    use ElementType as T;
    Ok(match ty {
        T::Pred => "|b1",
        T::S1 | T::S2 | T::S4 | T::S8 => "|i1",
        T::S16 => "<i2",
        T::S32 => "<i4",
        T::S64 => "<i8",
        T::U1 | T::U2 | T::U4 | T::U8 => "|u1",
        T::U16 | T::BF16 => "<u2",
        T::U32 => "<u4",
        T::U64 => "<u8",
        T::F16 => "<f2",
        T::F32 => "<f4",
        T::F64 => "<f8",
        T::C64 => "<c8",
        T::C128 => "<c16",
        T::Token | T::Opaque => return Err(NpyError::Dtype(ty.to_string())),
        _ => "|u1", // f8 and f4 types: bit patterns
    })
}

/// The value of `'key': value` in a NumPy header dict (value up to the next top-level
/// comma or closing brace).
fn header_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}'");
    let start = header.find(&pat)? + pat.len();
    let rest = header[start..].trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, ch) in rest.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}

/// Reads a `.npy` file into an array literal (NumPy's natural element type: `uint16` for
/// bf16 data; see [`adapt_to`]).
pub fn read_npy(bytes: &[u8]) -> Result<ArrayLiteral, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(NpyError::NotNpy("missing the \\x93NUMPY magic".into()));
    }
    let major = bytes[6];
    let (hlen, start) = match major {
        1 => (
            usize::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            10usize,
        ),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err(NpyError::NotNpy(format!("unknown format version {major}"))),
    };
    let end = start
        .checked_add(hlen)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| NpyError::NotNpy("truncated header".into()))?;
    let header = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| NpyError::NotNpy("header is not text".into()))?;
    let descr = header_value(header, "descr")
        .ok_or_else(|| NpyError::NotNpy("header has no 'descr'".into()))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let ty = dtype_to_type(descr)?;
    let fortran = match header_value(header, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        _ => {
            return Err(NpyError::NotNpy(
                "header has no valid 'fortran_order'".into(),
            ))
        }
    };
    let shape_text = header_value(header, "shape")
        .ok_or_else(|| NpyError::NotNpy("header has no 'shape'".into()))?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| NpyError::NotNpy(format!("bad shape {shape_text}")))?;
    let dims = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<i64>()
                .map_err(|_| NpyError::NotNpy(format!("bad shape {shape_text}")))
        })
        .collect::<Result<Vec<i64>, _>>()?;
    let count = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
        .ok_or_else(|| NpyError::NotNpy(format!("bad shape {shape_text}")))?;
    let width = u64::from(ty.byte_width().unwrap_or(1));
    let body = &bytes[end..];
    let need = count
        .checked_mul(width)
        .ok_or_else(|| NpyError::Size("array is too large".into()))?;
    if body.len() as u64 != need {
        return Err(NpyError::Size(format!(
            "data has {} bytes, the header ({descr}, shape {shape_text}) needs {need}",
            body.len()
        )));
    }
    let data =
        crate::data_from_le_bytes(ty, body).ok_or_else(|| NpyError::Dtype(descr.to_string()))?;
    let data = if fortran && dims.len() > 1 {
        // Column-major: the data is the row-major array of the reversed dims, transposed.
        let rev: Vec<usize> = dims.iter().rev().map(|&d| d as usize).collect();
        let perm: Vec<usize> = (0..dims.len()).rev().collect();
        transpose_for_npy(&data, &rev, &perm)
            .ok_or_else(|| NpyError::Size("bad Fortran-order data".into()))?
    } else {
        data
    };
    ArrayLiteral::new(Shape::array(ty, dims), data)
        .ok_or_else(|| NpyError::Size("element count mismatch".into()))
}

/// Writes an array as a version 1.0 `.npy` file (C order).
pub fn write_npy(a: &ArrayLiteral) -> Result<Vec<u8>, NpyError> {
    let ty = a.element_type();
    let descr = type_to_dtype(ty)?;
    let dims = a.shape().dims();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!(
            "({})",
            dims.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad so that the data starts at a multiple of 64 bytes, ending with a newline.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let hlen = u16::try_from(header.len()).map_err(|_| NpyError::Size("header too long".into()))?;
    let mut out = Vec::with_capacity(10 + header.len() + a.data().len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&hlen.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&crate::data_to_le_bytes(a.data()));
    Ok(out)
}

/// Reinterprets an array read from a `.npy` file as the element type and dimensions of
/// `target`: the same type is taken as is; `uint16` becomes `bf16` and `uint8` an `f8`
/// type bit for bit; `int8`/`uint8` become sub-byte integers when every value fits.
/// `name` names the array in errors.
pub fn adapt_to(a: ArrayLiteral, target: &Shape, name: &str) -> Result<ArrayLiteral, NpyError> {
    let want = target.element_type().ok_or_else(|| {
        NpyError::Mismatch(format!("{name}: the parameter is not an array ({target})"))
    })?;
    let have = a.element_type();
    let dims_ok = a.shape().dims() == target.dims();
    let mismatch = || {
        NpyError::Mismatch(format!(
            "{name}: expected {}, got {} (as {})",
            target.to_string_without_layout(),
            a.shape().to_string_without_layout(),
            type_to_dtype(have).unwrap_or("?")
        ))
    };
    if !dims_ok {
        return Err(mismatch());
    }
    let shape = Shape::array(want, target.dims().to_vec());
    let data = match (a.data(), want) {
        _ if have == want => a.data().clone(),
        (ArrayData::U16(v), ElementType::BF16 | ElementType::F16) => ArrayData::Bits16(v.clone()),
        (ArrayData::U8(v), t) if t.is_float() && t.bit_width().is_some_and(|b| b <= 8) => {
            ArrayData::Bits8(v.clone())
        }
        (ArrayData::S8(v), ElementType::S1 | ElementType::S2 | ElementType::S4) => {
            let b = want.bit_width().unwrap_or(8);
            let lo = -(1i16 << (b - 1));
            let hi = (1i16 << (b - 1)) - 1;
            if v.iter().any(|&x| i16::from(x) < lo || i16::from(x) > hi) {
                return Err(NpyError::Mismatch(format!(
                    "{name}: values out of range for {want}"
                )));
            }
            ArrayData::S8(v.clone())
        }
        (ArrayData::U8(v), ElementType::U1 | ElementType::U2 | ElementType::U4) => {
            let b = want.bit_width().unwrap_or(8);
            if v.iter().any(|&x| u16::from(x) >= 1 << b) {
                return Err(NpyError::Mismatch(format!(
                    "{name}: values out of range for {want}"
                )));
            }
            ArrayData::U8(v.clone())
        }
        _ => return Err(mismatch()),
    };
    ArrayLiteral::new(shape, data).ok_or_else(mismatch)
}
