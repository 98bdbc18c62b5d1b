//! The GPU sort emitter: a `sort`, `topk` or `TopK` custom call whose rows fit shared
//! memory runs with the launch of [`fusion::gpu_sort::sort_launch`] as a bitonic sort.
//! Its threads load the block's rows at the read map's indices into one shared array per
//! operand, beside each element's position in its row; after a barrier, each stage of the
//! network (unrolled: a loop over the block's pairs, then a barrier) compare-exchanges
//! disjoint pairs of slots of a row, the comparator inlined; the threads then store the
//! slots at the write map's indices (the first `k` of a top-k, with the positions as its
//! indices). Ties (neither element before the other) go by position, so the result is
//! the stable sort's, as the evaluator defines it.

use affine::{Expr, Interval, Var, VarKind};
use fusion::gpu_launch::coords;
use fusion::gpu_sort::{sort_launch, SortLaunch, SortOrder};
use hlo::{CompId, InstrId};

use super::assemble::{finish_launch, EmittedKernel};
use super::builder::{BufferSource, Builder};
use super::gpu_coords::LaunchVars;
use crate::error::CodegenError;
use crate::kir::{self, Access, BinOp, CmpOp, Grid, LoopKind, MemorySpace, ScalarType, Stmt};
use crate::kir::{UnOp, Value};

/// Whether [`emit_gpu_sort`] takes instruction `id` of `comp` for `target`: the GPU
/// emitters apply and the sort's rows fit a block's shared memory.
pub fn gpu_sort_applies(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
) -> bool {
    target.gpu_emitters && matches!(sort_launch(module, comp, id, &target.device), Ok(Some(_)))
}

/// The GPU sort kernel `name` of sort or top-k `id` of `comp`: buffers are the operands,
/// then the outputs (a top-k's values and indices). [`CodegenError::Unsupported`] where
/// [`gpu_sort_applies`] is false or the comparator is not a scalar computation of the
/// operands' elements.
pub fn emit_gpu_sort(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, target, instr.name());
    let sl = sort_launch(module, comp, id, &target.device)
        .map_err(|e| CodegenError::Internal(format!("sort launch: {e}")))?
        .filter(|_| target.gpu_emitters)
        .ok_or_else(|| {
            b.unsupported(
                instr.opcode().as_str(),
                "a GPU sort of rows that fit shared memory",
            )
        })?;
    let mut ins = Vec::new();
    for (j, &op) in instr.operands().iter().enumerate() {
        let oi = c.instr(op);
        ins.push(b.add_buffer(oi.name(), oi.shape(), Access::In, BufferSource::Operand(j))?);
    }
    let leaves: Vec<hlo::Shape> = if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().to_vec()
    } else {
        vec![instr.shape().clone()]
    };
    let mut outs = Vec::new();
    for (k, s) in leaves.iter().enumerate() {
        let nm = if leaves.len() > 1 {
            format!("{}.{k}", instr.name())
        } else {
            instr.name().to_string()
        };
        outs.push(b.add_buffer(&nm, s, Access::Out, BufferSource::Output(k))?);
    }
    let top_k = !matches!(sl.order, SortOrder::Sort { .. });
    if (top_k && (outs.len() != 2 || ins.len() != 1)) || (!top_k && outs.len() != ins.len()) {
        return Err(b.unsupported(instr.opcode().as_str(), "outputs of this form"));
    }
    for (k, &o) in outs.iter().enumerate() {
        let from = if top_k { 0 } else { k };
        if k < ins.len() && b.buffers[o].ty != b.buffers[ins[from]].ty {
            return Err(b.unsupported(instr.opcode().as_str(), "an output of another type"));
        }
    }
    let slots = sl.rows_per_block * sl.padded;
    let shared: Vec<usize> = ins
        .iter()
        .enumerate()
        .map(|(k, &buf)| {
            let l = b.new_local(format!("operand {k}'s slots"), b.buffers[buf].ty, slots);
            b.locals[l].space = MemorySpace::Block;
            l
        })
        .collect();
    let pos = b.new_local("positions".into(), ScalarType::S32, slots);
    b.locals[pos].space = MemorySpace::Block;
    let k = Sorter {
        launch: &sl,
        ins,
        outs,
        shared,
        pos,
    };
    let block = b.new_range(Interval::new(0, sl.launch.blocks - 1));
    let mut body = vec![k.load(&mut b, block), Stmt::Barrier];
    for (half, flip) in sl.stages() {
        body.push(k.stage(&mut b, block, half, flip)?);
        body.push(Stmt::Barrier);
    }
    body.push(k.store(&mut b, block)?);
    let title = format!(
        "{} {} ({})\n{}\nthread map: {}\nread map: {}",
        instr.opcode().as_str(),
        instr.name(),
        sl.order,
        sl.dims_text(),
        sl.launch.thread_map_text(),
        fusion::gpu_launch::Launch {
            thread_map: sl.read_map.clone(),
            ..sl.launch.clone()
        }
        .thread_map_text()
    );
    let grid = Grid {
        blocks: sl.launch.blocks,
        block_var: Some(block),
        threads: sl.launch.threads,
    };
    finish_launch(b, name, title, body, grid)
}

/// What the kernel's phases are built from.
struct Sorter<'l> {
    launch: &'l SortLaunch,
    /// The operands' buffers.
    ins: Vec<usize>,
    /// The outputs' buffers.
    outs: Vec<usize>,
    /// Each operand's shared slots.
    shared: Vec<usize>,
    /// The slots' positions in their rows (`s32`).
    pos: usize,
}

impl Sorter<'_> {
    /// The slot a thread handles at a chunk: `chunk * threads + thread`.
    fn slot(&self, thread: Var, chunk: Var) -> Expr {
        Expr::var(chunk) * Expr::constant(self.launch.launch.threads) + Expr::var(thread)
    }

    /// `body` (over the map's result `(d0, ..)`) for every slot of `map`'s domain: a loop
    /// over the block's threads, a serial one over the chunks, under the map's
    /// constraints; the map's results replace the dimension variables.
    fn at_map(
        &self,
        b: &mut Builder<'_>,
        map: &affine::IndexingMap,
        (thread, chunk, block): (Var, Var, Var),
        mut body: Vec<Stmt>,
    ) -> Stmt {
        let l = &self.launch.launch;
        let chunks = map.ranges()[coords::CHUNK as usize].hi + 1;
        let vars = LaunchVars {
            thread: Expr::var(thread),
            block: Expr::var(block),
            chunk: if chunks > 1 {
                Expr::var(chunk)
            } else {
                Expr::constant(0)
            },
            unroll: Expr::constant(0),
        };
        let index: Vec<Expr> = map
            .results()
            .iter()
            .map(|&e| b.simplify(vars.apply(e)))
            .collect();
        let mut conds = vars.tighter_bounds(
            map,
            &[
                (Var::dim(coords::TH_X), l.threads),
                (Var::dim(coords::BL_X), l.blocks),
                (Var::range(coords::CHUNK), chunks),
            ],
        );
        for c in map.constraints() {
            let e = b.simplify(vars.apply(c.expr));
            let decided = b.range_of(e).is_ok_and(|r| c.interval.contains_interval(r));
            if !decided {
                conds.push((e, c.interval.lo, c.interval.hi));
            }
        }
        // One chunk: no loop over it.
        let one = (chunks == 1).then_some(chunk);
        kir::rewrite_exprs(&mut body, &mut |e| {
            let e = e.substitute(&mut |v| {
                if Some(v) == one {
                    return Some(Expr::constant(0));
                }
                (v.kind == VarKind::Dim)
                    .then(|| index.get(v.index as usize).copied())
                    .flatten()
            });
            b.simplify(e)
        });
        let mut body = Stmt::guarded(kir::Guard { conds }, body);
        if chunks > 1 {
            body = vec![Stmt::serial_loop(chunk, 0, chunks - 1, body)];
        }
        Stmt::Loop {
            kind: LoopKind::Threads,
            var: thread,
            lo: 0,
            hi: l.threads - 1,
            body,
        }
    }

    /// Fresh thread and chunk variables of the launch.
    fn launch_vars(&self, b: &mut Builder<'_>) -> (Var, Var) {
        let chunks = self.launch.read_map.ranges()[coords::CHUNK as usize].hi + 1;
        (
            b.new_range(Interval::new(0, self.launch.launch.threads - 1)),
            b.new_range(Interval::new(0, chunks - 1)),
        )
    }

    /// The index of the builder's dimension variables (`(d0, ..)`: the map's result),
    /// bounded by the operands' dimensions, the sorted one by `extent` (its elements read
    /// or stored).
    fn index(&self, b: &mut Builder<'_>, extent: i64) -> Vec<Expr> {
        let l = self.launch;
        b.dims = l
            .dims
            .iter()
            .enumerate()
            .map(|(d, &n)| Interval::new(0, if d == l.dim { extent } else { n } - 1))
            .collect();
        (0..l.dims.len() as u32).map(Expr::dim).collect()
    }

    /// Loads the block's rows into the shared slots, with their positions.
    fn load(&self, b: &mut Builder<'_>, block: Var) -> Stmt {
        let (thread, chunk) = self.launch_vars(b);
        let index = self.index(b, self.launch.n);
        let slot = self.slot(thread, chunk);
        let mut body = Vec::new();
        for (k, &buf) in self.ins.iter().enumerate() {
            b.note(buf, &index, &kir::Guard::default());
            body.push(Stmt::LocalStore {
                local: self.shared[k],
                offset: slot,
                value: Value::Load {
                    buf,
                    offset: b.offset(buf, &index),
                    ty: b.buffers[buf].ty,
                },
            });
        }
        body.push(Stmt::LocalStore {
            local: self.pos,
            offset: slot,
            value: Value::Convert(
                Box::new(Value::Index(index[self.launch.dim])),
                ScalarType::S32,
            ),
        });
        let map = self.launch.read_map.clone();
        self.at_map(b, &map, (thread, chunk, block), body)
    }

    /// Stores the first `keep` slots of each row into the outputs (a top-k's positions
    /// as its indices).
    fn store(&self, b: &mut Builder<'_>, block: Var) -> Result<Stmt, CodegenError> {
        let (thread, chunk) = self.launch_vars(b);
        let index = self.index(b, self.launch.keep);
        let slot = self.slot(thread, chunk);
        let mut body = Vec::new();
        let top_k = !matches!(self.launch.order, SortOrder::Sort { .. });
        for (k, &o) in self.outs.iter().enumerate() {
            let ty = b.buffers[o].ty;
            let value = if top_k && k == 1 {
                let p = Value::LocalLoad {
                    local: self.pos,
                    offset: slot,
                    ty: ScalarType::S32,
                };
                if ty == ScalarType::S32 {
                    p
                } else if ty.is_int() {
                    Value::Convert(Box::new(p), ty)
                } else {
                    return Err(b.unsupported("topk", format!("indices of type {ty}")));
                }
            } else {
                Value::LocalLoad {
                    local: self.shared[k],
                    offset: slot,
                    ty,
                }
            };
            b.note(o, &index, &kir::Guard::default());
            body.push(Stmt::Store {
                buf: o,
                offset: b.offset(o, &index),
                value,
            });
        }
        let map = self.launch.launch.thread_map.clone();
        Ok(self.at_map(b, &map, (thread, chunk, block), body))
    }

    /// One stage of the network: every pair `(lo, hi)` of slots of a row, `half` apart
    /// (or, with `flip`, mirrored about the middle of a group of `2 * half`), whose `hi`
    /// lies in the row, ends ordered.
    fn stage(
        &self,
        b: &mut Builder<'_>,
        block: Var,
        half: i64,
        flip: bool,
    ) -> Result<Stmt, CodegenError> {
        let l = self.launch;
        let pairs_per_row = (l.padded / 2).max(1);
        let pairs = l.rows_per_block * pairs_per_row;
        let q = b.new_range(Interval::new(0, pairs - 1));
        let qe = Expr::var(q);
        let r = qe.floor_div(Expr::constant(pairs_per_row));
        let t = qe.modulo(Expr::constant(pairs_per_row));
        let group = t.floor_div(Expr::constant(half)) * Expr::constant(2 * half);
        let within = t.modulo(Expr::constant(half));
        let lo = group + within;
        let hi = if flip {
            group + Expr::constant(2 * half - 1) - within
        } else {
            lo + Expr::constant(half)
        };
        let (lo, hi) = (b.simplify(lo), b.simplify(hi));
        let base = r * Expr::constant(l.padded);
        let (slot_lo, slot_hi) = (b.simplify(base + lo), b.simplify(base + hi));
        let mut conds = Vec::new();
        if !b.range_of(hi).is_ok_and(|iv| iv.hi < l.n) {
            conds.push((hi, 0, l.n - 1));
        }
        if l.launch.blocks * l.rows_per_block > l.rows {
            let row = b.simplify(Expr::var(block) * Expr::constant(l.rows_per_block) + r);
            conds.push((row, 0, l.rows - 1));
        }
        let body = b.in_memo_frame(|b| self.compare_exchange(b, slot_lo, slot_hi))?;
        Ok(Stmt::Loop {
            kind: LoopKind::Threads,
            var: q,
            lo: 0,
            hi: pairs - 1,
            body: Stmt::guarded(kir::Guard { conds }, body),
        })
    }

    /// Orders slots `lo < hi` of one row: swaps them where `hi`'s element is before
    /// `lo`'s (the comparator, then the position).
    fn compare_exchange(
        &self,
        b: &mut Builder<'_>,
        lo: Expr,
        hi: Expr,
    ) -> Result<Vec<Stmt>, CodegenError> {
        let mut body = Vec::new();
        let bind = |b: &mut Builder<'_>, value: Value, body: &mut Vec<Stmt>| {
            let ty = value.ty();
            let var = b.new_var(ty);
            body.push(Stmt::Let { var, value });
            Value::Var(var, ty)
        };
        let mut a = Vec::new();
        let mut z = Vec::new();
        for (k, &local) in self.shared.iter().enumerate() {
            let ty = b.buffers[self.ins[k]].ty;
            for (vals, at) in [(&mut a, lo), (&mut z, hi)] {
                let v = Value::LocalLoad {
                    local,
                    offset: at,
                    ty,
                };
                vals.push(bind(b, v, &mut body));
            }
        }
        let pos = |at: Expr| Value::LocalLoad {
            local: self.pos,
            offset: at,
            ty: ScalarType::S32,
        };
        let pa = bind(b, pos(lo), &mut body);
        let pz = bind(b, pos(hi), &mut body);
        let z_first = self.before(b, (&z, &pz), (&a, &pa), &mut body)?;
        let a_first = self.before(b, (&a, &pa), (&z, &pz), &mut body)?;
        let not = |v: Value| Value::Unary(UnOp::Not, Box::new(v), ScalarType::Pred);
        let tie_to_z = Value::Binary(
            BinOp::And,
            Box::new(not(a_first)),
            Box::new(Value::Compare(
                CmpOp::Lt,
                false,
                Box::new(pz.clone()),
                Box::new(pa.clone()),
            )),
            ScalarType::Pred,
        );
        let swap = bind(
            b,
            Value::Binary(
                BinOp::Or,
                Box::new(z_first),
                Box::new(tie_to_z),
                ScalarType::Pred,
            ),
            &mut body,
        );
        let pick = |x: &Value, y: &Value| {
            Value::Select(
                Box::new(swap.clone()),
                Box::new(x.clone()),
                Box::new(y.clone()),
            )
        };
        for (k, &local) in self.shared.iter().enumerate() {
            body.push(Stmt::LocalStore {
                local,
                offset: lo,
                value: pick(&z[k], &a[k]),
            });
            body.push(Stmt::LocalStore {
                local,
                offset: hi,
                value: pick(&a[k], &z[k]),
            });
        }
        body.push(Stmt::LocalStore {
            local: self.pos,
            offset: lo,
            value: pick(&pz, &pa),
        });
        body.push(Stmt::LocalStore {
            local: self.pos,
            offset: hi,
            value: pick(&pa, &pz),
        });
        Ok(body)
    }

    /// Whether the element `x` (its operands' values, its position) is strictly before
    /// `y` by the order alone (`pred`), its statements appended to `body`.
    fn before(
        &self,
        b: &mut Builder<'_>,
        (x, px): (&[Value], &Value),
        (y, py): (&[Value], &Value),
        body: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        match self.launch.order {
            SortOrder::TopK { largest } => {
                let total = x[0].ty().is_float();
                let op = if largest { CmpOp::Gt } else { CmpOp::Lt };
                Ok(Value::Compare(
                    op,
                    total,
                    Box::new(x[0].clone()),
                    Box::new(y[0].clone()),
                ))
            }
            SortOrder::Sort { comparator } => {
                let args: Vec<Value> = x
                    .iter()
                    .zip(y)
                    .flat_map(|(a, z)| [a.clone(), z.clone()])
                    .collect();
                self.call(b, comparator, args, body)
            }
            SortOrder::TopKCall { comparator, params } => {
                let mut args = vec![x[0].clone(), y[0].clone(), px.clone(), py.clone()];
                args.truncate(params);
                self.call(b, comparator, args, body)
            }
        }
    }

    /// Comparator `f` applied to `args` (its parameters in order), inlined into `body`;
    /// its result must be one `pred`.
    fn call(
        &self,
        b: &mut Builder<'_>,
        f: CompId,
        args: Vec<Value>,
        body: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        let what = "sort";
        let r = b.inline_scalar_call(f, args, what, "a comparator", body)?;
        if r.ty() != ScalarType::Pred {
            return Err(b.unsupported(what, format!("a comparator giving {}", r.ty())));
        }
        Ok(r)
    }
}
