//! Shared test support: the brute-force exactness oracle.
#![allow(dead_code)]

pub mod corpus;
pub mod fusions;
pub mod oracle;
pub mod propagation;
pub mod tile_elements;
