//! The tiling crate's integration tests, in one binary: golden tiles per op and fusion,
//! properties on random maps and fusions, the corpus fusions, tile propagation against the
//! symbolic-tile analysis, the tile-size search, and the cases where XLA's expectations
//! differ (checked against the evaluator); every tile checked by enumeration.

mod analysis_text;
mod conv_tiles;
mod corpus;
mod golden;
mod propagation;
mod property;
mod ragged_groups;
mod ragged_rows;
mod ragged_runtime;
mod regions;
mod reshape;
mod scan_steps;
mod scan_tiles;
mod search;
mod support;
mod xla_differences;
