//! The runtime crate's integration tests, in one binary: every corpus program compiled and
//! compared with the reference evaluator, library calls, random modules, and HLO's
//! semantics corner cases run compiled.

mod corpus;
mod differential;
mod dots;
mod library;
mod random_modules;
mod reductions;
mod semantics;
mod streamed;
mod transposes;
