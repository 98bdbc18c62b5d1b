//! Reading command arguments that may be given inline or as `-` for standard input.

use std::io::Read;

use anyhow::{Context, Result};

/// The text of an argument: itself, or all of standard input for `-`.
pub fn text_arg(arg: &str) -> Result<String> {
    if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
        Ok(s)
    } else {
        Ok(arg.to_string())
    }
}

/// A display name for an argument in error messages.
pub fn arg_name(arg: &str, position: &str) -> String {
    if arg == "-" {
        "<stdin>".to_string()
    } else {
        position.to_string()
    }
}
