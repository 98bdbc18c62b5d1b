//! The program builder's buffers: fixed and temporary allocations, the buffers of an
//! instruction's leaves, their live ranges, constants, and kernel launches.

use super::*;

impl State<'_> {
    pub(super) fn fixed(&mut self, name: &str, kind: AllocationKind, bytes: u64) -> BufferId {
        self.allocations.push(Allocation {
            kind,
            bytes,
            offset: None,
            parent: None,
        });
        self.buffers.push(Buffer {
            name: name.to_string(),
            bytes,
            allocation: self.allocations.len() - 1,
            defined_at: None,
            last_use: None,
        });
        self.buffers.len() - 1
    }

    /// A buffer written by the thunk at `at` of the entry sequence; inside nested
    /// sequences, live through the whole thunk of the entry sequence that holds them.
    pub(super) fn temp(&mut self, name: &str, bytes: u64, at: usize) -> BufferId {
        let (at, last) = if self.depth > 0 {
            (self.top, Some(self.top))
        } else {
            (at, None)
        };
        self.buffers.push(Buffer {
            name: name.to_string(),
            bytes,
            allocation: usize::MAX,
            defined_at: Some(at),
            last_use: last,
        });
        self.buffers.len() - 1
    }

    pub(super) fn pos(&self, out: &[Thunk]) -> usize {
        if self.depth == 0 {
            out.len()
        } else {
            self.top
        }
    }

    /// The buffers of `id`'s leaves; a constant gets its allocation on first use (a
    /// scalar constant read as an immediate by every kernel needs none).
    pub(super) fn leaves(
        &mut self,
        comp: CompId,
        id: InstrId,
    ) -> Result<Vec<BufferId>, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        if instr.opcode() == Opcode::Constant && !self.slots.contains_key(&(comp, id)) {
            let lit = self.constant_literal(comp, id)?;
            let bytes = bytes_of(instr.shape(), instr.name())?;
            let b = self.fixed(instr.name(), AllocationKind::Constant(lit), bytes);
            self.slots.insert((comp, id), vec![b]);
        }
        self.slots.get(&(comp, id)).cloned().ok_or_else(|| {
            CodegenError::Internal(format!(
                "`{}` used before it has buffers",
                self.module.computation(comp).instr(id).name()
            ))
        })
    }

    pub(super) fn single(&mut self, comp: CompId, id: InstrId) -> Result<BufferId, CodegenError> {
        match self.leaves(comp, id)?.as_slice() {
            [b] => Ok(*b),
            _ => Err(CodegenError::unsupported(
                "tuple",
                self.module.computation(comp).instr(id).name(),
                "a tuple-shaped value used as an array",
            )),
        }
    }

    pub(super) fn use_at(&mut self, b: BufferId, t: usize) {
        let l = &mut self.buffers[b].last_use;
        *l = Some(l.map_or(t, |x| x.max(t)));
    }

    /// A fresh constant allocation holding constant `i` of `cc`: what a kernel's
    /// `BufferSource::Constant` binds.
    pub(super) fn constant_buffer(
        &mut self,
        cc: CompId,
        i: InstrId,
    ) -> Result<BufferId, CodegenError> {
        let lit = self.constant_literal(cc, i)?;
        let module = self.module;
        let ci = module.computation(cc).instr(i);
        let bytes = bytes_of(ci.shape(), ci.name())?;
        Ok(self.fixed(ci.name(), AllocationKind::Constant(lit), bytes))
    }

    /// Appends a launch of `kernel` over `args` to `out` and keeps the kernel for the
    /// program (the thunk names it by its index).
    pub(super) fn launch(
        &mut self,
        out: &mut Vec<Thunk>,
        kernel: codegen::kir::Kernel,
        args: Vec<BufferId>,
    ) {
        out.push(Thunk::Kernel {
            kernel: self.kernels.len(),
            args,
            blocks: kernel.grid.blocks,
            elements: kernel.touched_elements(),
        });
        self.kernels.push(kernel);
    }

    pub(super) fn constant_literal(
        &self,
        comp: CompId,
        id: InstrId,
    ) -> Result<hlo::literal::ArrayLiteral, CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        instr
            .literal()
            .and_then(|l| l.as_array())
            .cloned()
            .ok_or_else(|| {
                CodegenError::unsupported("constant", instr.name(), "an elided (`{...}`) constant")
            })
    }
}
