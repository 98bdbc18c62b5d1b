//! Instruction lines: `%name = shape opcode(operands), attr=value, ...`.

use std::fmt::Write;

use super::Printer;
use crate::attrs::{AttrName, Attribute};
use crate::ir::{Computation, InstrId, Instruction, Payload};
use crate::opcode::Opcode;

impl Printer<'_> {
    /// The instruction `id` of `c`, without indentation or `ROOT`.
    pub(crate) fn instruction(&mut self, c: &Computation, id: InstrId) {
        let i = c.instr(id);
        self.name(i.name());
        self.out.push_str(" = ");
        self.shape(i.shape());
        self.out.push(' ');
        // The wrapped instruction of a short-form async op.
        let short = match i.opcode() {
            op if op.is_async() => i
                .calls()
                .filter(|&cc| self.sugar.is_short(cc))
                .and_then(|cc| self.m.get_computation(cc))
                .map(Computation::root_instr),
            _ => None,
        };
        match short {
            Some(w) => {
                let step = match i.opcode() {
                    Opcode::AsyncStart => "-start",
                    Opcode::AsyncUpdate => "-update",
                    _ => "-done",
                };
                self.out.push_str(w.opcode().as_str());
                self.out.push_str(step);
            }
            None => self.out.push_str(i.opcode().as_str()),
        }
        match i.payload() {
            Payload::Parameter(n) => {
                let _ = write!(self.out, "({n})");
            }
            Payload::Constant(lit) => {
                self.out.push('(');
                lit.write_values(&mut self.out);
                self.out.push(')');
            }
            Payload::None => self.operands(c, i),
        }
        match short {
            Some(w) if i.opcode() == Opcode::AsyncStart => {
                let (thread, rest): (Vec<&Attribute>, Vec<&Attribute>) = i
                    .attrs()
                    .iter()
                    .filter(|a| a.name != AttrName::Calls)
                    .partition(|a| a.name == AttrName::AsyncExecutionThread);
                for a in thread.into_iter().chain(w.attrs()).chain(rest) {
                    self.attribute(c, a);
                }
            }
            Some(_) => {
                for a in i.attrs().iter().filter(|a| a.name != AttrName::Calls) {
                    self.attribute(c, a);
                }
            }
            // A short-form step's repeat of its wrapped op's attributes is kept for the
            // short form only: the generic async ops do not take them.
            None if i.opcode().is_async() => {
                for a in i.attrs() {
                    if crate::attrs::attr_kind(i.opcode(), &a.name).is_some() {
                        self.attribute(c, a);
                    }
                }
            }
            None => {
                for a in i.attrs() {
                    self.attribute(c, a);
                }
            }
        }
    }

    fn operands(&mut self, c: &Computation, i: &Instruction) {
        self.out.push('(');
        for (k, &op) in i.operands().iter().enumerate() {
            if k > 0 {
                self.out.push_str(", ");
                if self.o.index_comments && k % 5 == 0 {
                    let _ = write!(self.out, "/*index={k}*/");
                }
            }
            match c.get(op) {
                Some(o) => {
                    if self.o.operand_shapes {
                        self.shape(o.shape());
                        self.out.push(' ');
                    }
                    self.name(o.name());
                }
                None => self.name("<unknown>"),
            }
        }
        self.out.push(')');
    }
}
