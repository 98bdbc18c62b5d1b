//! [`Tile`]: the op-by-op form of a tile, one [`DimTile`] per dimension of a tensor.
//!
//! Along dimension `j`, a tile holds the indices `offset + k * stride` for `0 <= k < size`
//! that lie in `[0, upper_bound)`; the others are masked. Every expression ranges over the
//! tiling space's variables: tile ids `tid_i` (affine dimensions `d_i`), tile sizes `ts_i`
//! (range variables `s_i`) and runtime values `rt_i` (runtime variables).

use affine::{Expr, Point, VarKind};

use crate::TilingError;

/// Most elements [`Tile::dim_values`] lists along one dimension.
pub const MAX_DIM_VALUES: i64 = 1 << 20;

/// The tiling of one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DimTile {
    /// The first index.
    pub offset: Expr,
    /// The number of indices.
    pub size: Expr,
    /// The distance between consecutive indices.
    pub stride: Expr,
    /// Indices at or past it (and below 0) are masked.
    pub upper_bound: Expr,
}

impl DimTile {
    /// `offset`, `size`, `stride`, `upper_bound` from constants.
    pub fn constant(offset: i64, size: i64, stride: i64, upper_bound: i64) -> DimTile {
        DimTile {
            offset: Expr::constant(offset),
            size: Expr::constant(size),
            stride: Expr::constant(stride),
            upper_bound: Expr::constant(upper_bound),
        }
    }

    /// The tile of a dimension of `extent` indices cut by tile id `tid_i` and `size`
    /// (`ts_i` or a constant): offset `tid_i * size`, stride 1, upper bound `extent`.
    pub fn cut(i: u32, size: Expr, extent: i64) -> DimTile {
        DimTile {
            offset: Expr::dim(i).mul(size),
            size,
            stride: Expr::constant(1),
            upper_bound: Expr::constant(extent),
        }
    }

    /// The whole of the indices `[lo, hi]` in one tile whose size is the next power of two
    /// (the positions past `hi` masked).
    pub fn full(lo: i64, hi: i64) -> DimTile {
        let n = hi.saturating_sub(lo).saturating_add(1).max(1);
        let size = u64::try_from(n)
            .ok()
            .and_then(|n| n.checked_next_power_of_two())
            .and_then(|p| i64::try_from(p).ok())
            .unwrap_or(n);
        DimTile::constant(lo, size, 1, hi.saturating_add(1))
    }
}

/// A tile of a tensor: see the module documentation. `num_tids` and `num_rt` are the
/// tiling space's numbers of dimensions and runtime values (printed in the header).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tile {
    /// Number of tile ids (and tile sizes) of the tiling space.
    pub num_tids: usize,
    /// Number of runtime values of the tiling space.
    pub num_rt: usize,
    /// One entry per dimension of the tensor.
    pub dims: Vec<DimTile>,
}

impl Tile {
    /// Checks that every expression uses only the tile's variables: tile ids and tile sizes
    /// below `num_tids`, runtime values below `num_rt`.
    pub fn check_vars(&self) -> Result<(), TilingError> {
        for d in &self.dims {
            for e in [d.offset, d.size, d.stride, d.upper_bound] {
                for v in e.variables() {
                    let limit = match v.kind {
                        VarKind::Dim | VarKind::Range => self.num_tids,
                        VarKind::Runtime => self.num_rt,
                    };
                    if v.index as usize >= limit {
                        return Err(TilingError::BadTile(format!(
                            "`{e}` uses a variable the tile does not declare"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The valid indices along every dimension at tile ids `tids`, tile sizes `sizes` and
    /// runtime values `rt`, in tile order. Fails on a variable count mismatch, an overflow,
    /// or a size above [`MAX_DIM_VALUES`].
    pub fn dim_values(
        &self,
        tids: &[i64],
        sizes: &[i64],
        rt: &[i64],
    ) -> Result<Vec<Vec<i64>>, TilingError> {
        if tids.len() != self.num_tids || sizes.len() != self.num_tids || rt.len() != self.num_rt {
            return Err(TilingError::BadTileSizes(format!(
                "{} tile ids, {} sizes and {} runtime values for a tile over {} tile ids and {} runtime values",
                tids.len(),
                sizes.len(),
                rt.len(),
                self.num_tids,
                self.num_rt
            )));
        }
        let p = Point {
            dims: tids,
            ranges: sizes,
            runtimes: rt,
        };
        let mut out = Vec::with_capacity(self.dims.len());
        for d in &self.dims {
            let (off, n, st, ub) = (
                d.offset.eval(&p)?,
                d.size.eval(&p)?,
                d.stride.eval(&p)?,
                d.upper_bound.eval(&p)?,
            );
            if n > MAX_DIM_VALUES {
                return Err(TilingError::BadTileSizes(format!(
                    "a tile of {n} elements along one dimension"
                )));
            }
            let mut vals = Vec::new();
            for k in 0..n.max(0) {
                let v = k
                    .checked_mul(st)
                    .and_then(|x| x.checked_add(off))
                    .ok_or_else(|| TilingError::BadTileSizes("index overflow".into()))?;
                if (0..ub).contains(&v) {
                    vals.push(v);
                }
            }
            out.push(vals);
        }
        Ok(out)
    }
}
