//! Tile propagation, op by op (XLA's experimental form): a [`Tile`] of a tensor over a
//! [`TilingSpace`] (tile ids `tid_i`, tile sizes `ts_i`, runtime values `rt_i`) is carried
//! from an output of an instruction to its operands ([`to_operands`]) or from an operand to
//! its outputs ([`to_outputs`]), one [`DimTile`] (offset, size, stride, upper bound) per
//! dimension.
//!
//! A propagated tile is exact: at every tile id, tile size and runtime value, its unmasked
//! elements are exactly the elements the op reads for (or writes from) the unmasked
//! elements of the given tile, the tiles of a sequential dimension (a reduction or
//! contraction) together covering what the output tile reads (a ragged dot's contracting
//! form through runtime values its group sizes hold, `ragged_steps.rs`; its non-contracting
//! form's rhs tile, `ragged_rows.rs`, also holds the empty groups between its rows'
//! groups). A scan's tile reads every row its elements depend on, or, with the space's
//! [`TilingSpace::scan_steps`], only the rows of its own step (`scan_steps.rs`); a ragged
//! dot's, with [`TilingSpace::group_steps`], the rows of the step's group, relative to the
//! group's first (`ragged_groups.rs`). Where no
//! tile is exact, the answer is `Err(reason)` (printed `no tile:
//! <reason>`), e.g. for a reshape that mixes dimensions.
//!
//! [`tiled_by_propagation`] builds a fusion's tiled computation this way, with nested
//! tilings of its dots' contracting and its reduces' reduced dimensions
//! ([`tiled_by_propagation_with`] numbers the programs under them as [`TilingMode`] says).
//!
//! ```
//! use tiling::propagate::{to_operands, TilingSpace};
//!
//! let module = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[10] parameter(0)\n  \
//!     q = f32[20] parameter(1)\n  ROOT c = f32[30] concatenate(p, q), dimensions={0}\n}").unwrap();
//! let c = module.instr("c").unwrap();
//! let mut space = TilingSpace::for_op(&c, 0).unwrap();
//! let root = space.root_tile();
//! assert_eq!(
//!     root.to_string(),
//!     "(tid_0) -> offsets [tid_0 * ts_0] sizes [ts_0] strides [1] upper bounds [30]"
//! );
//! let tiles = to_operands(&mut space, &c, 0, &root).unwrap();
//! assert_eq!(
//!     tiles[1].as_ref().unwrap().to_string(),
//!     "(tid_0) -> offsets [tid_0 * ts_0 - 10] sizes [ts_0] strides [1] upper bounds [20]"
//! );
//! ```

mod derive;
mod halo;
mod limit;
mod nested;
mod ops;
mod order;
mod ragged_form;
mod ragged_groups;
mod ragged_rows;
mod ragged_steps;
mod regions;
mod reshape;
mod scan_steps;
mod space;
mod tile;
mod tile_text;

pub use nested::{tiled_by_propagation, tiled_by_propagation_with};
pub use ops::{to_operands, to_outputs, Propagated};
pub use ragged_groups::GROUP_SIZE;
pub use ragged_rows::{GROUPS_BEFORE, GROUP_OF_ROW};
pub use ragged_steps::PREFIX_SUM;
pub use regions::TilingMode;
pub use space::{SpaceDim, SpaceRt, TilingSpace};
pub use tile::{DimTile, Tile, MAX_DIM_VALUES};
pub use tile_text::NO_TILE;
