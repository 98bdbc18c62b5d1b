//! # affine — the algebra under hloc's indexing analysis
//!
//! Affine expressions with `floordiv`, `ceildiv`, `mod`, `min` and `max` over dimension
//! (`d0`), range (`s0`) and runtime (`rt0`) variables ([`Expr`]), closed integer intervals
//! ([`Interval`]), and indexing maps with domains and constraints ([`IndexingMap`]).
//!
//! The crate knows nothing of tensors and does no I/O. Its contracts:
//! - values are exact `i64` with floor semantics; overflow is reported, never wrapped;
//! - expressions are hash-consed: `==` and hashing are O(1), and ordering/hashing never depend
//!   on addresses, so printed output is deterministic;
//! - the simplifier never changes a map's value at any point of its domain and is idempotent.

pub mod arith;
pub mod egraph;
pub mod enumerate;
pub mod equiv;
mod eval;
mod expr;
pub mod formula;
pub mod gen;
mod interval;
pub mod linear;
mod map;
mod map_ops;
mod ops;
pub mod parse;
mod print;
#[cfg(feature = "z3")]
pub mod prove;
pub mod simplify;

pub use eval::{EvalError, Point};
pub use expr::{Expr, ExprKind, Var, VarKind};
pub use interval::Interval;
pub use map::{Constraint, IndexingMap, MapError, MapForm};
