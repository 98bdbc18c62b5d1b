//! Reductions in the elemental emitter: a reduce's range variables become loops around
//! its accumulators, with several partial accumulators over the innermost one where the
//! reducer allows reassociation.

use super::blocked_sum::{blocked_sum, ChunkLanes, BLOCK};
use super::*;
use hlo::ir::reducer::Reducer;

impl Builder<'_> {
    pub(super) fn reduce(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let n = instr.operands().len() / 2;
        let red = instr
            .to_apply()
            .ok_or_else(|| self.unsupported("reduce", "no reducer computation"))?;
        let g = self.maps(comp, id)?;
        let mut accs = Vec::with_capacity(n);
        for j in 0..n {
            let init = self
                .plain_operand((comp, id), &g, n + j, index, false, out)?
                .remove(0);
            let ty = init.ty();
            let var = self.new_var(ty);
            out.push(Stmt::Decl { var, value: init });
            accs.push((var, ty));
        }
        let mut accesses = Vec::with_capacity(n);
        let mut ranges: Option<Vec<Var>> = None;
        for j in 0..n {
            let Some(m) = self.single(instr.opcode(), &g, j)? else {
                // No output element reads the input (every window tap in padding or a
                // dilation hole): each result is the initial value.
                return Ok(accs.iter().map(|(v, t)| Value::Var(*v, *t)).collect());
            };
            let a = self.apply(m, index, ranges.as_deref(), false, out)?;
            let Some(a) = a else {
                // Nothing to reduce: the result is the initial value.
                return Ok(accs.iter().map(|(v, t)| Value::Var(*v, *t)).collect());
            };
            if accesses
                .first()
                .is_some_and(|f: &Applied| f.guard != a.guard)
            {
                return Err(self.unsupported(
                    instr.opcode().as_str(),
                    "inputs read under different conditions",
                ));
            }
            ranges = Some(a.ranges.clone());
            accesses.push(a);
        }
        let ranges = ranges.unwrap_or_default();
        // A window's padding (or dilation) is the input map's constraint: the element
        // takes part only where it holds.
        let guard = accesses
            .first()
            .map(|a| a.guard.clone())
            .unwrap_or_default();
        if let Some(stmts) = self.xla_tree(comp, id, red, &accesses, &accs, &ranges, &guard)? {
            out.extend(stmts);
            return Ok(accs.iter().map(|(v, t)| Value::Var(*v, *t)).collect());
        }
        if let Some(stmts) =
            self.multi_accumulator(comp, id, red, &accesses, &accs, &ranges, &guard)?
        {
            out.extend(stmts);
            return Ok(accs.iter().map(|(v, t)| Value::Var(*v, *t)).collect());
        }
        let mut body = Vec::new();
        self.memo.push(Default::default());
        self.guards.push(guard.clone());
        let result = self.reduce_body(comp, id, red, &accesses, &accs, &mut body);
        self.guards.pop();
        self.memo.pop();
        result?;
        if !guard.is_true() {
            body = vec![Stmt::If {
                guard,
                body,
                else_body: vec![],
            }];
        }
        out.extend(self.wrap_loops(&ranges, body));
        Ok(accs.iter().map(|(v, t)| Value::Var(*v, *t)).collect())
    }

    pub(crate) fn reduce_body(
        &mut self,
        comp: CompId,
        id: InstrId,
        red: CompId,
        accesses: &[Applied],
        accs: &[(crate::kir::VarId, ScalarType)],
        body: &mut Vec<Stmt>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let n = accs.len();
        let mut inputs = Vec::with_capacity(n);
        for (j, a) in accesses.iter().enumerate() {
            inputs.push(self.value(comp, instr.operands()[j], &a.index, false, body)?);
        }
        let rc = module.computation(red);
        let mut params = Vec::with_capacity(2 * n);
        for p in 0..2 * n {
            let pid = rc
                .parameter(p)
                .ok_or_else(|| self.unsupported("reduce", "reducer with too few parameters"))?;
            let v = if p < n {
                Value::Var(accs[p].0, accs[p].1)
            } else {
                inputs[p - n].clone()
            };
            if self.elem_type(red, pid)? != v.ty() {
                return Err(
                    self.unsupported("reduce", "reducer parameter types differ from the inputs")
                );
            }
            params.push(pid);
            self.leaves.insert((red, pid), Leaf::Value(v));
        }
        self.memo.push(Default::default());
        let r = self.values(red, rc.root(), &[], false, body);
        self.memo.pop();
        for pid in params {
            self.leaves.remove(&(red, pid));
        }
        let r = r?;
        if r.len() != n {
            return Err(self.unsupported("reduce", "reducer result count differs from the inputs"));
        }
        for ((var, ty), v) in accs.iter().zip(r) {
            if v.ty() != *ty {
                return Err(
                    self.unsupported("reduce", "reducer result type differs from the accumulator")
                );
            }
            body.push(Stmt::Assign {
                var: *var,
                value: v,
            });
        }
        Ok(())
    }

    /// A reduce of 16-bit floats in XLA:CPU's tree order ([`super::xla_order`]): per window
    /// level an accumulator starting from the initial value, the elements folded into the
    /// innermost, each level's result into the one above (under the guards where windows
    /// overhang), the last into the reduce's accumulator. `None` when the order is not
    /// XLA's tree (see [`super::xla_order::follows_tree`]) or no reduced dimension exceeds
    /// a window.
    #[allow(clippy::too_many_arguments)]
    fn xla_tree(
        &mut self,
        comp: CompId,
        id: InstrId,
        red: CompId,
        accesses: &[Applied],
        accs: &[(crate::kir::VarId, ScalarType)],
        ranges: &[Var],
        guard: &Guard,
    ) -> Result<Option<Vec<Stmt>>, CodegenError> {
        let module = self.module;
        let ([(acc, ty)], [access]) = (accs, accesses) else {
            return Ok(None);
        };
        if module.computation(comp).instr(id).opcode() != hlo::Opcode::Reduce
            || !super::xla_order::follows_tree(module, red, *ty)
        {
            return Ok(None);
        }
        let Some(tree) = self.tree_vars(ranges) else {
            return Ok(None);
        };
        let (acc, ty) = (*acc, *ty);
        if let Some(stmts) =
            self.xla_tree_lanes(comp, id, red, access, (acc, ty), ranges, &tree, guard)?
        {
            return Ok(Some(stmts));
        }
        let at = |b: &Self, e: &Expr| {
            b.simplify(
                e.substitute(&mut |v| ranges.iter().position(|&r| r == v).map(|i| tree.element[i])),
            )
        };
        let element = Applied {
            index: access.index.iter().map(|e| at(self, e)).collect(),
            guard: Guard::default(),
            ranges: vec![],
        };
        let mut inner_guard = tree.levels[0].1.clone();
        inner_guard.conds.extend(
            guard
                .conds
                .iter()
                .map(|(e, lo, hi)| (at(self, e), *lo, *hi)),
        );
        let mut stmts = Vec::new();
        let init = self.new_var(ty);
        stmts.push(Stmt::Decl {
            var: init,
            value: Value::Var(acc, ty),
        });
        let parts: Vec<crate::kir::VarId> = tree.levels.iter().map(|_| self.new_var(ty)).collect();
        // The elements into the innermost window's accumulator.
        let mut step = Vec::new();
        self.memo.push(Default::default());
        self.guards.push(inner_guard.clone());
        let r = self.reduce_body(comp, id, red, &[element], &[(parts[0], ty)], &mut step);
        self.guards.pop();
        self.memo.pop();
        r?;
        let mut block = Stmt::guarded(inner_guard, step);
        block = self.wrap_loops(&tree.levels[0].0, block);
        block.insert(
            0,
            Stmt::Decl {
                var: parts[0],
                value: Value::Var(init, ty),
            },
        );
        // Each level's windows into the level above.
        for l in 1..tree.levels.len() {
            let v = self.combine(
                red,
                Value::Var(parts[l], ty),
                Value::Var(parts[l - 1], ty),
                &mut block,
            )?;
            block.push(Stmt::Assign {
                var: parts[l],
                value: v,
            });
            block = Stmt::guarded(tree.levels[l].1.clone(), block);
            block = self.wrap_loops(&tree.levels[l].0, block);
            block.insert(
                0,
                Stmt::Decl {
                    var: parts[l],
                    value: Value::Var(init, ty),
                },
            );
        }
        let top = parts[parts.len() - 1];
        let v = self.combine(red, Value::Var(acc, ty), Value::Var(top, ty), &mut block)?;
        block.push(Stmt::Assign { var: acc, value: v });
        stmts.extend(self.wrap_loops(&tree.outer, block));
        Ok(Some(stmts))
    }

    /// XLA's tree over one reduced dimension of at most `WINDOW * WINDOW` elements (one
    /// window level: the windows, then their fold) with one lane per window in a local
    /// array: each step over the offset `k` in the windows combines element `WINDOW * j + k
    /// - low` into lane `j` for every window `j` (the first and last under their guards,
    /// the rest in a loop of independent chains the C compiler overlaps or vectorizes),
    /// then the lanes fold in order into the accumulator. The same steps in the same order
    /// per window as [`Self::xla_tree`]'s nest, whose windows' chains run one after
    /// another. `None` for any other tree.
    #[allow(clippy::too_many_arguments)]
    fn xla_tree_lanes(
        &mut self,
        comp: CompId,
        id: InstrId,
        red: CompId,
        access: &Applied,
        (acc, ty): (crate::kir::VarId, ScalarType),
        ranges: &[Var],
        tree: &super::xla_order::TreeVars,
        guard: &Guard,
    ) -> Result<Option<Vec<Stmt>>, CodegenError> {
        let ([r], [(offsets, _)], [outer]) = (ranges, &tree.levels[..], &tree.outer[..]) else {
            return Ok(None);
        };
        if !guard.is_true() {
            return Ok(None);
        }
        let n = self.ranges[r.index as usize].hi + 1;
        let w = self.ranges[offsets[0].index as usize].hi + 1;
        let lanes_n = self.ranges[outer.index as usize].hi + 1;
        let low = (lanes_n * w - n) / 2;
        let name = self.module.computation(comp).instr(id).name().to_string();
        let lanes = self.new_local(format!("{name} window lanes"), ty, lanes_n);
        let k = offsets[0];
        let lane = |j: Expr| Value::LocalLoad {
            local: lanes,
            offset: j,
            ty,
        };
        let mut stmts = Vec::new();
        let init = self.new_var(ty);
        stmts.push(Stmt::Decl {
            var: init,
            value: Value::Var(acc, ty),
        });
        let j = self.new_range(Interval::new(0, lanes_n - 1));
        stmts.push(Stmt::Loop {
            kind: crate::kir::LoopKind::Serial,
            var: j,
            lo: 0,
            hi: lanes_n - 1,
            body: vec![Stmt::LocalStore {
                local: lanes,
                offset: Expr::var(j),
                value: Value::Var(init, ty),
            }],
        });
        // One step of lane `j` (an expression over `k`), under `cond` on the element index.
        let operand = self.module.computation(comp).instr(id).operands()[0];
        let step_of =
            |b: &mut Self, j: Expr, cond: Option<(i64, i64)>| -> Result<Vec<Stmt>, CodegenError> {
                let e = b.simplify(j * Expr::constant(w) + Expr::var(k) - Expr::constant(low));
                let g = Guard {
                    conds: cond.map(|(lo, hi)| (e, lo, hi)).into_iter().collect(),
                };
                let element = b.at_range(access, *r, e);
                let mut body = Vec::new();
                b.memo.push(Default::default());
                b.guards.push(g.clone());
                let v = b.value(comp, operand, &element.index, false, &mut body);
                let v = v.and_then(|v| b.combine(red, lane(j), v, &mut body));
                b.guards.pop();
                b.memo.pop();
                body.push(Stmt::LocalStore {
                    local: lanes,
                    offset: j,
                    value: v?,
                });
                Ok(Stmt::guarded(g, body))
            };
        let mut per_k = step_of(self, Expr::constant(0), (low > 0).then_some((0, n - 1)))?;
        if lanes_n > 2 {
            let mid = self.new_range(Interval::new(1, lanes_n - 2));
            let body = step_of(self, Expr::var(mid), None)?;
            per_k.push(Stmt::Loop {
                kind: crate::kir::LoopKind::Serial,
                var: mid,
                lo: 1,
                hi: lanes_n - 2,
                body,
            });
        }
        let last_full = lanes_n * w - low == n;
        per_k.extend(step_of(
            self,
            Expr::constant(lanes_n - 1),
            (!last_full).then_some((0, n - 1)),
        )?);
        stmts.push(Stmt::Loop {
            kind: crate::kir::LoopKind::Serial,
            var: k,
            lo: 0,
            hi: w - 1,
            body: per_k,
        });
        let mut fold = Vec::new();
        let jf = self.new_range(Interval::new(0, lanes_n - 1));
        let v = self.combine(red, Value::Var(acc, ty), lane(Expr::var(jf)), &mut fold)?;
        fold.push(Stmt::Assign { var: acc, value: v });
        stmts.push(Stmt::Loop {
            kind: crate::kir::LoopKind::Serial,
            var: jf,
            lo: 0,
            hi: lanes_n - 1,
            body: fold,
        });
        Ok(Some(stmts))
    }

    /// The loop nest of a reduction with `L` partial accumulators over its innermost range
    /// variable `r` (XLA reassociates reductions too; `L` is the target's `lanes`, twice that for a
    /// float max or min), kept in a local array so the C compiler turns each chunk into
    /// vector code: lane `k` starts with the element at `r = k` and accumulates
    /// `r = L * s + k` for chunks `s = 1..`; the lanes combine by halving (lane `k` with
    /// lane `k + L/2`, then `k + L/4`, ...) into the accumulator, then the remaining
    /// elements follow in order. A float sum of 32 or 64 bits over more than
    /// [`BLOCK`] chunks instead sums its chunks in blocks ([`super::blocked_sum`]) and
    /// folds the remaining elements into the first lanes before the halving: a long row's
    /// sum stays accurate. Only
    /// for a single accumulator whose reducer is one associative and commutative op
    /// (`hlo::ir::reducer`) of a type of 32 bits or more, or a max or min of 16- or 8-bit
    /// floats (lanes in `f32`, see [`wide_max_min`]), an unguarded access, and at least
    /// two chunks (one for an idempotent reducer on lanes of its own type, whose last
    /// elements are one more chunk overlapping the one before); `None` otherwise.
    #[allow(clippy::too_many_arguments)]
    fn multi_accumulator(
        &mut self,
        comp: CompId,
        id: InstrId,
        red: CompId,
        accesses: &[Applied],
        accs: &[(crate::kir::VarId, ScalarType)],
        ranges: &[Var],
        guard: &Guard,
    ) -> Result<Option<Vec<Stmt>>, CodegenError> {
        let (Some(&r), [(acc, ty)], [access]) = (ranges.last(), accs, accesses) else {
            return Ok(None);
        };
        let Some(kind) = hlo::ir::reducer::classify(self.module, red) else {
            return Ok(None);
        };
        if !guard.is_true() {
            return Ok(None);
        }
        // A float max or min (NaN-propagating, -0 below +0) is a chain of several
        // dependent operations per lane, where a sum is one: twice the lanes keep twice
        // the chains in flight. Either order gives the same max, so no result changes.
        let lanes_n = match kind {
            Reducer::Max | Reducer::Min if ty.is_float() => 2 * self.target.lanes,
            _ => self.target.lanes,
        };
        // Reassociating a sum of 16-bit or 8-bit floats changes it by more than their
        // tolerance (HLO rounds every step): those accumulate in order. Their max and min
        // run in `f32` lanes.
        let wide = wide_max_min(kind, *ty);
        if ty.is_float() && ty.byte_width() < 4 && wide.is_none() {
            return Ok(None);
        }
        let lane_ty = if wide.is_some() { ScalarType::F32 } else { *ty };
        let iv = self.ranges[r.index as usize];
        let extent = iv.hi - iv.lo + 1;
        let chunks = extent / lanes_n;
        // An idempotent reducer (max, min, and, or: `x op x = x`) takes its last elements
        // as one more chunk overlapping the one before, ending at the row's end: an element
        // combined twice changes nothing, and a row of 127 (a causal attention mask's) runs
        // in lanes instead of as one dependent chain of 127 NaN-propagating maxes.
        let overlap = wide.is_none()
            && matches!(
                kind,
                Reducer::Max | Reducer::Min | Reducer::And | Reducer::Or
            );
        if chunks < 2 && !(overlap && chunks == 1) {
            return Ok(None);
        }
        let module = self.module;
        let name = module.computation(comp).instr(id).name().to_string();
        let lanes = self.new_local(format!("{name} partial accumulators"), lane_ty, lanes_n);
        let k = self.new_range(Interval::new(0, lanes_n - 1));
        // A long float sum: blocks of chunks (see [`blocked_sum`]).
        let blocked = wide.is_none() && blocked_sum(kind, *ty) && chunks > BLOCK;
        let chunk = ChunkLanes {
            comp,
            id,
            red,
            access,
            r,
            lo: iv.lo,
            lanes_n,
            k,
            ty: lane_ty,
        };
        let mut body = Vec::new();
        self.memo.push(Default::default());
        let result = (|| -> Result<(), CodegenError> {
            if blocked {
                body.push(self.lanes_identity(&chunk, lanes));
                self.blocked_chunks(&chunk, lanes, chunks, &mut body)?;
            } else {
                self.chunk_lanes(&chunk, lanes, chunks, wide, &mut body)?;
            }
            // A float sum's last elements (fewer than a chunk) into the first lanes, so
            // they round at a lane's magnitude, not the row's.
            let tail = extent - chunks * lanes_n;
            if blocked && tail > 0 {
                let kt = self.new_range(Interval::new(0, tail - 1));
                body.push(self.chunk_step(&chunk, lanes, Expr::constant(chunks), kt, tail)?);
            }
            if overlap && tail > 0 {
                let last = ChunkLanes {
                    lo: iv.lo + extent - lanes_n,
                    ..chunk
                };
                body.push(self.chunk_step(&last, lanes, Expr::constant(0), k, lanes_n)?);
            }
            // Halving: lane k combines with lane k + half for half = lanes/2, ..., 1 (each
            // step a loop the C compiler vectorizes), then lane 0 into the accumulator.
            let mut half = lanes_n / 2;
            while half >= 1 {
                let h = self.new_range(Interval::new(0, half - 1));
                let mut step = Vec::new();
                let at = |off: Expr| Value::LocalLoad {
                    local: lanes,
                    offset: off,
                    ty: lane_ty,
                };
                let v = self.lane_combine(
                    red,
                    wide,
                    at(Expr::var(h)),
                    at(Expr::var(h) + Expr::constant(half)),
                    &mut step,
                )?;
                step.push(Stmt::LocalStore {
                    local: lanes,
                    offset: Expr::var(h),
                    value: v,
                });
                body.push(Stmt::Loop {
                    kind: crate::kir::LoopKind::Serial,
                    var: h,
                    lo: 0,
                    hi: half - 1,
                    body: step,
                });
                half /= 2;
            }
            let total = Value::LocalLoad {
                local: lanes,
                offset: Expr::constant(0),
                ty: lane_ty,
            };
            let acc_v = widened(Value::Var(*acc, *ty), lane_ty);
            let v = self.lane_combine(red, wide, acc_v, total, &mut body)?;
            // Rounding the f32 max of half values back is exact: it is one of them.
            let v = if wide.is_some() {
                Value::Convert(Box::new(v), *ty)
            } else {
                v
            };
            body.push(Stmt::Assign {
                var: *acc,
                value: v,
            });
            if !blocked && !overlap && chunks * lanes_n < extent {
                let mut rest = Vec::new();
                self.memo.push(Default::default());
                let res = self.reduce_body(comp, id, red, accesses, accs, &mut rest);
                self.memo.pop();
                res?;
                body.push(Stmt::Loop {
                    kind: crate::kir::LoopKind::Serial,
                    var: r,
                    lo: iv.lo + chunks * lanes_n,
                    hi: iv.hi,
                    body: rest,
                });
            }
            Ok(())
        })();
        self.memo.pop();
        result?;
        Ok(Some(self.wrap_loops(&ranges[..ranges.len() - 1], body)))
    }

    /// Chunks `0..chunks` of `c` into lane array `lanes` one after another: the first
    /// chunk initializes the lanes, each further one is combined in (by `wide`'s op on
    /// `f32` lanes, see [`wide_max_min`], else by the reducer).
    fn chunk_lanes(
        &mut self,
        c: &ChunkLanes<'_>,
        lanes: usize,
        chunks: i64,
        wide: Option<crate::kir::BinOp>,
        body: &mut Vec<Stmt>,
    ) -> Result<(), CodegenError> {
        let operand = self.module.computation(c.comp).instr(c.id).operands()[0];
        let (k, lane_ty) = (c.k, c.ty);
        let mut first = Vec::new();
        self.memo.push(Default::default());
        let a = self.at_range(c.access, c.r, Expr::var(k) + Expr::constant(c.lo));
        let v = self.value(c.comp, operand, &a.index, false, &mut first);
        self.memo.pop();
        first.push(Stmt::LocalStore {
            local: lanes,
            offset: Expr::var(k),
            value: widened(v?, lane_ty),
        });
        body.push(Stmt::serial_loop(k, 0, c.lanes_n - 1, first));
        let Some(op) = wide else {
            if chunks >= 2 {
                let s = self.new_range(Interval::new(1, chunks - 1));
                let step = self.chunk_step(c, lanes, Expr::var(s), k, c.lanes_n)?;
                body.push(Stmt::serial_loop(s, 1, chunks - 1, vec![step]));
            }
            return Ok(());
        };
        // Each further chunk: load a lane, combine its element in `f32`, store it back.
        let s = self.new_range(Interval::new(1, chunks - 1));
        let mut step = Vec::new();
        let var = self.new_var(lane_ty);
        step.push(Stmt::Decl {
            var,
            value: Value::LocalLoad {
                local: lanes,
                offset: Expr::var(k),
                ty: lane_ty,
            },
        });
        let e = Expr::var(s) * Expr::constant(c.lanes_n) + Expr::var(k) + Expr::constant(c.lo);
        let a = self.at_range(c.access, c.r, e);
        self.memo.push(Default::default());
        let x = self.value(c.comp, operand, &a.index, false, &mut step);
        self.memo.pop();
        step.push(Stmt::Assign {
            var,
            value: Value::Binary(
                op,
                Box::new(Value::Var(var, lane_ty)),
                Box::new(widened(x?, lane_ty)),
                lane_ty,
            ),
        });
        step.push(Stmt::LocalStore {
            local: lanes,
            offset: Expr::var(k),
            value: Value::Var(var, lane_ty),
        });
        body.push(Stmt::serial_loop(
            s,
            1,
            chunks - 1,
            vec![Stmt::serial_loop(k, 0, c.lanes_n - 1, step)],
        ));
        Ok(())
    }

    /// Two lanes combined: by `wide`'s op on `f32` lanes (see [`wide_max_min`]), else by the
    /// reducer `red`.
    fn lane_combine(
        &mut self,
        red: CompId,
        wide: Option<crate::kir::BinOp>,
        a: Value,
        b: Value,
        body: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        match wide {
            Some(op) => Ok(Value::Binary(op, Box::new(a), Box::new(b), ScalarType::F32)),
            None => self.combine(red, a, b, body),
        }
    }

    /// The reducer `red` applied to `a` and `b` (statements appended to `body`).
    pub(crate) fn combine(
        &mut self,
        red: CompId,
        a: Value,
        b: Value,
        body: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        let rc = self.module.computation(red);
        let (Some(p0), Some(p1)) = (rc.parameter(0), rc.parameter(1)) else {
            return Err(self.unsupported("reduce", "reducer with too few parameters"));
        };
        self.leaves.insert((red, p0), Leaf::Value(a));
        self.leaves.insert((red, p1), Leaf::Value(b));
        self.memo.push(Default::default());
        let r = self.value(red, rc.root(), &[], false, body);
        self.memo.pop();
        self.leaves.remove(&(red, p0));
        self.leaves.remove(&(red, p1));
        r
    }
}

/// The `f32` op of a max or min reduction of 16- or 8-bit floats (`None` for any other).
/// HLO rounds each step of a `bf16` reduce to `bf16`, but each step of a max or min
/// returns one of its operands (NaN-propagating, +0 above -0: the same rule in `f32`),
/// which a half value widened to `f32` and rounded back keeps bit for bit (a NaN comes
/// back quieted, as each rounded step quiets it). So the lanes compute in `f32` and
/// round once, in any order: the loop vectorizes (a chain of 16-bit rounding does not).
fn wide_max_min(kind: Reducer, ty: ScalarType) -> Option<crate::kir::BinOp> {
    if !ty.is_float() || ty.is_complex() || ty.byte_width() >= 4 {
        return None;
    }
    match kind {
        Reducer::Max => Some(crate::kir::BinOp::Max),
        Reducer::Min => Some(crate::kir::BinOp::Min),
        _ => None,
    }
}

/// `v` converted to `lane_ty` (exact: a half widened to `f32`), or `v` itself.
fn widened(v: Value, lane_ty: ScalarType) -> Value {
    if v.ty() == lane_ty {
        v
    } else {
        Value::Convert(Box::new(v), lane_ty)
    }
}
