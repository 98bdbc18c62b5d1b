//! The sorted form of an ordered GPU scatter in the program builder (`codegen`'s
//! `emit_sorted_scatter_kernel`): the keys kernel, the merge passes and the apply kernel
//! in order, over two scratch key arrays written in turn (keys into the first, each pass
//! into the other), the output written in place as the one-kernel scatter's is.

use codegen::emit::{emit_sorted_scatter_kernel, gpu_sorted_scatter};

use super::*;

impl State<'_> {
    /// Scatter `scatter` of `sc` (computing `id` of `comp`, whose operands are
    /// `operands`) in its sorted form where it takes one, else the one-kernel forms of
    /// [`Self::scatter_kernel`]; whether a kernel runs it.
    pub(super) fn sorted_or_scatter_kernel(
        &mut self,
        (sc, scatter): (CompId, InstrId),
        (comp, id): (CompId, InstrId),
        operands: &[InstrId],
        out: &mut Vec<Thunk>,
    ) -> Result<bool, CodegenError> {
        let module = self.module;
        let outer = module.computation(comp);
        let Some(ss) = gpu_sorted_scatter(module, self.target, sc, scatter) else {
            return self.scatter_kernel((sc, scatter), (comp, id), operands, out);
        };
        if operands.len() != 3
            || !crate::boundary_layouts::same_layout(
                outer.instr(operands[0]).shape(),
                outer.instr(id).shape(),
            )
        {
            return self.scatter_kernel((sc, scatter), (comp, id), operands, out);
        }
        let instr = outer.instr(id);
        let target = self.in_place_target(comp, id, operands[0], out)?;
        let first = self.pos(out);
        let key_bytes = 8 * ss.positions as u64;
        let mut keys = [
            self.temp(&format!("{}.keys", instr.name()), key_bytes, first),
            self.temp(&format!("{}.keys_merged", instr.name()), key_bytes, first),
        ];
        for k in 0..ss.launches() {
            let t = self.pos(out);
            let kname = kernel_name(self.kernels.len(), instr.name());
            let emitted = emit_sorted_scatter_kernel(module, self.target, sc, scatter, k, &kname)?;
            // The keys kernel writes keys[0]; each pass reads one and writes the other.
            if k > 0 {
                keys.swap(0, 1);
            }
            let (read, write) = (keys[0], keys[1]);
            let mut args = Vec::with_capacity(emitted.sources.len());
            for src in &emitted.sources {
                let b = match src {
                    BufferSource::Operand(j) => {
                        let op = operands.get(*j).ok_or_else(|| {
                            CodegenError::Internal(format!("sorted scatter has no operand {j}"))
                        })?;
                        self.single(comp, *op)?
                    }
                    BufferSource::Output(0) => target,
                    BufferSource::Output(1) => read,
                    BufferSource::Output(2) => write,
                    other => {
                        return Err(CodegenError::Internal(format!(
                            "sorted scatter kernel {k} of `{}` binds {other:?}",
                            instr.name()
                        )))
                    }
                };
                self.use_at(b, t);
                args.push(b);
            }
            self.launch(out, emitted.kernel, args);
        }
        self.slots.insert((comp, id), vec![target]);
        Ok(true)
    }
}
