//! A column reduction of 16-bit floats in XLA:CPU's tree order
//! ([`crate::emit::elemental::xla_order`]): the tile's accumulators as in the plain column
//! kernel, plus one local array per window level, so every output folds its elements in
//! XLA's order while each step is still a loop over the tile's adjacent outputs (vector
//! code). When the first level needs no padding, each step combines the target's column rows of consecutive
//! elements of a window per load and store of its window array, as the plain kernel does.

use affine::{Expr, Interval, Var};
use hlo::{CompId, InstrId, Opcode};

use super::super::builder::Builder;
use super::super::elemental::xla_order::follows_tree;
use super::super::elemental::Applied;
use super::loop_over;
use crate::error::CodegenError;
use crate::kir::{Guard, LoopKind, ScalarType, Stmt, Value};

impl Builder<'_> {
    /// Emits reduce `id`'s reduction into the tile's accumulator array `acc` in XLA's tree
    /// order (`access` the input's access over the reduction's `ranges`, `index` the
    /// kernel index the initial value is read at); `false` (nothing emitted) when the
    /// reduce does not follow the tree.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn column_tree(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        (access, ranges): (&[Applied], &[Var]),
        locals: &[(usize, ScalarType)],
        (t, len): (Var, i64),
        out: &mut Vec<Stmt>,
    ) -> Result<bool, CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let ([access], [(acc, ty)]) = (access, locals) else {
            return Ok(false);
        };
        let Some(red) = instr.to_apply() else {
            return Ok(false);
        };
        if instr.opcode() != Opcode::Reduce || !follows_tree(module, red, *ty) {
            return Ok(false);
        }
        let Some(tree) = self.tree_vars(ranges) else {
            return Ok(false);
        };
        let (acc, ty) = (*acc, *ty);
        let name = instr.name().to_string();
        let parts: Vec<usize> = (0..tree.levels.len())
            .map(|l| self.new_local(format!("{name} level {l} windows"), ty, len))
            .collect();
        let element = Applied {
            index: access
                .index
                .iter()
                .map(|e| {
                    self.simplify(e.substitute(&mut |v| {
                        ranges.iter().position(|&r| r == v).map(|i| tree.element[i])
                    }))
                })
                .collect(),
            guard: Guard::default(),
            ranges: vec![],
        };
        let (offsets, inner_guard) = tree.levels[0].clone();
        let mut block = match offsets.split_last() {
            // Without padding in the first level, consecutive elements of the innermost
            // window dimension combine in groups of the target's column rows per load and
            // store of the window array (their order unchanged), as the plain column kernel
            // groups its rows.
            Some((&k, outer))
                if inner_guard.is_true() && self.extent(k) >= 2 * self.target.column.rows =>
            {
                let rows =
                    self.grouped_rows(comp, id, red, (parts[0], ty), &element, k, (t, len))?;
                self.wrap_loops(outer, rows)
            }
            _ => {
                self.guards.push(inner_guard.clone());
                let step = self.tile_step(comp, id, red, &[(parts[0], ty)], t, &[vec![element]]);
                self.guards.pop();
                let block = Stmt::guarded(inner_guard, vec![loop_over(t, len, step?)]);
                self.wrap_loops(&offsets, block)
            }
        };
        block.insert(0, self.init_loop(comp, id, index, parts[0], (t, len))?);
        for l in 1..tree.levels.len() {
            block.push(self.fold_loop(red, (parts[l], parts[l - 1]), ty, (t, len))?);
            block = Stmt::guarded(tree.levels[l].1.clone(), block);
            block = self.wrap_loops(&tree.levels[l].0, block);
            block.insert(0, self.init_loop(comp, id, index, parts[l], (t, len))?);
        }
        let top = parts[parts.len() - 1];
        block.push(self.fold_loop(red, (acc, top), ty, (t, len))?);
        out.extend(self.wrap_loops(&tree.outer, block));
        Ok(true)
    }

    /// The loops of one window level's innermost offset `k` over the tile: its elements
    /// (`element`, a function of `k`) combined into `part` in order, the target's column
    /// rows of them per
    /// load and store of the window array, then the ones left over one at a time.
    #[allow(clippy::too_many_arguments)]
    fn grouped_rows(
        &mut self,
        comp: CompId,
        id: InstrId,
        red: CompId,
        part: (usize, ScalarType),
        element: &Applied,
        k: Var,
        (t, len): (Var, i64),
    ) -> Result<Vec<Stmt>, CodegenError> {
        let extent = self.extent(k);
        let per_group = self.target.column.rows;
        let groups = extent / per_group;
        let g = self.new_range(Interval::new(0, groups - 1));
        let rows: Vec<Vec<Applied>> = (0..per_group)
            .map(|u| {
                let at = Expr::var(g) * Expr::constant(per_group) + Expr::constant(u);
                vec![self.at_range(element, k, at)]
            })
            .collect();
        let step = self.tile_step(comp, id, red, &[part], t, &rows)?;
        let mut out = vec![Stmt::Loop {
            kind: LoopKind::Serial,
            var: g,
            lo: 0,
            hi: groups - 1,
            body: vec![loop_over(t, len, step)],
        }];
        if groups * per_group < extent {
            let one = self.at_range(element, k, Expr::var(k));
            let step = self.tile_step(comp, id, red, &[part], t, &[vec![one]])?;
            out.push(Stmt::Loop {
                kind: LoopKind::Serial,
                var: k,
                lo: groups * per_group,
                hi: extent - 1,
                body: vec![loop_over(t, len, step)],
            });
        }
        Ok(out)
    }

    /// The number of values range variable `v` takes.
    fn extent(&self, v: Var) -> i64 {
        let iv = self.ranges[v.index as usize];
        iv.hi - iv.lo + 1
    }

    /// `for t { local[t] = init }` with reduce `id`'s initial value at `index`.
    fn init_loop(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        local: usize,
        (t, len): (Var, i64),
    ) -> Result<Stmt, CodegenError> {
        let mut body = Vec::new();
        self.memo.push(Default::default());
        let inits = self.reduce_inits(comp, id, index, &mut body);
        self.memo.pop();
        let init = inits?
            .into_iter()
            .next()
            .ok_or_else(|| CodegenError::Internal("reduce without an initial value".into()))?;
        body.push(Stmt::LocalStore {
            local,
            offset: Expr::var(t),
            value: init,
        });
        Ok(loop_over(t, len, body))
    }

    /// `for t { into[t] = red(into[t], from[t]) }`.
    fn fold_loop(
        &mut self,
        red: CompId,
        (into, from): (usize, usize),
        ty: ScalarType,
        (t, len): (Var, i64),
    ) -> Result<Stmt, CodegenError> {
        let at = |local| Value::LocalLoad {
            local,
            offset: Expr::var(t),
            ty,
        };
        let mut body = Vec::new();
        self.memo.push(Default::default());
        let v = self.combine(red, at(into), at(from), &mut body);
        self.memo.pop();
        body.push(Stmt::LocalStore {
            local: into,
            offset: Expr::var(t),
            value: v?,
        });
        Ok(loop_over(t, len, body))
    }
}
