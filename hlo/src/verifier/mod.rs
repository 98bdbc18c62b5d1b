//! The HLO verifier: structure (unique names, operands defined before use, no cycles,
//! dense parameters, a root), shape inference for every opcode ([`infer_shape`]), valid
//! layouts, called computations' signatures, and the rules of async chains (one wrapped
//! computation per chain, one user per start and update, no wrapping of an op that has
//! its own `-start`/`-done` pair).
//!
//! [`verify`] reports every error it finds, each tied to its computation and instruction;
//! [`verify_parsed`] adds the source line of instructions parsed from text.
//!
//! `scan(inputs..., inits...), dimensions={d}, num_carries=N, to_apply=body` is checked
//! as XLA's scan runs: the last N operands are the initial carries (N defaults to 0), the
//! others at least one input array, all of one size L along dimension `d`; the body takes
//! `(input slices at one position with dimension d removed..., carries...)` and returns
//! `(outputs..., new carries...)`, the carries of their initial shapes; the result is
//! `(outputs stacked along a new dimension d of size L..., final carries...)`, or the
//! body's one value (stacked, or the carry) when the body returns a non-tuple.
//!
//! ```
//! let text = "HloModule m\n\nadd {\n  x = f32[3] parameter(0)\n  acc = f32[3] parameter(1)\n  \
//!             s = f32[3] add(acc, x)\n  ROOT t = (f32[3], f32[3]) tuple(s, s)\n}\n\nENTRY e {\n  \
//!             xs = f32[3,5] parameter(0)\n  z = f32[3] constant(0)\n  \
//!             ROOT r = scan(xs, z), dimensions={1}, num_carries=1, to_apply=add\n}\n";
//! let module = hlo::parse_module(text).unwrap();
//! // Slices f32[3] along dimension 1 (length 5); the outputs stack back to f32[3,5].
//! assert_eq!(module.entry().root_instr().shape().to_string(), "(f32[3,5], f32[3])");
//! assert!(hlo::verifier::verify(&module).is_ok());
//! ```
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
mod errors;
mod infer;
mod layouts;
mod structure;

pub use errors::VerifyError;
pub(crate) use infer::infer_written_shape;
pub use infer::{infer_shape, InferError};

use crate::ir::Module;
use crate::source_map::{LineIndex, Parsed};

/// What the verifier checks beyond its defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Also check layouts as XLA does after layout assignment: every array of rank >= 1
    /// has one, and the same buffer seen in two places (a while loop's state, a called
    /// computation's parameters and root, tuple elements, the entry computation layout)
    /// has the same layout. Off by default: shapes compare ignoring layouts.
    pub layout_sensitive: bool,
}

/// Verifies a module; every error found, in computation and instruction order.
pub fn verify(module: &Module) -> Result<(), Vec<VerifyError>> {
    verify_with(module, &VerifyOptions::default())
}

/// [`verify`] with options.
pub fn verify_with(module: &Module, options: &VerifyOptions) -> Result<(), Vec<VerifyError>> {
    let mut errors = structure::verify_module(module);
    errors.extend(crate::sharding_verify::check(module));
    if options.layout_sensitive {
        errors.extend(layouts::check(module));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Verifies a module parsed from `src`, also against the parameter shapes its text
/// declared in computation signatures, and locates each error at its instruction's line.
pub fn verify_parsed(parsed: &Parsed, src: &str) -> Result<(), Vec<VerifyError>> {
    verify_parsed_with(parsed, src, &VerifyOptions::default())
}

/// [`verify_parsed`] with options.
pub fn verify_parsed_with(
    parsed: &Parsed,
    src: &str,
    options: &VerifyOptions,
) -> Result<(), Vec<VerifyError>> {
    let mut errors = structure::verify_module(&parsed.module);
    errors.extend(crate::sharding_verify::check(&parsed.module));
    if options.layout_sensitive {
        errors.extend(layouts::check(&parsed.module));
    }
    errors.extend(structure::verify_signatures(
        &parsed.module,
        parsed.source_map.signatures(),
    ));
    if errors.is_empty() {
        return Ok(());
    }
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
    Err(errors)
}

#[cfg(test)]
mod tests;
