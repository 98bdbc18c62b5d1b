//! The indexing crate's integration tests, in one binary: golden text cases of the per-op
//! and fusion maps, the public API on instruction handles, and the evaluator oracle that
//! checks every map against the reference evaluator by perturbing inputs.

mod api;
mod ops;
mod oracle;
