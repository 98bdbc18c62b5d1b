//! [`TilingSpace`]: the variables tiles are written over. Its dimensions are the output
//! dimensions of a root (parallel), then the dimensions that ops introduce (sequential: the
//! reduced dimensions of a reduce, the contracting dimensions of a dot, the window and
//! input-feature dimensions of a convolution), each with a tile id
//! `tid_i` and a tile size `ts_i` (or a concrete size); its runtime values `rt_i` are the
//! values (dynamic-slice offsets) that tile offsets read, each with its bounds and producer.

use affine::simplify::simplify_expr;
use affine::{Expr, IndexingMap, Interval};
use hlo::{InstrId, InstrRef, Opcode};

use super::tile::{DimTile, Tile};
use crate::TilingError;

/// Bound used for a tile id, tile size or runtime value whose range is not known (a tile
/// read from text).
const UNKNOWN: i64 = 1 << 40;

/// One dimension of a tiling space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpaceDim {
    /// Its extent (`None` for a dimension known only from a tile's text).
    pub extent: Option<i64>,
    /// The concrete tile size, or `None` for the symbol `ts_i`.
    pub tile_size: Option<i64>,
    /// `None` for a parallel (root output) dimension; for a sequential one, the instruction
    /// that introduces it and its position among that instruction's own dimensions.
    pub owner: Option<(InstrId, usize)>,
}

/// One runtime value of a tiling space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpaceRt {
    /// The values it may take.
    pub bounds: Interval,
    /// The instruction holding it and the text of the map to its element (`None` for a
    /// value known only from a tile's text).
    pub source: Option<(InstrId, String)>,
}

/// The tiling space: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TilingSpace {
    /// Parallel dimensions first, then sequential ones in the order they were added.
    pub dims: Vec<SpaceDim>,
    /// Runtime values in the order they were added.
    pub rt: Vec<SpaceRt>,
    /// Whether the programs along a scan's scanned dimension run in order, one step after
    /// another (XLA's tile propagation model): a step reads only its own rows, the carry
    /// holding what the steps before it read, so a tile of a scan reads the rows at its own
    /// positions (`scan_steps.rs`). Off, a tile reads every row its elements depend on (the
    /// rows up to or from its positions), so its programs may run in any order.
    pub scan_steps: bool,
    /// Whether a ragged dot's programs walk its groups one after another (XLA's tile
    /// propagation model of its grouped GEMM): tiles along the ragged dimension are then
    /// relative to the step's group and masked by its size, and the non-contracting form
    /// gains the group dimension as a sequential one (`ragged_groups.rs`). Off, a tile
    /// holds the absolute rows it reads, its groups' placement read from the group sizes
    /// (`ragged_rows.rs`, `ragged_steps.rs`), so its programs need no order. Set it before
    /// the op's own dimensions are added ([`TilingSpace::for_op_in`]).
    pub group_steps: bool,
}

/// The output shape's dimensions of output `k` of `instr` (a tuple element, or the array).
pub(crate) fn output_dims(instr: &hlo::Instruction, k: usize) -> Option<Vec<i64>> {
    let shape = instr.shape();
    if shape.is_tuple() {
        let s = shape.tuple_shapes().get(k)?;
        (!s.is_tuple()).then(|| s.dims().to_vec())
    } else {
        (k == 0).then(|| shape.dims().to_vec())
    }
}

/// The dimensions an op introduces, as `(extent, positions)` with `positions[j]` the
/// dimension of operand `j` it runs along (`None` where operand `j` does not read it): the
/// reduced dimensions of a reduce (in `dimensions={...}` order), the contracting dimensions of
/// a dot or scaled dot, the window and input-feature dimensions of a convolution
/// ([`conv_dims`]).
pub(crate) fn own_dims(instr: &InstrRef<'_>) -> Vec<(i64, Vec<Option<usize>>)> {
    own_dims_in(instr, false)
}

/// [`own_dims`], in group steps when `group_steps` (see [`TilingSpace::group_steps`]): a
/// ragged dot's non-contracting form then walks its groups ahead of its contraction.
pub(crate) fn own_dims_in(
    instr: &InstrRef<'_>,
    group_steps: bool,
) -> Vec<(i64, Vec<Option<usize>>)> {
    let mut dims: Vec<(i64, Vec<Option<usize>>)> = group_steps
        .then(|| super::ragged_form::group_dim(instr))
        .flatten()
        .into_iter()
        .collect();
    dims.extend(plain_own_dims(instr));
    dims
}

fn plain_own_dims(instr: &InstrRef<'_>) -> Vec<(i64, Vec<Option<usize>>)> {
    let i = instr.instr();
    let comp = instr.computation();
    let operand_dims = |j: usize| -> Vec<i64> {
        i.operands()
            .get(j)
            .map(|&o| comp.instr(o).shape().dims().to_vec())
            .unwrap_or_default()
    };
    let n = i.operands().len();
    match i.opcode() {
        Opcode::Reduce => {
            let inputs = n / 2;
            let dims = i.dimensions().unwrap_or(&[]).to_vec();
            let in0 = operand_dims(0);
            dims.iter()
                .filter_map(|&d| {
                    let d = usize::try_from(d).ok()?;
                    let extent = *in0.get(d)?;
                    let pos = (0..n).map(|j| (j < inputs).then_some(d)).collect();
                    Some((extent, pos))
                })
                .collect()
        }
        Opcode::Dot | Opcode::ScaledDot | Opcode::RaggedDot if n >= 2 => {
            let scaled = i.opcode() == Opcode::ScaledDot;
            let dn = i.dot_dimension_numbers();
            let lhs = operand_dims(0);
            dn.lhs_contracting_dims
                .iter()
                .zip(&dn.rhs_contracting_dims)
                .filter_map(|(&l, &r)| {
                    let (l, r) = (usize::try_from(l).ok()?, usize::try_from(r).ok()?);
                    let extent = *lhs.get(l)?;
                    let pos = (0..n)
                        .map(|j| match j {
                            // A scaled dot's scales (operands 2 and 3) follow its lhs and rhs.
                            0 => Some(l),
                            1 => Some(r),
                            2 if scaled => Some(l),
                            3 if scaled => Some(r),
                            _ => None,
                        })
                        .collect();
                    Some((extent, pos))
                })
                .collect()
        }
        Opcode::Convolution if n == 2 => conv_dims(i, &operand_dims(1)),
        _ => Vec::new(),
    }
}

/// A convolution's own dimensions, as XLA's tiling space orders them: its window's spatial
/// dimensions in window order (extent the window size; read by the input's spatial dimension
/// and the kernel's), then its input features (extent the kernel's input-feature size; read
/// by the input's and the kernel's feature dimensions). Each output element sums over all of
/// them, so a program walks them as steps. Empty without dimension numbers or a window of
/// one entry per spatial dimension.
fn conv_dims(i: &hlo::Instruction, kernel: &[i64]) -> Vec<(i64, Vec<Option<usize>>)> {
    let (Some(dn), Some(w)) = (i.conv_dimension_numbers(), i.window()) else {
        return Vec::new();
    };
    if w.dims.len() != dn.input_spatial_dimensions.len()
        || w.dims.len() != dn.kernel_spatial_dimensions.len()
    {
        return Vec::new();
    }
    let at = |d: i64| usize::try_from(d).ok();
    let mut out: Vec<(i64, Vec<Option<usize>>)> = w
        .dims
        .iter()
        .zip(&dn.input_spatial_dimensions)
        .zip(&dn.kernel_spatial_dimensions)
        .map(|((wd, &x), &k)| (wd.size, vec![at(x), at(k)]))
        .collect();
    let kf = dn.kernel_input_feature_dimension;
    if let Some(&features) = at(kf).and_then(|k| kernel.get(k)) {
        out.push((features, vec![at(dn.input_feature_dimension), at(kf)]));
    }
    out
}

impl TilingSpace {
    /// The tiling space of one op: the dimensions of its output `output`, then the op's own
    /// dimensions (see [`TilingSpace::add_own_dims`]).
    pub fn for_op(instr: &InstrRef<'_>, output: usize) -> Result<TilingSpace, TilingError> {
        Self::for_op_in(instr, output, false)
    }

    /// [`TilingSpace::for_op`], with [`TilingSpace::group_steps`] set to `group_steps`
    /// before the op's own dimensions are added.
    pub fn for_op_in(
        instr: &InstrRef<'_>,
        output: usize,
        group_steps: bool,
    ) -> Result<TilingSpace, TilingError> {
        let dims = output_dims(instr.instr(), output).ok_or_else(|| {
            TilingError::BadTileSizes(format!("`{}` has no array output {output}", instr.name()))
        })?;
        let mut space = TilingSpace::parallel(&dims);
        space.group_steps = group_steps;
        space.add_own_dims(instr);
        Ok(space)
    }

    /// A space of parallel dimensions of the given extents and symbolic tile sizes.
    pub fn parallel(extents: &[i64]) -> TilingSpace {
        TilingSpace {
            dims: extents
                .iter()
                .map(|&e| SpaceDim {
                    extent: Some(e),
                    tile_size: None,
                    owner: None,
                })
                .collect(),
            rt: Vec::new(),
            scan_steps: false,
            group_steps: false,
        }
    }

    /// Adds the dimensions `instr` introduces (reduced or contracting dimensions), unless
    /// already there; returns the index of the first.
    pub fn add_own_dims(&mut self, instr: &InstrRef<'_>) -> usize {
        let id = instr.id();
        if let Some(i) = self
            .dims
            .iter()
            .position(|d| d.owner.is_some_and(|(o, _)| o == id))
        {
            return i;
        }
        let first = self.dims.len();
        for (p, (extent, _)) in own_dims_in(instr, self.group_steps).into_iter().enumerate() {
            self.dims.push(SpaceDim {
                extent: Some(extent),
                tile_size: None,
                owner: Some((id, p)),
            });
        }
        first
    }

    /// Makes room for a tile read from text: unknown dimensions and runtime values up to
    /// its counts.
    pub fn fit(&mut self, tile: &Tile) {
        while self.dims.len() < tile.num_tids {
            self.dims.push(SpaceDim {
                extent: None,
                tile_size: None,
                owner: None,
            });
        }
        while self.rt.len() < tile.num_rt {
            self.rt.push(SpaceRt {
                bounds: Interval::new(-UNKNOWN, UNKNOWN),
                source: None,
            });
        }
    }

    /// Fixes the tile sizes: one per dimension, each at least 1.
    pub fn set_tile_sizes(&mut self, sizes: &[i64]) -> Result<(), TilingError> {
        if sizes.len() != self.dims.len() {
            return Err(TilingError::BadTileSizes(format!(
                "{} tile sizes for a tiling space of {} dimensions",
                sizes.len(),
                self.dims.len()
            )));
        }
        if let Some((i, s)) = sizes.iter().enumerate().find(|(_, &s)| s < 1) {
            return Err(TilingError::BadTileSizes(format!(
                "tile size {s} of dimension {i} is below 1"
            )));
        }
        for (d, &s) in self.dims.iter_mut().zip(sizes) {
            d.tile_size = Some(s);
        }
        Ok(())
    }

    /// The size of dimension `i`'s tiles: its concrete size or the symbol `ts_i`.
    pub fn tile_size(&self, i: usize) -> Expr {
        match self.dims.get(i).and_then(|d| d.tile_size) {
            Some(s) => Expr::constant(s),
            None => Expr::range(i as u32),
        }
    }

    /// The tile of dimension `i` itself: offset `tid_i * size`, the size, stride 1, upper
    /// bound its extent.
    pub fn dim_tile(&self, i: usize) -> DimTile {
        let extent = self.dims.get(i).and_then(|d| d.extent).unwrap_or(UNKNOWN);
        DimTile::cut(i as u32, self.tile_size(i), extent)
    }

    /// The root tile: every parallel dimension cut by its tile id and size.
    pub fn root_tile(&self) -> Tile {
        let dims = (0..self.dims.len())
            .filter(|&i| self.dims[i].owner.is_none())
            .map(|i| self.dim_tile(i))
            .collect();
        self.tile(dims)
    }

    /// A tile over this space's variables.
    pub fn tile(&self, dims: Vec<DimTile>) -> Tile {
        Tile {
            num_tids: self.dims.len(),
            num_rt: self.rt.len(),
            dims,
        }
    }

    /// The index of the runtime value held by `producer` at `map` (its text), added with
    /// `bounds` if new.
    pub fn runtime(&mut self, producer: InstrId, map: String, bounds: Interval) -> usize {
        let key = Some((producer, map));
        if let Some(i) = self.rt.iter().position(|r| r.source == key) {
            return i;
        }
        self.rt.push(SpaceRt {
            bounds,
            source: key,
        });
        self.rt.len() - 1
    }

    /// Bounds of the tile ids, tile sizes and runtime values, for simplification.
    pub fn bounds(&self) -> (Vec<Interval>, Vec<Interval>, Vec<Interval>) {
        let mut tids = Vec::with_capacity(self.dims.len());
        let mut sizes = Vec::with_capacity(self.dims.len());
        for d in &self.dims {
            let extent = d.extent.unwrap_or(UNKNOWN).max(1);
            match d.tile_size {
                Some(s) => {
                    tids.push(Interval::new(0, (extent - 1) / s.max(1)));
                    sizes.push(Interval::new(s, s));
                }
                None => {
                    tids.push(Interval::new(0, extent - 1));
                    sizes.push(Interval::new(1, extent));
                }
            }
        }
        let rt = self.rt.iter().map(|r| r.bounds).collect();
        (tids, sizes, rt)
    }

    /// `e` simplified over the space's bounds.
    pub fn simplify(&self, e: Expr) -> Expr {
        let (t, s, r) = self.bounds();
        simplify_expr(e, &t, &s, &r)
    }

    /// The values `e` may take over the space's bounds.
    pub fn range(&self, e: Expr) -> Interval {
        let (t, s, r) = self.bounds();
        match IndexingMap::new(t, s, r, vec![], vec![]) {
            Ok(m) => m.range_of(e),
            Err(_) => Interval::FULL,
        }
    }
}
