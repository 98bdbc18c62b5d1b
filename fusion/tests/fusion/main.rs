//! Integration tests of the fusion passes.

mod corpus;
mod cost;
mod explain;
mod golden;
mod random;
mod same_dims;
mod support;
