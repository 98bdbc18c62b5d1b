//! What the IR, the parser and the printer share about the text format: its conventions
//! ([`PrintOptions`], which a parsed module remembers as its source style) and C-style
//! string escaping as XLA does it (absl's `CEscape` / `CUnescape`).

/// Text conventions of the printer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrintOptions {
    /// Print `%` before instruction and computation names.
    pub sigils: bool,
    /// Print each operand's shape before its name (`f32[2]{0} %x`).
    pub operand_shapes: bool,
    /// Print `/*index=N*/` every five operands.
    pub index_comments: bool,
    /// Print computation signatures (`%c (p: f32[]) -> f32[] {`).
    pub signatures: bool,
}

impl Default for PrintOptions {
    /// XLA's default `ToString()` conventions: everything on.
    fn default() -> Self {
        PrintOptions {
            sigils: true,
            operand_shapes: true,
            index_comments: true,
            signatures: true,
        }
    }
}

impl PrintOptions {
    /// The conventions of JAX's `as_hlo_text()` (XLA's `ShortParsable`): no sigils, no
    /// operand shapes, no index comments, no signatures.
    pub fn short() -> PrintOptions {
        PrintOptions {
            sigils: false,
            operand_shapes: false,
            index_comments: false,
            signatures: false,
        }
    }
}

/// Appends `s` quoted with `"` and escaped like absl's `CEscape`: `\n \r \t \" \' \\`,
/// other bytes outside printable ASCII as three-digit octal.
pub(crate) fn write_quoted(out: &mut String, s: &str) {
    out.push('"');
    for &b in s.as_bytes() {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                out.push('\\');
                out.push((b'0' + (b >> 6)) as char);
                out.push((b'0' + ((b >> 3) & 7)) as char);
                out.push((b'0' + (b & 7)) as char);
            }
        }
    }
    out.push('"');
}

/// Unescapes the inside of a quoted string (C escapes, octal, `\x` hex, `\u`/`\U`).
/// Invalid UTF-8 produced by byte escapes is replaced by U+FFFD.
pub(crate) fn unescape(s: &str) -> Result<String, &'static str> {
    if !s.contains('\\') {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let Some(&c) = b.get(i + 1) else {
            return Err("string ends with a backslash");
        };
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\\' | b'\'' | b'"' | b'?' => out.push(c),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(u8::try_from(v).map_err(|_| "octal escape out of range")?);
            }
            b'x' => {
                let start = i;
                let mut v: u32 = 0;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    v = v * 16 + (b[i] as char).to_digit(16).unwrap_or(0);
                    if v > 0xff {
                        return Err("hex escape out of range");
                    }
                    i += 1;
                }
                if i == start {
                    return Err("\\x with no hex digits");
                }
                out.push(v as u8);
            }
            b'u' | b'U' => {
                let n = if c == b'u' { 4 } else { 8 };
                let hex = s.get(i..i + n).ok_or("short unicode escape")?;
                let v = u32::from_str_radix(hex, 16).map_err(|_| "bad unicode escape")?;
                let ch = char::from_u32(v).ok_or("bad unicode escape")?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += n;
            }
            _ => return Err("unknown escape sequence"),
        }
    }
    Ok(String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        for s in ["plain", "a\"b\\c\n\t'", "é→x", "\u{1}"] {
            let mut q = String::new();
            write_quoted(&mut q, s);
            assert_eq!(unescape(&q[1..q.len() - 1]).unwrap(), s);
        }
        let mut q = String::new();
        write_quoted(&mut q, "é");
        assert_eq!(q, "\"\\303\\251\"");
        assert_eq!(unescape("\\x41\\101\\u00e9").unwrap(), "AAé");
        assert!(unescape("\\q").is_err());
        assert!(unescape("\\").is_err());
        assert_eq!(unescape("\\377").unwrap(), "\u{fffd}");
    }
}
