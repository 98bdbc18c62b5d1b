//! [`InstrRef`]: one instruction together with the module and computation it lives in, so
//! that an analysis takes a single argument (`indexing::analyze(&fusion)`) instead of
//! three loose ones that could disagree.

use super::{CompId, Computation, InstrId, Instruction, Module};

/// A borrowed handle to one instruction of a module: `module.instr("fusion.3")`.
///
/// ```
/// let m = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}").unwrap();
/// let n = m.instr("n").unwrap();
/// assert_eq!(n.opcode(), hlo::Opcode::Negate);
/// assert_eq!(n.operand(0).unwrap().name(), "p");
/// assert!(m.instr("missing").is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct InstrRef<'m> {
    module: &'m Module,
    comp: CompId,
    id: InstrId,
}

impl<'m> InstrRef<'m> {
    /// The handle of instruction `id` of computation `comp`; `None` if either id is out
    /// of range.
    pub fn new(module: &'m Module, comp: CompId, id: InstrId) -> Option<InstrRef<'m>> {
        module.get_computation(comp)?.get(id)?;
        Some(InstrRef { module, comp, id })
    }

    /// The module.
    pub fn module(&self) -> &'m Module {
        self.module
    }

    /// The id of the computation holding the instruction.
    pub fn comp_id(&self) -> CompId {
        self.comp
    }

    /// The computation holding the instruction.
    pub fn computation(&self) -> &'m Computation {
        self.module.computation(self.comp)
    }

    /// The instruction's id in its computation.
    pub fn id(&self) -> InstrId {
        self.id
    }

    /// The instruction itself.
    pub fn instr(&self) -> &'m Instruction {
        self.computation().instr(self.id)
    }

    /// The instruction's name.
    pub fn name(&self) -> &'m str {
        self.instr().name()
    }

    /// The instruction's opcode.
    pub fn opcode(&self) -> crate::Opcode {
        self.instr().opcode()
    }

    /// The handle of operand `i`, in the same computation.
    pub fn operand(&self, i: usize) -> Option<InstrRef<'m>> {
        let op = self.instr().operand(i)?;
        InstrRef::new(self.module, self.comp, op)
    }

    /// The computation a `fusion` or async op (`calls=`) or a `call` (`to_apply=`) runs.
    pub fn called_computation(&self) -> Option<&'m Computation> {
        let i = self.instr();
        let c = match i.opcode() {
            crate::Opcode::Call => i.to_apply()?,
            _ => i.calls()?,
        };
        self.module.get_computation(c)
    }
}

impl Module {
    /// The instruction named `name`, searched in the entry computation first, then in
    /// every other computation in order.
    pub fn instr(&self, name: &str) -> Option<InstrRef<'_>> {
        let entry = self.entry_id();
        let in_comp = |c: CompId| {
            self.computation(c)
                .find(name)
                .and_then(|i| InstrRef::new(self, c, i))
        };
        in_comp(entry).or_else(|| self.computations().find_map(|(c, _)| in_comp(c)))
    }

    /// The handle of instruction `id` of computation `comp`.
    pub fn instr_ref(&self, comp: CompId, id: InstrId) -> Option<InstrRef<'_>> {
        InstrRef::new(self, comp, id)
    }
}
