//! The hlo crate's integration tests, in one binary: parser and printer golden files, the
//! verifier's, graph export, the public API, size and depth limits, mutated inputs (never a
//! panic), the pass framework, and the whole corpus (round trip and verification).

mod api;
mod corpus_roundtrip;
mod golden;
mod graph;
mod limits;
mod mutations;
mod pass_framework;
mod sharding;
mod verifier;
mod verify_corpus;
