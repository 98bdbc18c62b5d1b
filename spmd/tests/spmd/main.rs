//! spmd's integration tests (one binary): golden propagation and partitioned modules,
//! random annotated modules (dots, windowed ops, loops, partially manual regions and
//! regions nested in them)
//! evaluated on N devices against
//! the global evaluation, every corpus program with split parameters (`sweep.rs`), and
//! JAX's annotated modules of `corpus/spmd` against XLA's global outputs.

mod check;
mod corpus;
mod golden;
mod random_concats;
mod random_loops;
mod random_modules;
mod random_nested;
mod random_partial;
mod random_partial_nested;
mod random_reshards;
mod random_windows;
mod sweep;
