//! A dot of gathered rows as a gather of the dot's rows: `dot(gather(X, I), W)` where the
//! gather picks `N` whole rows of a `[M, K]` matrix `X` and the dot contracts the rows'
//! `K` with `W` becomes `gather(dot(X, W), I)` when `M < N` — the product of every source
//! row once instead of once per pick. A graph network's messages (`x[src] @ W` over the
//! edges, `M` nodes and `N > M` edges) are this form; so is a dot of gathered rows with a
//! vector (attention logits per edge). Exact: every output element is the same sum of the
//! same products (output row `i` is source row `I[i]`'s, clamped into `[0, M)` as the
//! gather clamps it), only computed once per source row. The gathered side may be either
//! operand; the dot has no batch dimensions and contracts one dimension. Taken only where
//! the gather of the product moves no more than the gather of the rows did (the other
//! side's free extent at most `K`) or the rows are picked at least twice on average.
//!
//! `jnp.take`'s default mode arrives as `select(in_range, gather(X, I), NaN)` (rows of an
//! out-of-range index filled with NaN): with the gathered rows on the left, that becomes
//! `select(in_range, gather(dot(X, W), I), NaN)`, since every product of a NaN row is NaN.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`dot-before-gather`).
#[derive(Debug, Default)]
pub struct DotBeforeGather;

impl Pass for DotBeforeGather {
    fn name(&self) -> &str {
        "dot-before-gather"
    }

    fn description(&self) -> &str {
        "a dot of rows gathered from a smaller matrix as a gather of the dot's rows"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            let dots: Vec<(InstrId, usize)> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Dot)
                .filter_map(|(id, _)| gathered_side(comp, id).map(|side| (id, side)))
                .collect();
            for &(id, side) in &dots {
                rewrite(comp, id, side, &mut names);
            }
            if !dots.is_empty() {
                comp.recompute_users();
                // The replaced dots, and the gathers nothing else reads.
                let mut dead: std::collections::HashSet<InstrId> =
                    dots.iter().map(|&(id, _)| id).collect();
                for &(id, side) in &dots {
                    // The operand (a gather or a NaN-filled select of one), then the gather.
                    let op = comp.instr(id).operands[side];
                    for x in [Some(op), gathered(comp, op, side)].into_iter().flatten() {
                        if comp.root != x && comp.instr(x).users.iter().all(|u| dead.contains(u)) {
                            dead.insert(x);
                        }
                    }
                }
                edit::remove_instructions(comp, &dead);
                edit::repair_order(comp);
                changed = true;
            }
        }
        if changed {
            // The masks and fills the NaN-filled selects leave behind.
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

/// The gather of whole rows that `g` is: `(X, indices)` where `g = gather(X, I)` takes
/// rows of a rank-2 `X` (`slice_sizes={1,K}`, dimension 0 collapsed and indexed, the
/// row's `K` as the result's dimension 1), with one index per row (indices `[N]`, or
/// `[N,1]` with the index vector last).
fn row_gather(comp: &Computation, g: InstrId) -> Option<(InstrId, InstrId)> {
    let gi = comp.instr(g);
    if gi.opcode != Opcode::Gather || gi.operands.len() != 2 {
        return None;
    }
    let (x, idx) = (gi.operands[0], gi.operands[1]);
    let xs = comp.instr(x).shape.as_array()?;
    let is = comp.instr(idx).shape.as_array()?;
    let dn = gi.gather_dimension_numbers()?;
    let k = *xs.dims().get(1)?;
    let one_index = match is.dims() {
        [_] => dn.index_vector_dim == 1,
        [_, 1] => dn.index_vector_dim == 1,
        _ => false,
    };
    (xs.dims().len() == 2
        && one_index
        && dn.offset_dims == [1]
        && dn.collapsed_slice_dims == [0]
        && dn.start_index_map == [0]
        && dn.operand_batching_dims.is_empty()
        && dn.start_indices_batching_dims.is_empty()
        && gi.gather_slice_sizes() == Some(&[1, k][..])
        && gi.shape.dims().get(1) == Some(&k))
    .then_some((x, idx))
}

/// A row gather whose out-of-range rows are filled with NaN: `select(broadcast(m),
/// g, broadcast(NaN))` with `m: pred[N]` along the rows and `g` a [`row_gather`].
/// Returns `(g, m, the NaN scalar)`.
fn nan_filled_rows(comp: &Computation, s: InstrId) -> Option<(InstrId, InstrId, InstrId)> {
    let si = comp.instr(s);
    if si.opcode != Opcode::Select || si.operands.len() != 3 {
        return None;
    }
    let (mb, g, fb) = (si.operands[0], si.operands[1], si.operands[2]);
    let (mbi, fbi) = (comp.instr(mb), comp.instr(fb));
    let dims = |i: &Instruction| match i.attr(&AttrName::Dimensions) {
        Some(AttrValue::IntList(v)) => v.clone(),
        _ => Vec::new(),
    };
    let (m, nan) = (*mbi.operands.first()?, *fbi.operands.first()?);
    let is_nan = comp
        .instr(nan)
        .literal()
        .and_then(|l| l.as_array())
        .and_then(|a| a.get_f64(0))
        .is_some_and(f64::is_nan);
    (mbi.opcode == Opcode::Broadcast
        && dims(mbi) == [0]
        && comp.instr(m).shape.dims().len() == 1
        && fbi.opcode == Opcode::Broadcast
        && comp.instr(nan).shape.dims().is_empty()
        && is_nan
        && row_gather(comp, g).is_some())
    .then_some((g, m, nan))
}

/// The row gather operand `side` of a dot is: the gather itself, or (on the left only) the
/// gather inside a NaN-filled select ([`nan_filled_rows`]).
fn gathered(comp: &Computation, op: InstrId, side: usize) -> Option<InstrId> {
    match row_gather(comp, op) {
        Some(_) => Some(op),
        None if side == 0 => nan_filled_rows(comp, op).map(|(g, _, _)| g),
        None => None,
    }
}

/// Which operand of dot `id` is a row gather the rewrite takes (0 or 1).
fn gathered_side(comp: &Computation, id: InstrId) -> Option<usize> {
    let d = comp.instr(id);
    let dn = d.dot_dimension_numbers();
    if d.operands.len() != 2 || !dn.lhs_batch_dims.is_empty() || !dn.rhs_batch_dims.is_empty() {
        return None;
    }
    (0..2).find(|&side| {
        let (own, other) = match side {
            0 => (&dn.lhs_contracting_dims, &dn.rhs_contracting_dims),
            _ => (&dn.rhs_contracting_dims, &dn.lhs_contracting_dims),
        };
        let Some(g) = gathered(comp, d.operands[side], side) else {
            return false;
        };
        let Some((x, _)) = row_gather(comp, g) else {
            return false;
        };
        let (m, n, k) = (
            comp.instr(x).shape.dims()[0],
            comp.instr(g).shape.dims()[0],
            comp.instr(x).shape.dims()[1],
        );
        let w = comp.instr(d.operands[1 - side]).shape.dims();
        let free: i64 = w.iter().product::<i64>() / k.max(1);
        own[..] == [1]
            && other.len() == 1
            && m < n
            && (free <= k || 2 * m <= n)
            && comp.instr(g).shape.element_type() == d.shape.element_type()
    })
}

/// `dot(.., gather(X, I), ..)` as `gather(dot(.., X, ..), I)`; `side` is the gathered operand.
fn rewrite(comp: &mut Computation, id: InstrId, side: usize, names: &mut NameGen) {
    let d = comp.instr(id).clone();
    let op = d.operands[side];
    let filled = if row_gather(comp, op).is_some() {
        None
    } else {
        nan_filled_rows(comp, op)
    };
    let Some(g) = gathered(comp, op, side) else {
        return;
    };
    let g = comp.instr(g).clone();
    let (x, idx) = (g.operands[0], g.operands[1]);
    let m = comp.instr(x).shape.dims()[0];
    let out = d.shape.as_array().cloned();
    let Some(out) = out else { return };
    // The picked rows' dimension in the dot's result: first (the lhs's free dimension) or
    // last (the rhs's free dimensions follow the lhs's).
    let rank = out.dims().len();
    let p = if side == 0 { 0 } else { rank - 1 };
    let mut dims = out.dims().to_vec();
    dims[p] = m;
    let product_shape = Shape::array_with(
        out.element_type(),
        dims.clone(),
        Vec::new(),
        out.layout().cloned(),
    );
    let mut product = d.clone();
    product.users.clear();
    product.name = names.fresh(&d.name);
    product.operands[side] = x;
    product.set_shape(product_shape);
    let product = edit::add(comp, product);
    let mut slice_sizes = dims;
    slice_sizes[p] = 1;
    let offset_dims: Vec<i64> = (0..rank as i64).filter(|&q| q != p as i64).collect();
    let mut gather = Instruction::new(
        names.fresh(&g.name),
        Opcode::Gather,
        (*d.shape).clone(),
        vec![product, idx],
    )
    .with_attr(AttrName::OffsetDims, AttrValue::IntList(offset_dims))
    .with_attr(
        AttrName::CollapsedSliceDims,
        AttrValue::IntList(vec![p as i64]),
    )
    .with_attr(AttrName::StartIndexMap, AttrValue::IntList(vec![p as i64]))
    .with_attr(AttrName::IndexVectorDim, AttrValue::Int(1))
    .with_attr(AttrName::SliceSizes, AttrValue::IntList(slice_sizes));
    if let Some(sorted) = g.attr(&AttrName::IndicesAreSorted) {
        gather = gather.with_attr(AttrName::IndicesAreSorted, sorted.clone());
    }
    let gather = edit::add(comp, gather);
    let result = match filled {
        None => gather,
        // The rows of out-of-range indices NaN again.
        Some((_, m, nan)) => {
            let pred_shape = Shape::array(hlo::shape::ElementType::Pred, d.shape.dims().to_vec());
            let mask =
                Instruction::new(names.fresh("mask"), Opcode::Broadcast, pred_shape, vec![m])
                    .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![p as i64]));
            let mask = edit::add(comp, mask);
            let fill = Instruction::new(
                names.fresh("fill"),
                Opcode::Broadcast,
                (*d.shape).clone(),
                vec![nan],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(Vec::new()));
            let fill = edit::add(comp, fill);
            let sel = Instruction::new(
                names.fresh(&d.name),
                Opcode::Select,
                (*d.shape).clone(),
                vec![mask, gather, fill],
            );
            edit::add(comp, sel)
        }
    };
    edit::replace_uses(comp, id, result);
}
