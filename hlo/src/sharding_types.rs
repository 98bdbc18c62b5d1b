//! The typed sharding of an instruction (XLA's `HloSharding`): how an array is split over
//! devices. The parser reads `sharding={...}` into these types (`sharding_text.rs`), the
//! printer writes XLA's text (`sharding_print.rs`), the tile queries live in
//! `sharding_tiles.rs` and the named-mesh form is turned into tiles by `sharding_named.rs`.

/// The most devices one sharding may name (so that a text like `devices=[1000000000]<=[...]`
/// is an error instead of an allocation).
pub const MAX_SHARDING_DEVICES: i64 = 1 << 20;

/// One sharding: its kind plus the annotations XLA carries beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sharding {
    /// What the sharding says.
    pub kind: ShardingKind,
    /// `metadata={...}` as written (the braces included), kept for the round trip.
    pub metadata: Option<String>,
    /// `shard_as N` / `shard_like N`: the sharding is tied to a group of values.
    pub shard_group: Option<ShardGroup>,
}

/// The kinds of sharding XLA's text can say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardingKind {
    /// `{replicated}`: every device holds the whole array.
    Replicated,
    /// `{maximal device=N}`: only device N holds (and computes) the value.
    Maximal(i64),
    /// `{manual}`: each device holds its own, already partitioned value.
    Manual,
    /// `{unknown}`: to be decided by propagation.
    Unknown,
    /// `{unreduced}`: every device holds a partial value; their sum is the array.
    Unreduced,
    /// `{devices=[...]...}`: split in tiles over a device array.
    Tiled(TiledSharding),
    /// `{mesh[...], [...]}` / `{@mesh<...>, [...]}`: split over named mesh axes.
    Named(NamedSharding),
    /// `{{...}, {...}}`: one sharding per leaf of a tuple shape.
    Tuple(Vec<Sharding>),
}

/// `shard_as N` or `shard_like N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardGroup {
    /// `shard_as` (the values share one sharding) rather than `shard_like`.
    pub shard_as: bool,
    /// The group id.
    pub id: i64,
}

/// A tiled sharding: the array's dimensions, then subgroup dimensions, over a device array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledSharding {
    /// The devices, one per tile, as an array whose dimensions are the tile counts.
    pub tiles: TileAssignment,
    /// What the trailing subgroup dimensions mean, one entry per subgroup dimension
    /// (`last_tile_dim_replicate` is one `Replicated`; `last_tile_dims={...}` lists them).
    pub subgroups: Vec<SubgroupKind>,
    /// Written as `last_tile_dim_replicate` (kept for the round trip; `subgroups` is
    /// `[Replicated]` then).
    pub last_tile_dim_replicate: bool,
}

/// The meaning of one trailing dimension of a tile assignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubgroupKind {
    /// The devices along it hold the same tile.
    Replicated,
    /// The devices along it hold manually partitioned pieces of the tile.
    Manual,
    /// The devices along it hold partial values whose sum is the tile.
    Unreduced,
}

/// The device array of a tiled sharding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TileAssignment {
    /// `[dims]d0,d1,...`: the devices listed in row-major order.
    List {
        /// Tiles per dimension.
        dims: Vec<i64>,
        /// One device per tile, row-major.
        devices: Vec<i64>,
    },
    /// `[dims]<=[reshape]T(perm)`: `0..n` reshaped, transposed, then read as `dims`.
    Iota {
        /// Tiles per dimension.
        dims: Vec<i64>,
        /// The shape `0..n` is reshaped to.
        reshape: Vec<i64>,
        /// The transpose applied after the reshape, if written.
        transpose: Option<Vec<i64>>,
    },
}

/// A sharding over named mesh axes, as XLA's `NamedSharding` (jax 0.12's text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedSharding {
    /// The mesh: axis names with sizes, major to minor.
    pub mesh: Vec<(String, i64)>,
    /// The mesh's devices in row-major order, when not `0..n`.
    pub mesh_devices: Option<Vec<i64>>,
    /// Per array dimension, the axes it is split over, major to minor.
    pub dims: Vec<Vec<AxisRef>>,
    /// `replicated={...}`: axes named as replicated.
    pub replicated: Vec<AxisRef>,
    /// `unreduced={...}`: axes over which the value is a partial sum.
    pub unreduced: Vec<AxisRef>,
    /// The text style it was read in: `mesh['a'=2]` (true) or `@mesh<a=2>` (false).
    pub quoted: bool,
}

/// A mesh axis, or a sub-axis `name:(pre)size` of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisRef {
    /// The axis name.
    pub name: String,
    /// `(pre_size, size)` for a sub-axis: the axis reshaped to `[n/(pre*size), size, pre]`,
    /// the middle part.
    pub sub: Option<(i64, i64)>,
}

impl Sharding {
    /// A sharding of `kind` without annotations.
    pub fn new(kind: ShardingKind) -> Sharding {
        Sharding {
            kind,
            metadata: None,
            shard_group: None,
        }
    }

    /// `{replicated}`.
    pub fn replicated() -> Sharding {
        Sharding::new(ShardingKind::Replicated)
    }

    /// The tiled sharding `tiles` with `subgroups` trailing subgroup dimensions.
    pub fn tiled(tiles: TileAssignment, subgroups: Vec<SubgroupKind>) -> Sharding {
        let last_tile_dim_replicate = subgroups == [SubgroupKind::Replicated];
        Sharding::new(ShardingKind::Tiled(TiledSharding {
            tiles,
            subgroups,
            last_tile_dim_replicate,
        }))
    }

    /// True for a tuple sharding.
    pub fn is_tuple(&self) -> bool {
        matches!(self.kind, ShardingKind::Tuple(_))
    }
}

/// The product of `dims`, `None` on overflow or a negative dimension.
pub(crate) fn checked_product(dims: &[i64]) -> Option<i64> {
    dims.iter().try_fold(
        1i64,
        |acc, &d| if d < 0 { None } else { acc.checked_mul(d) },
    )
}

impl TileAssignment {
    /// Tiles per dimension (array dimensions first, then subgroup dimensions).
    pub fn dims(&self) -> &[i64] {
        match self {
            TileAssignment::List { dims, .. } | TileAssignment::Iota { dims, .. } => dims,
        }
    }

    /// The number of tiles (devices named).
    pub fn num_tiles(&self) -> i64 {
        checked_product(self.dims()).unwrap_or(0)
    }

    /// The devices in row-major order of [`dims`](Self::dims) (the iota form expanded).
    pub fn devices(&self) -> Vec<i64> {
        match self {
            TileAssignment::List { devices, .. } => devices.clone(),
            TileAssignment::Iota {
                reshape, transpose, ..
            } => iota_devices(reshape, transpose.as_deref()),
        }
    }
}

/// `0..n` reshaped to `reshape`, transposed by `perm`, in row-major order.
pub(crate) fn iota_devices(reshape: &[i64], perm: Option<&[i64]>) -> Vec<i64> {
    let n = checked_product(reshape).unwrap_or(0).max(0) as usize;
    let identity: Vec<i64> = (0..reshape.len() as i64).collect();
    let perm = perm.unwrap_or(&identity);
    // Strides of the reshaped iota, then the transposed array's dims and strides.
    let mut strides = vec![1i64; reshape.len()];
    for i in (0..reshape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * reshape[i + 1];
    }
    let tdims: Vec<i64> = perm.iter().map(|&p| reshape[p as usize]).collect();
    let tstrides: Vec<i64> = perm.iter().map(|&p| strides[p as usize]).collect();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0i64; tdims.len()];
    for _ in 0..n {
        out.push(idx.iter().zip(&tstrides).map(|(i, s)| i * s).sum());
        for d in (0..tdims.len()).rev() {
            idx[d] += 1;
            if idx[d] < tdims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// An instruction's `sharding=` attribute: the typed value and the text it was read from
/// (printed back as written, so that XLA's modules round-trip byte for byte).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardingAttr {
    /// The text, `{...}` included.
    pub text: String,
    /// What it says.
    pub sharding: Sharding,
}

impl ShardingAttr {
    /// The attribute for a sharding built in code: its text is XLA's.
    pub fn new(sharding: Sharding) -> ShardingAttr {
        ShardingAttr {
            text: sharding.to_string(),
            sharding,
        }
    }
}
