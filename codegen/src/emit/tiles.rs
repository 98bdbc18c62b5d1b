//! The block structure of a fusion's loop kernel, taken from its tiled computation: the
//! root's output is cut into tiles ([`tiling::analyze`], then the tile sizes the fusion cost
//! model finds best for the target's description through the tile-size search,
//! [`fusion::tile_cost::best_tiling`]), one grid block per program, and the block's element
//! loops run over its tile, whose offsets are the tiled computation's program-id → offsets
//! map of the root.
//!
//! The cost model admits contiguous runs of the output (whole along the dimensions minor to
//! one, cut along that one, one element thick along the rest) whose sizes divide their
//! dimensions, so each block writes one contiguous run, its innermost loop is the whole
//! minor dimension (which the C compiler vectorizes) and its loops keep constant bounds.

use affine::{Expr, IndexingMap, Var};

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

/// Decides the root tiling of `fusion` (a fusion instruction) whose output has `dims` in
/// physical `order` (most major first), costed on description `cpu`. Untiled where the analysis cannot tile the fusion,
/// or where the best contiguous tiling gives fewer programs than one block per index of the
/// most major dimension would (a prime extent, for one).
pub(super) fn decide(
    fusion: &hlo::InstrRef<'_>,
    cpu: &device::Device,
    dims: &[i64],
    order: &[usize],
) -> Decision {
    let analysis = match tiling::analyze(fusion) {
        Ok(a) => a,
        Err(e) => return Decision::Untiled(e.to_string()),
    };
    if analysis.root_dims() != dims {
        return Decision::Untiled("not tiled: the analysis's root is not the output".into());
    }
    let best = match fusion::tile_cost::best_tiling(&analysis, cpu, order) {
        Ok(Some(best)) => best,
        Ok(None) => {
            return Decision::Untiled(
                "not tiled: no contiguous tile satisfies the constraints".into(),
            )
        }
        Err(e) => return Decision::Untiled(format!("not tiled: {e}")),
    };
    let p = best.tiled.num_programs();
    let rows = order.first().map_or(1, |&d| dims[d]);
    let total = fusion::tile_cost::total_work(&analysis).unwrap_or(1);
    let wanted = rows.min(fusion::tile_cost::cpu_wanted_programs(total));
    if p < wanted {
        return Decision::Untiled(format!(
            "not tiled: the best contiguous tiling has {p} programs, fewer than the {wanted} \
             blocks of the most major dimension"
        ));
    }
    let sizes = best.tile_sizes;
    let root_name = root_name(fusion);
    let Some(root) = best
        .tiled
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
        programs: p,
        offsets: root.tile_offsets.clone(),
        note: format!("tiled root: {root}"),
        sizes,
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
