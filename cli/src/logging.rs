//! The process logger: the `log` facade the libraries write to, shown by `env_logger`.
//!
//! `RUST_LOG` configures it as Rust users expect (`RUST_LOG=info,hlo::pass=debug`: a
//! default level, then `target=level` per module path); `HLOC_LOG` is an alias read when
//! `RUST_LOG` is unset. Unset, warnings and errors are shown. `HLOC_LOG_FILE=path` appends
//! the lines to that file instead of standard error.

use std::fs::OpenOptions;

/// Installs the logger. A log file that cannot be opened is reported once on stderr and
/// logging stays on stderr: a bad log path must not stop a compile.
pub fn init() {
    let filter = std::env::var("RUST_LOG")
        .or_else(|_| std::env::var("HLOC_LOG"))
        .unwrap_or_else(|_| "warn".to_string());
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(&filter).format_timestamp(None);
    if let Ok(path) = std::env::var("HLOC_LOG_FILE") {
        match OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => {
                builder.target(env_logger::Target::Pipe(Box::new(file)));
            }
            Err(e) => eprintln!("hloc: cannot open HLOC_LOG_FILE `{path}`: {e}; logging to stderr"),
        }
    }
    // `try_init` fails only if a logger is already installed, which `main` never does twice.
    let _ = builder.try_init();
}
