//! The check run after every pass under `--verify-each` and in tests.

use super::VerifyHook;
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

/// The verify hook: the round trip above.
pub fn verify_hook() -> VerifyHook {
    Box::new(round_trip)
}
