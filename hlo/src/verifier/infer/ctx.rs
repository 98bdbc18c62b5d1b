//! What shape inference looks at for one instruction ([`Ctx`]: the instruction, its
//! operands' shapes and where the computations it calls are found) and what it finds
//! ([`Inferred`]); the signatures of called computations.

use super::shapes::{same_shape, show};
use crate::ir::{CompId, Computation, Instruction, Module};
use crate::shape::{ArrayShape, ElementType, Shape};

/// Where inference finds the computations an instruction calls: a module, or the
/// computations the parser has finished so far.
pub(crate) trait Computations {
    /// The computation `id`, if it exists.
    fn computation(&self, id: CompId) -> Option<&Computation>;
}

impl Computations for Module {
    fn computation(&self, id: CompId) -> Option<&Computation> {
        self.get_computation(id)
    }
}

/// Computations indexed by their [`CompId`] (the parser's finished computations).
pub(super) struct CompSlice<'a>(pub(super) &'a [Computation]);

impl Computations for CompSlice<'_> {
    fn computation(&self, id: CompId) -> Option<&Computation> {
        self.0.get(id.index())
    }
}

/// What inference found for one instruction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Inferred {
    /// This shape.
    Shape(Shape),
    /// The dimensions of operand `i` with this element type.
    Like(usize, ElementType),
    /// Exactly the shape of operand `i`.
    Operand(usize),
    /// The instruction's declared shape (checked for consistency with the operands).
    Declared,
}

/// Inference result inside this module: a message on failure.
pub(crate) type R = Result<Inferred, String>;

/// Everything inference looks at for one instruction.
pub(crate) struct Ctx<'a> {
    pub module: &'a dyn Computations,
    pub instr: &'a Instruction,
    pub ops: &'a [&'a Shape],
}

impl<'a> Ctx<'a> {
    /// The declared result shape.
    pub fn declared(&self) -> &'a Shape {
        self.instr.shape()
    }

    /// Checks the operand count.
    pub fn arity(&self, n: usize) -> Result<(), String> {
        if self.ops.len() == n {
            Ok(())
        } else {
            Err(format!(
                "{} takes {n} operand{}, not {}",
                self.instr.opcode(),
                if n == 1 { "" } else { "s" },
                self.ops.len()
            ))
        }
    }

    /// Checks the operand count is at least `n`.
    pub fn min_arity(&self, n: usize) -> Result<(), String> {
        if self.ops.len() >= n {
            Ok(())
        } else {
            Err(format!(
                "{} takes at least {n} operand{}, not {}",
                self.instr.opcode(),
                if n == 1 { "" } else { "s" },
                self.ops.len()
            ))
        }
    }

    /// Operand `i` as an array.
    pub fn array(&self, i: usize) -> Result<&'a ArrayShape, String> {
        let s = self.ops[i];
        s.as_array()
            .filter(|a| a.element_type().is_array_type())
            .ok_or_else(|| format!("operand {i} must be an array, not {}", show(s)))
    }

    /// The declared shape as an array.
    pub fn declared_array(&self) -> Result<&'a ArrayShape, String> {
        let s = self.declared();
        s.as_array()
            .filter(|a| a.element_type().is_array_type())
            .ok_or_else(|| format!("the result must be an array, not {}", show(s)))
    }

    /// A called computation's parameter shapes and root shape.
    pub fn signature(&self, id: CompId) -> Result<Signature<'a>, String> {
        signature(self.module, id)
    }

    /// A required computation attribute.
    pub fn required_comp(&self, id: Option<CompId>, what: &str) -> Result<CompId, String> {
        id.ok_or_else(|| format!("{} needs {what}", self.instr.opcode()))
    }

    /// A required attribute, by value.
    pub fn need<T>(&self, v: Option<T>, what: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("{} needs {what}", self.instr.opcode()))
    }

    /// A required attribute, by reference.
    pub fn required<'b, T: ?Sized>(&self, v: Option<&'b T>, what: &str) -> Result<&'b T, String> {
        v.ok_or_else(|| format!("{} needs {what}", self.instr.opcode()))
    }
}

/// A computation's signature.
pub(crate) struct Signature<'a> {
    pub name: &'a str,
    pub params: Vec<&'a Shape>,
    pub result: &'a Shape,
}

pub(crate) fn signature(module: &dyn Computations, id: CompId) -> Result<Signature<'_>, String> {
    let c = module
        .computation(id)
        .ok_or_else(|| format!("calls computation {} which does not exist", id.index()))?;
    let root = c
        .get(c.root())
        .ok_or_else(|| format!("computation `{}` has no root", c.name()))?;
    Ok(Signature {
        name: c.name(),
        params: c
            .parameters()
            .iter()
            .filter_map(|&p| c.get(p).map(Instruction::shape))
            .collect(),
        result: root.shape(),
    })
}

impl Signature<'_> {
    /// Checks that this computation takes `expected` (compatible shapes).
    pub fn expect_params(&self, expected: &[&Shape], role: &str) -> Result<(), String> {
        if self.params.len() != expected.len() {
            return Err(format!(
                "{role} `{}` takes {} parameters but is given {}",
                self.name,
                self.params.len(),
                expected.len()
            ));
        }
        for (i, (p, e)) in self.params.iter().zip(expected).enumerate() {
            if !same_shape(p, e) {
                return Err(format!(
                    "{role} `{}` parameter {i} is {} but is given {}",
                    self.name,
                    show(p),
                    show(e)
                ));
            }
        }
        Ok(())
    }

    /// Checks that this computation returns `expected`.
    pub fn expect_result(&self, expected: &Shape, role: &str) -> Result<(), String> {
        if same_shape(self.result, expected) {
            Ok(())
        } else {
            Err(format!(
                "{role} `{}` returns {} but {} is required",
                self.name,
                show(self.result),
                show(expected)
            ))
        }
    }
}
