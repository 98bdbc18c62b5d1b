//! In-place updates in the program builder: when a dynamic-update-slice or scatter may
//! write its base's buffer (the base dies there, or it is a loop's state element the body
//! replaces), else after a copy of the base, and the kernels that do it.

use super::*;

impl State<'_> {
    /// Whether `base` dies at `user`, so `user` may write into its buffer: a kernel's
    /// result (its buffer is its own) that is not the computation's root, whose other users
    /// have all run before `user` and kept none of its bytes ([`Self::read_before`]). A KV
    /// cache updated layer by layer is such a base: each layer's attention reads the cache
    /// (a slice kernel) before the next layer's dynamic-update-slice writes it.
    pub(super) fn dies_at(&self, comp: CompId, base: InstrId, user: InstrId) -> bool {
        let c = self.module.computation(comp);
        let produced_by_kernel = match c.instr(base).opcode() {
            Opcode::Parameter
            | Opcode::Constant
            | Opcode::GetTupleElement
            | Opcode::Bitcast
            | Opcode::Tuple
            | Opcode::While
            | Opcode::Conditional
            | Opcode::OptimizationBarrier => false,
            Opcode::Reshape => !self.is_layout_preserving_reshape(comp, base),
            Opcode::BitcastConvert => {
                matches!(
                    self.is_width_changing_reinterpretation(comp, base),
                    Ok(false)
                )
            }
            _ => true,
        };
        produced_by_kernel && c.root() != base && self.read_before(comp, base, user)
    }

    /// Whether `base` is element `k` of a while body's state, read by `user` and otherwise
    /// only by kernels that ran before it ([`Self::read_before`]), whose value the body
    /// returns as element `k`, directly or through a chain of further updates of it
    /// ([`Self::returned_through_updates`]): then `user` may update the state buffer in
    /// place (nothing in the body reads that element after `user`, and copying the body's
    /// results into the state skips a buffer onto itself). A scan writing one row
    /// of its stacked outputs per step then writes that row, not a copy of all of them; a
    /// decoding loop's stacked KV cache, updated layer by layer, is written row by row.
    pub(super) fn replaces_loop_state(&self, comp: CompId, base: InstrId, user: InstrId) -> bool {
        let module = self.module;
        let c = module.computation(comp);
        let b = c.instr(base);
        let (Some(k), Some(&param)) = (b.tuple_index(), b.operands().first()) else {
            return false;
        };
        if b.opcode() != Opcode::GetTupleElement
            || c.instr(param).opcode() != Opcode::Parameter
            || !c.users(base).contains(&user)
            || !self.read_before(comp, base, user)
        {
            return false;
        }
        let only_reader = c.users(param).iter().all(|&u| {
            let ui = c.instr(u);
            ui.opcode() == Opcode::GetTupleElement && (u == base || ui.tuple_index() != Some(k))
        });
        let root = c.root_instr();
        // Last, as it walks the module: only a while body's parameter is a loop's state
        // (a conditional's branch parameter is its caller's value).
        let is_body = || {
            module.computations().any(|(_, cc)| {
                cc.instructions()
                    .any(|(_, i)| i.opcode() == Opcode::While && i.while_body() == Some(comp))
            })
        };
        only_reader
            && root.opcode() == Opcode::Tuple
            && self.returned_through_updates(comp, user, k)
            && is_body()
    }

    /// Whether every reader of `base` other than `user` has run before `user` and kept
    /// nothing of `base`'s buffer: each is built already (its thunks precede `user`'s), is
    /// no asynchronous start (whose read may still be in flight) and has buffers of its
    /// own. A pipelined scan reads the row it is about to overwrite (a select between the
    /// old row and the new one) in a kernel feeding the update; with this the update still
    /// writes the loop state in place instead of copying all rows every step.
    fn read_before(&self, comp: CompId, base: InstrId, user: InstrId) -> bool {
        let c = self.module.computation(comp);
        let Some(&[buf]) = self.slots.get(&(comp, base)).map(Vec::as_slice) else {
            return false;
        };
        let once = c
            .instr(user)
            .operands()
            .iter()
            .filter(|&&o| o == base)
            .count()
            == 1;
        once && c.users(base).iter().all(|&u| {
            let op = c.instr(u).opcode();
            u == user
                || (self.built.contains(&(comp, u))
                    && !op.is_async()
                    && !op.as_str().ends_with("-start")
                    && !matches!(op, Opcode::Send | Opcode::Recv)
                    && self
                        .slots
                        .get(&(comp, u))
                        .is_some_and(|leaves| !leaves.contains(&buf)))
        })
    }

    /// Whether the value of update `user` reaches the root of `comp` only as element `k`
    /// (once), either itself or as the base of a chain of updates (dynamic-update-slices
    /// and scatters, each the base's only updater) whose last value is. Whatever else
    /// reads a value of the chain on the way reads it before the next update writes it
    /// (that update then runs in place, [`Self::dies_at`]) or the update writes a copy;
    /// either way the state element holds the chain's values in turn, and nothing reads
    /// the state's old value after `user`. Readers of the last value read the state
    /// buffer, which nothing writes before the iteration ends (loop state is never an
    /// in-place kernel's dying operand, [`crate::memory::in_place::accept`]).
    fn returned_through_updates(&self, comp: CompId, user: InstrId, k: i64) -> bool {
        let c = self.module.computation(comp);
        let root = c.root_instr();
        let Some(&at_k) = usize::try_from(k).ok().and_then(|k| root.operands().get(k)) else {
            return false;
        };
        let mut v = user;
        // Each step moves to a later instruction: at most one per instruction.
        for _ in 0..c.instructions().count() {
            let users = c.users(v);
            let mut next = users.iter().copied().filter(|&u| {
                let ui = c.instr(u);
                matches!(ui.opcode(), Opcode::DynamicUpdateSlice | Opcode::Scatter)
                    && ui.operands().first() == Some(&v)
            });
            // The chain's last value may have readers besides the root: they read the
            // state buffer before the end-of-iteration copy (of the buffer onto itself).
            match (next.next(), next.next(), users.contains(&c.root())) {
                (None, None, true) => {
                    return at_k == v && root.operands().iter().filter(|&&o| o == v).count() == 1
                }
                (Some(u), None, false) => v = u,
                _ => return false,
            }
        }
        false
    }

    /// Records the outputs of the kernel just built for `(comp, id)` (its buffers `outs`)
    /// that the indexing maps allow over an operand's buffer
    /// ([`super::super::memory::in_place::shareable_operands`]): an operand buffer that
    /// another operand of the kernel also reads is kept only when every such operand may
    /// be shared with the same output. Whether the operand dies here is decided once the
    /// sequence is complete.
    pub(super) fn in_place_candidates(&mut self, comp: CompId, id: InstrId, outs: &[BufferId]) {
        let module = self.module;
        let Some(instr) = module.instr_ref(comp, id) else {
            return;
        };
        let pairs = crate::memory::in_place::shareable_operands(&instr);
        if pairs.is_empty() {
            return;
        }
        let operands = instr.instr().operands().to_vec();
        // Only buffers the operands already have (a constant read as an immediate has none).
        let bufs: Vec<Vec<BufferId>> = operands
            .iter()
            .map(|&op| self.slots.get(&(comp, op)).cloned().unwrap_or_default())
            .collect();
        for &(k, j) in &pairs {
            let (Some(&output), Some(&[operand])) = (outs.get(k), bufs.get(j).map(Vec::as_slice))
            else {
                continue;
            };
            let all_shared = bufs
                .iter()
                .enumerate()
                .filter(|(_, b)| b.contains(&operand))
                .all(|(jj, _)| pairs.contains(&(k, jj)));
            if all_shared {
                self.in_place.push(crate::memory::in_place::Candidate {
                    kernel: self.kernels.len(),
                    output,
                    operand,
                });
            }
        }
    }

    /// A dynamic-update-slice updating its base in place.
    pub(super) fn dus_in_place(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let kname = kernel_name(self.kernels.len(), instr.name());
        let emitted = codegen::emit::emit_dus_in_place(module, self.target, comp, id, &kname)?;
        let operands = instr.operands().to_vec();
        self.in_place(comp, id, emitted, &operands, out)
    }

    /// A single-operand scatter `(sc, scatter)` with at least one update, computing the
    /// value of `(comp, id)` (itself, or a fusion wrapping it whose operands `operands`
    /// are the scatter's) as an in-place kernel; `false` when the kernel does not support
    /// the scatter's form (the caller makes it a library call).
    pub(super) fn scatter_kernel(
        &mut self,
        (sc, scatter): (CompId, InstrId),
        (comp, id): (CompId, InstrId),
        operands: &[InstrId],
        out: &mut Vec<Thunk>,
    ) -> Result<bool, CodegenError> {
        let module = self.module;
        let s = module.computation(sc);
        let instr = s.instr(scatter);
        let updates = instr
            .operands()
            .get(2)
            .map(|&u| s.instr(u).shape().element_count());
        let outer = module.computation(comp);
        if operands.len() != 3
            || !matches!(updates, Some(Ok(n)) if n > 0)
            || !crate::boundary_layouts::same_layout(
                outer.instr(operands[0]).shape(),
                outer.instr(id).shape(),
            )
        {
            return Ok(false);
        }
        let name = module.computation(comp).instr(id).name();
        let kname = kernel_name(self.kernels.len(), name);
        match codegen::emit::emit_scatter_in_place(module, self.target, sc, scatter, &kname) {
            Ok(emitted) => {
                self.in_place(comp, id, emitted, operands, out)?;
                Ok(true)
            }
            Err(CodegenError::Unsupported { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The buffer an in-place update `id` of `comp` writes over `base`: the base's own
    /// buffer when it dies here (or is loop state this update replaces), else a fresh copy
    /// of it appended to `out`. Shared by every in-place builder.
    pub(super) fn in_place_target(
        &mut self,
        comp: CompId,
        id: InstrId,
        base: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<BufferId, CodegenError> {
        let base_buf = self.single(comp, base)?;
        if self.dies_at(comp, base, id) || self.replaces_loop_state(comp, base, id) {
            return Ok(base_buf);
        }
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let t = self.pos(out);
        let bytes = bytes_of(instr.shape(), instr.name())?;
        let o = self.temp(instr.name(), bytes, t);
        self.use_at(base_buf, t);
        out.push(Thunk::Copy {
            src: base_buf,
            dst: o,
            bytes,
        });
        Ok(o)
    }

    /// An update kernel (dynamic-update-slice, scatter) computing `(comp, id)` whose base
    /// is `operands[0]` (`operands` are the kernel's operands in `comp`), writing the base
    /// in place: its own buffer when it dies here, else a copy of it.
    pub(super) fn in_place(
        &mut self,
        comp: CompId,
        id: InstrId,
        emitted: codegen::emit::EmittedKernel,
        operands: &[InstrId],
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let target = self.in_place_target(comp, id, operands[0], out)?;
        let t = self.pos(out);
        let mut args = Vec::with_capacity(emitted.sources.len());
        for src in &emitted.sources {
            let b = match src {
                BufferSource::Operand(j) => {
                    let op = operands.get(*j).ok_or_else(|| {
                        CodegenError::Internal(format!("in-place update has no operand {j}"))
                    })?;
                    self.single(comp, *op)?
                }
                BufferSource::Output(_) => target,
                BufferSource::Constant(..) => {
                    return Err(CodegenError::Internal(
                        "in-place update reads a constant".into(),
                    ))
                }
            };
            self.use_at(b, t);
            args.push(b);
        }
        self.launch(out, emitted.kernel, args);
        self.slots.insert((comp, id), vec![target]);
        Ok(())
    }
}
