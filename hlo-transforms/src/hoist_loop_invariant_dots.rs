//! A counted loop's per-step input projection as one product before the loop: in a body
//! that computes `dot(dynamic-slice(X, i), W)` with `X` and `W` passed through the loop
//! unchanged and `i` the induction variable (`0, 1, .., T-1`), the product `dot(X, W)` of
//! all `T` steps runs once before the loop (one large GEMM instead of `T` small ones; an
//! RNN's input projection over the sequence) and the body reads its step's rows by a
//! dynamic-slice of the product, passed in as a new state element.
//!
//! Exact: every element of the product is the same sum of the same products as the
//! in-loop dot's. Taken only when the loop reads every row of the product (the sliced
//! dimension has exactly `T` rows, one per step), so no extra work is done, and the
//! product stays within [`MAX_PRODUCT_BYTES`]. The sliced dimension must be a free
//! dimension of the dot (neither contracted nor batch); the slice takes one row along it
//! (optionally dropped by a reshape) and everything else whole (starts constant 0). The
//! loop must count `i` from constant 0 by 1 while `i < N` (condition root
//! `compare(i, N), direction=LT`), and, as for while-loop invariant code motion, its
//! body and condition are called by it only and its state is read through
//! get-tuple-elements only. The product runs even when the loop runs no step (`N <= 0`
//! cannot pass the row count check, since `X` has `N >= 1` rows).

use std::collections::HashSet;

use hlo::attrs::{AttrName, AttrValue, ComparisonDirection};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::{Layout, Opcode, Shape};

use crate::extendable_loop::{extendable_loop, while_loops};
use crate::while_loop_constant_sinking::invariant;

/// The largest product hoisted, in bytes: the product lives through the whole loop.
pub const MAX_PRODUCT_BYTES: i64 = 64 << 20;

/// The pass (`hoist-loop-invariant-dots`).
#[derive(Debug, Default)]
pub struct HoistLoopInvariantDots;

impl Pass for HoistLoopInvariantDots {
    fn name(&self) -> &str {
        "hoist-loop-invariant-dots"
    }

    fn description(&self) -> &str {
        "a counted loop's dot of its step's rows of an invariant array with an invariant operand as one product before the loop"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let whiles = while_loops(module);
        // The rewrite adds no computation and no call: the call sites stay valid.
        let sites = call_graph::call_sites(module);
        let mut changed = false;
        for (cid, wid) in whiles {
            while let Some(h) = find(module, &sites, cid, wid) {
                apply(module, cid, wid, &h, &mut names);
                changed = true;
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

/// One dot to hoist out of a loop body.
struct Hoist {
    /// The dot in the body.
    dot: InstrId,
    /// The state elements of `X` and `W`.
    x_elem: usize,
    w_elem: usize,
    /// The hoisted dot's contracting dimensions of `X`.
    x_contracting: Vec<i64>,
    /// The product's shape and the dimension of its steps.
    product: Shape,
    step_dim: usize,
    /// Whether the in-loop dot had the step dimension dropped (its lhs was a reshape).
    dropped: bool,
    /// The body's induction variable and a zero index of the same type (the slice's).
    iv: InstrId,
    zero: InstrId,
}

/// The integer value of a scalar constant.
fn int_constant(c: &Computation, id: InstrId) -> Option<i64> {
    let i = c.instr(id);
    if i.opcode != Opcode::Constant || !i.shape.is_scalar() {
        return None;
    }
    if !i.shape.element_type()?.is_integral() {
        return None;
    }
    let v = i.literal()?.as_array()?.get_f64(0)?;
    (v.fract() == 0.0 && v.abs() < 2f64.powi(53)).then_some(v as i64)
}

/// `get-tuple-element(p, k)`'s `k`, when `id` is one of parameter `p`.
fn gte_of(c: &Computation, id: InstrId, p: InstrId) -> Option<usize> {
    let i = c.instr(id);
    (i.opcode == Opcode::GetTupleElement && i.operands[0] == p)
        .then(|| i.tuple_index())
        .flatten()
        .and_then(|t| usize::try_from(t).ok())
}

/// What `id` reads through get-tuple-elements of tuples (an earlier hoist's new initial
/// state reads the old one's elements so).
fn through_tuples(c: &Computation, mut id: InstrId) -> InstrId {
    loop {
        let i = c.instr(id);
        let t = c.instr(i.operands.first().copied().unwrap_or(id));
        let next = (i.opcode == Opcode::GetTupleElement && t.opcode == Opcode::Tuple)
            .then(|| i.tuple_index())
            .flatten()
            .and_then(|k| t.operands.get(usize::try_from(k).ok()?).copied());
        match next {
            Some(n) => id = n,
            None => return id,
        }
    }
}

/// The induction variable's state element and the trip count of a loop counting it from
/// 0 by 1 while below a constant.
fn counted(module: &Module, c: &Computation, wid: InstrId) -> Option<(usize, i64)> {
    let w = c.instr(wid);
    let (cond, body) = (w.while_condition()?, w.while_body()?);
    let (k, b) = (module.computation(cond), module.computation(body));
    let (kp, bp) = (*k.params.first()?, *b.params.first()?);
    let root = k.root_instr();
    if root.opcode != Opcode::Compare
        || root.comparison_direction() != Some(ComparisonDirection::Lt)
    {
        return None;
    }
    let t = gte_of(k, root.operands[0], kp)?;
    let n = int_constant(k, root.operands[1])?;
    let next = b.instr(*b.root_instr().operands.get(t)?);
    if next.opcode != Opcode::Add {
        return None;
    }
    let (a0, a1) = (next.operands[0], next.operands[1]);
    let steps_by_one = (gte_of(b, a0, bp) == Some(t) && int_constant(b, a1) == Some(1))
        || (gte_of(b, a1, bp) == Some(t) && int_constant(b, a0) == Some(1));
    let init = c.instr(w.operands[0]);
    let starts_at_0 = init.opcode == Opcode::Tuple
        && init
            .operands
            .get(t)
            .is_some_and(|&s| int_constant(c, through_tuples(c, s)) == Some(0));
    (steps_by_one && starts_at_0 && n > 0).then_some((t, n))
}

/// The next dot of loop `wid`'s body that can be hoisted.
fn find(
    module: &Module,
    sites: &[Vec<(CompId, InstrId)>],
    cid: CompId,
    wid: InstrId,
) -> Option<Hoist> {
    let l = extendable_loop(module, sites, cid, wid)?;
    let (b, bp) = (module.computation(l.body), l.body_param);
    let c = module.computation(cid);
    let (t, trip) = counted(module, c, wid)?;
    b.instructions()
        .filter(|(_, i)| i.opcode == Opcode::Dot)
        .find_map(|(id, _)| candidate(b, bp, id, t, trip))
}

/// Dot `id` of body `b` as a [`Hoist`], when it is one.
fn candidate(b: &Computation, bp: InstrId, id: InstrId, t: usize, trip: i64) -> Option<Hoist> {
    let dot = b.instr(id);
    let dn = dot.dot_dimension_numbers();
    if !dn.lhs_batch_dims.is_empty() || dot.operands.len() != 2 {
        return None;
    }
    let w_elem = gte_of(b, dot.operands[1], bp).filter(|&e| invariant(b, e))?;
    // The lhs: a dynamic-slice, or a reshape dropping its unit step dimension.
    let lhs = b.instr(dot.operands[0]);
    let (ds_id, dropped) = if lhs.opcode == Opcode::Reshape {
        (lhs.operands[0], true)
    } else {
        (dot.operands[0], false)
    };
    let ds = b.instr(ds_id);
    if ds.opcode != Opcode::DynamicSlice {
        return None;
    }
    let x_elem = gte_of(b, ds.operands[0], bp).filter(|&e| invariant(b, e))?;
    let x = b.instr(ds.operands[0]).shape.as_array()?.dims().to_vec();
    let sizes = ds.dynamic_slice_sizes()?;
    if ds.operands.len() != x.len() + 1 || sizes.len() != x.len() {
        return None;
    }
    // Exactly one start is the induction variable, with one row of `trip` taken; the
    // others are constant 0 with the whole dimension taken.
    let (mut step, mut zero) = (None, None);
    for (d, &s) in ds.operands[1..].iter().enumerate() {
        if gte_of(b, s, bp) == Some(t) {
            if step.is_some() || sizes[d] != 1 || x[d] != trip {
                return None;
            }
            step = Some(d);
        } else if int_constant(b, s) == Some(0) && sizes[d] == x[d] {
            zero = Some(s);
        } else {
            return None;
        }
    }
    let (d, zero) = (step?, zero?);
    let iv = ds.operands[1 + d];
    if b.instr(iv).shape != b.instr(zero).shape {
        return None;
    }
    // The dot's lhs dimensions as `X`'s.
    let to_x = |j: i64| if dropped && j >= d as i64 { j + 1 } else { j };
    if dropped {
        let mut want = x.clone();
        want.remove(d);
        if lhs.shape.dims() != want.as_slice() {
            return None;
        }
    }
    let x_contracting: Vec<i64> = dn.lhs_contracting_dims.iter().map(|&j| to_x(j)).collect();
    if x_contracting.contains(&(d as i64)) {
        return None;
    }
    // The product: `X`'s free dimensions in order, then the rhs's.
    let free: Vec<usize> = (0..x.len())
        .filter(|&j| !x_contracting.contains(&(j as i64)))
        .collect();
    let step_dim = free.iter().position(|&j| j == d)?;
    let w_dims = b.instr(dot.operands[1]).shape.as_array()?.dims().to_vec();
    let mut dims: Vec<i64> = free.iter().map(|&j| x[j]).collect();
    dims.extend(
        (0..w_dims.len())
            .filter(|j| !dn.rhs_contracting_dims.contains(&(*j as i64)))
            .map(|j| w_dims[j]),
    );
    let ty = dot.shape.element_type()?;
    let bytes = i64::from(ty.byte_width()?) * dims.iter().product::<i64>();
    if bytes > MAX_PRODUCT_BYTES {
        return None;
    }
    // The in-loop dot's result must be the product's step rows.
    let mut rows = dims.clone();
    if dropped {
        rows.remove(step_dim);
    } else {
        rows[step_dim] = 1;
    }
    if dot.shape.dims() != rows.as_slice() {
        return None;
    }
    let rank = dims.len();
    let layout = dot.shape.layout().map(|_| Layout::row_major(rank));
    let product = Shape::array_with(ty, dims, vec![false; rank], layout);
    Some(Hoist {
        dot: id,
        x_elem,
        w_elem,
        x_contracting,
        product,
        step_dim,
        dropped,
        iv,
        zero,
    })
}

/// Computes the product before loop `wid` of computation `cid`, appends it to the state,
/// and replaces the body's dot by its step's rows.
fn apply(module: &mut Module, cid: CompId, wid: InstrId, h: &Hoist, names: &mut edit::NameGen) {
    let c = module.computation(cid);
    let w = c.instr(wid);
    let (cond, body) = (
        w.while_condition().expect("checked by find"),
        w.while_body().expect("checked by find"),
    );
    let init = w.operands[0];
    let old_shape = w.shape().clone();
    let n = old_shape.tuple_shapes().len();
    let init_shape = c.instr(init).shape().clone();
    let b = module.computation(body);
    let bp = b.params[0];
    let kp = module.computation(cond).params[0];
    let mut dot = b.instr(h.dot).clone();
    let dot_shape = dot.shape().clone();
    // Before the loop: the product of the initial `X` and `W`.
    let comp = module.computation_mut(cid);
    let gte = |comp: &mut Computation, names: &mut edit::NameGen, e: usize| {
        let g = Instruction::new(
            names.fresh(&format!("{}.{e}", comp.instr(init).name)),
            Opcode::GetTupleElement,
            init_shape.tuple_shapes()[e].clone(),
            vec![init],
        )
        .with_attr(AttrName::Index, AttrValue::Int(e as i64));
        edit::add(comp, g)
    };
    let x = gte(comp, names, h.x_elem);
    let wv = gte(comp, names, h.w_elem);
    dot.users.clear();
    dot.name = names.fresh(&format!("{}.all_steps", dot.name));
    dot.operands = vec![x, wv];
    dot.attrs
        .retain(|a| a.name != AttrName::ControlPredecessors);
    dot.set_attr(
        AttrName::LhsContractingDims,
        AttrValue::IntList(h.x_contracting.clone()),
    );
    dot.set_shape(h.product.clone());
    let product = edit::add(comp, dot);
    // The new initial state: the old elements, then the product.
    let mut elements: Vec<InstrId> = (0..n).map(|e| gte(comp, names, e)).collect();
    elements.push(product);
    let mut state: Vec<Shape> = old_shape.tuple_shapes().to_vec();
    state.push(h.product.clone());
    let state = Shape::tuple(state);
    let mut init_elems: Vec<Shape> = init_shape.tuple_shapes().to_vec();
    init_elems.push(h.product.clone());
    let new_init = edit::add(
        comp,
        Instruction::new(
            names.fresh(&format!("{}.projected", comp.instr(init).name)),
            Opcode::Tuple,
            Shape::tuple(init_elems),
            elements,
        ),
    );
    let _ = comp.set_operand(wid, 0, new_init);
    comp.instr_mut(wid).set_shape(state.clone());
    edit::repair_order(comp);
    module
        .computation_mut(cond)
        .instr_mut(kp)
        .set_shape(state.clone());
    // In the body: the step's rows of the product, passed through.
    let bc = module.computation_mut(body);
    bc.instr_mut(bp).set_shape(state.clone());
    let all = edit::add(
        bc,
        Instruction::new(
            names.fresh("all_steps"),
            Opcode::GetTupleElement,
            h.product.clone(),
            vec![bp],
        )
        .with_attr(AttrName::Index, AttrValue::Int(n as i64)),
    );
    let mut sizes = h.product.dims().to_vec();
    sizes[h.step_dim] = 1;
    let mut starts = vec![h.zero; sizes.len()];
    starts[h.step_dim] = h.iv;
    let mut operands = vec![all];
    operands.extend(starts);
    let ty = h.product.element_type().expect("an array product");
    let layout = h.product.layout().cloned();
    let rows_shape = Shape::array_with(ty, sizes.clone(), vec![false; sizes.len()], layout);
    let rows = edit::add(
        bc,
        Instruction::new(
            names.fresh("step_rows"),
            Opcode::DynamicSlice,
            rows_shape,
            operands,
        )
        .with_attr(AttrName::DynamicSliceSizes, AttrValue::IntList(sizes)),
    );
    let rows = if h.dropped {
        edit::add(
            bc,
            Instruction::new(
                names.fresh("step_rows"),
                Opcode::Reshape,
                dot_shape,
                vec![rows],
            ),
        )
    } else {
        rows
    };
    edit::replace_uses(bc, h.dot, rows);
    let root = bc.root;
    bc.instr_mut(root).operands.push(all);
    bc.instr_mut(root).set_shape(state);
    bc.recompute_users();
    let dead: HashSet<InstrId> = [h.dot].into_iter().collect();
    edit::remove_instructions(bc, &dead);
    edit::repair_order(bc);
}

#[cfg(test)]
#[path = "hoist_loop_invariant_dots_tests.rs"]
mod tests;
