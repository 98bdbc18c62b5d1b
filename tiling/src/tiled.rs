//! The tiled computation of a fusion for concrete tile sizes: one program per root tile
//! (program ids `pid_0` in `[0, prod(ceil(D_i / t_i)) - 1]`, row-major over the tile grid),
//! and for every tiled instruction its tile sizes, strides and the map from the program id to
//! the offsets of its tile.
//!
//! Tiled instructions that agree for the given sizes (same instruction, sizes, strides and
//! offsets map) appear once. Text form, one line per tiled instruction (operands before
//! users):
//! `NAME: tile_sizes=(1, 10), tile_strides=(1, 1), tile_offsets_indexing=(pid_0) -> (pid_0
//! floordiv 10, (pid_0 mod 10) * 10), domain: pid_0 in [0, 19]` (on one line; the map in
//! affine's syntax with its dimension named `pid_0`, and runtime variables `rtK` where
//! offsets are dynamic).

use std::fmt;

use affine::{Expr, IndexingMap, Interval, Var, VarKind};

use crate::analysis::SymbolicTileAnalysis;
use crate::TilingError;

/// One tiled instruction for concrete tile sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConcreteTiledInstruction {
    /// The instruction's name.
    pub name: String,
    /// Elements of its tile per dimension.
    pub tile_sizes: Vec<i64>,
    /// Distance between the elements per dimension.
    pub tile_strides: Vec<i64>,
    /// `(pid_0){rt..} -> (offsets)`: where the tile of program `pid_0` starts.
    pub tile_offsets: IndexingMap,
}

/// The tiled computation: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledComputation {
    /// The root tile sizes it was made for.
    pub tile_sizes: Vec<i64>,
    /// Number of program ids.
    pub(crate) num_programs: i64,
    /// The tiled instructions, operands before users.
    pub instructions: Vec<ConcreteTiledInstruction>,
}

impl TiledComputation {
    /// Number of program ids: the product of `ceil(D_i / t_i)`.
    pub fn num_programs(&self) -> i64 {
        self.num_programs
    }
}

/// Renames the dimension `d0` of a printed map to `pid_0`.
fn pid_text(map: &IndexingMap) -> String {
    let text = map.to_string();
    let bytes = text.as_bytes();
    let word = |i: usize| {
        bytes
            .get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with("d0") && (i == 0 || !word(i - 1)) && !word(i + 2) {
            out.push_str("pid_0");
            i += 2;
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn tuple(v: &[i64]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("({})", s.join(", "))
}

impl fmt::Display for ConcreteTiledInstruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: tile_sizes={}, tile_strides={}, tile_offsets_indexing={}",
            self.name,
            tuple(&self.tile_sizes),
            tuple(&self.tile_strides),
            pid_text(&self.tile_offsets)
        )
    }
}

impl fmt::Display for TiledComputation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.instructions {
            writeln!(f, "{i}")?;
        }
        Ok(())
    }
}

/// Checks tile sizes against the root: one per dimension, each at least 1.
pub(crate) fn check_sizes(root_dims: &[i64], sizes: &[i64]) -> Result<(), TilingError> {
    if sizes.len() != root_dims.len() {
        return Err(TilingError::BadTileSizes(format!(
            "{} tile sizes for a root of rank {}",
            sizes.len(),
            root_dims.len()
        )));
    }
    if let Some((i, s)) = sizes.iter().enumerate().find(|(_, &s)| s < 1) {
        return Err(TilingError::BadTileSizes(format!(
            "tile size {s} of dimension {i} is below 1"
        )));
    }
    Ok(())
}

impl SymbolicTileAnalysis {
    /// The tiled computation for root tile sizes `sizes` (a size may exceed its dimension:
    /// the positions past the dimension are masked; the constraints must hold for the sizes
    /// as given and clamped to the dimensions, tile sizes are evaluated as given and strides
    /// clamped). Fails with
    /// [`TilingError::BadTileSizes`] for a list of the wrong length or a size below 1, and
    /// with [`TilingError::NotTileable`] when the sizes violate the constraints.
    pub fn tiled(&self, sizes: &[i64]) -> Result<TiledComputation, TilingError> {
        check_sizes(&self.root_dims, sizes)?;
        let clamped: Vec<i64> = sizes
            .iter()
            .zip(&self.root_dims)
            .map(|(&s, &d)| s.min(d.max(1)))
            .collect();
        // A size above its dimension reads the dimension whole (clamped) but lays the tile out
        // with masked positions (unclamped): both must be exact.
        if !self.constraints.holds(&clamped)? || !self.constraints.holds(sizes)? {
            return Err(TilingError::NotTileable(format!(
                "tile sizes {} violate the constraints {}",
                tuple(sizes),
                self.constraints
            )));
        }
        let counts: Vec<i64> = self
            .root_dims
            .iter()
            .zip(sizes)
            .map(|(&d, &s)| affine::arith::ceil_div(d, s).unwrap_or(1))
            .collect();
        let num_programs = counts
            .iter()
            .try_fold(1i64, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| TilingError::BadTileSizes("too many programs".into()))?;
        let pid = Expr::dim(0);
        let mut origin = Vec::with_capacity(counts.len());
        let mut inner = 1i64;
        for (i, &n) in counts.iter().enumerate().rev() {
            let index = pid
                .floor_div(Expr::constant(inner))
                .modulo(Expr::constant(n));
            origin.push(index * sizes[i]);
            inner = inner.saturating_mul(n);
        }
        origin.reverse();
        if !self.extra.is_empty() {
            self.check_extra_outputs(sizes, &program_origins(&counts, sizes))?;
        }
        let mut instructions = Vec::with_capacity(self.instructions.len());
        for ti in &self.instructions {
            let rt_lo: Vec<i64> = ti.tile.rt_vars().iter().map(|b| b.lo).collect();
            let concrete = ti.tile.evaluate(sizes, &rt_lo)?;
            let m = &ti.map.map;
            let mut at = |v: Var| -> Option<Expr> {
                match v.kind {
                    VarKind::Dim => origin.get(v.index as usize).copied(),
                    VarKind::Range => m
                        .ranges()
                        .get(v.index as usize)
                        .map(|b| Expr::constant(b.lo)),
                    VarKind::Runtime => None,
                }
            };
            let results = m.results().iter().map(|e| e.substitute(&mut at)).collect();
            let mut offsets = IndexingMap::new(
                vec![Interval::new(0, num_programs - 1)],
                vec![],
                m.runtimes().to_vec(),
                results,
                vec![],
            )?;
            offsets.simplify();
            let tiled = ConcreteTiledInstruction {
                name: ti.name.clone(),
                tile_sizes: concrete.sizes,
                tile_strides: concrete.strides,
                tile_offsets: offsets,
            };
            // Two symbolic tiles of one instruction may agree for these sizes: one entry.
            if !instructions.contains(&tiled) {
                instructions.push(tiled);
            }
        }
        Ok(TiledComputation {
            tile_sizes: sizes.to_vec(),
            num_programs,
            instructions,
        })
    }
}

/// The origin of every program's tile, by program id (row-major over the tile grid).
fn program_origins(counts: &[i64], sizes: &[i64]) -> Vec<Vec<i64>> {
    let total: i64 = counts.iter().product();
    (0..total)
        .map(|pid| {
            let mut rest = pid;
            let mut o = vec![0; counts.len()];
            for i in (0..counts.len()).rev() {
                o[i] = (rest % counts[i]) * sizes[i];
                rest /= counts[i];
            }
            o
        })
        .collect()
}

fn parse_tuple(text: &str, line: usize) -> Result<Vec<i64>, TilingError> {
    let err = |m: String| TilingError::Parse { line, message: m };
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| err(format!("expected `(a, b, ...)`, got `{text}`")))?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| err(format!("bad integer `{}`", s.trim())))
        })
        .collect()
}

impl std::str::FromStr for ConcreteTiledInstruction {
    type Err = TilingError;

    /// Reads one line of the text form back.
    fn from_str(text: &str) -> Result<ConcreteTiledInstruction, TilingError> {
        let err = |m: String| TilingError::Parse {
            line: 1,
            message: m,
        };
        let (name, rest) = text
            .split_once(": tile_sizes=")
            .ok_or_else(|| err(format!("expected `NAME: tile_sizes=...`, got `{text}`")))?;
        let (sizes, rest) = rest
            .split_once(", tile_strides=")
            .ok_or_else(|| err("expected `, tile_strides=`".into()))?;
        let (strides, map) = rest
            .split_once(", tile_offsets_indexing=")
            .ok_or_else(|| err("expected `, tile_offsets_indexing=`".into()))?;
        let tile_offsets: IndexingMap = map.parse().map_err(|e| err(format!("{e}")))?;
        Ok(ConcreteTiledInstruction {
            name: name.trim().to_string(),
            tile_sizes: parse_tuple(sizes, 1)?,
            tile_strides: parse_tuple(strides, 1)?,
            tile_offsets,
        })
    }
}

impl std::str::FromStr for TiledComputation {
    type Err = TilingError;

    /// Reads the text form back; the root tile sizes are not part of it (left empty), the
    /// number of programs is the size of the last (root) instruction's offsets map's domain
    /// (in XLA's regions numbering, instructions under a nested tiling have more).
    fn from_str(text: &str) -> Result<TiledComputation, TilingError> {
        let mut instructions = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let ti: ConcreteTiledInstruction = line.parse().map_err(|e| match e {
                TilingError::Parse { message, .. } => TilingError::Parse {
                    line: i + 1,
                    message,
                },
                other => other,
            })?;
            instructions.push(ti);
        }
        let num_programs = instructions
            .last()
            .and_then(|t| t.tile_offsets.dims().first())
            .map_or(0, |b| b.hi.saturating_add(1));
        Ok(TiledComputation {
            tile_sizes: Vec::new(),
            num_programs,
            instructions,
        })
    }
}
