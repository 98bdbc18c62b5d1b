//! The two-launch GPU select-and-scatter in the program builder (overlapping windows,
//! `codegen`'s `emit_select_scatter_pass`): launch 0 writes each window's chosen tap into
//! a scratch array (`s32`, the source's shape), launch 1 folds the source values of the
//! windows that chose each operand element into the result. The scratch array is a
//! temporary live from the first launch to the second.

use codegen::emit::{chosen_taps_shape, emit_select_scatter_pass};

use super::*;

impl State<'_> {
    /// The two launches of select-and-scatter `id` of `comp`, appended to `out`.
    pub(super) fn gpu_select_scatter(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let first = self.pos(out);
        let result = self.temp(instr.name(), bytes_of(instr.shape(), instr.name())?, first);
        let taps_shape = chosen_taps_shape(module, comp, id);
        let taps = self.temp(
            &format!("{}.chosen_taps", instr.name()),
            bytes_of(&taps_shape, instr.name())?,
            first,
        );
        for pass in 0..2 {
            let t = self.pos(out);
            let kname = kernel_name(self.kernels.len(), instr.name());
            let emitted = emit_select_scatter_pass(module, self.target, comp, id, pass, &kname)?;
            let mut args = Vec::with_capacity(emitted.sources.len());
            for src in &emitted.sources {
                let b = match src {
                    BufferSource::Operand(j) => self.single(comp, instr.operands()[*j])?,
                    BufferSource::Output(0) => result,
                    BufferSource::Output(1) => taps,
                    BufferSource::Output(k) => {
                        return Err(CodegenError::Internal(format!(
                            "select-and-scatter launch {pass} of `{}` writes output {k}",
                            instr.name()
                        )))
                    }
                    BufferSource::Constant(cc, i) => self.constant_buffer(*cc, *i)?,
                };
                args.push(b);
            }
            for (&b, src) in args.iter().zip(&emitted.sources) {
                // The second launch reads the chosen taps: they live until then.
                if !matches!(src, BufferSource::Output(0)) {
                    self.use_at(b, t);
                }
            }
            self.launch(out, emitted.kernel, args);
        }
        self.slots.insert((comp, id), vec![result]);
        Ok(())
    }
}
