//! Propagation of the ops that move elements along some dimensions and leave others
//! alone: slice, pad, concatenate, reverse, sort, dynamic-slice, dynamic-update-slice,
//! reduce-window, select-and-scatter, gather and scatter. A dimension the op leaves
//! alone (the result's element `i` along it is the operand's element `i`: a full slice,
//! no padding, not the concatenated, reversed or sorted dimension, a full dynamic slice
//! or gather slice or scatter window, a window of one) keeps its tiles; a dimension the
//! op reads across is made whole first (a split window dimension of a reduce-window
//! exchanges halos instead, `halo.rs`). The operands that the op reads together (a
//! concatenate's, a sort's, an update and its target) are resharded to the most split
//! one's tiles; scalars (pad and init values, indices) stay whole, and so do a gather's
//! indices where its operand leads (the indices' batch dimensions keep their tiles when
//! they lead).

use hlo::{Instruction, Opcode};

use crate::context::{text, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::error::SpmdError;
use crate::halo::trivial;
use crate::tiling::Tiling;

/// An operand the op reads element for element along some dimensions: `map[d]` is the
/// result dimension operand dimension `d` is identical to (`None`: read across, whole).
pub(crate) struct Data {
    pub operand: usize,
    pub map: Vec<Option<usize>>,
}

impl Data {
    /// Operand `operand` of rank `rank` whose dimensions in `keep` map to the same result
    /// dimensions.
    fn same(operand: usize, rank: usize, keep: impl Fn(usize) -> bool) -> Data {
        Data {
            operand,
            map: (0..rank).map(|d| keep(d).then_some(d)).collect(),
        }
    }
}

/// The rule of the ops this file takes, `None` for other ops.
pub(crate) fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<Decision, SpmdError>> {
    let rank = |i: usize| ctx.operand_dims(instr, i).len();
    let data = match instr.opcode() {
        Opcode::Slice => {
            let dims = ctx.operand_dims(instr, 0);
            let slice = instr.slice()?;
            vec![Data::same(0, dims.len(), |d| {
                slice
                    .get(d)
                    .is_some_and(|s| s.start == 0 && s.limit == dims[d] && s.stride == 1)
            })]
        }
        Opcode::Pad => {
            let padding = instr.padding()?;
            vec![Data::same(0, rank(0), |d| {
                padding
                    .dims
                    .get(d)
                    .is_some_and(|p| p.low == 0 && p.high == 0 && p.interior == 0)
            })]
        }
        Opcode::Concatenate => {
            let along = *instr.dimensions()?.first()? as usize;
            (0..instr.operands().len())
                .map(|i| Data::same(i, rank(i), |d| d != along))
                .collect()
        }
        Opcode::Reverse => {
            let reversed = instr.dimensions()?.to_vec();
            vec![Data::same(0, rank(0), |d| !reversed.contains(&(d as i64)))]
        }
        Opcode::Sort => {
            let along = *instr.dimensions()?.first()? as usize;
            (0..instr.operands().len())
                .map(|i| Data::same(i, rank(i), |d| d != along))
                .collect()
        }
        Opcode::DynamicSlice => {
            let dims = ctx.operand_dims(instr, 0);
            let sizes = instr.dynamic_slice_sizes()?.to_vec();
            vec![Data::same(0, dims.len(), |d| {
                sizes.get(d) == Some(&dims[d])
            })]
        }
        Opcode::DynamicUpdateSlice => {
            let dims = ctx.operand_dims(instr, 0);
            let update = ctx.operand_dims(instr, 1);
            let full = |d: usize| update.get(d) == Some(&dims[d]);
            vec![
                Data::same(0, dims.len(), full),
                Data::same(1, dims.len(), full),
            ]
        }
        Opcode::ReduceWindow => {
            let window = instr.window()?.clone();
            if let Some(d) = crate::halo::reduce_window(ctx, instr, &window) {
                return Some(d);
            }
            let n = instr.operands().len() / 2;
            (0..n)
                .map(|i| Data::same(i, rank(i), |d| window.dims.get(d).is_some_and(trivial)))
                .collect()
        }
        Opcode::SelectAndScatter => {
            let window = instr.window()?.clone();
            let keep = |d: usize| window.dims.get(d).is_some_and(trivial);
            vec![Data::same(0, rank(0), keep), Data::same(1, rank(1), keep)]
        }
        Opcode::Gather => gather(ctx, instr)?,
        Opcode::Scatter => scatter(ctx, instr)?,
        _ => return None,
    };
    Some(pass_through(ctx, instr, &data))
}

/// The decision for `instr` whose `data` operands keep their tiles on the dimensions they
/// map onto the result: the most split of them (restricted to those dimensions) leads,
/// the others are resharded to it, other operands are made whole.
pub(crate) fn pass_through(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    data: &[Data],
) -> Result<Decision, SpmdError> {
    let out_rank = match instr.shape().is_tuple() {
        true => instr
            .shape()
            .tuple_shapes()
            .first()
            .map_or(0, |s| s.dims().len()),
        false => instr.shape().dims().len(),
    };
    let mut lead: Option<Tiling> = None;
    for dt in data {
        let t = ctx.operand_array(instr, dt.operand)?;
        let across: Vec<usize> = (0..dt.map.len()).filter(|&d| dt.map[d].is_none()).collect();
        let mut from = vec![None; out_rank];
        for (d, m) in dt.map.iter().enumerate() {
            if let Some(o) = m {
                from[*o] = Some(d);
            }
        }
        let candidate = t.gathered(&across).remap(&from);
        if lead
            .as_ref()
            .is_none_or(|l| candidate.tile_count() > l.tile_count())
        {
            lead = Some(candidate);
        }
    }
    let out = lead.unwrap_or_else(|| Tiling::replicated(out_rank, ctx.devices));
    let mut operands = Vec::with_capacity(instr.operands().len());
    for i in 0..instr.operands().len() {
        let now = ctx.operand_array(instr, i)?;
        let want = match data.iter().find(|dt| dt.operand == i) {
            Some(dt) => out.remap(&dt.map),
            None => Tiling::replicated(now.tiles.len(), ctx.devices),
        };
        operands.push((*now != want).then_some(want));
    }
    let moved = operands.iter().filter(|o| o.is_some()).count();
    let op = instr.opcode().as_str();
    let mut why = match out.is_replicated() {
        true => format!("{op}: no split dimension it leaves alone; runs whole"),
        false => format!(
            "{op}: dimensions it leaves alone keep their tiles: {}",
            text(&out)
        ),
    };
    if moved > 0 {
        why.push_str(&format!(
            "; {moved} operand(s) resharded (dimensions it reads across made whole)"
        ));
    }
    let value = match instr.shape().is_tuple() {
        true => ValueTiling::Tuple(vec![out; instr.shape().tuple_shapes().len()]),
        false => ValueTiling::Array(out),
    };
    Ok(Decision {
        out: value.clone(),
        local: value,
        operands,
        tuple_operands: Vec::new(),
        partial: None,
        window: None,
        halos: Vec::new(),
        called: Vec::new(),
        why,
    })
}

/// A gather's operand dimensions it slices whole (a full slice, not collapsed, not a
/// batching dimension: every index reads all of it) map to their offset dimensions; the
/// indices' batch dimensions map to the result's batch dimensions (the index vector and
/// batching dimensions stay whole).
fn gather(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Vec<Data>> {
    let dn = instr.gather_dimension_numbers()?;
    let sizes = instr.gather_slice_sizes()?.to_vec();
    let dims = ctx.operand_dims(instr, 0);
    let indices_rank = ctx.operand_dims(instr, 1).len();
    let out_rank = instr.shape().dims().len();
    let has = |v: &[i64], d: usize| v.contains(&(d as i64));
    let mut operand = vec![None; dims.len()];
    let windows = (0..dims.len())
        .filter(|&d| !has(&dn.collapsed_slice_dims, d) && !has(&dn.operand_batching_dims, d));
    for (k, d) in windows.enumerate() {
        if sizes.get(d) == Some(&dims[d]) {
            operand[d] = dn.offset_dims.get(k).map(|&o| o as usize);
        }
    }
    let batch_out = (0..out_rank).filter(|&o| !has(&dn.offset_dims, o));
    let batch_in = (0..indices_rank).filter(|&d| d as i64 != dn.index_vector_dim);
    let mut indices = vec![None; indices_rank];
    for (d, o) in batch_in.zip(batch_out) {
        if !has(&dn.start_indices_batching_dims, d) {
            indices[d] = Some(o);
        }
    }
    Some(vec![
        Data {
            operand: 0,
            map: operand,
        },
        Data {
            operand: 1,
            map: indices,
        },
    ])
}

/// A scatter's operand dimensions its update windows cover whole (a full window, not
/// inserted, not a batching dimension) keep their tiles, in its operands and the
/// matching window dimensions of its updates; the indices stay whole.
fn scatter(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Vec<Data>> {
    let dn = instr.scatter_dimension_numbers()?;
    let n = (instr.operands().len() - 1) / 2;
    let dims = ctx.operand_dims(instr, 0);
    let updates = ctx.operand_dims(instr, n + 1);
    let has = |v: &[i64], d: usize| v.contains(&(d as i64));
    let mut operand = vec![None; dims.len()];
    let mut update = vec![None; updates.len()];
    let windows = (0..dims.len())
        .filter(|&d| !has(&dn.inserted_window_dims, d) && !has(&dn.input_batching_dims, d));
    for (k, d) in windows.enumerate() {
        let Some(&u) = dn.update_window_dims.get(k) else {
            continue;
        };
        if updates.get(u as usize) == Some(&dims[d]) {
            operand[d] = Some(d);
            update[u as usize] = Some(d);
        }
    }
    let mut data: Vec<Data> = (0..n)
        .map(|i| Data {
            operand: i,
            map: operand.clone(),
        })
        .collect();
    data.extend((0..n).map(|i| Data {
        operand: n + 1 + i,
        map: update.clone(),
    }));
    Some(data)
}
