//! The kernel expressions a GPU thread map's coordinates stand for, shared by the GPU
//! emitters: each binds `th_x`, `bl_x`, `chunk_id` and `unroll_id` to its own loop
//! variables (or constants), and hloc's launches are one-dimensional, so `th_y`, `th_z`,
//! `bl_y` and `bl_z` are 0.

use affine::{Expr, IndexingMap, Var, VarKind};
use fusion::gpu_launch::coords;

/// What a thread map's coordinates are in a kernel.
#[derive(Clone, Copy)]
pub(super) struct LaunchVars {
    /// `th_x`: the thread within the block.
    pub thread: Expr,
    /// `bl_x`: the block.
    pub block: Expr,
    /// `chunk_id`.
    pub chunk: Expr,
    /// `unroll_id`.
    pub unroll: Expr,
}

impl LaunchVars {
    /// The expression coordinate `v` of a thread map stands for.
    pub(super) fn bind(&self, v: Var) -> Expr {
        match (v.kind, v.index) {
            (VarKind::Dim, coords::TH_X) => self.thread,
            (VarKind::Dim, coords::BL_X) => self.block,
            (VarKind::Range, coords::CHUNK) => self.chunk,
            (VarKind::Range, coords::UNROLL) => self.unroll,
            _ => Expr::constant(0),
        }
    }

    /// `e`, an expression over a thread map's coordinates, in the kernel's terms.
    pub(super) fn apply(&self, e: Expr) -> Expr {
        e.substitute(&mut |v| Some(self.bind(v)))
    }

    /// The guard conditions `(coordinate, lo, hi)` for the launch coordinates `extents`
    /// (each with its extent in the launch) whose bounds in thread map `map` are tighter
    /// than the launch's: a tiny output's block has more threads than elements, and the
    /// simplifier moves a constraint on one variable into its bounds.
    pub(super) fn tighter_bounds(
        &self,
        map: &IndexingMap,
        extents: &[(Var, i64)],
    ) -> Vec<(Expr, i64, i64)> {
        let mut conds = Vec::new();
        for &(v, extent) in extents {
            let bound = match v.kind {
                VarKind::Dim => map.dims()[v.index as usize],
                _ => map.ranges()[v.index as usize],
            };
            if bound.lo > 0 || bound.hi < extent - 1 {
                conds.push((self.bind(v), bound.lo, bound.hi));
            }
        }
        conds
    }
}
