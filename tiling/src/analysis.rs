//! Symbolic tile analysis of a fusion: from a tile of the root (tile sizes `d_i`, one per
//! root dimension), the tile of every instruction of the fused computation, by composing
//! the ops' output→input maps from the root and deriving a [`SymbolicTile`] from each
//! composed map.
//!
//! Every distinct (instruction, map from the root) pair is one [`TiledInstruction`]; an
//! instruction read along two different paths with different maps appears twice. The
//! analysis's constraints are the conjunction of every tile's constraints, plus `d_i in
//! [1, 1]` for every root dimension a runtime value (a dynamic offset) depends on, since an
//! offset must be one value per tile. Multi-output fusions (a `tuple` root) tile every root
//! of the first root's shape with the same tile sizes; a root of another shape must be read
//! by the first root, and each program writes the tile of it that it reads (checked for the
//! given sizes by `SymbolicTileAnalysis::tiled`: the tiles must partition that output). An instruction read for only
//! part of the root's indices (an operand of a concatenate or a pad) gets tiles at every
//! program; the positions outside that part are masked (its tile may start below 0 or end
//! past its last element).

use std::collections::{BTreeMap, HashMap};

use affine::{Expr, Interval, VarKind};
use hlo::{InstrId, InstrRef};
use indexing::{IndexedMap, OperandIndexing};

use crate::constraint::{Constraint, ConstraintExpr, Satisfiability};
use crate::roots::{extra_roots, roots, ExtraRoot};
use crate::strided::size_bounds;
use crate::{SymbolicTile, TilingError};

/// One instruction with one of its tiles.
#[derive(Clone, Debug)]
pub struct TiledInstruction {
    /// The instruction's name (in the fused computation).
    pub name: String,
    /// Its id in the fused computation.
    pub id: InstrId,
    /// The map from the root's indices to this instruction's elements.
    pub map: IndexedMap,
    /// The tile derived from `map`.
    pub tile: SymbolicTile,
    /// Bytes per element of the instruction's (array) result; 0 for a tuple or token.
    pub element_bytes: i64,
}

/// The result of [`analyze`]: every tiled instruction and the combined constraints.
#[derive(Clone, Debug)]
pub struct SymbolicTileAnalysis {
    /// Name of the fusion analysed.
    pub(crate) fusion: String,
    /// Dimensions of the root (of every root).
    pub(crate) root_dims: Vec<i64>,
    /// Tiled instructions, operands before users (definition order of the computation).
    pub(crate) instructions: Vec<TiledInstruction>,
    /// The conjunction of every tile's constraints.
    pub(crate) constraints: ConstraintExpr,
    /// Outputs of another shape than the first, written through the tiles the first root's
    /// programs read of them (see `roots` and `outputs`).
    pub(crate) extra: Vec<ExtraRoot>,
}

impl SymbolicTileAnalysis {
    /// The fusion's name.
    pub fn fusion(&self) -> &str {
        &self.fusion
    }
    /// Dimensions of the root, i.e. the number of tile sizes and their upper bounds.
    pub fn root_dims(&self) -> &[i64] {
        &self.root_dims
    }
    /// The tiled instructions, operands before users.
    pub fn instructions(&self) -> &[TiledInstruction] {
        &self.instructions
    }
    /// The constraints on the root's tile sizes under which every tile is exact.
    pub fn constraints(&self) -> &ConstraintExpr {
        &self.constraints
    }
    /// Whether some tile sizes satisfy the constraints.
    pub fn satisfiability(&self) -> Satisfiability {
        let bounds: Vec<Interval> = self
            .root_dims
            .iter()
            .map(|&d| Interval::new(1, d))
            .collect();
        self.constraints.satisfiability(&bounds)
    }
}

/// The index bounds `[0, D - 1]` of dimensions `D`.
fn bounds_of(dims: &[i64]) -> Vec<Interval> {
    dims.iter().map(|&d| Interval::new(0, d - 1)).collect()
}

fn not_tileable(reason: impl Into<String>) -> TilingError {
    TilingError::NotTileable(reason.into())
}

/// Analyses fusion `fusion` (a handle: `module.instr("fusion.3")`). Fails with
/// [`TilingError::NotTileable`] when some instruction's tile is not exact for any tile
/// sizes, or the ops cannot be described; [`TilingError::NotAFusion`] when `fusion` calls
/// no computation.
///
/// ```
/// let module = hlo::parse_module(r#"
/// HloModule m
/// fused {
///   p0 = f32[4,8] parameter(0)
///   ROOT r = f32[32] reshape(p0)
/// }
/// ENTRY e {
///   a = f32[4,8] parameter(0)
///   ROOT f = f32[32] fusion(a), kind=kLoop, calls=fused
/// }"#).unwrap();
/// let analysis = tiling::analyze(&module.instr("f").unwrap()).unwrap();
/// // A tile of the reshape's output reads whole rows of p0, or part of one row.
/// assert_eq!(
///     analysis.constraints().to_string(),
///     "d0 mod 8 in [0, 0] || 8 mod d0 in [0, 0]"
/// );
/// let tiled = analysis.tiled(&[16]).unwrap();
/// assert_eq!(tiled.num_programs(), 2);
/// assert_eq!(
///     tiled.to_string(),
///     "p0: tile_sizes=(2, 8), tile_strides=(1, 1), \
///      tile_offsets_indexing=(pid_0) -> (pid_0 * 2, 0), domain: pid_0 in [0, 1]\n\
///      r: tile_sizes=(16), tile_strides=(1), \
///      tile_offsets_indexing=(pid_0) -> (pid_0 * 16), domain: pid_0 in [0, 1]\n"
/// );
/// ```
pub fn analyze(fusion: &InstrRef<'_>) -> Result<SymbolicTileAnalysis, TilingError> {
    let module = fusion.module();
    let comp_id = fused_computation(fusion)?;
    let comp = module.computation(comp_id);
    let root_ids = roots(comp)?;
    let root_dims = match root_ids.first() {
        Some(&r) => comp.instr(r).shape().dims().to_vec(),
        None => return Err(not_tileable("the fusion has no outputs")),
    };
    let mut maps: HashMap<InstrId, BTreeMap<String, IndexedMap>> = HashMap::new();
    let extra = extra_roots(comp, &root_ids, &root_dims)?;
    for &r in &root_ids {
        if extra.iter().any(|e| e.id == r) {
            continue;
        }
        let id = IndexedMap::plain(affine::IndexingMap::identity(&root_dims));
        maps.entry(r).or_default().insert(id.key(), id);
    }
    let order = comp.def_before_use_order().to_vec();
    for &id in order.iter().rev() {
        let Some(set) = maps.get(&id).cloned() else {
            continue;
        };
        let instr = comp.instr(id);
        if instr.operands().is_empty() {
            continue;
        }
        if instr.shape().is_tuple() {
            return Err(not_tileable(format!(
                "`{}` has a tuple shape inside the fusion",
                instr.name()
            )));
        }
        let handle = module
            .instr_ref(comp_id, id)
            .ok_or_else(|| not_tileable(format!("`{}` is not in the module", instr.name())))?;
        let outs = crate::ragged::output_to_input(&handle)?;
        let Some(grouped) = outs.first() else {
            continue;
        };
        for (j, op_set) in grouped.operands.iter().enumerate() {
            if let OperandIndexing::Undefined(r) = op_set {
                return Err(not_tileable(format!(
                    "`{}` operand {j}: unknown indexing: {r}",
                    instr.name()
                )));
            }
            let Some(&operand) = instr.operands().get(j) else {
                continue;
            };
            for m in set.values() {
                for om in op_set.maps() {
                    let mut c = m.compose(om)?;
                    c.normalize()?;
                    if c.map.is_undefined() {
                        return Err(not_tileable(format!(
                            "`{}` operand {j}: the composed map is UNDEFINED",
                            instr.name()
                        )));
                    }
                    if c.map.is_known_empty() {
                        continue;
                    }
                    maps.entry(operand).or_default().insert(c.key(), c);
                }
            }
        }
    }
    let bounds = size_bounds(&bounds_of(&root_dims));
    let mut instructions = Vec::new();
    let mut constraints = ConstraintExpr::always();
    for &id in &order {
        let Some(set) = maps.get(&id) else { continue };
        let name = comp.instr(id).name().to_string();
        let element_bytes = comp
            .instr(id)
            .shape()
            .element_type()
            .and_then(|t| t.byte_width())
            .map_or(0, i64::from);
        for m in set.values() {
            let tile =
                SymbolicTile::derive(&m.map).map_err(|r| not_tileable(format!("`{name}`: {r}")))?;
            let before = constraints.clone();
            constraints = constraints.and(tile.constraints());
            constraints = constraints.and(&runtime_constraints(&name, m)?);
            if constraints != before {
                constraints.simplify(&bounds);
            }
            instructions.push(TiledInstruction {
                name: name.clone(),
                id,
                map: m.clone(),
                tile,
                element_bytes,
            });
        }
    }
    constraints.simplify(&bounds);
    if let Some(e) = extra.iter().find(|e| !maps.contains_key(&e.id)) {
        return Err(not_tileable(format!(
            "the output `{}` differs in shape from the first and is not read by it",
            e.name
        )));
    }
    if constraints.is_never() {
        return Err(not_tileable(
            "no tile sizes satisfy the constraints of every tile",
        ));
    }
    Ok(SymbolicTileAnalysis {
        fusion: fusion.name().to_string(),
        root_dims,
        instructions,
        constraints,
        extra,
    })
}

/// `d_i in [1, 1]` for every root dimension a runtime variable of `m` depends on; an error
/// when one depends on a range variable (it would vary within a tile).
fn runtime_constraints(name: &str, m: &IndexedMap) -> Result<ConstraintExpr, TilingError> {
    let mut cs = Vec::new();
    for (k, rv) in m.runtime.iter().enumerate() {
        if !m.map.results().iter().any(|e| {
            e.uses_kind(VarKind::Runtime) && e.variables().contains(&affine::Var::runtime(k as u32))
        }) {
            continue;
        }
        for e in rv.map.results() {
            for v in e.variables() {
                match v.kind {
                    VarKind::Dim => {
                        let c = Constraint::new(Expr::dim(v.index), 1, 1);
                        if !cs.contains(&c) {
                            cs.push(c);
                        }
                    }
                    VarKind::Range => {
                        return Err(not_tileable(format!(
                            "`{name}`: runtime value rt{k} varies within a tile"
                        )))
                    }
                    VarKind::Runtime => {}
                }
            }
        }
    }
    Ok(if cs.is_empty() {
        ConstraintExpr::always()
    } else {
        ConstraintExpr::all_of(cs)
    })
}

/// The computation `fusion` calls, or [`TilingError::NotAFusion`] when it calls none of
/// the module's computations.
pub(crate) fn fused_computation(fusion: &InstrRef<'_>) -> Result<hlo::CompId, TilingError> {
    let module = fusion.module();
    fusion
        .instr()
        .calls()
        .filter(|c| module.get_computation(*c).is_some())
        .ok_or_else(|| TilingError::NotAFusion(fusion.name().to_string()))
}
