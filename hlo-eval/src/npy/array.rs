//! One `.npy` array: writing, and adapting NumPy's types to a parameter's.

use super::header::{self, type_to_dtype};
use super::NpyError;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};

/// Writes an array as a version 1.0 `.npy` file (C order).
pub fn write_npy(a: &ArrayLiteral) -> Result<Vec<u8>, NpyError> {
    let (mut out, data) = npy_parts(a)?;
    out.extend_from_slice(&data);
    Ok(out)
}

/// The two parts of an array's `.npy` file: its header and its little-endian data.
pub(crate) fn npy_parts(a: &ArrayLiteral) -> Result<(Vec<u8>, Vec<u8>), NpyError> {
    let descr = type_to_dtype(a.element_type())?;
    let head = header::write(descr, a.shape().dims())?;
    Ok((head, crate::data_to_le_bytes(a.data())))
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
