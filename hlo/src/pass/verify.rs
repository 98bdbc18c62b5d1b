//! The check run after every pass under `--verify-each` and in tests: the verifier
//! ([`crate::verifier::verify`]) and a print/parse round trip.

use super::context::VerifyHook;
use crate::ir::Module;

/// The module must print and parse back to a module that prints the same.
pub fn round_trip(module: &Module) -> Result<(), String> {
    let text = crate::print_module(module);
    let back = crate::parse_module(&text)
        .map_err(|e| format!("printed module does not parse back: {e}"))?;
    let again = crate::print_module(&back);
    if again != text {
        return Err("printed module does not print back the same".to_string());
    }
    Ok(())
}

/// The verifier's errors, one per line.
pub fn verify(module: &Module) -> Result<(), String> {
    crate::verifier::verify(module).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// The verify hook: the verifier, then the round trip.
pub fn verify_hook() -> VerifyHook {
    Box::new(|m: &Module| {
        verify(m)?;
        round_trip(m)
    })
}
