//! Reading one `.npy` array from any byte stream with bounded memory: the header first
//! (itself bounded), then exactly the data it announces once that fits the size limit;
//! big-endian data is byte-swapped and Fortran-order data transposed.

use super::header::{self, Header, MAGIC};
use super::NpyError;
use crate::memory::default_size_limit;
use crate::transpose_for_npy;
use hlo::literal::ArrayLiteral;
use hlo::shape::{ElementType, Shape};
use std::io::Read;

/// The longest header accepted (NumPy writes a few hundred bytes and, since 1.24, reads at
/// most 10,000 unless told otherwise).
const MAX_HEADER: usize = 1 << 20;

/// Reads a `.npy` file held in memory into an array literal (NumPy's natural element type:
/// `uint16` for bf16 data; see [`adapt_to`](super::adapt_to)), refusing arrays over the
/// default size limit ([`default_size_limit`]).
pub fn read_npy(bytes: &[u8]) -> Result<ArrayLiteral, NpyError> {
    read_npy_from(bytes, default_size_limit())
}

/// Reads a `.npy` file held in memory; see [`read_npy_from`].
pub fn read_npy_with_limit(bytes: &[u8], limit: u64) -> Result<ArrayLiteral, NpyError> {
    read_npy_from(bytes, limit)
}

/// Reads a `.npy` file from `reader` (a file, a zip member) into an array literal. An array
/// whose header announces more than `limit` bytes of data is [`NpyError::TooLarge`],
/// refused before its buffer is allocated; data shorter or longer than announced is
/// [`NpyError::Size`].
pub fn read_npy_from(mut reader: impl Read, limit: u64) -> Result<ArrayLiteral, NpyError> {
    let h = read_header(&mut reader)?;
    if h.data_bytes > limit {
        return Err(NpyError::TooLarge {
            what: format!("an array of shape {} ({})", h.shape_text, h.descr),
            bytes: h.data_bytes,
            limit,
        });
    }
    // `data_bytes <= limit`, which the caller chose to fit memory; one byte more shows
    // whether the data runs past what the header announces.
    let mut body = Vec::with_capacity(h.data_bytes as usize);
    reader
        .take(h.data_bytes.saturating_add(1))
        .read_to_end(&mut body)
        .map_err(io_error)?;
    if body.len() as u64 != h.data_bytes {
        let have = if body.len() as u64 > h.data_bytes {
            "more".to_string()
        } else {
            body.len().to_string()
        };
        return Err(NpyError::Size(format!(
            "data has {have} bytes, the header ({}, shape {}) needs {}",
            h.descr, h.shape_text, h.data_bytes
        )));
    }
    decode(h, body)
}

fn io_error(e: std::io::Error) -> NpyError {
    NpyError::Io(format!("reading the data failed: {e}"))
}

/// Reads into `buf` until it is full or the reader ends; returns the bytes read.
pub(crate) fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads the magic, version, length and header text, and parses them.
fn read_header(reader: &mut impl Read) -> Result<Header, NpyError> {
    let mut head = vec![0u8; 10];
    let got = read_up_to(reader, &mut head).map_err(io_error)?;
    if got < 10 || &head[..6] != MAGIC {
        return Err(NpyError::NotNpy("missing the \\x93NUMPY magic".into()));
    }
    let hlen = match head[6] {
        1 => usize::from(u16::from_le_bytes([head[8], head[9]])),
        2 | 3 => {
            let mut more = [0u8; 2];
            if read_up_to(reader, &mut more).map_err(io_error)? < 2 {
                return Err(NpyError::NotNpy("truncated header".into()));
            }
            head.extend_from_slice(&more);
            u32::from_le_bytes([head[8], head[9], more[0], more[1]]) as usize
        }
        major => return Err(NpyError::NotNpy(format!("unknown format version {major}"))),
    };
    if hlen > MAX_HEADER {
        return Err(NpyError::NotNpy(format!(
            "a header of {hlen} bytes is longer than the {MAX_HEADER} accepted"
        )));
    }
    let start = head.len();
    head.resize(start + hlen, 0);
    if read_up_to(reader, &mut head[start..]).map_err(io_error)? < hlen {
        return Err(NpyError::NotNpy("truncated header".into()));
    }
    header::parse(&head)
}

/// The array of the element data `body` (exactly as long as the header announces).
fn decode(h: Header, body: Vec<u8>) -> Result<ArrayLiteral, NpyError> {
    let dtype_error = || NpyError::Dtype(h.descr.clone());
    let body = if h.big_endian {
        to_little_endian(h.ty, body).ok_or_else(dtype_error)?
    } else {
        body
    };
    let data = crate::data_from_le_bytes(h.ty, &body).ok_or_else(dtype_error)?;
    drop(body);
    let data = if h.fortran && h.dims.len() > 1 {
        // Column-major: the data is the row-major array of the reversed dims, transposed.
        let rev: Vec<usize> = h.dims.iter().rev().map(|&d| d as usize).collect();
        let perm: Vec<usize> = (0..h.dims.len()).rev().collect();
        transpose_for_npy(&data, &rev, &perm)
            .ok_or_else(|| NpyError::Size("bad Fortran-order data".into()))?
    } else {
        data
    };
    ArrayLiteral::new(Shape::array(h.ty, h.dims), data)
        .ok_or_else(|| NpyError::Size("element count mismatch".into()))
}

/// Big-endian element bytes of type `ty` made little-endian in place: each scalar reversed
/// (the real and imaginary halves of a complex separately). `None` when `ty` has no byte
/// width.
fn to_little_endian(ty: ElementType, mut body: Vec<u8>) -> Option<Vec<u8>> {
    let width = ty.byte_width()? as usize;
    let scalar = if ty.is_complex() { width / 2 } else { width };
    if scalar == 0 {
        return None;
    }
    body.chunks_exact_mut(scalar).for_each(<[u8]>::reverse);
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_scalars_are_reversed() {
        let b = to_little_endian(ElementType::S32, vec![0, 0, 1, 2]).unwrap();
        assert_eq!(b, [2, 1, 0, 0]);
        // A complex swaps its two parts separately, keeping their order.
        let c = to_little_endian(ElementType::C64, vec![1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(c, [4, 3, 2, 1, 8, 7, 6, 5]);
    }
}
