//! # tiling — symbolic tiles, symbolic tile analysis of fusions, tiled computations
//!
//! A tile of an op's output reads a tile of each operand. [`SymbolicTile`] describes that
//! operand tile for an output→input [`affine::IndexingMap`]: offsets, sizes and strides as
//! functions of the output's tile sizes, exact (neither more nor fewer elements than the
//! output tile reads) under its constraints, or no tile at all (`no symbolic tile`) where no
//! exact one exists. [`analyze`] derives the tile of every instruction of a fusion from a
//! tile of its root, and [`SymbolicTileAnalysis::tiled`] turns it into a
//! [`TiledComputation`] for concrete tile sizes: a grid of programs and, for every tiled
//! instruction, its tile sizes, strides and program-id → offsets map.
//!
//! ```
//! use tiling::SymbolicTile;
//!
//! // A transpose: the operand tile is the output tile with its dimensions swapped.
//! let map: affine::IndexingMap =
//!     "(d0, d1) -> (d1, d0), domain: d0 in [0, 7], d1 in [0, 3]".parse().unwrap();
//! let tile = SymbolicTile::from_indexing_map(&map).unwrap();
//! assert_eq!(
//!     tile.to_string(),
//!     "Symbolic tile with\n  offset_map: (d0, d1) -> (0, 0)\n  size_map: (d0, d1) -> (d1, d0)\n  stride_map: (d0, d1) -> (1, 1)"
//! );
//! assert_eq!(tile.to_string().parse::<SymbolicTile>().unwrap().to_string(), tile.to_string());
//! ```
//!
//! Exactness is checked by the crate's property tests against brute-force enumeration of the
//! elements a map reads for every aligned tile of small outputs (random maps, random fusions,
//! every fusion of the corpus).
//!
//! Modules: `terms` classifies the summands of a map's result (digits of a dimension, range
//! variables, runtime offsets); `strided` combines them into a size, a stride and the
//! constraints of one result; `symbolic_tile` derives the tile; [`constraint`] is the
//! disjunctive constraint form; [`text`] prints and parses tiles; `analysis` walks a fusion
//! ([`analysis_text`] prints and parses the whole analysis);
//! `tiled` makes the tiled computation for concrete sizes (`roots` finds the outputs of
//! another shape than the first root's, `outputs` checks them); `ragged` gives a ragged dot the
//! maps of a dot that reads every group, `collective` an all-gather per-participant maps (the
//! participant a runtime value); [`propagate`] carries tiles op by
//! op (XLA's experimental tile propagation); [`search`] picks root tile sizes against a
//! cost function.

mod analysis;
pub mod analysis_text;
mod collective;
pub mod constraint;
mod error;
mod outputs;
pub mod propagate;
mod ragged;
mod roots;
pub mod search;
mod strided;
mod symbolic_tile;
mod terms;
pub mod text;
mod tiled;

pub use analysis::{analyze, SymbolicTileAnalysis, TiledInstruction};
pub use constraint::{Constraint, ConstraintExpr, Satisfiability};
pub use error::TilingError;
pub use ragged::output_to_input;
pub use symbolic_tile::{ConcreteTile, SymbolicTile};
pub use tiled::{ConcreteTiledInstruction, TiledComputation};
