//! The GPU merge sort of long rows in the program builder: one kernel per merge pass
//! (`codegen`'s `emit_gpu_merge_pass`), each reading the buffers the previous pass wrote
//! (the operands for the first) and writing the outputs or a scratch copy of them in
//! turn, so that the last pass writes the outputs (`merge_pass_writes_scratch`). The
//! scratch buffers are temporaries live from the first pass to the last.

use codegen::emit::{emit_gpu_merge_pass, gpu_merge_sort_passes, merge_pass_writes_scratch};

use super::*;

impl State<'_> {
    /// The merge passes of sort `id` of `comp`, appended to `out`.
    pub(super) fn gpu_merge_sort(
        &mut self,
        comp: CompId,
        id: InstrId,
        out: &mut Vec<Thunk>,
    ) -> Result<(), CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let passes = gpu_merge_sort_passes(module, self.target, comp, id).ok_or_else(|| {
            CodegenError::Internal(format!("`{}` takes no GPU merge sort", instr.name()))
        })?;
        let first = self.pos(out);
        let shapes = leaf_shapes(instr.shape());
        let (mut outs, mut scratch) = (Vec::new(), Vec::new());
        for (k, s) in shapes.iter().enumerate() {
            let bytes = bytes_of(s, instr.name())?;
            let nm = if shapes.len() > 1 {
                format!("{}.{k}", instr.name())
            } else {
                instr.name().to_string()
            };
            outs.push(self.temp(&nm, bytes, first));
            scratch.push(self.temp(&format!("{nm}.merge_scratch"), bytes, first));
        }
        let mut from = Vec::new();
        for &op in instr.operands() {
            from.push(self.single(comp, op)?);
        }
        for pass in 0..passes {
            let t = self.pos(out);
            let to = if merge_pass_writes_scratch(pass, passes) {
                scratch.clone()
            } else {
                outs.clone()
            };
            let kname = kernel_name(self.kernels.len(), instr.name());
            let emitted = emit_gpu_merge_pass(module, self.target, comp, id, pass, &kname)?;
            if emitted.sources.len() != from.len() + to.len() {
                return Err(CodegenError::Internal(format!(
                    "merge pass of `{}`: {} buffers for {} operands",
                    instr.name(),
                    emitted.sources.len(),
                    from.len()
                )));
            }
            for &b in from.iter().chain(&scratch) {
                self.use_at(b, t);
            }
            let args: Vec<BufferId> = from.iter().chain(&to).copied().collect();
            self.launch(out, emitted.kernel, args);
            from = to;
        }
        self.slots.insert((comp, id), outs);
        Ok(())
    }
}
