//! [`SymbolicTile`]: the tile of an operand that a tile of the output reads, as functions of
//! the output's tile sizes.
//!
//! For an output→operand map `f` with dimensions `d_i in [0, D_i - 1]` and tile sizes
//! `t_i in [1, D_i]` (the parameters, named `d_i` in the tile's maps), the output tile at
//! origin `o` (a multiple of `t`, per dimension) reads, along operand dimension `j`, exactly
//! the elements `offset_j + k * stride_j` for `0 <= k < size_j`, whenever the constraints
//! hold. The offset of the tile at origin `o` is `f(o)` with range variables at their lower
//! bounds; the offset map is that at `o = 0` (it may use runtime variables, printed as
//! symbols `s_i` and listed under `rt_vars`). An output tile cut by the edge of the map's
//! domain (a last, partial tile; or a domain `d_i in [lo, hi]` with `lo > 0`, as for the
//! second operand of a concatenate) reads a subset of its tile: the elements of its positions
//! inside the domain; the others belong to masked positions. A constraint of the domain on
//! one result (`r_j in [lo, hi]`) whose lower bound excludes no index of the operand (`lo`
//! at most 0, or at most every value `r_j` takes) masks the positions it excludes: those
//! reading past `hi` (high padding) or below 0 (a dynamic-update-slice's update): the tile is
//! that of the map without the constraint, and its elements outside `[lo, hi]` belong to
//! masked positions. Any other constraint leaves the map without a tile. Tile
//! sizes range over `[1, hi_i + 1]`.

use affine::simplify::simplify_expr;
use affine::{Expr, IndexingMap, Interval, MapForm, Point, Var, VarKind};

use crate::constraint::{ConstraintExpr, Satisfiability};
use crate::strided::{combine, size_bounds};
use crate::terms::{terms_of, Digits};
use crate::TilingError;

/// A symbolic tile. See the module documentation; the text form is in [`crate::text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolicTile {
    /// Bounds `[1, D_i]` of the tile sizes; `None` for a tile read from text.
    pub(crate) size_bounds: Option<Vec<Interval>>,
    /// Number of tile-size parameters (output dimensions).
    pub(crate) num_dims: usize,
    /// Bounds of the runtime variables the offsets use.
    pub(crate) rt_vars: Vec<Interval>,
    /// Offsets of the tile at the origin, over runtime variables.
    pub(crate) offsets: Vec<Expr>,
    /// Sizes, over the tile sizes.
    pub(crate) sizes: Vec<Expr>,
    /// Strides, over the tile sizes.
    pub(crate) strides: Vec<Expr>,
    /// When the tile is exact.
    pub(crate) constraints: ConstraintExpr,
}

/// A tile for concrete tile sizes and runtime values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConcreteTile {
    /// Offsets of the tile at the origin.
    pub offsets: Vec<i64>,
    /// Elements per dimension.
    pub sizes: Vec<i64>,
    /// Distance between elements per dimension.
    pub strides: Vec<i64>,
}

impl SymbolicTile {
    /// The symbolic tile of `map` (an output→input map), or `None` where no exact tile
    /// exists. See [`SymbolicTile::derive`] for the reason.
    pub fn from_indexing_map(map: &IndexingMap) -> Option<SymbolicTile> {
        SymbolicTile::derive(map).ok()
    }

    /// The symbolic tile of `map`, or why none exists (e.g. a constrained domain, a product
    /// of indices, a dimension read by overlapping digits).
    pub fn derive(map: &IndexingMap) -> Result<SymbolicTile, String> {
        match map.form() {
            MapForm::Undefined => return Err("the map is UNDEFINED".into()),
            MapForm::KnownEmpty => return Err("the map is KNOWN EMPTY".into()),
            MapForm::Normal => {}
        }
        let m = map.simplified();
        if m.is_known_empty() {
            return Err("the map is KNOWN EMPTY".into());
        }
        let m = without_high_padding(&m)?;
        let dims = m.dims().to_vec();
        let bounds = size_bounds(&dims);
        let mut all_terms = Vec::new();
        for &r in m.results() {
            all_terms.push(terms_of(&m, r)?);
        }
        check_independent(all_terms.iter().flatten())?;
        let at_origin = |v: Var| -> Option<Expr> {
            match v.kind {
                VarKind::Dim => Some(Expr::constant(0)),
                VarKind::Range => m
                    .ranges()
                    .get(v.index as usize)
                    .map(|b| Expr::constant(b.lo)),
                VarKind::Runtime => None,
            }
        };
        let mut constraints = ConstraintExpr::always();
        let (mut offsets, mut sizes, mut strides) = (Vec::new(), Vec::new(), Vec::new());
        for (&r, terms) in m.results().iter().zip(all_terms) {
            let offset = r.substitute(&mut |v| at_origin(v));
            offsets.push(simplify_expr(offset, &[], &[], m.runtimes()));
            let s = combine(terms);
            sizes.push(simplify_expr(s.size, &bounds, &[], &[]));
            strides.push(simplify_expr(s.stride, &bounds, &[], &[]));
            constraints = constraints.and(&s.constraints);
            constraints.simplify(&bounds);
        }
        constraints.simplify(&bounds);
        Ok(SymbolicTile {
            size_bounds: Some(bounds),
            num_dims: dims.len(),
            rt_vars: m.runtimes().to_vec(),
            offsets,
            sizes,
            strides,
            constraints,
        })
    }

    /// Number of tile-size parameters (dimensions of the output tiled).
    pub fn num_dims(&self) -> usize {
        self.num_dims
    }
    /// Bounds `[1, D_i]` of the tile sizes, when known (not for a tile read from text).
    pub fn size_bounds(&self) -> Option<&[Interval]> {
        self.size_bounds.as_deref()
    }
    /// Offsets of the origin tile, one per operand dimension (runtime variables allowed).
    pub fn offsets(&self) -> &[Expr] {
        &self.offsets
    }
    /// Sizes, one per operand dimension, over the tile sizes `d_i`.
    pub fn sizes(&self) -> &[Expr] {
        &self.sizes
    }
    /// Strides, one per operand dimension, over the tile sizes `d_i`.
    pub fn strides(&self) -> &[Expr] {
        &self.strides
    }
    /// Bounds of the runtime variables of the offsets.
    pub fn rt_vars(&self) -> &[Interval] {
        &self.rt_vars
    }
    /// The constraints under which the tile is exact.
    pub fn constraints(&self) -> &ConstraintExpr {
        &self.constraints
    }

    /// Whether some tile sizes make the tile exact (by the form of the constraints, or by
    /// enumerating small tile-size spaces).
    pub fn satisfiability(&self) -> Satisfiability {
        match &self.size_bounds {
            Some(b) => self.constraints.satisfiability(b),
            None if self.constraints.is_always() => Satisfiability::Always,
            None if self.constraints.is_never() => Satisfiability::Never,
            None => Satisfiability::DependsOnSizes,
        }
    }

    /// The tile for concrete tile sizes and runtime values. Strides are evaluated with the
    /// sizes clamped to the dimensions (a tile larger than its dimension reads it whole).
    pub fn evaluate(&self, sizes: &[i64], rt: &[i64]) -> Result<ConcreteTile, TilingError> {
        if sizes.len() != self.num_dims || rt.len() != self.rt_vars.len() {
            return Err(TilingError::BadTileSizes(format!(
                "{} sizes and {} runtime values for a tile of {} dimensions and {} runtime variables",
                sizes.len(),
                rt.len(),
                self.num_dims,
                self.rt_vars.len()
            )));
        }
        let clamped: Vec<i64> = match &self.size_bounds {
            Some(b) => sizes.iter().zip(b).map(|(&s, b)| s.min(b.hi)).collect(),
            None => sizes.to_vec(),
        };
        let eval = |es: &[Expr], dims: &[i64]| -> Result<Vec<i64>, TilingError> {
            let p = Point {
                dims,
                ranges: &[],
                runtimes: rt,
            };
            es.iter().map(|e| Ok(e.eval(&p)?)).collect()
        };
        Ok(ConcreteTile {
            offsets: eval(&self.offsets, sizes)?,
            sizes: eval(&self.sizes, sizes)?,
            strides: eval(&self.strides, &clamped)?,
        })
    }
}

/// Rejects terms that could make the product of per-result progressions over-cover: two
/// terms reading overlapping digits of one dimension, or one range variable read twice.
fn check_independent<'a>(
    terms: impl Iterator<Item = &'a crate::terms::Term>,
) -> Result<(), String> {
    let mut digits: Vec<Digits> = Vec::new();
    let mut ranges: Vec<u32> = Vec::new();
    for t in terms {
        if let Some(d) = t.digits {
            if digits.iter().any(|o| o.overlaps(&d)) {
                return Err(format!(
                    "dimension d{} is read twice in overlapping ways",
                    d.dim
                ));
            }
            digits.push(d);
        }
        if let Some(r) = t.range_var {
            if ranges.contains(&r) {
                return Err(format!("range variable s{r} is read twice"));
            }
            ranges.push(r);
        }
    }
    Ok(())
}

/// `m` without its high-padding constraints (see the module documentation); an error for a
/// constraint of another kind.
fn without_high_padding(m: &IndexingMap) -> Result<IndexingMap, String> {
    if m.constraints().is_empty() {
        return Ok(m.clone());
    }
    let free = IndexingMap::new(
        m.dims().to_vec(),
        m.ranges().to_vec(),
        m.runtimes().to_vec(),
        m.results().to_vec(),
        vec![],
    )
    .map_err(|e| e.to_string())?;
    for c in m.constraints() {
        let is_result = m.results().contains(&c.expr);
        // Excluded positions below `lo` must read indices below 0 (masked as any index out
        // of the operand), or there must be none.
        if !is_result || c.interval.lo > free.range_of(c.expr).lo.max(0) {
            return Err(format!(
                "the map's domain is constrained (`{} in {}`)",
                c.expr, c.interval
            ));
        }
    }
    Ok(free)
}
