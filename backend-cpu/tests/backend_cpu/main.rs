//! The CPU backend's integration tests, in one binary: golden C of every emitter's
//! kernels, row sums hoisted out of element loops, translation units, index arithmetic and
//! the vectorizable transcendentals against libm.

mod golden;
mod half_convert;
mod hoisted_sums;
mod index_arith;
mod units;
mod vecmath;
