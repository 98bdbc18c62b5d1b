//! `ragged-dot` expanded into a dense `dot` (XLA's `RaggedDotRewriter`, JAX's reference
//! implementation), so that backends without a grouped GEMM run it: the ragged operand
//! gets a leading group axis of size `g` holding, per group, a copy with every element
//! outside the group zeroed, and the group axis is contracted (mode 1, with the rhs group
//! dimension) or batched (mode 2, with the rhs expanded the same way). Mode 3 (ragged batch)
//! is the plain dot. The roles of the dimensions are [`hlo::ragged_dot`].
//!
//! The masks come from the group sizes: `ends` = their running sum along the group axis
//! (a `reduce-window` add), `starts = ends - sizes`, and an element at ragged coordinate
//! `r` is in group `i` of its prefix row when `starts[i] <= r < ends[i]`, so positions past
//! the last group are in none (as in the evaluator and JAX). Sizes of a 64-bit type are
//! counted in `s64`, narrower ones in `s32`.
//!
//! Cost: the dense dot does `g` times the ragged dot's multiplications (zeros included),
//! as XLA:CPU's does; the masks are elementwise and fuse into the operand broadcasts.

use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, Window, WindowDim};
use hlo::ir::call_graph;
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{CompId, Computation, InstrId, Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::pass::{Pass, PassError};
use hlo::ragged_dot::{ragged_dims, RaggedMode};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// The pass (`ragged-dot-expander`).
#[derive(Debug, Default)]
pub struct RaggedDotExpander;

const NAME: &str = "ragged-dot-expander";

/// The dot dimension attributes the expansion rewrites; every other attribute of the
/// ragged dot (precision, algorithm, metadata, ...) is kept on the dense dot.
const DIMENSION_ATTRS: [AttrName; 6] = [
    AttrName::LhsBatchDims,
    AttrName::RhsBatchDims,
    AttrName::LhsContractingDims,
    AttrName::RhsContractingDims,
    AttrName::LhsRaggedDims,
    AttrName::RhsGroupDims,
];

/// Builds instructions next to one ragged dot.
struct Emit<'a> {
    comp: &'a mut Computation,
    names: &'a mut NameGen,
    base: String,
}

impl Emit<'_> {
    fn add(&mut self, op: Opcode, shape: Shape, ops: Vec<InstrId>) -> InstrId {
        let i = Instruction::new(self.names.fresh(&self.base), op, shape, ops);
        edit::add(self.comp, i)
    }

    fn add_with(
        &mut self,
        op: Opcode,
        shape: Shape,
        ops: Vec<InstrId>,
        name: AttrName,
        value: AttrValue,
    ) -> InstrId {
        let i =
            Instruction::new(self.names.fresh(&self.base), op, shape, ops).with_attr(name, value);
        edit::add(self.comp, i)
    }

    fn dims_of(&self, id: InstrId) -> Vec<i64> {
        self.comp.instr(id).shape.dims().to_vec()
    }

    fn zero(&mut self, ty: ElementType) -> Result<InstrId, String> {
        let mut d = ArrayData::new(ty).ok_or_else(|| format!("no {ty} literal"))?;
        d.push_int(ty, 0).map_err(|e| e.to_string())?;
        let lit = ArrayLiteral::new(Shape::scalar(ty), d)
            .map(Literal::Array)
            .ok_or_else(|| format!("no {ty} zero"))?;
        let name = self.names.fresh(&self.base);
        Ok(edit::add(
            self.comp,
            Instruction::constant(name, Shape::scalar(ty), lit),
        ))
    }

    fn broadcast(&mut self, x: InstrId, shape: Shape, dims: Vec<i64>) -> InstrId {
        self.add_with(
            Opcode::Broadcast,
            shape,
            vec![x],
            AttrName::Dimensions,
            AttrValue::IntList(dims),
        )
    }

    fn compare(&mut self, a: InstrId, b: InstrId, dir: ComparisonDirection) -> InstrId {
        let shape = Shape::array(ElementType::Pred, self.dims_of(a));
        self.add_with(
            Opcode::Compare,
            shape,
            vec![a, b],
            AttrName::Direction,
            AttrValue::ComparisonDirection(dir),
        )
    }

    /// `sizes` (of type `ty`, `[p..., g]`) summed along the last axis: the groups' ends.
    fn running_sum(
        &mut self,
        sizes: InstrId,
        ty: ElementType,
        add: CompId,
    ) -> Result<InstrId, String> {
        let dims = self.dims_of(sizes);
        let g = *dims.last().ok_or("group sizes of rank 0")?;
        let mut window = Window {
            dims: dims.iter().map(|_| WindowDim::of_size(1)).collect(),
        };
        if let Some(last) = window.dims.last_mut() {
            *last = WindowDim {
                padding_low: g - 1,
                ..WindowDim::of_size(g)
            };
        }
        let zero = self.zero(ty)?;
        let i = Instruction::new(
            self.names.fresh(&self.base),
            Opcode::ReduceWindow,
            Shape::array(ty, dims),
            vec![sizes, zero],
        )
        .with_attr(AttrName::Window, AttrValue::Window(window))
        .with_attr(AttrName::ToApply, AttrValue::Computation(add));
        Ok(edit::add(self.comp, i))
    }

    /// `bounds` (`[p..., g]`, or `[g]`) broadcast to `[g] + dims`, its prefix axes onto the
    /// operand's `prefix` dimensions.
    fn spread(&mut self, bounds: InstrId, dims: &[i64], prefix: &[usize]) -> InstrId {
        let ty = self
            .comp
            .instr(bounds)
            .shape
            .element_type()
            .unwrap_or(ElementType::S32);
        let bdims = self.dims_of(bounds);
        let mut full = vec![bdims[bdims.len() - 1]];
        full.extend(dims);
        let shape = Shape::array(ty, full);
        if bdims.len() == 1 {
            return self.broadcast(bounds, shape, vec![0]);
        }
        // Target axis of each bounds axis; the broadcast takes them in increasing order, so
        // the bounds are transposed into that order first.
        let mut targets: Vec<i64> = prefix.iter().map(|&d| d as i64 + 1).collect();
        targets.push(0);
        let mut order: Vec<usize> = (0..targets.len()).collect();
        order.sort_by_key(|&i| targets[i]);
        let moved = if order.iter().enumerate().all(|(i, &o)| i == o) {
            bounds
        } else {
            let tdims = order.iter().map(|&o| bdims[o]).collect();
            self.add_with(
                Opcode::Transpose,
                Shape::array(ty, tdims),
                vec![bounds],
                AttrName::Dimensions,
                AttrValue::IntList(order.iter().map(|&o| o as i64).collect()),
            )
        };
        let sorted = order.iter().map(|&o| targets[o]).collect();
        self.broadcast(moved, shape, sorted)
    }

    /// `x` with a leading group axis: copy `i` keeps the elements of group `i` along its
    /// `ragged` dimension (prefix rows from its `prefix` dimensions), zeros elsewhere.
    fn dense(
        &mut self,
        x: InstrId,
        ragged: usize,
        prefix: &[usize],
        (starts, ends): (InstrId, InstrId),
    ) -> Result<InstrId, String> {
        let xs = self.comp.instr(x).shape.clone();
        let xt = xs
            .element_type()
            .ok_or("a ragged-dot operand is not an array")?;
        let dims = xs.dims().to_vec();
        let lo = self.spread(starts, &dims, prefix);
        let hi = self.spread(ends, &dims, prefix);
        let index_shape = (*self.comp.instr(lo).shape).clone();
        let at = self.add_with(
            Opcode::Iota,
            index_shape.clone(),
            Vec::new(),
            AttrName::IotaDimension,
            AttrValue::Int(ragged as i64 + 1),
        );
        let above = self.compare(at, lo, ComparisonDirection::Ge);
        let below = self.compare(at, hi, ComparisonDirection::Lt);
        let pred = (*self.comp.instr(above).shape).clone();
        let inside = self.add(Opcode::And, pred, vec![above, below]);
        let full = Shape::array(xt, index_shape.dims().to_vec());
        let copies = self.broadcast(x, full.clone(), (1..=dims.len() as i64).collect());
        let zero = self.zero(xt)?;
        let zeros = self.broadcast(zero, full.clone(), Vec::new());
        Ok(self.add(Opcode::Select, full, vec![inside, copies, zeros]))
    }
}

fn shifted(v: &[i64]) -> Vec<i64> {
    v.iter().map(|d| d + 1).collect()
}

fn prepend(first: i64, rest: Vec<i64>) -> Vec<i64> {
    std::iter::once(first).chain(rest).collect()
}

/// The index type the groups are counted in for sizes of type `ty`.
fn index_type(ty: ElementType) -> ElementType {
    if ty.bit_width().unwrap_or(32) > 32 {
        ElementType::S64
    } else {
        ElementType::S32
    }
}

/// The type of the adder the running sums of `i`'s group sizes need; `None` when it sums
/// none (ragged batch, no groups, or dimension numbers [`expand`] rejects).
fn adder_type(c: &Computation, i: &Instruction) -> Option<ElementType> {
    let shape = |k: usize| i.operands.get(k).map(|&o| &*c.instr(o).shape);
    let (l, r, g) = (shape(0)?, shape(1)?, shape(2)?);
    let roles = ragged_dims(i, l.rank(), r.rank()).ok()?;
    let summed = roles.mode != RaggedMode::Batch && g.dims().last().is_some_and(|&n| n > 0);
    summed.then(|| g.element_type().map(index_type)).flatten()
}

/// Expands the ragged dot `id` of `comp`; returns the instruction that replaces it.
fn expand(
    comp: &mut Computation,
    names: &mut NameGen,
    id: InstrId,
    adders: &[(ElementType, CompId)],
) -> Result<InstrId, String> {
    let instr = comp.instr(id).clone();
    let [l, r, g] = instr.operands[..] else {
        return Err(format!("`{}` needs 3 operands", instr.name));
    };
    let (ld, rd) = (
        comp.instr(l).shape.dims().to_vec(),
        comp.instr(r).shape.dims().to_vec(),
    );
    let gshape = comp.instr(g).shape.clone();
    let roles = ragged_dims(&instr, ld.len(), rd.len())?;
    let groups = roles.group_count(&ld, gshape.dims())?;
    let dn = instr.dot_dimension_numbers();
    let mut e = Emit {
        comp,
        names,
        base: instr.name.clone(),
    };
    let out = (*instr.shape).clone();
    let out_ty = out
        .element_type()
        .ok_or("a ragged-dot result is not an array")?;
    if groups == 0 && roles.mode != RaggedMode::Batch {
        // No groups: every position is outside them (mode 2's result is empty).
        let zero = e.zero(out_ty)?;
        return Ok(e.broadcast(zero, out, Vec::new()));
    }
    let (lhs, rhs, lc, rc, lb, rb) = match roles.mode {
        RaggedMode::Batch => (
            l,
            r,
            dn.lhs_contracting_dims.clone(),
            dn.rhs_contracting_dims.clone(),
            dn.lhs_batch_dims.clone(),
            dn.rhs_batch_dims.clone(),
        ),
        mode => {
            let gt = gshape
                .element_type()
                .ok_or("group sizes are not an array")?;
            let it = index_type(gt);
            let sizes = if gt == it {
                g
            } else {
                e.add(
                    Opcode::Convert,
                    Shape::array(it, gshape.dims().to_vec()),
                    vec![g],
                )
            };
            let add = adders
                .iter()
                .find(|(t, _)| *t == it)
                .map(|&(_, c)| c)
                .ok_or("no adder for the group sizes")?;
            let ends = e.running_sum(sizes, it, add)?;
            let sshape = (*e.comp.instr(ends).shape).clone();
            let starts = e.add(Opcode::Subtract, sshape, vec![ends, sizes]);
            let bounds = (starts, ends);
            let dense_l = e.dense(l, roles.lhs_ragged, &roles.lhs_prefix, bounds)?;
            if mode == RaggedMode::NonContracting {
                let group = roles.rhs_group.ok_or("no rhs group dimension")? as i64;
                (
                    dense_l,
                    r,
                    prepend(0, shifted(&dn.lhs_contracting_dims)),
                    prepend(group, dn.rhs_contracting_dims.clone()),
                    shifted(&dn.lhs_batch_dims),
                    dn.rhs_batch_dims.clone(),
                )
            } else {
                let rr = roles
                    .rhs_ragged
                    .ok_or("no rhs partner of the ragged dimension")?;
                let dense_r = e.dense(r, rr, &roles.rhs_prefix, bounds)?;
                (
                    dense_l,
                    dense_r,
                    shifted(&dn.lhs_contracting_dims),
                    shifted(&dn.rhs_contracting_dims),
                    prepend(0, shifted(&dn.lhs_batch_dims)),
                    prepend(0, shifted(&dn.rhs_batch_dims)),
                )
            }
        }
    };
    let mut dot = Instruction::new(e.names.fresh(&e.base), Opcode::Dot, out, vec![lhs, rhs]);
    for a in instr
        .attrs
        .iter()
        .filter(|a| !DIMENSION_ATTRS.contains(&a.name))
    {
        dot.set_attr(a.name.clone(), a.value.clone());
    }
    for (name, v) in [
        (AttrName::LhsBatchDims, lb),
        (AttrName::RhsBatchDims, rb),
        (AttrName::LhsContractingDims, lc),
        (AttrName::RhsContractingDims, rc),
    ] {
        if !v.is_empty() {
            dot.set_attr(name, AttrValue::IntList(v));
        }
    }
    Ok(edit::add(e.comp, dot))
}

impl Pass for RaggedDotExpander {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "expands ragged-dot into a dense dot of group-masked operands (XLA's RaggedDotRewriter)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut work = Vec::new();
        for (cid, c) in module.computations() {
            for (id, i) in c
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::RaggedDot)
            {
                work.push((cid, id, adder_type(c, i)));
            }
        }
        if work.is_empty() {
            return Ok(false);
        }
        let mut names = NameGen::new(module);
        let mut adders: Vec<(ElementType, CompId)> = Vec::new();
        for ty in work.iter().filter_map(|w| w.2) {
            if !adders.iter().any(|(t, _)| *t == ty) {
                let name = format!("add_{}", ty.as_str());
                let c =
                    edit::add_scalar_binary_computation(module, &mut names, &name, Opcode::Add, ty);
                adders.push((ty, c));
            }
        }
        for (cid, id, _) in work {
            let comp = module.computation_mut(cid);
            let name = comp.instr(id).name.clone();
            let new = expand(comp, &mut names, id, &adders)
                .map_err(|m| PassError::invalid(NAME, format!("`{name}`: {m}")))?;
            edit::replace_uses(comp, id, new);
            edit::remove_instructions(comp, &std::iter::once(id).collect());
            edit::repair_order(comp);
        }
        call_graph::sort_computations(module);
        Ok(true)
    }
}
