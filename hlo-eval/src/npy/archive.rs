//! `.npz` files: zip archives of `.npy` members, read and written with the `zip` crate.
//! Reading takes stored and deflated members (`np.savez`, `np.savez_compressed`) and keeps
//! memory bounded: every member's declared size is checked against the size limit before
//! its buffer is allocated, and no member may yield more bytes than it declares.

use super::array::npy_parts;
use super::reader::{read_npy_from, read_up_to};
use super::NpyError;
use crate::memory::default_size_limit;
use hlo::literal::ArrayLiteral;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use zip::result::ZipError;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

/// The signatures a zip file starts with: a local file header, or the end of the central
/// directory of an empty archive.
const ZIP_SIGNATURES: [&[u8; 4]; 2] = [b"PK\x03\x04", b"PK\x05\x06"];

fn not_npz(e: ZipError) -> NpyError {
    NpyError::NotNpz(e.to_string())
}

/// Reads every `.npy` member of an `.npz` archive held in memory, in archive order; keys
/// drop the `.npy` suffix. Arrays over the default size limit
/// ([`default_size_limit`]) are refused.
pub fn read_npz(bytes: &[u8]) -> Result<Vec<(String, ArrayLiteral)>, NpyError> {
    read_npz_from(Cursor::new(bytes), default_size_limit())
}

/// Reads every `.npy` member of an `.npz` archive from `reader` (a file, say), in archive
/// order; keys drop the `.npy` suffix. The arrays together may hold at most `limit` bytes:
/// a member whose declared size (in the zip directory, then in its own `.npy` header)
/// exceeds what is left is [`NpyError::TooLarge`] before its buffer is allocated.
pub fn read_npz_from<R: Read + Seek>(
    mut reader: R,
    limit: u64,
) -> Result<Vec<(String, ArrayLiteral)>, NpyError> {
    let mut magic = [0u8; 4];
    let got = read_up_to(&mut reader, &mut magic).map_err(|e| NpyError::Io(e.to_string()))?;
    if got < 4 || !ZIP_SIGNATURES.contains(&&magic) {
        return Err(NpyError::NotNpz("missing the zip signature".into()));
    }
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| NpyError::Io(e.to_string()))?;
    let mut archive = ZipArchive::new(reader).map_err(|e| match e {
        ZipError::InvalidArchive(m) if m.contains("EOCD") => NpyError::NotNpz(
            "no end-of-central-directory record (the file is truncated or not a zip archive)"
                .into(),
        ),
        e => not_npz(e),
    })?;
    let mut out = Vec::with_capacity(archive.len().min(1024));
    let mut used = 0u64;
    for i in 0..archive.len() {
        let (name, size, method, is_dir) = {
            let raw = archive.by_index_raw(i).map_err(not_npz)?;
            (
                raw.name().to_string(),
                raw.size(),
                raw.compression(),
                raw.is_dir(),
            )
        };
        if is_dir {
            continue;
        }
        if !matches!(
            method,
            CompressionMethod::Stored | CompressionMethod::Deflated
        ) {
            return Err(NpyError::NotNpz(format!(
                "member {name} uses compression method {method}; only stored and deflated \
                 members (np.savez, np.savez_compressed) are supported"
            )));
        }
        if size > limit.saturating_sub(used) {
            let what = if used == 0 {
                format!("member {name}")
            } else {
                format!("member {name} with the members before it")
            };
            return Err(NpyError::TooLarge {
                what,
                bytes: used.saturating_add(size),
                limit,
            });
        }
        let member_error = |m: String| NpyError::NotNpz(format!("member {name}: {m}"));
        let mut file = archive
            .by_index(i)
            .map_err(|e| member_error(e.to_string()))?;
        // The member's own header is checked against what the members before it left;
        // reading stops one byte past the data it announces, which also verifies the CRC.
        let arr = match read_npy_from(&mut file, limit.saturating_sub(used)) {
            Ok(arr) => arr,
            Err(NpyError::TooLarge { what, bytes, limit }) => {
                return Err(NpyError::TooLarge {
                    what: format!("member {name}: {what}"),
                    bytes,
                    limit,
                })
            }
            Err(e) => {
                // A damaged member shows as a bad header as often as not: say it is
                // corrupt when its remaining data fails the CRC-32 or the inflation.
                let rest = std::io::copy(&mut (&mut file).take(size), &mut std::io::sink());
                return Err(match (rest, e) {
                    (Err(io), _) => member_error(format!("corrupt data ({io})")),
                    // A sound archive holding an array hloc cannot read: not a zip problem.
                    (Ok(_), NpyError::Dtype(d)) => NpyError::Dtype(format!("{d} in member {name}")),
                    (Ok(_), e) => member_error(e.to_string()),
                });
            }
        };
        let width = u64::from(arr.element_type().byte_width().unwrap_or(1));
        used = used.saturating_add((arr.data().len() as u64).saturating_mul(width));
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        out.push((key, arr));
    }
    Ok(out)
}

/// Writes arrays as an `.npz` archive in memory (member `KEY.npy` per entry, stored
/// uncompressed as `np.savez` does).
pub fn write_npz(entries: &[(String, ArrayLiteral)]) -> Result<Vec<u8>, NpyError> {
    Ok(write_npz_to(Cursor::new(Vec::new()), entries)?.into_inner())
}

/// Writes arrays as an `.npz` archive to `writer` (member `KEY.npy` per entry, stored
/// uncompressed as `np.savez` does; members of 4 GiB or more get zip64 records) and
/// returns the writer.
pub fn write_npz_to<W: Write + Seek>(
    writer: W,
    entries: &[(String, ArrayLiteral)],
) -> Result<W, NpyError> {
    let io = |e: std::io::Error| NpyError::Io(e.to_string());
    let zip_error = |e: ZipError| NpyError::Io(e.to_string());
    let mut zip = ZipWriter::new(writer);
    for (key, a) in entries {
        let (head, data) = npy_parts(a)?;
        let len = (head.len() as u64).saturating_add(data.len() as u64);
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(len >= u64::from(u32::MAX));
        zip.start_file(format!("{key}.npy"), options)
            .map_err(zip_error)?;
        zip.write_all(&head).map_err(io)?;
        zip.write_all(&data).map_err(io)?;
    }
    zip.finish().map_err(zip_error)
}
