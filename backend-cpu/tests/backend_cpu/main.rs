//! The CPU backend's integration tests, in one binary: golden C of every emitter's
//! kernels, translation units, index arithmetic and the vectorizable transcendentals
//! against libm.

mod golden;
mod index_arith;
mod units;
mod vecmath;
