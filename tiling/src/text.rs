//! The text form of a [`SymbolicTile`] (XLA's, one field per line) and its parser:
//!
//! ```text
//! Symbolic tile with
//!   offset_map: (d0, d1)[s0] -> (s0, 0)
//!   size_map: (d0, d1) -> (d0, d1)
//!   stride_map: (d0, d1) -> (1, 1)
//!   constraints: d0 in [1, 1] || d1 in [8, 8]
//!   rt_vars: s0 in [0, 15]
//! ```
//! `d_i` is the tile size of output dimension `i`; the maps are affine maps without a domain
//! (results in affine's expression syntax); runtime variables of the offsets are the symbols
//! `s_i`, whose bounds `rt_vars` lists; `constraints` (see [`ConstraintExpr`]) and `rt_vars`
//! appear only when there are some. A map without a tile prints as `no symbolic tile`.

use std::fmt;
use std::str::FromStr;

use affine::parse::{parse_expr, Names};
use affine::{Expr, Interval, Var, VarKind};

use crate::constraint::ConstraintExpr;
use crate::{SymbolicTile, TilingError};

/// The header line.
pub const HEADER: &str = "Symbolic tile with";
/// The text of a map that has no exact tile.
pub const NO_TILE: &str = "no symbolic tile";

/// Runtime variables printed as symbols.
fn rt_as_symbol(e: Expr) -> Expr {
    e.substitute(&mut |v: Var| (v.kind == VarKind::Runtime).then(|| Expr::range(v.index)))
}

/// `(d0, ..)[s0, ..] -> (e0, ..)`.
pub(crate) fn affine_map_text(dims: usize, symbols: usize, results: &[Expr]) -> String {
    let names = |prefix: &str, n: usize| {
        (0..n)
            .map(|i| format!("{prefix}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!("({})", names("d", dims));
    if symbols > 0 {
        s.push_str(&format!("[{}]", names("s", symbols)));
    }
    let rs: Vec<String> = results.iter().map(|e| e.to_string()).collect();
    s.push_str(&format!(" -> ({})", rs.join(", ")));
    s
}

impl fmt::Display for SymbolicTile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offsets: Vec<Expr> = self.offsets.iter().map(|&e| rt_as_symbol(e)).collect();
        writeln!(f, "{HEADER}")?;
        writeln!(
            f,
            "  offset_map: {}",
            affine_map_text(self.num_dims, self.rt_vars.len(), &offsets)
        )?;
        writeln!(
            f,
            "  size_map: {}",
            affine_map_text(self.num_dims, 0, &self.sizes)
        )?;
        write!(
            f,
            "  stride_map: {}",
            affine_map_text(self.num_dims, 0, &self.strides)
        )?;
        if !self.constraints.is_always() {
            write!(f, "\n  constraints: {}", self.constraints)?;
        }
        if !self.rt_vars.is_empty() {
            let vars: Vec<String> = self
                .rt_vars
                .iter()
                .enumerate()
                .map(|(i, b)| format!("s{i} in {b}"))
                .collect();
            write!(f, "\n  rt_vars: {}", vars.join(", "))?;
        }
        Ok(())
    }
}

fn perr(line: usize, message: impl Into<String>) -> TilingError {
    TilingError::Parse {
        line,
        message: message.into(),
    }
}

/// Splits `a, b, (c, d)` at top-level commas.
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

/// A parsed `(d..)[s..] -> (..)`: dimension count, symbol count, results (symbols read as
/// runtime variables).
fn parse_affine_map(text: &str, line: usize) -> Result<(usize, usize, Vec<Expr>), TilingError> {
    let (head, body) = text.split_once("->").ok_or_else(|| {
        perr(
            line,
            format!("expected `(dims) -> (results)`, got `{text}`"),
        )
    })?;
    let head = head.trim();
    let (dims_text, syms_text) = match head.find('[') {
        Some(i) => (&head[..i], Some(head[i..].trim())),
        None => (head, None),
    };
    let list = |t: &str, open: char, close: char| -> Result<Vec<String>, TilingError> {
        let inner = t
            .trim()
            .strip_prefix(open)
            .and_then(|s| s.strip_suffix(close))
            .ok_or_else(|| perr(line, format!("expected `{open}...{close}`, got `{t}`")))?;
        Ok(split_top(inner).into_iter().map(str::to_string).collect())
    };
    let dims = list(dims_text, '(', ')')?;
    let syms = match syms_text {
        Some(t) => list(t, '[', ']')?,
        None => Vec::new(),
    };
    let mut names = Names::new();
    for (i, n) in dims.iter().enumerate() {
        names.declare(n.clone(), Var::dim(i as u32));
    }
    for (i, n) in syms.iter().enumerate() {
        names.declare(n.clone(), Var::runtime(i as u32));
    }
    let results = list(body, '(', ')')?
        .iter()
        .map(|r| parse_expr(r, &names).map_err(|e| perr(line, format!("`{r}`: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((dims.len(), syms.len(), results))
}

/// `s0 in [0, 3], s1 in [1, 9]` (a trailing comma allowed).
fn parse_rt_vars(text: &str, line: usize) -> Result<Vec<Interval>, TilingError> {
    let mut out = Vec::new();
    for item in split_top(text) {
        if item.is_empty() {
            continue;
        }
        let (name, iv) = item
            .split_once(" in ")
            .ok_or_else(|| perr(line, format!("expected `sK in [lo, hi]`, got `{item}`")))?;
        if name.trim() != format!("s{}", out.len()) {
            return Err(perr(
                line,
                format!("expected s{}, got `{}`", out.len(), name.trim()),
            ));
        }
        let inner = iv
            .trim()
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .ok_or_else(|| perr(line, format!("expected `[lo, hi]`, got `{iv}`")))?;
        let (lo, hi) = inner
            .split_once(',')
            .ok_or_else(|| perr(line, format!("expected `[lo, hi]`, got `{iv}`")))?;
        let num = |s: &str| {
            s.trim()
                .parse::<i64>()
                .map_err(|_| perr(line, format!("bad bound `{}`", s.trim())))
        };
        out.push(Interval::new(num(lo)?, num(hi)?));
    }
    Ok(out)
}

impl FromStr for SymbolicTile {
    type Err = TilingError;

    /// Reads the text form back (the tile-size bounds are not part of it: see
    /// [`SymbolicTile::size_bounds`]).
    fn from_str(text: &str) -> Result<SymbolicTile, TilingError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        match lines.next() {
            Some((_, l)) if l.trim() == HEADER => {}
            Some((i, l)) => return Err(perr(i + 1, format!("expected `{HEADER}`, got `{l}`"))),
            None => return Err(perr(1, "empty text")),
        }
        let mut fields: Vec<(usize, &str, &str)> = Vec::new();
        for (i, l) in lines {
            let (key, value) = l
                .trim()
                .split_once(':')
                .ok_or_else(|| perr(i + 1, format!("expected `field: value`, got `{l}`")))?;
            fields.push((i + 1, key.trim(), value.trim()));
        }
        let field = |key: &str| fields.iter().find(|f| f.1 == key).map(|f| (f.0, f.2));
        let need = |key: &str| field(key).ok_or_else(|| perr(1, format!("missing `{key}:`")));
        let (ol, offset) = need("offset_map")?;
        let (sl, size) = need("size_map")?;
        let (tl, stride) = need("stride_map")?;
        let (nd, nsym, offsets) = parse_affine_map(offset, ol)?;
        let (nd2, _, sizes) = parse_affine_map(size, sl)?;
        let (nd3, _, strides) = parse_affine_map(stride, tl)?;
        if nd2 != nd || nd3 != nd || sizes.len() != offsets.len() || strides.len() != offsets.len()
        {
            return Err(perr(ol, "the three maps differ in dimensions or results"));
        }
        let constraints = match field("constraints") {
            Some((l, c)) => ConstraintExpr::parse(c).map_err(|m| perr(l, m))?,
            None => ConstraintExpr::always(),
        };
        let rt_vars = match field("rt_vars") {
            Some((l, r)) => parse_rt_vars(r, l)?,
            None => Vec::new(),
        };
        if rt_vars.len() != nsym {
            return Err(perr(
                ol,
                format!("{nsym} symbols but {} rt_vars", rt_vars.len()),
            ));
        }
        for (l, key, _) in &fields {
            if ![
                "offset_map",
                "size_map",
                "stride_map",
                "constraints",
                "rt_vars",
            ]
            .contains(key)
            {
                return Err(perr(*l, format!("unknown field `{key}`")));
            }
        }
        Ok(SymbolicTile {
            size_bounds: None,
            num_dims: nd,
            rt_vars,
            offsets,
            sizes,
            strides,
            constraints,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TILE: &str = "Symbolic tile with\n  offset_map: (d0, d1)[s0] -> (s0, 0)\n  size_map: (d0, d1) -> (d0, d1 * 2)\n  stride_map: (d0, d1) -> (1, 1)\n  constraints: d0 in [1, 1] && d1 in [2, 2] || d1 in [1, 1]\n  rt_vars: s0 in [0, 15]";

    /// Parses `text`, prints it, and compares with `expect` (an error's message, or the
    /// text printed back).
    fn check(text: &str, expect: &str) {
        let got = match text.parse::<SymbolicTile>() {
            Ok(t) => t.to_string(),
            Err(e) => e.to_string(),
        };
        assert_eq!(got, expect, "{text}");
    }

    #[test]
    fn round_trips() {
        check(TILE, TILE);
        // XLA's trailing comma after the last runtime variable is accepted.
        check(&format!("{TILE},"), TILE);
        check(
            "Symbolic tile with\n  offset_map: () -> ()\n  size_map: () -> ()\n  stride_map: () -> ()",
            "Symbolic tile with\n  offset_map: () -> ()\n  size_map: () -> ()\n  stride_map: () -> ()",
        );
    }

    #[test]
    fn rejects_bad_text() {
        check("", "line 1: empty text");
        check("Tile", "line 1: expected `Symbolic tile with`, got `Tile`");
        check(
            "Symbolic tile with\n  offset_map: (d0) -> (0)\n  size_map: (d0) -> (d0)",
            "line 1: missing `stride_map:`",
        );
        check(
            "Symbolic tile with\n  offset_map: (d0) -> (0)\n  size_map: (d0) -> (d0, 1)\n  stride_map: (d0) -> (1)",
            "line 2: the three maps differ in dimensions or results",
        );
        check(
            "Symbolic tile with\n  offset_map: (d0)[s0] -> (s0)\n  size_map: (d0) -> (d0)\n  stride_map: (d0) -> (1)",
            "line 2: 1 symbols but 0 rt_vars",
        );
        check(
            "Symbolic tile with\n  offset_map: (d0) -> (0)\n  size_map: (d0) -> (d0)\n  stride_map: (d0) -> (1)\n  extra: 1",
            "line 5: unknown field `extra`",
        );
    }

    #[test]
    fn truncated_text_never_panics() {
        for end in 0..=TILE.len() {
            if TILE.is_char_boundary(end) {
                let _ = TILE[..end].parse::<SymbolicTile>();
            }
        }
    }
}
