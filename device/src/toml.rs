//! The small TOML subset device descriptions are written in: `# comments`, `[section]`
//! headers, and `key = value` lines whose value is a number (`1.5e-6`, `262_144`), a
//! quoted string without escapes, or `true`/`false`. Every value remembers its line so
//! that a bad field is reported where it is written.

use std::collections::BTreeMap;

use crate::DeviceError;

/// One value and the line it is written on.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// 1-based line.
    pub line: usize,
    /// The value.
    pub value: Value,
}

/// A value of the subset.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A number (integers are stored exactly up to 2^53).
    Number(f64),
    /// A quoted string.
    Str(String),
    /// `true` or `false`.
    Bool(bool),
}

/// `section.key -> entry`, in a deterministic order.
pub type Table = BTreeMap<String, Entry>;

/// Parses `text` (named `file` in errors).
pub fn parse(file: &str, text: &str) -> Result<Table, DeviceError> {
    let mut table = Table::new();
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| DeviceError::Syntax {
            file: file.to_string(),
            line,
            message,
        };
        let content = strip_comment(raw).trim();
        if content.is_empty() {
            continue;
        }
        if let Some(rest) = content.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err("a section header needs a closing `]`".into()))?
                .trim();
            if !is_key(name) {
                return Err(err(format!("bad section name `{name}`")));
            }
            section = name.to_string();
            continue;
        }
        let (key, value) = content
            .split_once('=')
            .ok_or_else(|| err(format!("expected `key = value`, found `{content}`")))?;
        let key = key.trim();
        if !is_key(key) {
            return Err(err(format!("bad key `{key}`")));
        }
        if section.is_empty() {
            return Err(err(format!("key `{key}` before any [section]")));
        }
        let value = parse_value(value.trim()).map_err(|m| err(format!("key `{key}`: {m}")))?;
        let field = format!("{section}.{key}");
        if table.contains_key(&field) {
            return Err(err(format!("field `{field}` written twice")));
        }
        table.insert(field, Entry { line, value });
    }
    Ok(table)
}

/// The line without a `#` comment (a `#` inside a string stays).
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

fn is_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn parse_value(s: &str) -> Result<Value, String> {
    match s {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    if let Some(rest) = s.strip_prefix('"') {
        let inner = rest
            .strip_suffix('"')
            .ok_or_else(|| "unterminated string".to_string())?;
        if inner.contains('"') || inner.contains('\\') {
            return Err("strings may not hold quotes or escapes".into());
        }
        return Ok(Value::Str(inner.to_string()));
    }
    let digits: String = s.chars().filter(|&c| c != '_').collect();
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Value::Number(v)),
        _ => Err(format!("`{s}` is not a number, string or boolean")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: &str) {
        let got = match parse("t.toml", text) {
            Ok(t) => t
                .iter()
                .map(|(k, e)| format!("{k}@{}={:?}", e.line, e.value))
                .collect::<Vec<_>>()
                .join(" "),
            Err(e) => e.to_string(),
        };
        assert_eq!(got, expect);
    }

    #[test]
    fn values_and_lines() {
        check(
            "# c\n[a]\nx = 1_024 # n\ny = \"s#t\"\n\n[b]\nz = true\nw = 2.5e-6",
            "a.x@3=Number(1024.0) a.y@4=Str(\"s#t\") b.w@8=Number(2.5e-6) b.z@7=Bool(true)",
        );
    }

    #[test]
    fn errors_name_the_line() {
        check("[a]\nx 1", "t.toml:2: expected `key = value`, found `x 1`");
        check("x = 1", "t.toml:1: key `x` before any [section]");
        check("[a\n", "t.toml:1: a section header needs a closing `]`");
        check(
            "[a]\nx = nope",
            "t.toml:2: key `x`: `nope` is not a number, string or boolean",
        );
        check("[a]\nx = 1\nx = 2", "t.toml:3: field `a.x` written twice");
        check("[a]\nx = \"open", "t.toml:2: key `x`: unterminated string");
    }
}
