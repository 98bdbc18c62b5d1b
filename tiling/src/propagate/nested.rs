//! The tiled computation of a fusion by op-by-op propagation, with nested tilings: the
//! root tiled by concrete sizes, and the own dimensions of chosen instructions (a dot's
//! contracting dimensions, a reduce's reduced dimensions) tiled by sizes of their own,
//! walked inside each program (by default the tile offsets are those of its first step; in
//! XLA's regions mode, [`TilingMode::Regions`], the instructions under a nested tiling are
//! numbered over programs × steps). Own dimensions not given are read whole (one step).

use std::collections::HashMap;

use affine::{Expr, IndexingMap, Interval, Var, VarKind};
use hlo::{InstrId, InstrRef};

use super::ops::to_operands;
use super::regions::{tile_ids, TilingMode};
use super::space::{own_dims, TilingSpace};
use super::tile::Tile;
use crate::tiled::{check_sizes, ConcreteTiledInstruction, TiledComputation};
use crate::TilingError;

fn not_tileable(reason: impl Into<String>) -> TilingError {
    TilingError::NotTileable(reason.into())
}

/// The tiled computation of `fusion` for root tile sizes `sizes` and nested tile sizes
/// `nested` (instruction name, one size per own dimension), by propagating the root tile
/// through the fused computation. Fails with [`TilingError::BadTileSizes`] for sizes of the
/// wrong count or below 1, or a nested name that has no own dimensions; with
/// [`TilingError::NotTileable`] where some tile cannot be propagated, or the roots of a
/// multi-output fusion (a `tuple` root) differ in shape.
pub fn tiled_by_propagation(
    fusion: &InstrRef<'_>,
    sizes: &[i64],
    nested: &[(String, Vec<i64>)],
) -> Result<TiledComputation, TilingError> {
    tiled_by_propagation_with(fusion, sizes, nested, TilingMode::FirstStep)
}

/// [`tiled_by_propagation`] with the program numbering of `mode`: in
/// [`TilingMode::Regions`], every tiled instruction reached through the operands of a dot or
/// reduce with own dimensions has program ids over programs × the steps of those dimensions
/// (nested owners multiply their steps, the outermost the most significant), and the offsets
/// of that program's step; [`TilingMode::FirstStep`] is [`tiled_by_propagation`].
pub fn tiled_by_propagation_with(
    fusion: &InstrRef<'_>,
    sizes: &[i64],
    nested: &[(String, Vec<i64>)],
    mode: TilingMode,
) -> Result<TiledComputation, TilingError> {
    let module = fusion.module();
    let comp_id = crate::analysis::fused_computation(fusion)?;
    let comp = module.computation(comp_id);
    let roots = roots(comp)?;
    let root_dims = roots
        .first()
        .map(|&r| comp.instr(r).shape().dims().to_vec())
        .ok_or_else(|| not_tileable("the fusion has no outputs"))?;
    if let Some(&r) = roots
        .iter()
        .find(|&&r| comp.instr(r).shape().dims() != root_dims.as_slice())
    {
        return Err(not_tileable(format!(
            "the roots differ in shape (`{}` and `{}`)",
            comp.instr(roots[0]).name(),
            comp.instr(r).name()
        )));
    }
    check_sizes(&root_dims, sizes)?;
    let order = comp.def_before_use_order().to_vec();
    let handle = |id: InstrId| {
        module
            .instr_ref(comp_id, id)
            .ok_or_else(|| not_tileable("an instruction is not in the module"))
    };
    // Own dimensions, users first (the order the walk meets them).
    let mut space = TilingSpace::parallel(&root_dims);
    let mut all_sizes = sizes.to_vec();
    let mut owners = Vec::new();
    for &id in order.iter().rev() {
        let h = handle(id)?;
        let own = own_dims(&h);
        if own.is_empty() {
            continue;
        }
        owners.push(h.name());
        space.add_own_dims(&h);
        match nested.iter().find(|(n, _)| n == h.name()) {
            Some((n, s)) => {
                if s.len() != own.len() {
                    return Err(TilingError::BadTileSizes(format!(
                        "{} sizes for `{n}`, which has {} own dimensions",
                        s.len(),
                        own.len()
                    )));
                }
                all_sizes.extend(s);
            }
            None => all_sizes.extend(own.iter().map(|(e, _)| (*e).max(1))),
        }
    }
    for (n, _) in nested {
        if !owners.contains(&n.as_str()) {
            return Err(TilingError::BadTileSizes(format!(
                "`{n}` is no dot, reduce or convolution of the fusion"
            )));
        }
    }
    space.set_tile_sizes(&all_sizes)?;
    // Every tile with its region: the sequential dimensions of the owners above it.
    let mut tiles: HashMap<InstrId, Vec<(Tile, Vec<usize>)>> = HashMap::new();
    for &r in &roots {
        tiles.insert(r, vec![(space.root_tile(), Vec::new())]);
    }
    for &id in order.iter().rev() {
        let Some(ts) = tiles.get(&id).cloned() else {
            continue;
        };
        let h = handle(id)?;
        if h.instr().operands().is_empty() {
            continue;
        }
        for (t, region) in ts {
            let mut inner = region.clone();
            inner.extend(
                (0..space.dims.len())
                    .filter(|&i| space.dims[i].owner.is_some_and(|(o, _)| o == id)),
            );
            for (j, o) in to_operands(&mut space, &h, 0, &t)?.into_iter().enumerate() {
                let o = o.map_err(|r| not_tileable(format!("`{}` operand {j}: {r}", h.name())))?;
                if let Some(&op) = h.instr().operands().get(j) {
                    let list = tiles.entry(op).or_default();
                    let entry = (o, inner.clone());
                    if !list.contains(&entry) {
                        list.push(entry);
                    }
                }
            }
        }
    }
    concrete(&space, &root_dims, sizes, &order, comp, &tiles, mode)
}

/// The roots of a fused computation: the operands of a `tuple` root (a multi-output
/// fusion, every root tiled alike), else the root; arrays only.
fn roots(comp: &hlo::Computation) -> Result<Vec<InstrId>, TilingError> {
    let root = comp.instr(comp.root());
    let roots = if root.opcode() == hlo::Opcode::Tuple {
        root.operands().to_vec()
    } else {
        vec![comp.root()]
    };
    match roots.iter().find(|&&r| comp.instr(r).shape().is_tuple()) {
        Some(&r) => Err(not_tileable(format!(
            "the root `{}` has a tuple shape",
            comp.instr(r).name()
        ))),
        None => Ok(roots),
    }
}

/// Evaluates the propagated tiles for the space's concrete sizes, program by program.
fn concrete(
    space: &TilingSpace,
    root_dims: &[i64],
    sizes: &[i64],
    order: &[InstrId],
    comp: &hlo::Computation,
    tiles: &HashMap<InstrId, Vec<(Tile, Vec<usize>)>>,
    mode: TilingMode,
) -> Result<TiledComputation, TilingError> {
    let counts: Vec<i64> = root_dims
        .iter()
        .zip(sizes)
        .map(|(&d, &s)| affine::arith::ceil_div(d, s).unwrap_or(1))
        .collect();
    let (_, num_programs) = tile_ids(space, &counts, &[], TilingMode::FirstStep)?;
    let ts: Vec<Expr> = (0..space.dims.len()).map(|i| space.tile_size(i)).collect();
    let rt: Vec<Interval> = space.rt.iter().map(|r| r.bounds).collect();
    let mut instructions = Vec::new();
    for &id in order {
        let Some(list) = tiles.get(&id) else { continue };
        let name = comp.instr(id).name().to_string();
        for (t, region) in list {
            let (tid, programs) = tile_ids(space, &counts, region, mode)?;
            let mut at = |v: Var| -> Option<Expr> {
                match v.kind {
                    VarKind::Dim => tid.get(v.index as usize).copied(),
                    VarKind::Range => ts.get(v.index as usize).copied(),
                    VarKind::Runtime => None,
                }
            };
            let constant = |e: Expr, what: &str| -> Result<i64, TilingError> {
                space
                    .simplify(e.substitute(&mut |v| {
                        (v.kind == VarKind::Range)
                            .then(|| ts.get(v.index as usize).copied())
                            .flatten()
                    }))
                    .as_const()
                    .ok_or_else(|| {
                        not_tileable(format!("`{name}`: its tile {what} `{e}` is not constant"))
                    })
            };
            let tile_sizes = t
                .dims
                .iter()
                .map(|d| constant(d.size, "size"))
                .collect::<Result<Vec<_>, _>>()?;
            let tile_strides = t
                .dims
                .iter()
                .map(|d| constant(d.stride, "stride"))
                .collect::<Result<Vec<_>, _>>()?;
            let results = t
                .dims
                .iter()
                .map(|d| d.offset.substitute(&mut at))
                .collect();
            let mut offsets = IndexingMap::new(
                vec![Interval::new(0, programs - 1)],
                vec![],
                rt.clone(),
                results,
                vec![],
            )?;
            offsets.simplify();
            offsets.remove_unused_symbols();
            let tiled = ConcreteTiledInstruction {
                name: name.clone(),
                tile_sizes,
                tile_strides,
                tile_offsets: offsets,
            };
            if !instructions.contains(&tiled) {
                instructions.push(tiled);
            }
        }
    }
    Ok(TiledComputation {
        tile_sizes: sizes.to_vec(),
        num_programs,
        instructions,
    })
}
