//! The verifier's errors: [`VerifyError`], and the `Sink` the checks collect them in, each
//! tied to its computation and instruction.

use std::fmt;

use crate::ir::{CompId, InstrId, Module};

/// One problem the verifier found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The computation's name (empty for module-level problems).
    pub computation: String,
    /// The instruction's name, when the problem is one instruction's.
    pub instruction: Option<String>,
    /// Ids of the computation and instruction, for tools that want to act on them.
    pub ids: Option<(CompId, Option<InstrId>)>,
    /// 1-based source line, when the module was parsed and located
    /// ([`verify_parsed`](super::verify_parsed)).
    pub line: Option<usize>,
    /// 1-based source column (characters), with `line`.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl VerifyError {
    /// The error with `file` in front: `file:line:col: error: comp/instr: message`, or
    /// `file: comp/instr: message` without a line.
    pub fn render(&self, file: &str) -> String {
        format!(
            "{file}{}{self}",
            if self.line.is_some() { ":" } else { ": " }
        )
    }
}

impl fmt::Display for VerifyError {
    /// `line:col: error: comp/instr: message`, or `comp/instr: message` without a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, "{l}:{c}: error: ")?;
        }
        match (&self.instruction, self.computation.is_empty()) {
            (Some(i), _) => write!(f, "{}/{i}: ", self.computation)?,
            (None, false) => write!(f, "{}: ", self.computation)?,
            (None, true) => {}
        }
        f.write_str(&self.message)
    }
}

/// Collects errors with their computation and instruction.
pub(super) struct Sink<'m> {
    module: &'m Module,
    pub errors: Vec<VerifyError>,
}

impl<'m> Sink<'m> {
    /// An empty sink for `module`.
    pub fn new(module: &'m Module) -> Sink<'m> {
        Sink {
            module,
            errors: Vec::new(),
        }
    }

    /// An error at instruction `instr` of computation `comp`.
    pub fn at(&mut self, comp: CompId, instr: InstrId, message: impl Into<String>) {
        let c = self.module.computation(comp);
        self.errors.push(VerifyError {
            computation: c.name().to_string(),
            instruction: c.get(instr).map(|i| i.name().to_string()),
            ids: Some((comp, Some(instr))),
            line: None,
            column: None,
            message: message.into(),
        });
    }

    /// An error about a whole computation.
    pub fn comp(&mut self, comp: CompId, message: impl Into<String>) {
        self.errors.push(VerifyError {
            computation: self.module.computation(comp).name().to_string(),
            instruction: None,
            ids: Some((comp, None)),
            line: None,
            column: None,
            message: message.into(),
        });
    }
}
