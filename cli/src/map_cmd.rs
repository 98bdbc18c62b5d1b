//! `hloc map ...`: indexing maps in XLA's syntax.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::Subcommand;

use affine::equiv::{maps_equivalent_by_enumeration, Equivalence};
use affine::IndexingMap;

use crate::input::{arg_name, text_arg};

/// Largest number of points `equiv` enumerates without z3.
const ENUMERATION_LIMIT: u128 = 4_000_000;

pub const MAP_SYNTAX: &str = "\
MAP SYNTAX (XLA's):
  (d0, d1)[s0]{rt0} -> (d0 floordiv 8, d1 + s0), domain: d0 in [0, 31], d1 in [0, 7],
      s0 in [0, 3], rt0 in [0, 9], d1 + s0 in [0, 9]
  d = dimensions, s = range variables (symbols), rt = runtime variables; every variable
  needs bounds in the domain; other `expr in [lo, hi]` items are constraints. Operators:
  + - * floordiv (or /) ceildiv mod min(a, b) max(a, b). Also KNOWN EMPTY and UNDEFINED.
  A map may span lines; pass - to read it from standard input.";

/// Subcommands of `hloc map`.
#[derive(Subcommand)]
pub enum MapCommand {
    /// Print the simplified map (one line, canonical form).
    #[command(after_help = concat!(
        "EXAMPLE:\n  hloc map simplify '(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]'\n",
        "  prints: (d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14]\n\n",
    ))]
    Simplify {
        /// The map, or - for standard input.
        map: String,
        /// Also print, one per line on stderr, the rules that fired.
        #[arg(long)]
        trace: bool,
    },
    /// Decide whether two maps are equal on their domains.
    ///
    /// Prints `equal` (exit 0), `different at d0 = .., s0 = ..: (..) vs (..)` (exit 1; a side
    /// outside its domain prints `(not in domain)`), or `unknown` (exit 3). Without --z3 the
    /// domains are enumerated (up to 4,000,000 points).
    Equiv {
        /// First map.
        a: String,
        /// Second map.
        b: String,
        /// Prove with z3 instead of enumerating (needs a build with `--features z3`).
        #[arg(long)]
        z3: bool,
    },
    /// Compose two maps, A then B (a point d goes to B(A(d))), and print the simplified result.
    Compose {
        /// First map.
        a: String,
        /// Second map, applied to A's results.
        b: String,
    },
}

fn parse(arg: &str, position: &str) -> Result<IndexingMap> {
    let text = text_arg(arg)?;
    affine::parse::parse_map(&text)
        .map_err(|e| anyhow!(e.render(&text, Some(&arg_name(arg, position)))))
}

/// Runs one `hloc map` command.
pub fn run(cmd: MapCommand) -> Result<ExitCode> {
    match cmd {
        MapCommand::Simplify { map, trace } => {
            let mut m = parse(&map, "MAP")?;
            let fired = m.simplify_traced();
            if trace {
                for rule in fired {
                    eprintln!("{rule}");
                }
            }
            outln!("{m}");
            Ok(ExitCode::SUCCESS)
        }
        MapCommand::Equiv { a, b, z3 } => {
            let (ma, mb) = (parse(&a, "A")?, parse(&b, "B")?);
            let verdict = if z3 {
                prove_z3(&ma, &mb)?
            } else {
                decide(&ma, &mb)
            };
            outln!("{verdict}");
            Ok(match verdict {
                Equivalence::Equal => ExitCode::SUCCESS,
                Equivalence::Different(_) => ExitCode::from(1),
                Equivalence::Unknown(_) => ExitCode::from(3),
            })
        }
        MapCommand::Compose { a, b } => {
            let (ma, mb) = (parse(&a, "A")?, parse(&b, "B")?);
            let mut c = ma.compose(&mb)?;
            c.simplify();
            outln!("{c}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Equal simplified forms prove equality; otherwise enumerate the domains.
fn decide(a: &IndexingMap, b: &IndexingMap) -> Equivalence {
    if a.simplified() == b.simplified() {
        return Equivalence::Equal;
    }
    maps_equivalent_by_enumeration(a, b, ENUMERATION_LIMIT)
}

#[cfg(feature = "z3")]
fn prove_z3(a: &IndexingMap, b: &IndexingMap) -> Result<Equivalence> {
    Ok(affine::prove::prove_maps_equal(a, b, 10_000))
}

#[cfg(not(feature = "z3"))]
fn prove_z3(_: &IndexingMap, _: &IndexingMap) -> Result<Equivalence> {
    Err(anyhow!(
        "this hloc was built without z3; rebuild with `cargo build --features z3` (see README)"
    ))
}
