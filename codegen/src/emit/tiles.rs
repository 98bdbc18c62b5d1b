//! The block structure of a fusion's loop kernel, taken from its tiled computation: the
//! root's output is cut into tiles ([`tiling::analyze`] then
//! [`tiling::SymbolicTileAnalysis::tiled`]), one grid block per program, and the block's
//! element loops run over its tile, whose offsets are the tiled computation's
//! program-id → offsets map of the root.
//!
//! The CPU wants few, large, contiguous tiles: a tile is whole along the dimensions minor
//! to one (physical order), cut along that one, and one element thick along the rest, so
//! each block writes one contiguous run of the output and its innermost loop is the whole
//! minor dimension, which the C compiler vectorizes. Tile sizes divide their dimension (the
//! loops keep constant bounds, no masked last tile). Among those, and among the sizes the
//! analysis's constraints admit, the chosen tiling has the number of programs closest to
//! [`TARGET_PROGRAMS`] without programs of less than [`MIN_TILE_ELEMENTS`] elements of work
//! (the largest tile a program touches); the runtime then splits the programs across its
//! threads.

use affine::{Expr, IndexingMap, Var};

/// Programs a large kernel is cut into: with the runtime's four chunks per thread, enough
/// to keep sixteen threads busy.
pub(super) const TARGET_PROGRAMS: i64 = 64;

/// Fewest elements of work per program: below it the per-program loop overhead and the
/// short innermost loops cost more than the parallelism gains.
pub(super) const MIN_TILE_ELEMENTS: i64 = 4096;

/// The chosen tiling of a fusion's root.
#[derive(Clone, Debug)]
pub(super) struct RootTiling {
    /// Root tile size per dimension.
    pub sizes: Vec<i64>,
    /// Number of programs (grid blocks).
    pub programs: i64,
    /// `(pid_0) -> (offsets)`: where the tile of program `pid_0` starts.
    pub offsets: IndexingMap,
    /// A line for the kernel's comment: the root's tiled instruction.
    pub note: String,
}

/// What tiling decided for a fusion: a tiling, or why the kernel keeps one block per
/// index of its most major dimension.
pub(super) enum Decision {
    /// Tile the root.
    Tiled(RootTiling),
    /// Do not tile; the reason goes into the kernel's comment.
    Untiled(String),
}

/// The number of programs a tiling of `dims` by `sizes` has.
fn programs(dims: &[i64], sizes: &[i64]) -> i64 {
    dims.iter()
        .zip(sizes)
        .map(|(&d, &s)| (d + s - 1) / s)
        .product()
}

/// Contiguous candidate tile sizes of `dims` in physical `order` (most major first): for
/// each dimension `c`, the dimensions minor to it whole, `c` cut by a size that divides it,
/// the dimensions major to it of size 1.
fn contiguous_candidates(dims: &[i64], order: &[usize]) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    for (k, &cut) in order.iter().enumerate() {
        for s in tiling::search::candidate_sizes(dims[cut]) {
            if dims[cut] % s != 0 {
                continue;
            }
            let mut sizes = vec![1; dims.len()];
            for &minor in &order[k + 1..] {
                sizes[minor] = dims[minor];
            }
            sizes[cut] = s;
            out.push(sizes);
        }
    }
    out
}

/// The work of one program tiled by `sizes`: the elements of its largest tile (a row
/// reduction's program reads its rows whole, so its work is its operand tile, not its
/// few outputs). `None` on overflow or when a tile cannot be evaluated.
fn work(analysis: &tiling::SymbolicTileAnalysis, sizes: &[i64]) -> Option<i64> {
    let mut most = 1i64;
    for ti in analysis.instructions() {
        let rt: Vec<i64> = ti.tile.rt_vars().iter().map(|b| b.lo).collect();
        let tile = ti.tile.evaluate(sizes, &rt).ok()?;
        let n = tile
            .sizes
            .iter()
            .try_fold(1i64, |acc, &s| acc.checked_mul(s.max(0)))?;
        most = most.max(n);
    }
    Some(most)
}

/// How far `p` programs are from the wanted `want`, on a log scale.
fn distance(p: i64, want: i64) -> f64 {
    ((p as f64).log2() - (want as f64).log2()).abs()
}

/// Decides the root tiling of `fusion` (a fusion instruction) whose output has `dims` in
/// physical `order` (most major first). Untiled where the analysis cannot tile the fusion,
/// or where no contiguous tiling it admits gives more programs than one block per index of
/// the most major dimension would (a prime extent, for one).
pub(super) fn decide(fusion: &hlo::InstrRef<'_>, dims: &[i64], order: &[usize]) -> Decision {
    let analysis = match tiling::analyze(fusion) {
        Ok(a) => a,
        Err(e) => return Decision::Untiled(e.to_string()),
    };
    if analysis.root_dims() != dims {
        return Decision::Untiled("not tiled: the analysis's root is not the output".into());
    }
    let Some(total) = work(&analysis, dims) else {
        return Decision::Untiled("not tiled: the tiles' sizes overflow".into());
    };
    let want = (total / MIN_TILE_ELEMENTS).clamp(1, TARGET_PROGRAMS);
    let mut best: Option<(Vec<i64>, i64)> = None;
    for sizes in contiguous_candidates(dims, order) {
        if !analysis.constraints().holds(&sizes).unwrap_or(false) {
            continue;
        }
        let p = programs(dims, &sizes);
        let Some(per_program) = work(&analysis, &sizes) else {
            continue;
        };
        if p > 1 && per_program < MIN_TILE_ELEMENTS && p > want {
            continue;
        }
        let better = match &best {
            None => true,
            Some((_, bp)) => {
                let (d, bd) = (distance(p, want), distance(*bp, want));
                d < bd || (d == bd && p < *bp)
            }
        };
        if better {
            best = Some((sizes, p));
        }
    }
    let Some((sizes, p)) = best else {
        return Decision::Untiled("not tiled: no contiguous tile satisfies the constraints".into());
    };
    let rows = order.first().map_or(1, |&d| dims[d]);
    if p < want.min(rows) {
        return Decision::Untiled(format!(
            "not tiled: the best contiguous tiling has {p} programs, fewer than the {} blocks of \
             the most major dimension",
            want.min(rows)
        ));
    }
    let tiled = match analysis.tiled(&sizes) {
        Ok(t) => t,
        Err(e) => return Decision::Untiled(format!("not tiled: {e}")),
    };
    let root_name = root_name(fusion);
    let Some(root) = tiled
        .instructions
        .iter()
        .find(|t| Some(t.name.as_str()) == root_name.as_deref() && t.tile_sizes == sizes)
    else {
        return Decision::Untiled("not tiled: the root has no tile of the chosen sizes".into());
    };
    if root.tile_strides.iter().any(|&s| s != 1)
        || !root.tile_offsets.runtimes().is_empty()
        || !root.tile_offsets.constraints().is_empty()
    {
        return Decision::Untiled("not tiled: the root tile is strided or dynamic".into());
    }
    Decision::Tiled(RootTiling {
        sizes,
        programs: tiled.num_programs(),
        offsets: root.tile_offsets.clone(),
        note: format!("tiled root: {root}"),
    })
}

/// The name of the fused computation's (first) root: a tuple root's first operand.
fn root_name(fusion: &hlo::InstrRef<'_>) -> Option<String> {
    let module = fusion.module();
    let comp = module.computation(fusion.instr().calls()?);
    let mut root = comp.instr(comp.root());
    if root.opcode() == hlo::Opcode::Tuple {
        root = comp.instr(*root.operands().first()?);
    }
    Some(root.name().to_string())
}

/// The offsets of the tile of program `pid` (a kernel variable) per root dimension.
pub(super) fn offsets_at(tiling: &RootTiling, pid: Var) -> Vec<Expr> {
    tiling
        .offsets
        .results()
        .iter()
        .map(|e| e.substitute(&mut |v| (v == Var::dim(0)).then(|| Expr::var(pid))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_contiguous_and_divide() {
        // Row-major [4, 6, 8]: cut d0 (d1, d2 whole), d1 (d2 whole, d0 = 1) or d2.
        let c = contiguous_candidates(&[4, 6, 8], &[0, 1, 2]);
        assert!(c.contains(&vec![2, 6, 8]));
        assert!(c.contains(&vec![1, 2, 8]));
        assert!(c.contains(&vec![1, 6, 8]));
        assert!(c.contains(&vec![1, 1, 4]));
        assert!(!c.contains(&vec![1, 4, 8]), "4 does not divide 6");
        assert!(!c.contains(&vec![2, 2, 8]), "not contiguous");
        // Column-major: d0 is minor.
        let c = contiguous_candidates(&[4, 8], &[1, 0]);
        assert!(c.contains(&vec![4, 2]));
        assert!(!c.contains(&vec![2, 8]));
    }

    #[test]
    fn programs_round_up() {
        assert_eq!(programs(&[10, 7], &[4, 7]), 3);
        assert_eq!(programs(&[8], &[8]), 1);
    }
}
