//! The SPMD partitioner (issue 35 item 3): from a module whose values carry `sharding=`
//! annotations (what `jax.jit(..., in_shardings=...)` lowers before XLA's partitioner),
//! [`propagate`] chooses every instruction's sharding, each with the reason, and
//! [`partition`] writes the one program every device runs: per-device shapes, and the
//! collectives the choices need (an all-reduce of partial sums where a dot contracts or a
//! reduce reduces a split dimension, all-gathers and partition-id dynamic-slices where a
//! consumer needs another sharding). Ops without a rule of their own run whole on every
//! device (`rules_fallback.rs`: operands gathered, result sliced where a user wants it
//! split); an op that cannot (a random op, a loop body holding a manual region) is an
//! [`SpmdError::Unsupported`] naming it.
//!
//! Every sharding is reasoned about as a [`Tiling`]: tiles per dimension and the tile
//! each device holds, so that two shardings agree exactly when their tilings are equal and
//! a collective's groups are read off the devices' tiles. Propagation runs forward from
//! the parameters and `with_sharding_constraint` calls (`propagate.rs`, one file of rules
//! per op family: `rules_simple.rs`, `rules_reduce.rs`, `rules_dot.rs`, `rules_conv.rs`,
//! `rules_window.rs` with the halos of windowed ops in `halo.rs` and a concatenate along
//! a split dimension in `concat_split.rs`); `partition.rs`
//! copies each instruction with its per-device shape and `emit.rs` adds the collectives.
//! A dimension that does not split evenly gets XLA's padded shards (`ceil(n / tiles)`
//! each, the last ones padded): all-gathers slice the padding off, dynamic-slices pad
//! first, and a reduce or dot that sums over such a dimension masks the padding with its
//! neutral value (`emit_pad.rs`, `mask.rs`).
//!
//! Repeated collectives (the same value gathered again for another user) are removed
//! (`dedupe.rs`), and independent all-reduces, all-gathers and reduce-scatters over the
//! same groups (and dimension, reducer, type) are then combined into one each
//! (`combine.rs`).
//!
//! A manual region (`shard_map`, `rules_manual.rs`, its Shardy text read by `sdy.rs`) is
//! per-device code already: it is kept as it is, and only its inputs and outputs are
//! resharded at the region's boundaries. A partially manual one (manual on some mesh
//! axes) runs per manual coordinate with its values tiled over the automatic axes
//! (`rules_partial.rs`, `manual_partial.rs`), and a fully manual region nested in it
//! (`axis_index`, a `shard_map` over the remaining axes) reads and writes those values
//! (`manual_nested.rs`, Shardy's form marked before calls are inlined by
//! `sdy_nested.rs`); a loop
//! body may hold regions too.

mod backward;
mod combine;
mod concat_split;
mod context;
mod decision;
mod dedupe;
mod dims_map;
mod emit;
mod emit_all_to_all;
mod emit_pad;
mod error;
mod halo;
mod halo_moves;
mod manual_nested;
mod manual_ops;
mod manual_partial;
mod mask;
mod partition;
mod propagate;
mod region_keys;
mod reshard_cost;
mod rules_conditional;
mod rules_conv;
mod rules_dot;
mod rules_fallback;
mod rules_manual;
mod rules_partial;
mod rules_reduce;
mod rules_simple;
mod rules_while;
mod rules_window;
mod sdy_nested;
mod stats;
mod tiling;

pub use decision::{Called, Decision, Decisions, Halo, PartialSums, ValueTiling};
pub use error::SpmdError;
pub use partition::{partition, Partitioned};
pub use propagate::propagate;
pub use stats::{collective_stats, CollectiveStats};
pub use tiling::{shard_len, zip_groups, Tiling};
