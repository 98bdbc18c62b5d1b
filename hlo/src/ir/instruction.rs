//! Instructions: name, opcode, shape, operands (by id), users, attributes.

use std::sync::Arc;

use super::{CompId, InstrId};
use crate::attrs::{AttrName, AttrValue, Attribute};
use crate::literal::Literal;
use crate::opcode::Opcode;
use crate::shape::Shape;

/// What some opcodes carry inside their parentheses instead of operands.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    /// Nothing special: the parentheses hold operands.
    None,
    /// `parameter(N)`.
    Parameter(i64),
    /// `constant(literal)`.
    Constant(Box<Literal>),
}

/// An HLO instruction, stored in its computation's arena and referred to by [`InstrId`].
///
/// Attributes are kept in the order written (typed where the parser knows them, verbatim
/// otherwise) and print back in that order; see the typed accessors in
/// [`crate::ir::accessors`].
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// The instruction's name, unique in its module (without the `%` sigil).
    pub name: String,
    /// What the instruction computes.
    pub opcode: Opcode,
    /// The result shape. Shared: the parser gives instructions written with the same
    /// shape text one copy.
    pub shape: Arc<Shape>,
    /// Operands in order. Passes that edit this directly keep `users` in step (the
    /// helpers of [`crate::ir::edit`] do, or call [`crate::Computation::recompute_users`]).
    pub operands: Vec<InstrId>,
    /// The instructions that use this one as an operand, each once; maintained with
    /// `operands`.
    pub users: Vec<InstrId>,
    /// Attributes in written order.
    pub attrs: Vec<Attribute>,
    /// `parameter(N)` numbers and `constant(...)` values.
    pub payload: Payload,
}

impl Instruction {
    /// A new instruction with operands and no attributes.
    pub fn new(
        name: impl Into<String>,
        opcode: Opcode,
        shape: Shape,
        operands: Vec<InstrId>,
    ) -> Instruction {
        Instruction::with_shared_shape(name.into(), opcode, Arc::new(shape), operands)
    }

    pub(crate) fn with_shared_shape(
        name: String,
        opcode: Opcode,
        shape: Arc<Shape>,
        operands: Vec<InstrId>,
    ) -> Instruction {
        Instruction {
            name,
            opcode,
            shape,
            operands,
            users: Vec::new(),
            attrs: Vec::new(),
            payload: Payload::None,
        }
    }

    /// `name = shape parameter(number)`.
    pub fn parameter(name: impl Into<String>, number: i64, shape: Shape) -> Instruction {
        let mut i = Instruction::new(name, Opcode::Parameter, shape, Vec::new());
        i.payload = Payload::Parameter(number);
        i
    }

    /// `name = shape constant(literal)`.
    pub fn constant(name: impl Into<String>, shape: Shape, literal: Literal) -> Instruction {
        let mut i = Instruction::new(name, Opcode::Constant, shape, Vec::new());
        i.payload = Payload::Constant(Box::new(literal));
        i
    }

    /// Adds an attribute (builder style).
    pub fn with_attr(mut self, name: AttrName, value: AttrValue) -> Instruction {
        self.set_attr(name, value);
        self
    }

    /// The name (without `%`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the instruction (names must stay unique in the computation).
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// The result shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Replaces the result shape.
    pub fn set_shape(&mut self, shape: Shape) {
        self.shape = Arc::new(shape);
    }

    /// Mutable access to the result shape (copied first if shared).
    pub fn shape_mut(&mut self) -> &mut Shape {
        Arc::make_mut(&mut self.shape)
    }

    /// Operands, in order (an operand used twice appears twice).
    pub fn operands(&self) -> &[InstrId] {
        &self.operands
    }

    /// Operand `i`.
    pub fn operand(&self, i: usize) -> Option<InstrId> {
        self.operands.get(i).copied()
    }

    /// Instructions using this one as an operand, each once, in order of first use.
    pub fn users(&self) -> &[InstrId] {
        &self.users
    }

    /// Attributes in written order.
    pub fn attrs(&self) -> &[Attribute] {
        &self.attrs
    }

    /// The value of attribute `name`.
    pub fn attr(&self, name: &AttrName) -> Option<&AttrValue> {
        self.attrs
            .iter()
            .find(|a| &a.name == name)
            .map(|a| &a.value)
    }

    /// Sets attribute `name`, replacing it in place if present, appending otherwise.
    pub fn set_attr(&mut self, name: AttrName, value: AttrValue) {
        match self.attrs.iter_mut().find(|a| a.name == name) {
            Some(a) => a.value = value,
            None => self.attrs.push(Attribute::new(name, value)),
        }
    }

    /// Removes attribute `name`, returning its value.
    pub fn remove_attr(&mut self, name: &AttrName) -> Option<AttrValue> {
        let i = self.attrs.iter().position(|a| &a.name == name)?;
        Some(self.attrs.remove(i).value)
    }

    /// The payload (`parameter(N)` number or `constant(...)` literal).
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The parameter number of a `parameter` instruction.
    pub fn parameter_number(&self) -> Option<i64> {
        match self.payload {
            Payload::Parameter(n) => Some(n),
            _ => None,
        }
    }

    /// The literal of a `constant` instruction.
    pub fn literal(&self) -> Option<&Literal> {
        match &self.payload {
            Payload::Constant(l) => Some(l),
            _ => None,
        }
    }

    /// Computations this instruction calls, in attribute order (`calls=`, `to_apply=`,
    /// `condition=`, `body=`, `branch_computations=`, ...).
    pub fn called_computations(&self) -> Vec<CompId> {
        self.called_computations_iter().collect()
    }

    /// [`Instruction::called_computations`] without allocating.
    pub fn called_computations_iter(&self) -> impl Iterator<Item = CompId> + '_ {
        self.attrs.iter().flat_map(|a| {
            let s: &[CompId] = match &a.value {
                AttrValue::Computation(c) => std::slice::from_ref(c),
                AttrValue::Computations(cs) => cs,
                _ => &[],
            };
            s.iter().copied()
        })
    }

    /// Control predecessors (`control-predecessors={...}`).
    pub fn control_predecessors(&self) -> &[InstrId] {
        match self.attr(&AttrName::ControlPredecessors) {
            Some(AttrValue::Instructions(v)) => v,
            _ => &[],
        }
    }
}
