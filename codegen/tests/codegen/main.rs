//! The codegen crate's integration tests, in one binary: golden kernel IR, C and thunks
//! of every emitter, the dot-to-GEMM rewrite, and the kernel IR verifier.

mod gemm_dots;
mod golden;
mod index_arith;
mod units;
mod vecmath;
mod verify;
