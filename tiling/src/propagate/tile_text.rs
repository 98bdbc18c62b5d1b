//! The text form of a [`Tile`] and its parser, on one line:
//!
//! ```text
//! (tid_0, tid_1){rt_0} -> offsets [tid_0 * ts_0, tid_1 * ts_1 + rt_0] sizes [ts_0, ts_1]
//!   strides [1, 2] upper bounds [10, 15]
//! ```
//! (one line in fact). The header names the tile ids `tid_i` (one per dimension of the tiling
//! space) and, in braces when there are some, the runtime values `rt_i`; the tile sizes
//! `ts_i` are not declared (one per tile id). A tile of a scalar has empty lists.

use std::fmt;
use std::str::FromStr;

use affine::parse::{parse_expr, Names};
use affine::{Expr, Var};

use super::tile::{DimTile, Tile};
use crate::TilingError;

/// The text of a tile that cannot be propagated: `no tile: <reason>`.
pub const NO_TILE: &str = "no tile";

/// Renames the canonical variable names of a printed expression: `dN` → `tid_N`, `sN` →
/// `ts_N`, `rtN` → `rt_N`.
pub(crate) fn rename_vars(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            let split = word
                .find(|ch: char| ch.is_ascii_digit())
                .unwrap_or(word.len());
            let (prefix, digits) = word.split_at(split);
            let renamed = match prefix {
                "d" if !digits.is_empty() => Some("tid_"),
                "s" if !digits.is_empty() => Some("ts_"),
                "rt" if !digits.is_empty() => Some("rt_"),
                _ => None,
            };
            match renamed {
                Some(p) => {
                    out.push_str(p);
                    out.push_str(digits);
                }
                None => out.push_str(word),
            }
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    out
}

fn list(f: &mut fmt::Formatter<'_>, name: &str, es: impl Iterator<Item = Expr>) -> fmt::Result {
    let items: Vec<String> = es.map(|e| rename_vars(&e.to_string())).collect();
    write!(f, "{name} [{}]", items.join(", "))
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |p: &str, n: usize| {
            (0..n)
                .map(|i| format!("{p}{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(f, "({})", names("tid_", self.num_tids))?;
        if self.num_rt > 0 {
            write!(f, "{{{}}}", names("rt_", self.num_rt))?;
        }
        f.write_str(" -> ")?;
        list(f, "offsets", self.dims.iter().map(|d| d.offset))?;
        list(f, " sizes", self.dims.iter().map(|d| d.size))?;
        list(f, " strides", self.dims.iter().map(|d| d.stride))?;
        list(f, " upper bounds", self.dims.iter().map(|d| d.upper_bound))
    }
}

fn perr(message: impl Into<String>) -> TilingError {
    TilingError::Parse {
        line: 1,
        message: message.into(),
    }
}

/// Splits at commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, ch) in s.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// The names of `(a, b)` or `{a, b}` with the expected prefix, checked to be `p0, p1, ...`.
fn header_names(inner: &str, prefix: &str) -> Result<usize, TilingError> {
    let names = split_top(inner);
    for (i, n) in names.iter().enumerate() {
        if *n != format!("{prefix}{i}") {
            return Err(perr(format!("expected `{prefix}{i}`, got `{n}`")));
        }
    }
    Ok(names.len())
}

/// Reads `KEY [a, b, ...]` at the start of `rest`; returns the items and what follows.
fn take_list<'a>(rest: &'a str, key: &str) -> Result<(Vec<&'a str>, &'a str), TilingError> {
    let rest = rest.trim_start();
    let body = rest
        .strip_prefix(key)
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('['))
        .ok_or_else(|| perr(format!("expected `{key} [...]`, got `{rest}`")))?;
    let mut depth = 0i32;
    for (i, ch) in body.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ']' if depth > 0 => depth -= 1,
            ']' => return Ok((split_top(&body[..i]), &body[i + 1..])),
            _ => {}
        }
    }
    Err(perr(format!("`{key} [` is not closed")))
}

impl FromStr for Tile {
    type Err = TilingError;

    /// Reads the text form back (see the module documentation).
    fn from_str(text: &str) -> Result<Tile, TilingError> {
        let text = text.trim();
        let (head, body) = text.split_once("->").ok_or_else(|| {
            perr(format!(
                "expected `(tid_0, ...) -> offsets [...] ...`, got `{text}`"
            ))
        })?;
        let head = head.trim();
        let (tids, rts) = match head.find('{') {
            Some(i) => (&head[..i], Some(head[i..].trim())),
            None => (head, None),
        };
        let inner = |t: &str, open: char, close: char| -> Result<String, TilingError> {
            t.trim()
                .strip_prefix(open)
                .and_then(|s| s.strip_suffix(close))
                .map(str::to_string)
                .ok_or_else(|| perr(format!("expected `{open}...{close}`, got `{t}`")))
        };
        let num_tids = header_names(&inner(tids, '(', ')')?, "tid_")?;
        let num_rt = match rts {
            Some(r) => header_names(&inner(r, '{', '}')?, "rt_")?,
            None => 0,
        };
        let mut names = Names::new();
        for i in 0..num_tids {
            names.declare(format!("tid_{i}"), Var::dim(i as u32));
            names.declare(format!("ts_{i}"), Var::range(i as u32));
        }
        for i in 0..num_rt {
            names.declare(format!("rt_{i}"), Var::runtime(i as u32));
        }
        let exprs = |items: Vec<&str>| -> Result<Vec<Expr>, TilingError> {
            items
                .iter()
                .map(|s| {
                    parse_expr(s, &names).map_err(|e| {
                        let e = e.to_string();
                        perr(format!("`{s}`: {}", e.lines().next().unwrap_or("")))
                    })
                })
                .collect()
        };
        let (offsets, rest) = take_list(body, "offsets")?;
        let (sizes, rest) = take_list(rest, "sizes")?;
        let (strides, rest) = take_list(rest, "strides")?;
        let (bounds, rest) = take_list(rest, "upper bounds")?;
        if !rest.trim().is_empty() {
            return Err(perr(format!("unexpected `{}`", rest.trim())));
        }
        let (offsets, sizes, strides, bounds) = (
            exprs(offsets)?,
            exprs(sizes)?,
            exprs(strides)?,
            exprs(bounds)?,
        );
        let n = offsets.len();
        if sizes.len() != n || strides.len() != n || bounds.len() != n {
            return Err(perr(format!(
                "{n} offsets, {} sizes, {} strides and {} upper bounds",
                sizes.len(),
                strides.len(),
                bounds.len()
            )));
        }
        let dims = (0..n)
            .map(|j| DimTile {
                offset: offsets[j],
                size: sizes[j],
                stride: strides[j],
                upper_bound: bounds[j],
            })
            .collect();
        Ok(Tile {
            num_tids,
            num_rt,
            dims,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `text` and prints it back (or the error).
    fn check(text: &str, expect: &str) {
        let got = match text.parse::<Tile>() {
            Ok(t) => t.to_string(),
            Err(e) => e.to_string(),
        };
        assert_eq!(got, expect, "{text}");
    }

    #[test]
    fn round_trips() {
        let t = "(tid_0, tid_1){rt_0} -> offsets [tid_0 * ts_0, tid_1 * ts_1 + 13] sizes [ts_0, ts_1] strides [1, 2] upper bounds [10, 15]";
        check(t, t);
        check(
            "(tid_0) -> offsets [] sizes [] strides [] upper bounds []",
            "(tid_0) -> offsets [] sizes [] strides [] upper bounds []",
        );
        check(
            "() -> offsets [min(max(3, 0), 2)] sizes [1] strides [1] upper bounds [3]",
            "() -> offsets [2] sizes [1] strides [1] upper bounds [3]",
        );
        check(
            "(tid_0) -> offsets [(tid_0 * ts_0) floordiv 2] sizes [ts_0] strides [1] upper bounds [4]",
            "(tid_0) -> offsets [(tid_0 * ts_0) floordiv 2] sizes [ts_0] strides [1] upper bounds [4]",
        );
    }

    #[test]
    fn truncated_text_never_panics() {
        let t = "(tid_0, tid_1){rt_0} -> offsets [(tid_0 * ts_0) floordiv 2, min(rt_0, 3)] sizes [ts_0, ts_1] strides [1, -2] upper bounds [10, 15]";
        for (i, _) in t.char_indices() {
            let _ = t[..i].parse::<Tile>();
            let _ = t[i..].parse::<Tile>();
        }
    }

    #[test]
    fn rejects_bad_text() {
        check(
            "tile",
            "line 1: expected `(tid_0, ...) -> offsets [...] ...`, got `tile`",
        );
        check(
            "(tid_1) -> offsets [] sizes [] strides [] upper bounds []",
            "line 1: expected `tid_0`, got `tid_1`",
        );
        check(
            "(tid_0) -> offsets [ts_1] sizes [1] strides [1] upper bounds [1]",
            "line 1: `ts_1`: 1:1: unknown variable `ts_1`",
        );
        check(
            "(tid_0) -> offsets [0] sizes [1, 2] strides [1] upper bounds [1]",
            "line 1: 1 offsets, 2 sizes, 1 strides and 1 upper bounds",
        );
        check(
            "(tid_0) -> offsets [0] sizes [1] strides [1]",
            "line 1: expected `upper bounds [...]`, got ``",
        );
    }
}
