//! The runtime crate's integration tests, in one binary: every corpus program compiled and
//! compared with the reference evaluator, library calls, random modules, gathers, scatters and
//! convolutions, and HLO's semantics corner cases run compiled.

mod corpus;
mod differential;
mod dots;
mod library;
mod random_convolutions;
mod random_gathers;
mod random_modules;
mod random_scatters;
mod reductions;
mod semantics;
mod streamed;
mod transposes;

/// The seeds a randomized test runs: `default`, or `HLOC_RANDOM_SEEDS=A..B` (a longer
/// search, by hand).
fn seeds(default: std::ops::Range<u64>) -> std::ops::Range<u64> {
    std::env::var("HLOC_RANDOM_SEEDS")
        .ok()
        .and_then(|s| {
            let (a, b) = s.split_once("..")?;
            Some(a.trim().parse::<u64>().ok()?..b.trim().parse::<u64>().ok()?)
        })
        .unwrap_or(default)
}
