//! The plan crate's integration tests, in one binary: golden kernel IR and thunks of every
//! emitter as the program builder calls them, and the HLO rewrites before it (GEMMs out of
//! fusions, every dot a GEMM, boundary layouts).

mod gemm_dots;
mod golden;
mod memory_limit;
mod memory_overlap;
mod one_pointer;
mod while_trips;
