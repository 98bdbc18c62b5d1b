//! Tile-size search: every candidate root tile-size vector (per dimension, the powers of two
//! below the dimension and the dimension itself), kept when the cost function admits it, the
//! analysis's constraints hold and its tiles fit a [`Budget`], priced by a [`TileCost`] (the cost model of a later crate,
//! passed in as a trait object), the cheapest kept. Deterministic: candidates are visited in
//! lexicographic order of their sizes and a later candidate replaces the best only when
//! strictly cheaper.
//!
//! ```
//! use tiling::search::{search, Budget, Candidate, TileCost};
//!
//! /// Prefers few programs, then small tiles.
//! struct FewPrograms;
//! impl TileCost for FewPrograms {
//!     fn cost(&self, c: &Candidate<'_>) -> Option<f64> {
//!         Some(c.num_programs as f64 * 1000.0 + c.footprint_bytes as f64)
//!     }
//! }
//!
//! let module = hlo::parse_module(r#"
//! HloModule m
//! fused {
//!   p0 = f32[8,6] parameter(0)
//!   ROOT n = f32[8,6] negate(p0)
//! }
//! ENTRY e {
//!   a = f32[8,6] parameter(0)
//!   ROOT f = f32[8,6] fusion(a), kind=kLoop, calls=fused
//! }"#).unwrap();
//! let analysis = tiling::analyze(&module.instr("f").unwrap()).unwrap();
//! // At most 128 bytes per program: 16 f32 elements of p0 and 16 of n. Of the tiles of at
//! // most 16 elements (sizes from {1, 2, 4, 8} x {1, 2, 4, 6}), 8 x 2 needs the fewest
//! // programs: 1 * 3.
//! let budget = Budget { max_footprint_bytes: Some(128), ..Budget::default() };
//! let best = search(&analysis, &budget, &FewPrograms).unwrap().expect("a tiling");
//! assert_eq!(best.tile_sizes, vec![8, 2]);
//! assert_eq!(best.tiled.num_programs(), 3);
//! ```

use crate::analysis::SymbolicTileAnalysis;
use crate::tiled::TiledComputation;
use crate::TilingError;

/// Most candidates [`search`] visits (the rest, past it in lexicographic order, are left out).
pub const MAX_CANDIDATES: usize = 1 << 16;

/// Limits a tiling must fit, per program (`None`: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Most elements in any one tile (e.g. what the registers of a block hold).
    pub max_tile_elements: Option<i64>,
    /// Most bytes of all tiles of one program together (shared memory, or L1/L2 on a CPU).
    pub max_footprint_bytes: Option<i64>,
    /// Fewest programs (e.g. to fill every core or SM).
    pub min_programs: Option<i64>,
}

/// What a cost function sees of one candidate tiling.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    /// The root tile sizes.
    pub tile_sizes: &'a [i64],
    /// Number of programs: the product of `ceil(D_i / t_i)`.
    pub num_programs: i64,
    /// Elements of each tiled instruction's tile (in the analysis's order).
    pub tile_elements: &'a [i64],
    /// Bytes of all tiles of one program.
    pub footprint_bytes: i64,
    /// The analysis the candidate tiles.
    pub analysis: &'a SymbolicTileAnalysis,
}

/// A cost function: lower is better; `None` rejects the candidate.
pub trait TileCost {
    /// The cost of running the fusion with this candidate tiling.
    fn cost(&self, candidate: &Candidate<'_>) -> Option<f64>;

    /// Whether root tile sizes `sizes` may be considered at all, asked before the
    /// constraints and tiles of a candidate are evaluated: a cheap filter for the shapes
    /// an emitter takes (e.g. tiles that divide their dimensions). All by default.
    fn admits(&self, sizes: &[i64]) -> bool {
        let _ = sizes;
        true
    }
}

/// The best tiling found.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// Its root tile sizes.
    pub tile_sizes: Vec<i64>,
    /// Its cost.
    pub cost: f64,
    /// The tiled computation for those sizes.
    pub tiled: TiledComputation,
    /// Candidates visited.
    pub visited: usize,
    /// Candidates that satisfied the constraints and the budget and were priced.
    pub priced: usize,
}

/// The candidate sizes of a dimension of `d` elements: powers of two below `d`, then `d`.
pub fn candidate_sizes(d: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut p = 1i64;
    while p < d {
        out.push(p);
        p = match p.checked_mul(2) {
            Some(q) => q,
            None => break,
        };
    }
    out.push(d.max(1));
    out
}

/// Moves `index` to the next candidate in lexicographic order (last dimension fastest);
/// false after the last.
fn advance(index: &mut [usize], lists: &[Vec<i64>]) -> bool {
    for k in (0..index.len()).rev() {
        index[k] += 1;
        if index[k] < lists[k].len() {
            return true;
        }
        index[k] = 0;
    }
    false
}

/// Elements of every tiled instruction's tile for root tile sizes `sizes` (in the
/// analysis's order) and the bytes of them all; `None` on overflow or when a tile cannot be
/// evaluated.
pub fn footprint(analysis: &SymbolicTileAnalysis, sizes: &[i64]) -> Option<(Vec<i64>, i64)> {
    let mut elements = Vec::with_capacity(analysis.instructions().len());
    let mut bytes = 0i64;
    for ti in analysis.instructions() {
        let rt: Vec<i64> = ti.tile.rt_vars().iter().map(|b| b.lo).collect();
        let tile = ti.tile.evaluate(sizes, &rt).ok()?;
        let n = tile
            .sizes
            .iter()
            .try_fold(1i64, |acc, &s| acc.checked_mul(s.max(0)))?;
        elements.push(n);
        bytes = bytes.checked_add(n.checked_mul(ti.element_bytes)?)?;
    }
    Some((elements, bytes))
}

/// Searches the tile sizes of `analysis`'s root (see the module documentation). `Ok(None)`
/// when no candidate satisfies the constraints and the budget, or every one is rejected by
/// `cost`.
pub fn search(
    analysis: &SymbolicTileAnalysis,
    budget: &Budget,
    cost: &dyn TileCost,
) -> Result<Option<SearchResult>, TilingError> {
    let dims = analysis.root_dims();
    let lists: Vec<Vec<i64>> = dims.iter().map(|&d| candidate_sizes(d)).collect();
    let mut index = vec![0usize; dims.len()];
    let (mut visited, mut priced) = (0usize, 0usize);
    let mut best: Option<(Vec<i64>, f64)> = None;
    loop {
        visited += 1;
        let sizes: Vec<i64> = index.iter().zip(&lists).map(|(&i, l)| l[i]).collect();
        if let Some(c) = price(analysis, budget, cost, &sizes)? {
            priced += 1;
            if best.as_ref().is_none_or(|(_, b)| c < *b) {
                best = Some((sizes, c));
            }
        }
        if visited >= MAX_CANDIDATES || !advance(&mut index, &lists) {
            break;
        }
    }
    let Some((tile_sizes, cost)) = best else {
        return Ok(None);
    };
    let tiled = analysis.tiled(&tile_sizes)?;
    Ok(Some(SearchResult {
        tile_sizes,
        cost,
        tiled,
        visited,
        priced,
    }))
}

/// The cost of one candidate, or `None` when it violates the constraints or the budget or
/// the cost function rejects it.
fn price(
    analysis: &SymbolicTileAnalysis,
    budget: &Budget,
    cost: &dyn TileCost,
    sizes: &[i64],
) -> Result<Option<f64>, TilingError> {
    if !cost.admits(sizes) || !analysis.constraints().holds(sizes)? {
        return Ok(None);
    }
    let num_programs = analysis
        .root_dims()
        .iter()
        .zip(sizes)
        .try_fold(1i64, |acc, (&d, &s)| {
            acc.checked_mul(affine::arith::ceil_div(d, s).unwrap_or(1))
        });
    let Some(num_programs) = num_programs else {
        return Ok(None);
    };
    let Some((elements, bytes)) = footprint(analysis, sizes) else {
        return Ok(None);
    };
    let fits = budget
        .max_tile_elements
        .is_none_or(|m| elements.iter().all(|&n| n <= m))
        && budget.max_footprint_bytes.is_none_or(|m| bytes <= m)
        && budget.min_programs.is_none_or(|m| num_programs >= m);
    if !fits {
        return Ok(None);
    }
    let candidate = Candidate {
        tile_sizes: sizes,
        num_programs,
        tile_elements: &elements,
        footprint_bytes: bytes,
        analysis,
    };
    Ok(cost.cost(&candidate).filter(|c| !c.is_nan()))
}
