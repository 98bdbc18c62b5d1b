//! What each device holds under a sharding: device -> tile, tile -> devices, and the
//! shard (offset, padded shape, valid extent) of a device for a global array shape, with
//! XLA's ceil-division: every shard has `ceil(n / tiles)` elements along a dimension, the
//! last ones padded where `n` does not divide.

use crate::sharding_named::to_tiled;
use crate::sharding_types::{Sharding, ShardingKind, TiledSharding};

/// What one device holds of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// The data tile's index (one entry per array dimension).
    pub tile: Vec<i64>,
    /// Where the shard starts in the global array.
    pub offsets: Vec<i64>,
    /// The per-device array's dimensions: `ceil(n / tiles)` (the same on every device).
    pub shape: Vec<i64>,
    /// How many of `shape`'s elements along each dimension are inside the global array
    /// (the rest is padding).
    pub valid: Vec<i64>,
}

impl TiledSharding {
    /// The number of array dimensions it tiles (tile dimensions less subgroup ones).
    pub fn data_rank(&self) -> usize {
        self.tiles.dims().len().saturating_sub(self.subgroups.len())
    }

    /// Tiles per array dimension.
    pub fn data_tiles(&self) -> &[i64] {
        &self.tiles.dims()[..self.data_rank()]
    }

    /// The full tile index (array dimensions, then subgroup dimensions) of `device`, or
    /// `None` when the assignment does not name it.
    pub fn index_of(&self, device: i64) -> Option<Vec<i64>> {
        let pos = self.tiles.devices().iter().position(|&d| d == device)?;
        Some(unravel(pos as i64, self.tiles.dims()))
    }

    /// Every device holding data tile `tile` (all subgroup positions), in row-major order.
    pub fn devices_of(&self, tile: &[i64]) -> Vec<i64> {
        let dims = self.tiles.dims();
        let r = self.data_rank();
        if tile.len() != r || tile.iter().zip(dims).any(|(&t, &n)| t < 0 || t >= n) {
            return Vec::new();
        }
        let devices = self.tiles.devices();
        let per_tile: i64 = dims[r..].iter().product();
        let base = ravel(tile, &dims[..r]) * per_tile;
        (base..base + per_tile)
            .filter_map(|k| devices.get(k as usize).copied())
            .collect()
    }
}

/// Row-major position of `index` in `dims`.
fn ravel(index: &[i64], dims: &[i64]) -> i64 {
    index.iter().zip(dims).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// The index of row-major position `pos` in `dims`.
fn unravel(mut pos: i64, dims: &[i64]) -> Vec<i64> {
    let mut out = vec![0; dims.len()];
    for (o, &n) in out.iter_mut().zip(dims).rev() {
        *o = pos % n.max(1);
        pos /= n.max(1);
    }
    out
}

impl Sharding {
    /// The sharding as tiles of an array of `rank` dimensions (`None` for replicated,
    /// manual, unknown, unreduced and maximal shardings, which do not tile), or why it
    /// cannot apply to such an array.
    pub fn as_tiled(&self, rank: usize) -> Result<Option<TiledSharding>, String> {
        let t = match &self.kind {
            ShardingKind::Tiled(t) => t.clone(),
            ShardingKind::Named(n) => to_tiled(n)?,
            ShardingKind::Tuple(_) => {
                return Err("a tuple sharding does not apply to an array".to_string())
            }
            _ => return Ok(None),
        };
        if t.data_rank() != rank {
            return Err(format!(
                "the sharding tiles {} dimensions but the array has {rank}",
                t.data_rank()
            ));
        }
        Ok(Some(t))
    }

    /// The shardings of the leaves of a tuple (itself for a non-tuple), depth first.
    pub fn leaves(&self) -> Vec<&Sharding> {
        match &self.kind {
            ShardingKind::Tuple(parts) => parts.iter().flat_map(Sharding::leaves).collect(),
            _ => vec![self],
        }
    }

    /// Every device id the sharding names (tiles, maximal device), sorted, without repeats.
    pub fn named_devices(&self) -> Result<Vec<i64>, String> {
        let mut out = Vec::new();
        for leaf in self.leaves() {
            match &leaf.kind {
                ShardingKind::Maximal(d) => out.push(*d),
                ShardingKind::Tiled(t) => out.extend(t.tiles.devices()),
                ShardingKind::Named(n) => out.extend(to_tiled(n)?.tiles.devices()),
                _ => {}
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The data tile `device` holds of an array of `rank` dimensions: all zeros for a
    /// sharding that does not tile, `None` when the device holds nothing (another
    /// device's maximal sharding, a device the tile assignment does not name).
    pub fn tile_of(&self, device: i64, rank: usize) -> Result<Option<Vec<i64>>, String> {
        match self.as_tiled(rank)? {
            Some(t) => Ok(t.index_of(device).map(|mut i| {
                i.truncate(rank);
                i
            })),
            None => Ok(match self.kind {
                ShardingKind::Maximal(d) if d != device => None,
                _ => Some(vec![0; rank]),
            }),
        }
    }

    /// The devices (out of `0..num_devices`) that hold data tile `tile` of an array of
    /// `tile.len()` dimensions.
    pub fn devices_of_tile(&self, tile: &[i64], num_devices: i64) -> Result<Vec<i64>, String> {
        match self.as_tiled(tile.len())? {
            Some(t) => Ok(t.devices_of(tile)),
            None if tile.iter().any(|&i| i != 0) => Ok(Vec::new()),
            None => Ok(match self.kind {
                ShardingKind::Maximal(d) => vec![d],
                _ => (0..num_devices).collect(),
            }),
        }
    }

    /// The shard `device` holds of an array of dimensions `dims`, or `None` when it holds
    /// none. A sharding that does not tile gives the whole array.
    pub fn shard(&self, device: i64, dims: &[i64]) -> Result<Option<Shard>, String> {
        let Some(tile) = self.tile_of(device, dims.len())? else {
            return Ok(None);
        };
        let tiles = match self.as_tiled(dims.len())? {
            Some(t) => t.data_tiles().to_vec(),
            None => vec![1; dims.len()],
        };
        let mut shard = Shard {
            tile,
            offsets: Vec::new(),
            shape: Vec::new(),
            valid: Vec::new(),
        };
        for (d, (&n, &t)) in dims.iter().zip(&tiles).enumerate() {
            let size = if t <= 0 { 0 } else { (n + t - 1) / t };
            let offset = shard.tile[d] * size;
            shard.offsets.push(offset);
            shard.shape.push(size);
            shard.valid.push((n.min(offset + size) - offset).max(0));
        }
        Ok(Some(shard))
    }
}
