//! The `.npy` header: magic, version, the `{'descr': ..., 'fortran_order': ..., 'shape':
//! ...}` dict, and the dtype strings hloc maps to element types.

use super::NpyError;
use hlo::shape::ElementType;

/// The first six bytes of every `.npy` file.
pub(crate) const MAGIC: &[u8] = b"\x93NUMPY";

/// What a `.npy` header says about the data that follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// The dtype as written (`<f4`), for messages.
    pub descr: String,
    /// The element type the dtype maps to.
    pub ty: ElementType,
    /// True when the elements are stored big-endian (`>f4`) and need byte-swapping.
    pub big_endian: bool,
    /// Column-major element order.
    pub fortran: bool,
    /// The dimensions.
    pub dims: Vec<i64>,
    /// The shape as written (`(2, 3)`), for messages.
    pub shape_text: String,
    /// Bytes of element data the header announces (elements times width).
    pub data_bytes: u64,
}

/// The element type of a NumPy dtype string (`<f4`, `>i8`, `|b1`, ...) and whether its
/// bytes are big-endian.
fn dtype_to_type(descr: &str) -> Result<(ElementType, bool), NpyError> {
    let (order, code) = descr.split_at(descr.len().min(1));
    let big_endian = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return Err(NpyError::Dtype(format!("'{descr}'"))),
    };
    let ty = match code {
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
        // Raw bytes: what NumPy writes for ml_dtypes' bfloat16 and float8 types (`<V2`,
        // `|V1`), read as their bit patterns (a bf16 or f8 parameter takes them as such).
        "V2" => ElementType::U16,
        "V1" => ElementType::U8,
        "O" => {
            return Err(NpyError::Dtype(format!(
                "'{descr}' (Python objects, which hloc cannot read: save a numeric array, \
                 e.g. np.asarray(x, dtype=np.float32))"
            )))
        }
        _ => return Err(NpyError::Dtype(format!("'{descr}'"))),
    };
    // `=` is the writer's native order; every platform hloc runs on is little-endian.
    Ok((ty, big_endian))
}

/// The NumPy dtype string an element type is written as (bit patterns for the types
/// NumPy lacks).
pub(crate) fn type_to_dtype(ty: ElementType) -> Result<&'static str, NpyError> {
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

/// Parses the magic, version, length and header text at the start of `bytes`.
pub(crate) fn parse(bytes: &[u8]) -> Result<Header, NpyError> {
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
    let (ty, big_endian) = dtype_to_type(descr)?;
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
    let bad_shape = || NpyError::NotNpy(format!("bad shape {shape_text}"));
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(bad_shape)?;
    let dims = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<i64>()
                .ok()
                .filter(|&d| d >= 0)
                .ok_or_else(bad_shape)
        })
        .collect::<Result<Vec<i64>, _>>()?;
    let width = u64::from(ty.byte_width().unwrap_or(1));
    let data_bytes = dims
        .iter()
        .try_fold(width, |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(|| {
            NpyError::NotNpy(format!(
                "shape {shape_text} of {descr} holds more than 2^64 bytes"
            ))
        })?;
    Ok(Header {
        descr: descr.to_string(),
        ty,
        big_endian,
        fortran,
        dims,
        shape_text: shape_text.to_string(),
        data_bytes,
    })
}

/// A version 1.0 header for a C-order array of `dims` with dtype `descr`, padded so that
/// the data starts at a multiple of 64 bytes (NumPy's readers expect that).
pub(crate) fn write(descr: &str, dims: &[i64]) -> Result<Vec<u8>, NpyError> {
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
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let hlen = u16::try_from(header.len()).map_err(|_| NpyError::Size("header too long".into()))?;
    let mut out = Vec::with_capacity(10 + header.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&hlen.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_map_with_their_byte_order() {
        assert_eq!(dtype_to_type("<f4"), Ok((ElementType::F32, false)));
        assert_eq!(dtype_to_type(">i8"), Ok((ElementType::S64, true)));
        assert_eq!(dtype_to_type("|b1"), Ok((ElementType::Pred, false)));
        assert_eq!(dtype_to_type("=u2"), Ok((ElementType::U16, false)));
        assert!(dtype_to_type("<U3").is_err());
        assert!(dtype_to_type("f4").is_err());
    }

    #[test]
    fn headers_round_trip() {
        let h = write("<c8", &[2, 0, 3]).unwrap();
        assert_eq!(h.len() % 64, 0);
        let p = parse(&h).unwrap();
        assert_eq!(
            (p.ty, p.dims, p.data_bytes),
            (ElementType::C64, vec![2, 0, 3], 0)
        );
    }
}
