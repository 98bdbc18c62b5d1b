//! Typed shardings (XLA's `HloSharding`): replicated, maximal, manual, unknown, unreduced,
//! tiled over a device list or an iota (`devices=[2,2]<=[2,2]T(1,0)`) with
//! `last_tile_dim_replicate` / `last_tile_dims={...}`, tuples, and the named-mesh form
//! (`{mesh['data'=2,'model'=2], [{'data'}, {'model'}]}`). The parser gives every
//! instruction's `sharding=` as a [`ShardingAttr`] (the typed value and its text); the
//! verifier checks its device ids against `num_partitions` x `replica_count` and its
//! rank against the instruction's shape.
//!
//! ```
//! use hlo::sharding::parse_sharding;
//! let s = parse_sharding("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}").unwrap();
//! assert_eq!(s.to_string(), "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
//! // Device 1 holds rows 4..8 of an [8,6] array (tile [1,0]); devices 1 and 3 share it.
//! let shard = s.shard(1, &[8, 6]).unwrap().unwrap();
//! assert_eq!((shard.offsets, shard.shape), (vec![4, 0], vec![4, 6]));
//! assert_eq!(s.devices_of_tile(&[1, 0], 4).unwrap(), vec![1, 3]);
//! ```

pub use crate::sharding_named::to_tiled;
pub use crate::sharding_text::{parse_sharding, ShardingParseError};
pub use crate::sharding_tiles::Shard;
pub use crate::sharding_types::{
    AxisRef, NamedSharding, ShardGroup, Sharding, ShardingAttr, ShardingKind, SubgroupKind,
    TileAssignment, TiledSharding, MAX_SHARDING_DEVICES,
};
