//! How an array is spread over the N devices of a partitioned program, in the one form
//! every decision of the partitioner reasons in: tiles per dimension, and the tile each
//! device holds. Replication is implicit (several devices hold one tile); a sharding's
//! device order is explicit per device, so two shardings agree exactly when their tilings
//! are equal, and the groups of a collective are read off the devices' tile indices.

use hlo::sharding::{Sharding, ShardingKind, SubgroupKind, TileAssignment};

/// The tiles of an array over `of_device.len()` devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// Tiles along each dimension.
    pub tiles: Vec<i64>,
    /// The tile index (one entry per dimension) each device holds.
    pub of_device: Vec<Vec<i64>>,
}

impl Tiling {
    /// Every device holds the whole array of `rank` dimensions.
    pub fn replicated(rank: usize, devices: usize) -> Tiling {
        Tiling {
            tiles: vec![1; rank],
            of_device: vec![vec![0; rank]; devices],
        }
    }

    /// The tiling `sharding` gives an array of `rank` dimensions on `devices` devices, or
    /// why it cannot be partitioned (maximal, manual, unreduced, a device it does not name).
    pub fn from_sharding(s: &Sharding, rank: usize, devices: usize) -> Result<Tiling, String> {
        match &s.kind {
            ShardingKind::Replicated => return Ok(Tiling::replicated(rank, devices)),
            ShardingKind::Tiled(_) | ShardingKind::Named(_) => {}
            _ => return Err(format!("sharding {s} is not a tiled or replicated one")),
        }
        let t = s
            .as_tiled(rank)?
            .ok_or_else(|| format!("sharding {s} does not tile"))?;
        if t.subgroups.iter().any(|k| *k != SubgroupKind::Replicated) {
            return Err(format!("sharding {s} has a manual or unreduced subgroup"));
        }
        if t.tiles.num_tiles() != devices as i64 {
            return Err(format!(
                "sharding {s} names {} devices, the program runs on {devices}",
                t.tiles.num_tiles()
            ));
        }
        let of_device = (0..devices as i64)
            .map(|d| {
                let mut i = t
                    .index_of(d)
                    .ok_or_else(|| format!("sharding {s} does not name device {d}"))?;
                i.truncate(rank);
                Ok(i)
            })
            .collect::<Result<Vec<_>, String>>()?;
        let tiling = Tiling {
            tiles: t.data_tiles().to_vec(),
            of_device,
        };
        tiling.check()?;
        Ok(tiling)
    }

    /// The number of devices.
    pub fn devices(&self) -> usize {
        self.of_device.len()
    }

    /// The number of distinct tiles.
    pub fn tile_count(&self) -> i64 {
        self.tiles.iter().product()
    }

    /// True when no dimension is split.
    pub fn is_replicated(&self) -> bool {
        self.tiles.iter().all(|&t| t == 1)
    }

    /// Devices per tile, or why the tiling is not one a sharding can say (a tile held by
    /// no device, or tiles held by different numbers of devices).
    pub fn check(&self) -> Result<i64, String> {
        let n = self.tile_count();
        let mut count = vec![0i64; n.max(0) as usize];
        for idx in &self.of_device {
            count[self.ravel(idx) as usize] += 1;
        }
        let first = count.first().copied().unwrap_or(0);
        if first == 0 || count.iter().any(|&c| c != first) {
            return Err(format!(
                "tiles {:?} are held by {count:?} devices (a sharding holds each equally often)",
                self.tiles
            ));
        }
        Ok(first)
    }

    /// Row-major number of tile `idx`.
    fn ravel(&self, idx: &[i64]) -> i64 {
        idx.iter()
            .zip(&self.tiles)
            .fold(0, |acc, (&i, &t)| acc * t + i)
    }

    /// XLA's sharding for this tiling: `{replicated}`, or tiles over the devices holding
    /// each tile (a trailing replicated subgroup when tiles are shared), written as an iota
    /// when the devices come in order.
    pub fn to_sharding(&self) -> Sharding {
        if self.is_replicated() {
            return Sharding::replicated();
        }
        let per_tile = self.check().unwrap_or(1);
        let mut devices: Vec<(i64, i64)> = self
            .of_device
            .iter()
            .enumerate()
            .map(|(d, idx)| (self.ravel(idx), d as i64))
            .collect();
        devices.sort_unstable();
        let devices: Vec<i64> = devices.into_iter().map(|(_, d)| d).collect();
        let mut dims = self.tiles.clone();
        let mut subgroups = Vec::new();
        if per_tile > 1 {
            dims.push(per_tile);
            subgroups.push(SubgroupKind::Replicated);
        }
        let n = devices.len() as i64;
        let tiles = if devices.iter().copied().eq(0..n) {
            TileAssignment::Iota {
                dims,
                reshape: vec![n],
                transpose: None,
            }
        } else {
            TileAssignment::List { dims, devices }
        };
        Sharding::tiled(tiles, subgroups)
    }

    /// The per-device dimensions of an array of `dims`: XLA's padded shards, each tile
    /// `ceil(n / tiles)` long (the last ones hold padding past the array's end).
    pub fn shard_dims(&self, dims: &[i64]) -> Vec<i64> {
        dims.iter()
            .zip(&self.tiles)
            .map(|(&n, &t)| shard_len(n, t))
            .collect()
    }

    /// The dimensions (of an array of `dims`) whose shards hold padding: split in tiles
    /// that do not divide them.
    pub fn padded_dims(&self, dims: &[i64]) -> Vec<usize> {
        (0..dims.len())
            .filter(|&d| dims[d] % self.tiles[d] != 0)
            .collect()
    }

    /// This tiling with dimensions `dims` no longer split (what an all-gather along them
    /// leaves).
    pub fn gathered(&self, dims: &[usize]) -> Tiling {
        let mut t = self.clone();
        for &d in dims {
            t.tiles[d] = 1;
            for idx in &mut t.of_device {
                idx[d] = 0;
            }
        }
        t
    }

    /// The tiling of a value whose dimension `i` is this tiling's dimension `from[i]`
    /// (`None`: a new dimension, not split).
    pub fn remap(&self, from: &[Option<usize>]) -> Tiling {
        Tiling {
            tiles: from
                .iter()
                .map(|f| f.map_or(1, |d| self.tiles[d]))
                .collect(),
            of_device: self
                .of_device
                .iter()
                .map(|idx| from.iter().map(|f| f.map_or(0, |d| idx[d])).collect())
                .collect(),
        }
    }

    /// Whether along dimension `d` (of `n` elements) every device's tile under `finer`
    /// lies inside its tile under `self` (so a local slice gets there without exchanging
    /// data). With padded shards that needs this tile to be exactly a whole number of
    /// `finer`'s (or the dimension not split here at all).
    pub fn refines(&self, finer: &Tiling, d: usize, n: i64) -> bool {
        let (a, b) = (self.tiles[d], finer.tiles[d]);
        if b % a != 0 {
            return false;
        }
        let ratio = b / a;
        if a > 1 && shard_len(n, a) != ratio * shard_len(n, b) {
            return false;
        }
        self.of_device
            .iter()
            .zip(&finer.of_device)
            .all(|(x, y)| y[d] / ratio == x[d])
    }

    /// The groups of devices that hold the same tile except along `dims`, each with one
    /// device per combination of tile indices along `dims`, ordered row-major by them:
    /// the groups of an all-gather or an all-reduce over those dimensions.
    pub fn groups_along(&self, dims: &[usize]) -> Result<Vec<Vec<i64>>, String> {
        let keyed: Vec<(Vec<i64>, i64)> = self
            .of_device
            .iter()
            .map(|idx| {
                let key = (0..idx.len())
                    .filter(|d| !dims.contains(d))
                    .map(|d| idx[d])
                    .collect();
                let sub = dims.iter().fold(0, |acc, &d| acc * self.tiles[d] + idx[d]);
                (key, sub)
            })
            .collect();
        let buckets: i64 = dims.iter().map(|&d| self.tiles[d]).product();
        zip_groups(&keyed, buckets)
    }
}

/// The length of one shard of `n` elements split in `tiles` (XLA rounds up and pads).
pub fn shard_len(n: i64, tiles: i64) -> i64 {
    match tiles {
        t if t <= 1 => n,
        t => (n + t - 1) / t,
    }
}

/// Groups devices (numbered by position in `keyed`) by key; within a key, the devices of
/// each bucket `0..buckets` are dealt one to a group in device order, so every group
/// holds one device per bucket, ordered by bucket. An error when a key's buckets hold
/// different numbers of devices.
pub fn zip_groups(keyed: &[(Vec<i64>, i64)], buckets: i64) -> Result<Vec<Vec<i64>>, String> {
    let mut keys: Vec<&Vec<i64>> = keyed.iter().map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let mut groups = Vec::new();
    for key in keys {
        let per_bucket: Vec<Vec<i64>> = (0..buckets)
            .map(|b| {
                keyed
                    .iter()
                    .enumerate()
                    .filter(|(_, (k, s))| k == key && *s == b)
                    .map(|(d, _)| d as i64)
                    .collect()
            })
            .collect();
        let c = per_bucket[0].len();
        if c == 0 || per_bucket.iter().any(|b| b.len() != c) {
            return Err(format!(
                "devices {per_bucket:?} do not pair up into groups of one per tile"
            ));
        }
        for j in 0..c {
            groups.push(per_bucket.iter().map(|b| b[j]).collect());
        }
    }
    groups.sort();
    Ok(groups)
}
