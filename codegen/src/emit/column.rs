//! Column reductions: a kernel whose outputs come from reductions that keep the input's
//! minor-most physical dimension (reached from the root through elementwise ops, so
//! evaluated at the kernel's own index) computes a tile of adjacent outputs together, so
//! each step of the reduction reads contiguous input instead of walking every column with
//! a large stride. The tile's accumulators live in local arrays: each reduction step is a
//! loop over the tile (long contiguous rows, which the C compiler vectorizes) combining
//! a few input rows (the target's [`crate::target::ColumnTiles::rows`]) per load and store of an accumulator, and a last loop over the tile
//! computes the outputs. A remainder tile covers an extent no tile size divides.
//!
//! Each output still accumulates its elements in the reduction's own order: no float math
//! is reordered here (sums of 16-bit floats take XLA's tree order, [`xla_tree`]).

mod xla_tree;

use affine::{Expr, Interval, Var};
use hlo::{CompId, InstrId, Opcode};

use super::assemble::{finish, finish_grid, store_outputs, EmittedKernel};
use super::builder::Builder;
use super::elemental::Applied;
use crate::error::CodegenError;
use crate::kir::{Guard, Stmt, Value};
use crate::target::ColumnTiles;

/// The accesses of a reduction's inputs and the range variables they share.
type InputAccesses = (Vec<Applied>, Vec<Var>);

/// How a kernel computes adjacent outputs together.
pub(crate) struct ColumnPlan {
    /// The reductions evaluated jointly (at the kernel's index).
    pub heroes: Vec<InstrId>,
    /// Outputs per tile.
    pub tile: i64,
}

impl Builder<'_> {
    /// The column plan of a kernel computing `root` of `comp` over `dims` in physical
    /// `order` (most major first), or `None` when the kernel is no column reduction: some
    /// reduction must be reached from the root through same-shaped elementwise ops and
    /// reshapes that only add or remove dimensions of size 1 ([`keeps_columns`]), and
    /// every such reduction must keep its input's minor-most dimension as the kernel's
    /// minor-most one (the same dimension once the size-1 ones are left out).
    pub(crate) fn column_plan(
        &self,
        comp: CompId,
        root: InstrId,
        dims: &[i64],
        order: &[usize],
    ) -> Option<ColumnPlan> {
        let &minor = order.last()?;
        let kept = sized(dims);
        let minor_at = kept.iter().position(|&(d, _)| d == minor)?;
        let c = self.module.computation(comp);
        let mut heroes = Vec::new();
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = stack.pop() {
            // A leaf (an unfused kernel's operand) is read from its buffer, not computed
            // here: a reduction behind it is another kernel's.
            if !seen.insert(id) || self.leaves.contains_key(&(comp, id)) {
                continue;
            }
            let instr = c.instr(id);
            match instr.opcode() {
                Opcode::Tuple | Opcode::GetTupleElement => stack.extend(instr.operands()),
                Opcode::Reduce => {
                    let input = c.instr(*instr.operands().first()?).shape().as_array()?;
                    let rank = input.dims().len() as i64;
                    let input_minor = input
                        .layout()
                        .and_then(|l| l.minor_to_major.first().copied())
                        .unwrap_or(rank - 1);
                    let reduced = instr.dimensions()?;
                    if reduced.contains(&input_minor) {
                        return None;
                    }
                    let kept_before = (0..input_minor).filter(|d| !reduced.contains(d)).count();
                    let out: Vec<i64> = (0..rank)
                        .filter(|d| !reduced.contains(d))
                        .map(|d| input.dims()[d as usize])
                        .collect();
                    if out == dims {
                        if kept_before != minor {
                            return None;
                        }
                    } else {
                        // Behind size-1 reshapes: the same dimensions of size 2 or more,
                        // the input's minor-most one in the kernel's minor-most place.
                        let out_kept = sized(&out);
                        let same = out_kept.len() == kept.len()
                            && out_kept.iter().zip(&kept).all(|(a, b)| a.1 == b.1);
                        if !same || out_kept.get(minor_at).map(|k| k.0) != Some(kept_before) {
                            return None;
                        }
                    }
                    heroes.push(id);
                }
                Opcode::Reshape | Opcode::Bitcast => {
                    let &o = instr.operands().first()?;
                    if keeps_columns(c.instr(o).shape(), instr.shape(), instr.opcode()) {
                        stack.push(o);
                    }
                }
                op if op.is_elementwise() && op != Opcode::BitcastConvert => {
                    let here = instr.shape().dims();
                    let same: Vec<InstrId> = instr
                        .operands()
                        .iter()
                        .copied()
                        .filter(|&o| c.instr(o).shape().dims() == here)
                        .collect();
                    stack.extend(same);
                }
                _ => {}
            }
        }
        let extent = dims[minor];
        if heroes.is_empty() || extent < 2 {
            return None;
        }
        heroes.sort();
        Some(ColumnPlan {
            heroes,
            tile: tile_size(extent, &self.target.column),
        })
    }

    /// The accesses of reduce `id`'s inputs at `index` (one per input, sharing range
    /// variables) and those range variables; `None` when some input is read conditionally
    /// (or never).
    fn input_accesses(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        out: &mut Vec<Stmt>,
    ) -> Result<Option<InputAccesses>, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let n = instr.operands().len() / 2;
        let g = self.maps(comp, id)?;
        let mut ranges: Option<Vec<Var>> = None;
        let mut accesses = Vec::with_capacity(n);
        for j in 0..n {
            // Never read (a zero-sized reduced dimension): the caller computes the reduce
            // elementwise, which gives the init values.
            let Some(m) = self.single(instr.opcode(), &g, j)? else {
                return Ok(None);
            };
            let Some(a) = self.apply(m, index, ranges.as_deref(), false, out)? else {
                return Ok(None);
            };
            if !a.guard.is_true() {
                return Ok(None);
            }
            ranges = Some(a.ranges.clone());
            accesses.push(a);
        }
        Ok(Some((accesses, ranges.unwrap_or_default())))
    }

    /// The initial values of reduce `id` at `index`, one per accumulator.
    fn reduce_inits(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        let n = instr.operands().len() / 2;
        let g = self.maps(comp, id)?;
        let mut inits = Vec::with_capacity(n);
        for j in 0..n {
            inits.push(
                self.plain_operand((comp, id), &g, n + j, index, false, out)?
                    .remove(0),
            );
        }
        Ok(inits)
    }

    /// Emits reduce `id` of `comp` for a tile of outputs: `index` is the kernel index with
    /// the minor-most dimension at `tile * len + t`, `t` the tile's loop variable over
    /// `len` outputs. The accumulators live in local arrays (initialized in a loop over
    /// the tile, updated by a loop over the tile inside the reduction's loops); memoizes
    /// the result at `index` as loads from them. `false` (nothing memoized) when the
    /// reduction's inputs are read conditionally.
    fn reduce_tile(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        (t, len): (Var, i64),
        out: &mut Vec<Stmt>,
    ) -> Result<bool, CodegenError> {
        let red = self.reducer(comp, id)?;
        let mut setup = Vec::new();
        let Some((access, ranges)) = self.input_accesses(comp, id, index, &mut setup)? else {
            return Ok(false);
        };
        if !setup.is_empty() {
            // Runtime indices bound per output would have to live inside the tile loop.
            return Ok(false);
        }
        let name = self.module.computation(comp).instr(id).name().to_string();
        let mut init_body = Vec::new();
        self.memo.push(Default::default());
        let inits = self.reduce_inits(comp, id, index, &mut init_body);
        self.memo.pop();
        let mut locals = Vec::new();
        for (j, init) in inits?.into_iter().enumerate() {
            let ty = init.ty();
            let l = self.new_local(format!("{name} accumulators {j}"), ty, len);
            init_body.push(Stmt::LocalStore {
                local: l,
                offset: Expr::var(t),
                value: init,
            });
            locals.push((l, ty));
        }
        out.push(loop_over(t, len, init_body));
        if self.column_tree(comp, id, index, (&access, &ranges), &locals, (t, len), out)? {
            let vals = locals
                .iter()
                .map(|&(l, ty)| Value::LocalLoad {
                    local: l,
                    offset: Expr::var(t),
                    ty,
                })
                .collect();
            self.memo_put((comp, id, index.to_vec()), vals);
            return Ok(true);
        }
        let (outer, last) = match ranges.split_last() {
            Some((&r, outer)) => (outer, Some(r)),
            None => (&ranges[..], None),
        };
        let mut inner = Vec::new();
        let extent = last.map_or(0, |r| {
            let iv = self.ranges[r.index as usize];
            iv.hi - iv.lo + 1
        });
        let per_group = self.target.column.rows;
        match last {
            // Rows in groups of `per_group`: each accumulator is loaded and stored once per
            // group, its elements still combined in their order.
            Some(r) if extent >= 2 * per_group => {
                let iv = self.ranges[r.index as usize];
                let groups = extent / per_group;
                let g = self.new_range(Interval::new(0, groups - 1));
                let rows: Vec<Vec<Applied>> = (0..per_group)
                    .map(|u| {
                        let at =
                            Expr::var(g) * Expr::constant(per_group) + Expr::constant(iv.lo + u);
                        access.iter().map(|a| self.at_range(a, r, at)).collect()
                    })
                    .collect();
                let step = self.tile_step(comp, id, red, &locals, t, &rows)?;
                inner.push(Stmt::Loop {
                    kind: crate::kir::LoopKind::Serial,
                    var: g,
                    lo: 0,
                    hi: groups - 1,
                    body: vec![loop_over(t, len, step)],
                });
                if groups * per_group < extent {
                    let step = self.tile_step(comp, id, red, &locals, t, &[access])?;
                    inner.push(Stmt::Loop {
                        kind: crate::kir::LoopKind::Serial,
                        var: r,
                        lo: iv.lo + groups * per_group,
                        hi: iv.hi,
                        body: vec![loop_over(t, len, step)],
                    });
                }
            }
            Some(r) => {
                let iv = self.ranges[r.index as usize];
                let step = self.tile_step(comp, id, red, &locals, t, &[access])?;
                inner.push(Stmt::Loop {
                    kind: crate::kir::LoopKind::Serial,
                    var: r,
                    lo: iv.lo,
                    hi: iv.hi,
                    body: vec![loop_over(t, len, step)],
                });
            }
            None => {
                let step = self.tile_step(comp, id, red, &locals, t, &[access])?;
                inner.push(loop_over(t, len, step));
            }
        }
        out.extend(self.wrap_loops(outer, inner));
        let vals = locals
            .iter()
            .map(|&(l, ty)| Value::LocalLoad {
                local: l,
                offset: Expr::var(t),
                ty,
            })
            .collect();
        self.memo_put((comp, id, index.to_vec()), vals);
        Ok(true)
    }

    /// One step of a tile's reduction at tile position `t`: load each accumulator from its
    /// local array, combine the elements of `rows` in order, store the accumulators back.
    #[allow(clippy::too_many_arguments)]
    fn tile_step(
        &mut self,
        comp: CompId,
        id: InstrId,
        red: CompId,
        locals: &[(usize, crate::kir::ScalarType)],
        t: Var,
        rows: &[Vec<Applied>],
    ) -> Result<Vec<Stmt>, CodegenError> {
        let mut step = Vec::new();
        let mut accs = Vec::with_capacity(locals.len());
        for &(l, ty) in locals {
            let var = self.new_var(ty);
            step.push(Stmt::Decl {
                var,
                value: Value::LocalLoad {
                    local: l,
                    offset: Expr::var(t),
                    ty,
                },
            });
            accs.push((var, ty));
        }
        for row in rows {
            self.memo.push(Default::default());
            let r = self.reduce_body(comp, id, red, row, &accs, &mut step);
            self.memo.pop();
            r?;
        }
        for (&(l, _), &(var, ty)) in locals.iter().zip(&accs) {
            step.push(Stmt::LocalStore {
                local: l,
                offset: Expr::var(t),
                value: Value::Var(var, ty),
            });
        }
        Ok(step)
    }

    /// The reducer computation of reduce `id`.
    fn reducer(&self, comp: CompId, id: InstrId) -> Result<CompId, CodegenError> {
        self.module
            .computation(comp)
            .instr(id)
            .to_apply()
            .ok_or_else(|| self.unsupported("reduce", "no reducer computation"))
    }
}

/// `for var in [0, len - 1] { body }`.
fn loop_over(var: Var, len: i64, body: Vec<Stmt>) -> Stmt {
    Stmt::Loop {
        kind: crate::kir::LoopKind::Serial,
        var,
        lo: 0,
        hi: len - 1,
        body,
    }
}

/// The tile size for a minor-most extent: the whole extent when small, else about a
/// quarter of it (tiles are the blocks threads share), at most `max_tile`, a divisor of
/// the extent when one is near (no remainder tile).
fn tile_size(extent: i64, t: &ColumnTiles) -> i64 {
    if extent < t.min_tiles * t.min_tile {
        return extent.min(t.max_tile);
    }
    let quarter = (extent + t.min_tiles - 1) / t.min_tiles;
    let want = ((quarter + 15) / 16 * 16).min(t.max_tile);
    super::builder::near_divisor(extent, want)
}

/// A column-reduction kernel ([`ColumnPlan`]) computing `root` into `out_bufs` over `dims`
/// in physical `order`: the minor-most dimension in full tiles, then a remainder tile if
/// the tile size does not divide it. When that dimension is the only one, the tiles are
/// the grid (the remainder its last block).
#[allow(clippy::too_many_arguments)]
pub(super) fn column_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    root: (CompId, InstrId),
    out_bufs: &[usize],
    plan: ColumnPlan,
    dims: &[i64],
    order: &[usize],
) -> Result<EmittedKernel, CodegenError> {
    let rank = dims.len();
    let minor = order[rank - 1];
    let extent = dims[minor];
    let len = plan.tile;
    let (tiles, rest) = (extent / len, extent % len);
    let only_dim = rank == 1;
    let tile_count = tiles + i64::from(only_dim && rest > 0);
    let tile = b.new_range(Interval::new(0, tile_count - 1));
    let title =
        format!("{title}\ncolumn reduction: tiles of {len} outputs, accumulators in local arrays");
    // With the remainder as the grid's last block, the full tiles run under a guard.
    let guard = (only_dim && rest > 0).then(|| Guard {
        conds: vec![(Expr::var(tile), 0, tiles - 1)],
    });
    let full = if tiles > 0 {
        if let Some(g) = &guard {
            b.guards.push(g.clone());
        }
        let t = b.new_range(Interval::new(0, len - 1));
        let at = Expr::var(tile) * Expr::constant(len) + Expr::var(t);
        let body = tile_body(
            &mut b,
            root,
            out_bufs,
            &plan.heroes,
            (minor, dims),
            at,
            (t, len),
        );
        if guard.is_some() {
            b.guards.pop();
        }
        body?
    } else {
        vec![]
    };
    let remainder = if rest > 0 {
        let t = b.new_range(Interval::new(0, rest - 1));
        let at = Expr::constant(tiles * len) + Expr::var(t);
        tile_body(
            &mut b,
            root,
            out_bufs,
            &plan.heroes,
            (minor, dims),
            at,
            (t, rest),
        )?
    } else {
        vec![]
    };
    if only_dim {
        let body = match guard {
            Some(guard) => vec![Stmt::If {
                guard,
                body: full,
                else_body: remainder,
            }],
            None => full,
        };
        return finish_grid(b, name, title, body, Some((tile, tile_count)));
    }
    let mut body = Vec::new();
    if tiles > 0 {
        body.push(loop_over(tile, tiles, full));
    }
    body.extend(remainder);
    finish(b, name, title, body, dims, &order[..rank - 1])
}

/// The statements of one tile: the minor-most dimension at `at` (over the tile variable
/// `t` of `len` outputs), the heroes' accumulators reduced, then the outputs computed.
fn tile_body(
    b: &mut Builder<'_>,
    root: (CompId, InstrId),
    out_bufs: &[usize],
    heroes: &[InstrId],
    (minor, dims): (usize, &[i64]),
    at: Expr,
    (t, len): (Var, i64),
) -> Result<Vec<Stmt>, CodegenError> {
    let index: Vec<Expr> = (0..dims.len())
        .map(|d| {
            if d == minor {
                b.simplify(at)
            } else {
                Expr::dim(d as u32)
            }
        })
        .collect();
    let mut body = Vec::new();
    b.memo.push(Default::default());
    let mut result = Ok(());
    for &hero in heroes {
        let hero_dims = reduce_dims(b.module.computation(root.0), hero);
        let Some(at) = hero_index(dims, &hero_dims, &index) else {
            result = Err(b.unsupported(
                "reduce",
                "a column reduction whose dimensions differ from the kernel's",
            ));
            break;
        };
        result = b
            .reduce_tile(root.0, hero, &at, (t, len), &mut body)
            .map(|_| ());
        if result.is_err() {
            break;
        }
    }
    let mut outputs = Vec::new();
    if result.is_ok() {
        result = store_outputs(b, root, out_bufs, &index, &mut outputs);
    }
    b.memo.pop();
    result?;
    body.push(loop_over(t, len, outputs));
    Ok(body)
}

/// The dimensions of extent 2 or more of `dims`, with their numbers.
fn sized(dims: &[i64]) -> Vec<(usize, i64)> {
    dims.iter()
        .copied()
        .enumerate()
        .filter(|&(_, n)| n != 1)
        .collect()
}

/// Whether a reshape (or bitcast) from `from` to `to` only adds or removes dimensions of
/// size 1: the other dimensions keep their extents and their order (for a bitcast, which
/// reinterprets the bytes, also their physical order), so an element keeps its index in
/// them and a column reduction behind it stays one (cnn_batchnorm_train's `f32[32]` column
/// sum reshaped to `f32[1,1,1,32]`). Both minor-most dimensions must have extent 2 or more:
/// the column emitter tiles the kernel's minor-most dimension.
pub(crate) fn keeps_columns(from: &hlo::Shape, to: &hlo::Shape, op: Opcode) -> bool {
    let (a, b) = (sized(from.dims()), sized(to.dims()));
    if from.as_array().is_none() || to.as_array().is_none() || a.len() != b.len() {
        return false;
    }
    let minor_sized = |s: &hlo::Shape| {
        let minor = s
            .layout()
            .and_then(|l| l.minor_to_major.first().copied())
            .unwrap_or(s.dims().len() as i64 - 1);
        usize::try_from(minor)
            .ok()
            .and_then(|m| s.dims().get(m))
            .is_some_and(|&n| n != 1)
    };
    if !minor_sized(from) || !minor_sized(to) {
        return false;
    }
    if a.iter().zip(&b).any(|(x, y)| x.1 != y.1) {
        return false;
    }
    if op != Opcode::Bitcast {
        return true;
    }
    // The sized dimensions' places (0, 1, ... in logical order) from minor to major.
    let physical = |s: &hlo::Shape, kept: &[(usize, i64)]| -> Vec<usize> {
        let rank = s.dims().len() as i64;
        let m2m: Vec<i64> = s
            .layout()
            .map_or_else(|| (0..rank).rev().collect(), |l| l.minor_to_major.clone());
        m2m.iter()
            .filter_map(|&d| kept.iter().position(|k| k.0 as i64 == d))
            .collect()
    };
    physical(from, &a) == physical(to, &b)
}

/// The output dimensions of reduce `id` of `comp`: its (first) input's without the reduced
/// ones (a variadic reduce's shape is a tuple).
fn reduce_dims(comp: &hlo::Computation, id: InstrId) -> Vec<i64> {
    let instr = comp.instr(id);
    let reduced = instr.dimensions().unwrap_or_default();
    let input = instr
        .operands()
        .first()
        .map_or(&[][..], |&o| comp.instr(o).shape().dims());
    input
        .iter()
        .enumerate()
        .filter(|&(d, _)| !reduced.contains(&(d as i64)))
        .map(|(_, &n)| n)
        .collect()
}

/// A hero's index from the kernel's `index` over `dims`: the same expressions for its
/// dimensions of size 2 or more, in order, and 0 for its size-1 ones ([`keeps_columns`]
/// holds on the way from the hero to the root); the kernel's own index where the shapes
/// agree.
fn hero_index(dims: &[i64], hero: &[i64], index: &[Expr]) -> Option<Vec<Expr>> {
    if hero == dims {
        return Some(index.to_vec());
    }
    let mut kept = sized(dims).into_iter();
    hero.iter()
        .map(|&n| {
            if n == 1 {
                Some(Expr::constant(0))
            } else {
                kept.next().filter(|&(_, m)| m == n).map(|(d, _)| index[d])
            }
        })
        .collect()
}
