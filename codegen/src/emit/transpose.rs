//! Cache-blocked transposes: when a kernel reads some input with a large stride along its
//! innermost output loop but contiguously along another output dimension, both loops are
//! tiled (the target's `transpose_tile` elements on a side) so each tile's reads and writes
//! stay in cache, instead of touching a new cache line of the input for every output
//! element.

use affine::{Expr, Interval, Var};

use super::builder::Builder;
use crate::kir::{self, Stmt};

/// A kernel body rewritten into tiles: its loop nest and grid.
pub(super) struct Tiled {
    /// The statements of one block.
    pub body: Vec<Stmt>,
    /// The block variable and block count.
    pub grid: (Var, i64),
    /// A line for the kernel's comment.
    pub note: String,
}

/// The element stride of `e` along `v` when `e` is affine in it (`None` otherwise).
fn stride(b: &Builder<'_>, e: Expr, v: Var) -> Option<i64> {
    let next = e.substitute(&mut |u| (u == v).then(|| Expr::var(v) + Expr::constant(1)));
    b.simplify(next - e).as_const()
}

/// Tiles the per-element `body` of a kernel over `dims` in physical `order` (most major
/// first) when some input is read with a stride along the innermost loop and contiguously
/// along another loop, both extents multiples of the tile of at least two tiles; `None`
/// otherwise (and for bodies with loops of their own).
pub(super) fn tile_transposed(
    b: &mut Builder<'_>,
    body: &[Stmt],
    dims: &[i64],
    order: &[usize],
) -> Option<Tiled> {
    let (&minor, outer) = order.split_last()?;
    if outer.is_empty() || body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
        return None;
    }
    let dm = Var::dim(minor as u32);
    let mut partner = None;
    kir::for_each_load(body, &mut |buf, offset| {
        if partner.is_some() || b.buffers[buf].access != kir::Access::In {
            return;
        }
        let strided = stride(b, offset, dm).is_some_and(|s| s.abs() > 1);
        if strided {
            partner = outer
                .iter()
                .copied()
                .find(|&d| stride(b, offset, Var::dim(d as u32)).is_some_and(|s| s.abs() == 1));
        }
    });
    let major = partner?;
    let tile = b.target.transpose_tile;
    let fits = |d: usize| dims[d] % tile == 0 && dims[d] >= 2 * tile;
    if !fits(major) || !fits(minor) {
        return None;
    }
    let dk = Var::dim(major as u32);
    let kt = b.new_range(Interval::new(0, dims[major] / tile - 1));
    let mt = b.new_range(Interval::new(0, dims[minor] / tile - 1));
    let i = b.new_range(Interval::new(0, tile - 1));
    let j = b.new_range(Interval::new(0, tile - 1));
    let mut body_tile = body.to_vec();
    kir::substitute_stmts(&mut body_tile, &mut |v| {
        if v == dk {
            Some(Expr::var(kt) * Expr::constant(tile) + Expr::var(i))
        } else if v == dm {
            Some(Expr::var(mt) * Expr::constant(tile) + Expr::var(j))
        } else {
            None
        }
    });
    let fills = super::transpose_stage::stage_transposed_reads(b, &mut body_tile, (i, j), tile);
    let mut note =
        format!("transposed read: d{major} and d{minor} in tiles of {tile}x{tile} elements");
    if fills.is_some() {
        note.push_str(", staged through local tiles");
    }
    // The tile's two loops (after the fills of its local tiles), then from the inside out
    // the two tile loops and the other dimensions in their order; the outermost is the
    // grid's.
    let mut body = fills.unwrap_or_default();
    body.push(Stmt::serial_loop(
        i,
        0,
        tile - 1,
        vec![Stmt::serial_loop(j, 0, tile - 1, body_tile)],
    ));
    let mut loops: Vec<(Var, i64)> = outer
        .iter()
        .filter(|&&d| d != major)
        .map(|&d| (Var::dim(d as u32), dims[d]))
        .collect();
    loops.extend([(kt, dims[major] / tile), (mt, dims[minor] / tile)]);
    let (&grid, inner) = loops.split_first()?;
    for &(var, n) in inner.iter().rev() {
        body = vec![Stmt::serial_loop(var, 0, n - 1, body)];
    }
    Some(Tiled { body, grid, note })
}
