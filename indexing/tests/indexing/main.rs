//! The indexing crate's integration tests, in one binary: golden text cases of the per-op
//! and fusion maps, the public API on instruction handles, and the evaluator oracle that
//! checks every map against the reference evaluator by perturbing inputs; the first
//! warp's coalescing where addresses depend on runtime values.

mod api;
mod coalescing;
mod ops;
mod oracle;
