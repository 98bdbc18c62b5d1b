//! Integration tests of the fusion passes.

mod corpus;
mod cost;
mod cost_golden;
mod cost_library;
mod explain;
mod golden;
mod library_golden;
mod random;
mod same_dims;
mod support;
