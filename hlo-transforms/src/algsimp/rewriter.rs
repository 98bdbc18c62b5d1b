//! What a handler may read and build: [`Rw`], the computation being simplified with the
//! facts of the module the rules need, and queries on it that several handlers share.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

use super::scalar::{self, Scalar};

/// What a handler may read and build.
pub(crate) struct Rw<'a> {
    pub comp: &'a mut Computation,
    pub names: &'a mut NameGen,
    /// For each computation of the module: the binary opcode it applies to its two
    /// parameters, when it is such a reducer.
    pub reducers: &'a [Option<Opcode>],
    /// For each computation of the module: whether it returns its second parameter (a
    /// scatter that overwrites).
    pub overwrites: &'a [bool],
    /// The instruction being rewritten (its metadata goes to new instructions).
    pub current: InstrId,
}

impl Rw<'_> {
    pub fn instr(&self, id: InstrId) -> &Instruction {
        self.comp.instr(id)
    }

    pub fn op(&self, id: InstrId, k: usize) -> InstrId {
        self.comp.instr(id).operands[k]
    }

    pub fn opcode(&self, id: InstrId) -> Opcode {
        self.comp.instr(id).opcode
    }

    pub fn shape(&self, id: InstrId) -> &Shape {
        &self.comp.instr(id).shape
    }

    pub fn splat(&self, id: InstrId) -> Option<Scalar> {
        scalar::splat(self.comp, id)
    }

    /// Adds a new instruction named after the current one, carrying its metadata.
    pub fn add(
        &mut self,
        opcode: Opcode,
        shape: Shape,
        operands: Vec<InstrId>,
        attrs: Vec<(AttrName, AttrValue)>,
    ) -> InstrId {
        let base = self.comp.instr(self.current).name.clone();
        let mut i = Instruction::new(self.names.fresh(&base), opcode, shape, operands);
        for (n, v) in attrs {
            i.set_attr(n, v);
        }
        if let Some(m) = self
            .comp
            .instr(self.current)
            .attr(&AttrName::Metadata)
            .cloned()
        {
            i.set_attr(AttrName::Metadata, m);
        }
        edit::add(self.comp, i)
    }

    /// A copy of `id` with other operands.
    pub fn clone_with(&mut self, id: InstrId, operands: Vec<InstrId>) -> InstrId {
        let src = self.comp.instr(id);
        let mut i = src.clone();
        i.users.clear();
        i.operands = operands;
        i.name = self.names.fresh(&src.name);
        edit::add(self.comp, i)
    }

    /// A copy of `id` with other operands and another shape.
    pub fn clone_with_shape(
        &mut self,
        id: InstrId,
        operands: Vec<InstrId>,
        shape: Shape,
    ) -> InstrId {
        let new = self.clone_with(id, operands);
        self.comp.instr_mut(new).set_shape(shape);
        new
    }

    /// A scalar constant of type `ty` (`None` when `v` does not fit).
    pub fn constant(&mut self, ty: ElementType, v: Scalar) -> Option<InstrId> {
        let lit = scalar::literal_or_none(ty, v)?;
        let base = self.comp.instr(self.current).name.clone();
        let i = Instruction::constant(self.names.fresh(&base), Shape::scalar(ty), lit);
        Some(edit::add(self.comp, i))
    }

    /// An array of `like`'s shape with every element `v` (a broadcast scalar constant).
    pub fn splat_like(&mut self, like: &Shape, v: Scalar) -> Option<InstrId> {
        let ty = like.element_type()?;
        let c = self.constant(ty, v)?;
        if like.rank() == 0 {
            return Some(c);
        }
        Some(self.add(
            Opcode::Broadcast,
            like.clone(),
            vec![c],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        ))
    }
}

/// When `id` is `broadcast(s)` of a scalar `s`: `s`.
pub(super) fn scalar_broadcast_source(rw: &Rw<'_>, id: InstrId) -> Option<InstrId> {
    let i = rw.instr(id);
    (i.opcode == Opcode::Broadcast && rw.shape(i.operands[0]).rank() == 0).then(|| i.operands[0])
}
