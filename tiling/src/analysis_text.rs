//! The text form of a [`SymbolicTileAnalysis`] and its parser.
//!
//! ```text
//! symbolic tile analysis of f, root dimensions [4, 8]
//! constraints: d0 mod 8 in [0, 0] || 8 mod d0 in [0, 0]
//! p0: (d0, d1) -> (d0 floordiv 2, d1), domain: d0 in [0, 3], d1 in [0, 7]
//!   Symbolic tile with
//!     offset_map: (d0, d1) -> (0, 0)
//!     ...
//! ```
//! One header line (the fusion and the root dimensions, i.e. the bounds of the tile sizes
//! `d_i`), the analysis's constraints (`constraints: none` when every size is admitted,
//! `unsatisfiable` when none is), then every tiled instruction in order: `NAME: MAP` (the map
//! from the root's indices to the instruction's elements, in `hloc map` syntax), one line
//! `rtK = PRODUCER: MAP` per runtime variable of the map (the element of `PRODUCER` that
//! holds its value), and the instruction's [`SymbolicTile`] indented by two spaces.
//!
//! [`SymbolicTileAnalysis::parse`] reads the text back against the fusion it describes (the
//! names resolve to its instructions); printing the result gives the same text.

use std::fmt;

use affine::{IndexingMap, Interval};
use hlo::InstrRef;
use indexing::{IndexedMap, RuntimeVar};

use crate::analysis::{SymbolicTileAnalysis, TiledInstruction};
use crate::constraint::ConstraintExpr;
use crate::strided::size_bounds;
use crate::{SymbolicTile, TilingError};

/// The first words of the header line.
pub const HEADER: &str = "symbolic tile analysis of ";

fn list(v: &[i64]) -> String {
    let s: Vec<String> = v.iter().map(i64::to_string).collect();
    format!("[{}]", s.join(", "))
}

impl fmt::Display for SymbolicTileAnalysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{HEADER}{}, root dimensions {}",
            self.fusion,
            list(&self.root_dims)
        )?;
        if self.constraints.is_always() {
            writeln!(f, "constraints: none")?;
        } else {
            writeln!(f, "constraints: {}", self.constraints)?;
        }
        for ti in &self.instructions {
            writeln!(f, "{}: {}", ti.name, ti.map.map)?;
            for (k, rv) in ti.map.runtime.iter().enumerate() {
                writeln!(f, "  rt{k} = {}: {}", rv.producer_name, rv.map)?;
            }
            for line in ti.tile.to_string().lines() {
                writeln!(f, "  {line}")?;
            }
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

/// `NAME: TEXT` split at the first `: ` (names hold no spaces).
fn split_name(line: &str) -> Option<(&str, &str)> {
    let (name, rest) = line.split_once(": ")?;
    (!name.is_empty() && !name.contains(' ')).then_some((name, rest))
}

fn parse_map(text: &str, line: usize) -> Result<IndexingMap, TilingError> {
    text.parse::<IndexingMap>()
        .map_err(|e| perr(line, format!("`{text}`: {e}")))
}

/// Parses `[a, b, ...]`.
fn parse_list(text: &str, line: usize) -> Result<Vec<i64>, TilingError> {
    let inner = text
        .trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| perr(line, format!("expected `[a, b, ...]`, got `{text}`")))?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<i64>()
                .map_err(|_| perr(line, format!("bad dimension `{}`", s.trim())))
        })
        .collect()
}

impl SymbolicTileAnalysis {
    /// Reads the text form back (see the module documentation) for `fusion`, the fusion it
    /// describes: instruction and producer names resolve to its fused computation. Fails
    /// with [`TilingError::Parse`] on malformed text or a name the fusion does not hold.
    pub fn parse(text: &str, fusion: &InstrRef<'_>) -> Result<SymbolicTileAnalysis, TilingError> {
        let module = fusion.module();
        let comp_id = crate::analysis::fused_computation(fusion)?;
        let comp = module.computation(comp_id);
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (hl, header) = lines.next().ok_or_else(|| perr(1, "empty text"))?;
        let rest = header
            .strip_prefix(HEADER)
            .ok_or_else(|| perr(hl, format!("expected `{HEADER}...`, got `{header}`")))?;
        let (name, dims) = rest
            .split_once(", root dimensions ")
            .ok_or_else(|| perr(hl, "expected `, root dimensions [..]`"))?;
        let root_dims = parse_list(dims, hl)?;
        let (cl, cline) = lines
            .next()
            .ok_or_else(|| perr(2, "missing `constraints:`"))?;
        let ctext = cline
            .strip_prefix("constraints: ")
            .ok_or_else(|| perr(cl, format!("expected `constraints: ...`, got `{cline}`")))?;
        let constraints = if ctext == "none" {
            ConstraintExpr::always()
        } else {
            ConstraintExpr::parse(ctext).map_err(|m| perr(cl, m))?
        };
        let bounds: Vec<Interval> = root_dims.iter().map(|&d| Interval::new(0, d - 1)).collect();
        let sizes = size_bounds(&bounds);
        let find = |n: &str, line: usize| {
            comp.find(n)
                .ok_or_else(|| perr(line, format!("`{n}` is not in the fusion `{name}`")))
        };
        let mut instructions: Vec<TiledInstruction> = Vec::new();
        let mut tile_lines: Vec<(usize, String)> = Vec::new();
        let finish = |ti: Option<TiledInstruction>,
                      tile_lines: &mut Vec<(usize, String)>,
                      out: &mut Vec<TiledInstruction>|
         -> Result<(), TilingError> {
            let Some(mut ti) = ti else { return Ok(()) };
            let first = tile_lines.first().map_or(0, |l| l.0);
            let joined: Vec<&str> = tile_lines.iter().map(|l| l.1.as_str()).collect();
            let mut tile: SymbolicTile = joined.join("\n").parse().map_err(|e| match e {
                TilingError::Parse { line, message } => perr(first + line - 1, message),
                other => other,
            })?;
            tile.size_bounds = Some(sizes.clone());
            ti.tile = tile;
            out.push(ti);
            tile_lines.clear();
            Ok(())
        };
        let mut current: Option<TiledInstruction> = None;
        for (ln, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            if let Some(body) = line.strip_prefix("  ") {
                let rt = body
                    .strip_prefix("rt")
                    .and_then(|r| r.split_once(" = "))
                    .filter(|(k, _)| k.chars().all(|c| c.is_ascii_digit()) && !k.is_empty());
                match (rt, current.as_mut()) {
                    (Some((_, def)), Some(ti)) if tile_lines.is_empty() => {
                        let (producer, map) = split_name(def)
                            .ok_or_else(|| perr(ln, format!("expected `PRODUCER: MAP`: {def}")))?;
                        ti.map.runtime.push(RuntimeVar {
                            computation: comp_id,
                            producer: find(producer, ln)?,
                            producer_name: producer.to_string(),
                            map: parse_map(map, ln)?,
                        });
                    }
                    (_, Some(_)) => tile_lines.push((ln, body.to_string())),
                    (_, None) => return Err(perr(ln, "a tile line before any instruction")),
                }
                continue;
            }
            finish(current.take(), &mut tile_lines, &mut instructions)?;
            let (iname, map) = split_name(line)
                .ok_or_else(|| perr(ln, format!("expected `NAME: MAP`, got `{line}`")))?;
            let id = find(iname, ln)?;
            let element_bytes = comp
                .instr(id)
                .shape()
                .element_type()
                .and_then(|t| t.byte_width())
                .map_or(0, i64::from);
            current = Some(TiledInstruction {
                name: iname.to_string(),
                id,
                map: IndexedMap {
                    map: parse_map(map, ln)?,
                    runtime: Vec::new(),
                },
                tile: SymbolicTile::from_indexing_map(&IndexingMap::identity(&[]))
                    .ok_or_else(|| perr(ln, "internal: no placeholder tile"))?,
                element_bytes,
            });
        }
        finish(current.take(), &mut tile_lines, &mut instructions)?;
        let root_ids = crate::roots::roots(comp)?;
        let extra = crate::roots::extra_roots(comp, &root_ids, &root_dims)?;
        Ok(SymbolicTileAnalysis {
            fusion: name.to_string(),
            root_dims,
            instructions,
            constraints,
            extra,
        })
    }
}
