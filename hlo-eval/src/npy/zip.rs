//! The zip container of `.npz` files: stored members only (what `np.savez` writes).

use super::array::{read_npy, write_npy};
use super::NpyError;
use hlo::literal::ArrayLiteral;

/// CRC-32 (IEEE 802.3, reflected), as zip requires.
fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut c = !0u32;
    for &b in data {
        c = table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// One member of the central directory.
struct Member {
    name: String,
    method: u16,
    crc: u32,
    size: u64,
    compressed: u64,
    offset: u64,
}

fn bad(msg: &str) -> NpyError {
    NpyError::NotNpz(msg.to_string())
}

/// Parses the central directory.
fn members(b: &[u8]) -> Result<Vec<Member>, NpyError> {
    // End of central directory: the last "PK\x05\x06" within the final 64 KiB + 22 bytes.
    let min = b.len().saturating_sub(65_557);
    let eocd = (min..b.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(b, i) == Some(0x0605_4b50))
        .ok_or_else(|| bad("no end-of-central-directory record"))?;
    let count = u16_at(b, eocd + 10).ok_or_else(|| bad("truncated"))?;
    let mut at = u32_at(b, eocd + 16).ok_or_else(|| bad("truncated"))? as usize;
    if at == 0xffff_ffff {
        // Zip64: the locator precedes the EOCD and points at the zip64 EOCD record.
        let loc = eocd
            .checked_sub(20)
            .ok_or_else(|| bad("truncated zip64 locator"))?;
        let rec = u64_at(b, loc + 8).ok_or_else(|| bad("truncated zip64 locator"))? as usize;
        at = u64_at(b, rec + 48).ok_or_else(|| bad("truncated zip64 record"))? as usize;
    }
    let mut out = Vec::new();
    for _ in 0..count {
        if u32_at(b, at) != Some(0x0201_4b50) {
            return Err(bad("bad central directory entry"));
        }
        let get16 = |o| u16_at(b, at + o).ok_or_else(|| bad("truncated"));
        let get32 = |o| u32_at(b, at + o).ok_or_else(|| bad("truncated"));
        let method = get16(10)?;
        let crc = get32(16)?;
        let mut compressed = u64::from(get32(20)?);
        let mut size = u64::from(get32(24)?);
        let (nlen, elen, clen) = (
            get16(28)? as usize,
            get16(30)? as usize,
            get16(32)? as usize,
        );
        let mut offset = u64::from(get32(42)?);
        let name_bytes = b
            .get(at + 46..at + 46 + nlen)
            .ok_or_else(|| bad("truncated"))?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        // Zip64 extra field: the 0xffffffff fields, in order.
        let mut e = at + 46 + nlen;
        let end = e + elen;
        while e + 4 <= end {
            let id = u16_at(b, e).ok_or_else(|| bad("truncated"))?;
            let len = u16_at(b, e + 2).ok_or_else(|| bad("truncated"))? as usize;
            if id == 1 {
                let mut p = e + 4;
                for field in [&mut size, &mut compressed, &mut offset] {
                    if *field == 0xffff_ffff {
                        *field = u64_at(b, p).ok_or_else(|| bad("truncated zip64 field"))?;
                        p += 8;
                    }
                }
            }
            e += 4 + len;
        }
        out.push(Member {
            name,
            method,
            crc,
            size,
            compressed,
            offset,
        });
        at = end + clen;
    }
    Ok(out)
}

/// Reads every `.npy` member of an `.npz` archive, in archive order; keys drop the
/// `.npy` suffix.
pub fn read_npz(b: &[u8]) -> Result<Vec<(String, ArrayLiteral)>, NpyError> {
    if b.len() < 4 || (u32_at(b, 0) != Some(0x0403_4b50) && u32_at(b, 0) != Some(0x0605_4b50)) {
        return Err(bad("missing the zip signature"));
    }
    let mut out = Vec::new();
    for m in members(b)? {
        if m.method != 0 {
            return Err(NpyError::NotNpz(format!(
                "member {} is compressed (method {}); only stored members are supported (use np.savez, not np.savez_compressed)",
                m.name, m.method
            )));
        }
        let off = m.offset as usize;
        if u32_at(b, off) != Some(0x0403_4b50) {
            return Err(bad("bad local header"));
        }
        let nlen = u16_at(b, off + 26).ok_or_else(|| bad("truncated"))? as usize;
        let elen = u16_at(b, off + 28).ok_or_else(|| bad("truncated"))? as usize;
        let start = off + 30 + nlen + elen;
        let data = usize::try_from(m.compressed)
            .ok()
            .and_then(|n| b.get(start..start.checked_add(n)?))
            .ok_or_else(|| bad("member data is truncated"))?;
        if m.size != m.compressed || crc32(data) != m.crc {
            return Err(NpyError::NotNpz(format!(
                "member {} is corrupt (CRC mismatch)",
                m.name
            )));
        }
        let key = m.name.strip_suffix(".npy").unwrap_or(&m.name).to_string();
        let arr =
            read_npy(data).map_err(|e| NpyError::NotNpz(format!("member {}: {e}", m.name)))?;
        out.push((key, arr));
    }
    Ok(out)
}

/// Writes arrays as a stored `.npz` archive (member `KEY.npy` per entry).
pub fn write_npz(entries: &[(String, ArrayLiteral)]) -> Result<Vec<u8>, NpyError> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (key, a) in entries {
        let data = write_npy(a)?;
        let name = format!("{key}.npy");
        let (size, offset) = match (u32::try_from(data.len()), u32::try_from(out.len())) {
            (Ok(s), Ok(o)) if s != u32::MAX && o != u32::MAX => (s, o),
            _ => {
                return Err(NpyError::Size(
                    "npz larger than 4 GiB is not supported".into(),
                ))
            }
        };
        let crc = crc32(&data);
        let nlen = u16::try_from(name.len()).map_err(|_| NpyError::Size("key too long".into()))?;
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&0u16.to_le_bytes()); // flags
            v.extend_from_slice(&0u16.to_le_bytes()); // stored
            v.extend_from_slice(&0u16.to_le_bytes()); // time
            v.extend_from_slice(&0x21u16.to_le_bytes()); // date 1980-01-01
            v.extend_from_slice(&crc.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&nlen.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&data);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut central);
        central.extend_from_slice(&[0u8; 6]); // comment len, disk, internal attrs
        central.extend_from_slice(&0u32.to_le_bytes()); // external attrs
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let n = u16::try_from(entries.len()).map_err(|_| NpyError::Size("too many arrays".into()))?;
    let cd_offset = u32::try_from(out.len()).map_err(|_| NpyError::Size("npz too large".into()))?;
    let cd_size = central.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_known_string() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }
}
