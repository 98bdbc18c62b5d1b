//! # testkit — what every hloc crate's tests share
//!
//! A dev-dependency only (`publish = false`); no library crate depends on it normally.
//!
//! - [`golden`]: the one golden-file format of every text test in the workspace — a
//!   `# run:` line naming what the file exercises, then cases, each an input and its
//!   expected output side by side — and the bless mode (`UPDATE_EXPECT=1` rewrites the
//!   expected parts, so a reviewer reads a change as a diff).
//! - [`corpus`]: the JAX corpus of the repository (`corpus/NAME/`): program names in
//!   manifest order and the paths of their files; with the `eval` feature, recorded inputs
//!   and outputs as [`hlo::Literal`]s.
//! - [`rng`]: the deterministic generator (xorshift64) randomized tests draw cases from.

pub mod corpus;
pub mod golden;
pub mod rng;
