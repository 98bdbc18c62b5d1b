//! `map`: the called computation inlined at each element, over the operands' elements at
//! the same index (as a reduction's combiner is inlined).

use super::*;

impl Builder<'_> {
    pub(super) fn map(
        &mut self,
        comp: CompId,
        id: InstrId,
        g: &GroupedIndexing,
        index: &[Expr],
        guarded: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<Vec<Value>, CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let f = instr
            .to_apply()
            .ok_or_else(|| self.unsupported("map", "no computation to apply"))?;
        let fc = module.computation(f);
        let n = instr.operands().len();
        let mut params = Vec::with_capacity(n);
        for j in 0..n {
            let v = self
                .plain_operand((comp, id), g, j, index, guarded, out)?
                .remove(0);
            let pid = fc
                .parameter(j)
                .ok_or_else(|| self.unsupported("map", "a computation with too few parameters"))?;
            if self.elem_type(f, pid)? != v.ty() {
                return Err(self.unsupported("map", "parameter types differ from the operands"));
            }
            params.push(pid);
            self.leaves.insert((f, pid), Leaf::Value(v));
        }
        self.memo.push(Default::default());
        let r = self.values(f, fc.root(), &[], guarded, out);
        self.memo.pop();
        for pid in params {
            self.leaves.remove(&(f, pid));
        }
        let r = r?;
        if r.len() != 1 || r[0].ty() != self.elem_type(comp, id)? {
            return Err(self.unsupported("map", "a result of another type than the map's"));
        }
        Ok(r)
    }
}
