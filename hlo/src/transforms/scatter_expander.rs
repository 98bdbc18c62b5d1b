//! Scatter expansion: a scatter becomes a while loop over its updates, each iteration
//! reading one update window with `dynamic-slice`, combining it with the operand's window
//! through the scatter's computation, and writing it back with `dynamic-update-slice`.
//! An update whose window is out of bounds is skipped, as scatter defines (the loop
//! writes the old values back).
//!
//! Indices are first brought to `[N, K]` (index vector last) and updates to
//! `[N, window...]` (scatter dimensions first, collapsed). A combining computation that is
//! one binary op of its two parameters (add, multiply, max, min, and, or, ...) becomes that
//! op on the windows, one returning its second parameter (assignment) the new window
//! itself, and any other scalar computation a `map` over the two windows. Batching
//! dimensions are first made explicit indices (`scatter_batching`). Supported: one
//! operand; variadic scatters are left as they are (logged). Mode: all scatters, or only those with
//! one update (trip count 1).

use super::algsimp::reducer_kind;
use super::util::{self, NameGen};
use crate::attrs::{AttrName, AttrValue};
use crate::ir::{CompId, Computation, ComputationBuilder, InstrId, Instruction, Module};
use crate::literal::{ArrayData, ArrayLiteral, Literal};
use crate::opcode::Opcode;
use crate::pass::{Pass, PassError};
use crate::shape::{ElementType, Shape};

/// The pass (`scatter-expander`).
#[derive(Debug, Default)]
pub struct ScatterExpander {
    /// Expand only scatters with a single update (trip count 1).
    pub only_trip_count_one: bool,
}

/// How the scatter combines old and new values.
#[derive(Clone, Copy)]
enum Combine {
    /// One elementwise op applied as `op(old, new)`.
    Op(Opcode),
    /// The new value replaces the old.
    Assign,
    /// Any other scalar computation, applied to the windows with `map`.
    Map(CompId),
}

/// The cheapest faithful way to apply the update computation `id` (scalar parameters and
/// result of the operand's element type `ty`) to a whole window.
fn combiner(module: &Module, id: CompId, ty: ElementType) -> Option<Combine> {
    let comp = module.computation(id);
    let is_scalar = |i: InstrId| {
        let shape = &comp.instr(i).shape;
        !shape.is_tuple() && shape.rank() == 0 && shape.element_type() == Some(ty)
    };
    if comp.params.len() != 2 || !comp.params.iter().all(|&p| is_scalar(p)) || !is_scalar(comp.root)
    {
        return None;
    }
    if let Some(op) = reducer_kind(comp) {
        // Only when applied as op(old, new) (parameter order matters for non-commutative ops).
        let root = comp.root_instr();
        if root.operands.as_slice() == [comp.params[0], comp.params[1]] {
            return Some(Combine::Op(op));
        }
    }
    if comp.root == comp.params[1] {
        return Some(Combine::Assign);
    }
    Some(Combine::Map(id))
}

struct Plan {
    n: i64,
    k: i64,
    window: Vec<i64>,
    combine: Combine,
}

impl Pass for ScatterExpander {
    fn name(&self) -> &str {
        "scatter-expander"
    }

    fn description(&self) -> &str {
        "rewrites scatters into while loops of dynamic-slice and dynamic-update-slice"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let ids: Vec<InstrId> = module.computations[ci]
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Scatter)
                .map(|(id, _)| id)
                .collect();
            for id in ids {
                if self.only_trip_count_one && trip_count(&module.computations[ci], id) != Some(1) {
                    continue;
                }
                changed |=
                    super::scatter_batching::unbatch(&mut module.computations[ci], id, &mut names);
                let Some(plan) = plan(module, ci, id) else {
                    crate::log_info!(
                        "hlo::pass::scatter_expander",
                        "scatter `{}` left as is (unsupported form)",
                        module.computations[ci].instr(id).name
                    );
                    continue;
                };
                expand(module, ci, id, &plan, &mut names)?;
                changed = true;
            }
        }
        if changed {
            util::sort_computations(module);
            util::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// How many index vectors scatter `id` has: the loop's trip count once expanded.
fn trip_count(comp: &Computation, id: InstrId) -> Option<i64> {
    let s = comp.instr(id);
    let ivd = usize::try_from(s.scatter_dimension_numbers()?.index_vector_dim).ok()?;
    let ind = &comp
        .instr(*s.operands.get((s.operands.len().checked_sub(1)?) / 2)?)
        .shape;
    Some(
        (0..ind.rank())
            .filter(|&d| d != ivd)
            .map(|d| ind.dims()[d])
            .product(),
    )
}

fn plan(module: &Module, ci: usize, id: InstrId) -> Option<Plan> {
    let comp = &module.computations[ci];
    let s = comp.instr(id);
    if s.operands.len() != 3 || s.shape.is_tuple() {
        return None;
    }
    let dn = s.scatter_dimension_numbers()?;
    if !dn.input_batching_dims.is_empty() || !dn.scatter_indices_batching_dims.is_empty() {
        return None;
    }
    let o = &comp.instr(s.operands[0]).shape;
    let combine = combiner(module, s.to_apply()?, o.element_type()?)?;
    let ind = &comp.instr(s.operands[1]).shape;
    let u = &comp.instr(s.operands[2]).shape;
    let ivd = usize::try_from(dn.index_vector_dim).ok()?;
    let k = if ivd == ind.rank() {
        1
    } else {
        *ind.dims().get(ivd)?
    };
    let n = trip_count(comp, id)?;
    if k as usize != dn.scatter_dims_to_operand_dims.len() || n == 0 {
        return None;
    }
    let mut uw = dn
        .update_window_dims
        .iter()
        .map(|&d| u.dims().get(d as usize).copied());
    let window: Vec<i64> = (0..o.rank() as i64)
        .map(|d| {
            if dn.inserted_window_dims.contains(&d) {
                Some(1)
            } else {
                uw.next().flatten()
            }
        })
        .collect::<Option<_>>()?;
    if window.iter().zip(o.dims()).any(|(w, d)| w > d) {
        return None;
    }
    Some(Plan {
        n,
        k,
        window,
        combine,
    })
}

fn scalar_const(ty: ElementType, v: i64) -> Option<Literal> {
    let mut d = ArrayData::new(ty)?;
    d.push_int(ty, i128::from(v)).ok()?;
    Some(Literal::Array(ArrayLiteral::new(Shape::scalar(ty), d)?))
}

/// Builds instructions into a computation under construction.
struct B<'a> {
    b: ComputationBuilder,
    names: &'a mut NameGen,
}

impl B<'_> {
    fn add(
        &mut self,
        op: Opcode,
        shape: Shape,
        ops: Vec<InstrId>,
        attrs: Vec<(AttrName, AttrValue)>,
    ) -> InstrId {
        let mut i = Instruction::new(self.names.fresh(op.as_str()), op, shape, ops);
        for (n, v) in attrs {
            i.set_attr(n, v);
        }
        self.b.add(i)
    }
    fn constant(&mut self, ty: ElementType, v: i64) -> Option<InstrId> {
        let lit = scalar_const(ty, v)?;
        Some(self.b.add(Instruction::constant(
            self.names.fresh("constant"),
            Shape::scalar(ty),
            lit,
        )))
    }
    fn shape(&self, id: InstrId) -> Shape {
        self.b
            .get(id)
            .map(|i| i.shape().clone())
            .unwrap_or_else(|| Shape::tuple(Vec::new()))
    }
    fn gte(&mut self, t: InstrId, k: usize) -> InstrId {
        let s = self.shape(t).tuple_shapes()[k].clone();
        self.add(
            Opcode::GetTupleElement,
            s,
            vec![t],
            vec![(AttrName::Index, AttrValue::Int(k as i64))],
        )
    }
}

fn expand(
    module: &mut Module,
    ci: usize,
    id: InstrId,
    plan: &Plan,
    names: &mut NameGen,
) -> Result<(), PassError> {
    let bad = |m: &str| PassError::invalid("scatter-expander", m.to_string());
    let comp = &module.computations[ci];
    let s = comp.instr(id).clone();
    let dn = s
        .scatter_dimension_numbers()
        .ok_or_else(|| bad("no dimension numbers"))?;
    let (o, ind, u) = (s.operands[0], s.operands[1], s.operands[2]);
    let o_shape = (*comp.instr(o).shape).clone();
    let ind_shape = (*comp.instr(ind).shape).clone();
    let u_shape = (*comp.instr(u).shape).clone();
    let ity = ind_shape
        .element_type()
        .ok_or_else(|| bad("indices type"))?;
    let oty = o_shape.element_type().ok_or_else(|| bad("operand type"))?;
    let ivd = dn.index_vector_dim as usize;
    let (n, k) = (plan.n, plan.k);
    let window_sizes: Vec<i64> = dn
        .update_window_dims
        .iter()
        .map(|&d| u_shape.dims()[d as usize])
        .collect();

    // Canonical indices [N, K] and updates [N, window...] in the calling computation.
    let comp = &mut module.computations[ci];
    let add = |comp: &mut Computation,
               names: &mut NameGen,
               op: Opcode,
               shape: Shape,
               ops: Vec<InstrId>,
               attrs: Vec<(AttrName, AttrValue)>| {
        let mut i = Instruction::new(names.fresh(&s.name), op, shape, ops);
        for (a, v) in attrs {
            i.set_attr(a, v);
        }
        util::add(comp, i)
    };
    let mut idx = ind;
    if ivd < ind_shape.rank() {
        let perm: Vec<i64> = (0..ind_shape.rank() as i64)
            .filter(|&d| d != ivd as i64)
            .chain([ivd as i64])
            .collect();
        let dims: Vec<i64> = perm.iter().map(|&d| ind_shape.dims()[d as usize]).collect();
        idx = add(
            comp,
            names,
            Opcode::Transpose,
            Shape::array(ity, dims),
            vec![idx],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm))],
        );
    }
    let idx = add(
        comp,
        names,
        Opcode::Reshape,
        Shape::array(ity, vec![n, k]),
        vec![idx],
        Vec::new(),
    );
    let scatter_dims: Vec<i64> = (0..u_shape.rank() as i64)
        .filter(|d| !dn.update_window_dims.contains(d))
        .collect();
    let perm: Vec<i64> = scatter_dims
        .iter()
        .copied()
        .chain(dn.update_window_dims.iter().copied())
        .collect();
    let tdims: Vec<i64> = perm.iter().map(|&d| u_shape.dims()[d as usize]).collect();
    let upd = add(
        comp,
        names,
        Opcode::Transpose,
        Shape::array(oty, tdims),
        vec![u],
        vec![(AttrName::Dimensions, AttrValue::IntList(perm))],
    );
    let mut udims = vec![n];
    udims.extend(&window_sizes);
    let upd = add(
        comp,
        names,
        Opcode::Reshape,
        Shape::array(oty, udims.clone()),
        vec![upd],
        Vec::new(),
    );
    let s32 = ElementType::S32;
    let zero_lit = scalar_const(s32, 0).ok_or_else(|| bad("constant"))?;
    let zero = util::add(
        comp,
        Instruction::constant(names.fresh("constant"), Shape::scalar(s32), zero_lit),
    );
    let state = Shape::tuple(vec![
        Shape::scalar(s32),
        Shape::array(oty, o_shape.dims().to_vec()),
        Shape::array(ity, vec![n, k]),
        Shape::array(oty, udims.clone()),
    ]);
    let init = add(
        comp,
        names,
        Opcode::Tuple,
        state.clone(),
        vec![zero, o, idx, upd],
        Vec::new(),
    );

    // Condition: i < N.
    let mut c = B {
        b: ComputationBuilder::new(names.fresh("scatter_condition")),
        names,
    };
    let p = c.b.add(Instruction::parameter(
        c.names.fresh("state"),
        0,
        state.clone(),
    ));
    let i = c.gte(p, 0);
    let nn = c.constant(s32, n).ok_or_else(|| bad("constant"))?;
    let lt = c.add(
        Opcode::Compare,
        Shape::scalar(ElementType::Pred),
        vec![i, nn],
        vec![(
            AttrName::Direction,
            AttrValue::ComparisonDirection(crate::attrs::ComparisonDirection::Lt),
        )],
    );
    let cond =
        c.b.build(Some(lt))
            .map_err(|e| PassError::ir("scatter-expander", e))?;
    let names = c.names;

    // Body.
    let mut b = B {
        b: ComputationBuilder::new(names.fresh("scatter_body")),
        names,
    };
    let p = b.b.add(Instruction::parameter(
        b.names.fresh("state"),
        0,
        state.clone(),
    ));
    let i = b.gte(p, 0);
    let operand = b.gte(p, 1);
    let indices = b.gte(p, 2);
    let updates = b.gte(p, 3);
    let z32 = b.constant(s32, 0).ok_or_else(|| bad("constant"))?;
    let row = b.add(
        Opcode::DynamicSlice,
        Shape::array(ity, vec![1, k]),
        vec![indices, i, z32],
        vec![(AttrName::DynamicSliceSizes, AttrValue::IntList(vec![1, k]))],
    );
    let row = b.add(
        Opcode::Reshape,
        Shape::array(ity, vec![k]),
        vec![row],
        Vec::new(),
    );
    let zi = b.constant(ity, 0).ok_or_else(|| bad("constant"))?;
    let mut starts = vec![zi; o_shape.rank()];
    for (j, &d) in dn.scatter_dims_to_operand_dims.iter().enumerate() {
        let e = b.add(
            Opcode::Slice,
            Shape::array(ity, vec![1]),
            vec![row],
            vec![(
                AttrName::Slice,
                AttrValue::Slice(vec![crate::attrs::SliceDim {
                    start: j as i64,
                    limit: j as i64 + 1,
                    stride: 1,
                }]),
            )],
        );
        let e = b.add(Opcode::Reshape, Shape::scalar(ity), vec![e], Vec::new());
        *starts
            .get_mut(d as usize)
            .ok_or_else(|| bad("scatter dimension out of range"))? = e;
    }
    let mut uops = vec![updates, i];
    uops.extend(std::iter::repeat_n(z32, window_sizes.len()));
    let mut usizes = vec![1];
    usizes.extend(&window_sizes);
    let w = b.add(
        Opcode::DynamicSlice,
        Shape::array(oty, usizes.clone()),
        uops,
        vec![(AttrName::DynamicSliceSizes, AttrValue::IntList(usizes))],
    );
    let wshape = Shape::array(oty, plan.window.clone());
    let w = b.add(Opcode::Reshape, wshape.clone(), vec![w], Vec::new());
    let mut ops = vec![operand];
    ops.extend(&starts);
    let cur = b.add(
        Opcode::DynamicSlice,
        wshape.clone(),
        ops.clone(),
        vec![(
            AttrName::DynamicSliceSizes,
            AttrValue::IntList(plan.window.clone()),
        )],
    );
    let combined = match plan.combine {
        Combine::Assign => w,
        Combine::Op(op) => b.add(op, wshape.clone(), vec![cur, w], Vec::new()),
        Combine::Map(f) => b.add(
            Opcode::Map,
            wshape.clone(),
            vec![cur, w],
            vec![
                (
                    AttrName::Dimensions,
                    AttrValue::IntList((0..plan.window.len() as i64).collect()),
                ),
                (AttrName::ToApply, AttrValue::Computation(f)),
            ],
        ),
    };
    // In bounds: 0 <= start_d <= dim_d - window_d for every dimension.
    let pred = Shape::scalar(ElementType::Pred);
    let mut ok: Option<InstrId> = None;
    for (d, &st) in starts.iter().enumerate() {
        let hi = b
            .constant(ity, o_shape.dims()[d] - plan.window[d])
            .ok_or_else(|| bad("constant"))?;
        let ge = b.add(
            Opcode::Compare,
            pred.clone(),
            vec![st, zi],
            vec![(
                AttrName::Direction,
                AttrValue::ComparisonDirection(crate::attrs::ComparisonDirection::Ge),
            )],
        );
        let le = b.add(
            Opcode::Compare,
            pred.clone(),
            vec![st, hi],
            vec![(
                AttrName::Direction,
                AttrValue::ComparisonDirection(crate::attrs::ComparisonDirection::Le),
            )],
        );
        let both = b.add(Opcode::And, pred.clone(), vec![ge, le], Vec::new());
        ok = Some(match ok {
            None => both,
            Some(prev) => b.add(Opcode::And, pred.clone(), vec![prev, both], Vec::new()),
        });
    }
    let ok = ok.ok_or_else(|| bad("rank-0 operand"))?;
    let okb = b.add(
        Opcode::Broadcast,
        Shape::array(ElementType::Pred, plan.window.clone()),
        vec![ok],
        vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
    );
    let new = b.add(Opcode::Select, wshape, vec![okb, combined, cur], Vec::new());
    let mut dus_ops = vec![operand, new];
    dus_ops.extend(&starts);
    let written = b.add(
        Opcode::DynamicUpdateSlice,
        Shape::array(oty, o_shape.dims().to_vec()),
        dus_ops,
        Vec::new(),
    );
    let one = b.constant(s32, 1).ok_or_else(|| bad("constant"))?;
    let i1 = b.add(Opcode::Add, Shape::scalar(s32), vec![i, one], Vec::new());
    let root = b.add(
        Opcode::Tuple,
        state.clone(),
        vec![i1, written, indices, updates],
        Vec::new(),
    );
    let body =
        b.b.build(Some(root))
            .map_err(|e| PassError::ir("scatter-expander", e))?;
    let names = b.names;
    let cond_id = module.add_computation(cond);
    let body_id = module.add_computation(body);

    let comp = &mut module.computations[ci];
    let wl = Instruction::new(names.fresh(&s.name), Opcode::While, state, vec![init])
        .with_attr(AttrName::Condition, AttrValue::Computation(cond_id))
        .with_attr(AttrName::Body, AttrValue::Computation(body_id));
    let wl = util::add(comp, wl);
    let res = Instruction::new(
        names.fresh(&s.name),
        Opcode::GetTupleElement,
        (*s.shape).clone(),
        vec![wl],
    )
    .with_attr(AttrName::Index, AttrValue::Int(1));
    let res = util::add(comp, res);
    util::replace_uses(comp, id, res);
    util::remove_instructions(comp, &std::iter::once(id).collect());
    util::repair_order(comp);
    Ok(())
}
