//! The HLO verifier: structure (unique names, operands defined before use, no cycles,
//! dense parameters, a root), shape inference for every opcode ([`infer_shape`]), valid
//! layouts, called computations' signatures, and the async rules of seed 001.
//!
//! [`verify`] reports every error it finds, each tied to its computation and instruction;
//! [`verify_parsed`] adds the source line of instructions parsed from text.
//!
//! ```
//! let text = "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[2] {\n  %p = f32[4] parameter(0)\n  ROOT %n = f32[2] negate(f32[4] %p)\n}\n";
//! let parsed = hlo::parse_module_with(text, &Default::default()).unwrap();
//! let errors = hlo::verifier::verify_parsed(&parsed, text).unwrap_err();
//! assert_eq!(errors.len(), 1);
//! assert_eq!(errors[0].line, Some(5));
//! assert_eq!(errors[0].instruction.as_deref(), Some("n"));
//! ```

mod async_ops;
mod infer;
mod structure;

use std::fmt;

pub use infer::{infer_shape, InferError};

use crate::ir::{CompId, InstrId, Module};
use crate::parser::{LineIndex, Parsed};

/// One problem the verifier found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The computation's name (empty for module-level problems).
    pub computation: String,
    /// The instruction's name, when the problem is one instruction's.
    pub instruction: Option<String>,
    /// Ids of the computation and instruction, for tools that want to act on them.
    pub ids: Option<(CompId, Option<InstrId>)>,
    /// 1-based source line, when the module was parsed and located ([`verify_parsed`]).
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
        format!("{file}{}{self}", if self.line.is_some() { ":" } else { ": " })
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

/// Verifies a module; every error found, in computation and instruction order.
pub fn verify(module: &Module) -> Result<(), Vec<VerifyError>> {
    let errors = structure::verify_module(module);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Verifies a module parsed from `src` and locates each error at its instruction's line.
pub fn verify_parsed(parsed: &Parsed, src: &str) -> Result<(), Vec<VerifyError>> {
    verify(&parsed.module).map_err(|mut errors| {
        let index = LineIndex::new(src);
        for e in &mut errors {
            let offset = match e.ids {
                Some((c, Some(i))) => parsed.source_map.offset(c, i),
                _ => None,
            };
            if let Some(o) = offset {
                let (l, c) = index.line_col(src, o);
                e.line = Some(l);
                e.column = Some(c);
            }
        }
        errors
    })
}

#[cfg(test)]
mod tests;
