//! Standard output that a closed pipe ends quietly.
//!
//! Rust ignores SIGPIPE, so `println!` panics when the reader has gone
//! (`hloc fuse big.hlo | head`). Every command writes its stdout through
//! `out!` / `outln!` instead: a closed pipe ends the process with status 0,
//! as the shell's default SIGPIPE handling would have stopped it, and any other
//! write error is reported with status 2.

use std::io::Write;

/// Writes formatted text to standard output (see the module doc for errors).
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("writing standard output: {e}");
        std::process::exit(2);
    }
}

/// `print!` to standard output, ending quietly on a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*))
    };
}

/// `println!` to standard output, ending quietly on a closed pipe.
macro_rules! outln {
    () => {
        $crate::stdout::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
