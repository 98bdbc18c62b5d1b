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
//!
//! ```
//! use affine::IndexingMap;
//!
//! // A floordiv and a mod whose argument never leaves one period of the divisor vanish.
//! let mut map: IndexingMap =
//!     "(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]".parse()?;
//! map.simplify();
//! assert_eq!(map.to_string(), "(d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14]");
//! # Ok::<(), affine::parse::ParseError>(())
//! ```
//!
//! Composition (a reshape `[4, 8] -> [32]` and back) and expressions built with operators:
//!
//! ```
//! use affine::{Expr, IndexingMap, Interval};
//!
//! let (d0, d1) = (Expr::dim(0), Expr::dim(1));
//! let collapse = IndexingMap::new(
//!     vec![Interval::new(0, 3), Interval::new(0, 7)], vec![], vec![], vec![d0 * 8 + d1], vec![],
//! )?;
//! let expand: IndexingMap = "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]".parse().unwrap();
//! let mut roundtrip = collapse.compose(&expand)?;
//! roundtrip.simplify();
//! assert_eq!(roundtrip.results(), &[d0, d1]);
//! # Ok::<(), affine::MapError>(())
//! ```

pub mod arith;
pub mod egraph;
pub mod enumerate;
pub mod equiv;
mod eval;
mod expr;
pub mod formula;
#[cfg(feature = "gen")]
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
