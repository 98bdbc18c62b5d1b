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
//! itself, and any other scalar computation a `map` over the two windows. A variadic
//! scatter (several operands and updates sharing the indices) carries every operand in the
//! loop state; output `j` of its computation becomes a `map` over all the windows whose
//! computation calls the original one and takes element `j`. Batching dimensions are first
//! made explicit indices (`scatter_batching`). Mode: all scatters, or only those with one
//! update (trip count 1).

use super::algsimp::reducer_kind;
use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::call_graph;
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{CompId, Computation, ComputationBuilder, InstrId, Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::pass::{Pass, PassError};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

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
    /// A variadic scatter's computation (parameters: every old value, then every new
    /// one; result: a tuple), applied per output with a projecting `map`.
    Each(CompId),
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

/// `Combine::Each` for a variadic computation `id` over operands of types `tys`: scalar
/// parameters `(old..., new...)` and a tuple of scalars as result, all of those types.
fn variadic_combiner(module: &Module, id: CompId, tys: &[ElementType]) -> Option<Combine> {
    let comp = module.computation(id);
    let scalar_of = |shape: &Shape, ty: ElementType| {
        !shape.is_tuple() && shape.rank() == 0 && shape.element_type() == Some(ty)
    };
    let m = tys.len();
    let params_ok = comp.params.len() == 2 * m
        && comp
            .params
            .iter()
            .enumerate()
            .all(|(p, &i)| scalar_of(&comp.instr(i).shape, tys[p % m]));
    let root = &comp.instr(comp.root).shape;
    let root_ok = root.is_tuple()
        && root.tuple_shapes().len() == m
        && root
            .tuple_shapes()
            .iter()
            .zip(tys)
            .all(|(s, &t)| scalar_of(s, t));
    (params_ok && root_ok).then_some(Combine::Each(id))
}

struct Plan {
    /// Operands (and updates) of the scatter.
    m: usize,
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
                    log::info!(target: "hlo::pass::scatter_expander",
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
            call_graph::sort_computations(module);
            call_graph::remove_unreachable_computations(module);
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
    let m = (s.operands.len() - 1) / 2;
    if m == 0 || s.operands.len() != 2 * m + 1 || s.shape.is_tuple() != (m > 1) {
        return None;
    }
    let dn = s.scatter_dimension_numbers()?;
    if !dn.input_batching_dims.is_empty() || !dn.scatter_indices_batching_dims.is_empty() {
        return None;
    }
    let o = &comp.instr(s.operands[0]).shape;
    let tys: Vec<ElementType> = s.operands[..m]
        .iter()
        .map(|&j| comp.instr(j).shape.element_type())
        .collect::<Option<_>>()?;
    let combine = if m == 1 {
        combiner(module, s.to_apply()?, tys[0])?
    } else {
        variadic_combiner(module, s.to_apply()?, &tys)?
    };
    let ind = &comp.instr(s.operands[m]).shape;
    let u = &comp.instr(s.operands[m + 1]).shape;
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
        m,
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

/// For `Combine::Each`: one scalar computation per output, taking every old value and
/// every new one, calling the scatter's computation `f` and returning its element `j`.
fn projections(
    module: &mut Module,
    f: CompId,
    m: usize,
    names: &mut NameGen,
) -> Result<Vec<CompId>, PassError> {
    let comp = module.computation(f);
    let params: Vec<Shape> = comp
        .params
        .iter()
        .map(|&p| (*comp.instr(p).shape).clone())
        .collect();
    let result = (*comp.instr(comp.root).shape).clone();
    let mut out = Vec::with_capacity(m);
    for j in 0..m {
        let mut b = B {
            b: ComputationBuilder::new(names.fresh("scatter_combiner")),
            names,
        };
        let ps: Vec<InstrId> = params
            .iter()
            .enumerate()
            .map(|(k, sh)| {
                let name = b.names.fresh("p");
                b.b.add(Instruction::parameter(name, k as i64, sh.clone()))
            })
            .collect();
        let call = b.add(
            Opcode::Call,
            result.clone(),
            ps,
            vec![(AttrName::ToApply, AttrValue::Computation(f))],
        );
        let root = b.gte(call, j);
        let c =
            b.b.build(Some(root))
                .map_err(|e| PassError::ir("scatter-expander", e))?;
        out.push(module.add_computation(c));
    }
    Ok(out)
}

fn expand(
    module: &mut Module,
    ci: usize,
    id: InstrId,
    plan: &Plan,
    names: &mut NameGen,
) -> Result<(), PassError> {
    let bad = |m: &str| PassError::invalid("scatter-expander", m.to_string());
    let m = plan.m;
    let comp = &module.computations[ci];
    let s = comp.instr(id).clone();
    let dn = s
        .scatter_dimension_numbers()
        .ok_or_else(|| bad("no dimension numbers"))?
        .clone();
    let (os, ind, us) = (
        s.operands[..m].to_vec(),
        s.operands[m],
        s.operands[m + 1..].to_vec(),
    );
    let o_dims = comp.instr(os[0]).shape.dims().to_vec();
    let ind_shape = (*comp.instr(ind).shape).clone();
    let u_dims = comp.instr(us[0]).shape.dims().to_vec();
    let ity = ind_shape
        .element_type()
        .ok_or_else(|| bad("indices type"))?;
    let otys: Vec<ElementType> = os
        .iter()
        .map(|&o| comp.instr(o).shape.element_type())
        .collect::<Option<_>>()
        .ok_or_else(|| bad("operand type"))?;
    let ivd = dn.index_vector_dim as usize;
    let (n, k) = (plan.n, plan.k);
    let window_sizes: Vec<i64> = dn
        .update_window_dims
        .iter()
        .map(|&d| u_dims[d as usize])
        .collect();
    let each = match plan.combine {
        Combine::Each(f) => projections(module, f, m, names)?,
        _ => Vec::new(),
    };

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
        edit::add(comp, i)
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
    let scatter_dims: Vec<i64> = (0..u_dims.len() as i64)
        .filter(|d| !dn.update_window_dims.contains(d))
        .collect();
    let perm: Vec<i64> = scatter_dims
        .iter()
        .copied()
        .chain(dn.update_window_dims.iter().copied())
        .collect();
    let tdims: Vec<i64> = perm.iter().map(|&d| u_dims[d as usize]).collect();
    let mut udims = vec![n];
    udims.extend(&window_sizes);
    let mut upds = Vec::with_capacity(m);
    for (&u, &oty) in us.iter().zip(&otys) {
        let t = add(
            comp,
            names,
            Opcode::Transpose,
            Shape::array(oty, tdims.clone()),
            vec![u],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm.clone()))],
        );
        upds.push(add(
            comp,
            names,
            Opcode::Reshape,
            Shape::array(oty, udims.clone()),
            vec![t],
            Vec::new(),
        ));
    }
    let s32 = ElementType::S32;
    let zero_lit = scalar_const(s32, 0).ok_or_else(|| bad("constant"))?;
    let zero = edit::add(
        comp,
        Instruction::constant(names.fresh("constant"), Shape::scalar(s32), zero_lit),
    );
    // State: (i, operands..., indices, updates...).
    let mut parts = vec![Shape::scalar(s32)];
    parts.extend(otys.iter().map(|&t| Shape::array(t, o_dims.clone())));
    parts.push(Shape::array(ity, vec![n, k]));
    parts.extend(otys.iter().map(|&t| Shape::array(t, udims.clone())));
    let state = Shape::tuple(parts);
    let mut init_ops = vec![zero];
    init_ops.extend(&os);
    init_ops.push(idx);
    init_ops.extend(&upds);
    let init = add(
        comp,
        names,
        Opcode::Tuple,
        state.clone(),
        init_ops,
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
            AttrValue::ComparisonDirection(hlo::attrs::ComparisonDirection::Lt),
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
    let operands: Vec<InstrId> = (0..m).map(|j| b.gte(p, 1 + j)).collect();
    let indices = b.gte(p, 1 + m);
    let updates: Vec<InstrId> = (0..m).map(|j| b.gte(p, 2 + m + j)).collect();
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
    let mut starts = vec![zi; o_dims.len()];
    for (j, &d) in dn.scatter_dims_to_operand_dims.iter().enumerate() {
        let e = b.add(
            Opcode::Slice,
            Shape::array(ity, vec![1]),
            vec![row],
            vec![(
                AttrName::Slice,
                AttrValue::Slice(vec![hlo::attrs::SliceDim {
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
    let mut usizes = vec![1];
    usizes.extend(&window_sizes);
    let window_shape = |t: ElementType| Shape::array(t, plan.window.clone());
    // The new and the current window of every operand.
    let mut news = Vec::with_capacity(m);
    let mut curs = Vec::with_capacity(m);
    for j in 0..m {
        let mut uops = vec![updates[j], i];
        uops.extend(std::iter::repeat_n(z32, window_sizes.len()));
        let w = b.add(
            Opcode::DynamicSlice,
            Shape::array(otys[j], usizes.clone()),
            uops,
            vec![(
                AttrName::DynamicSliceSizes,
                AttrValue::IntList(usizes.clone()),
            )],
        );
        news.push(b.add(Opcode::Reshape, window_shape(otys[j]), vec![w], Vec::new()));
        let mut ops = vec![operands[j]];
        ops.extend(&starts);
        curs.push(b.add(
            Opcode::DynamicSlice,
            window_shape(otys[j]),
            ops,
            vec![(
                AttrName::DynamicSliceSizes,
                AttrValue::IntList(plan.window.clone()),
            )],
        ));
    }
    let map_dims = (
        AttrName::Dimensions,
        AttrValue::IntList((0..plan.window.len() as i64).collect()),
    );
    let combined: Vec<InstrId> = match plan.combine {
        Combine::Assign => news.clone(),
        Combine::Op(op) => vec![b.add(
            op,
            window_shape(otys[0]),
            vec![curs[0], news[0]],
            Vec::new(),
        )],
        Combine::Map(f) => vec![b.add(
            Opcode::Map,
            window_shape(otys[0]),
            vec![curs[0], news[0]],
            vec![map_dims, (AttrName::ToApply, AttrValue::Computation(f))],
        )],
        Combine::Each(_) => {
            let all: Vec<InstrId> = curs.iter().chain(&news).copied().collect();
            (0..m)
                .map(|j| {
                    b.add(
                        Opcode::Map,
                        window_shape(otys[j]),
                        all.clone(),
                        vec![
                            map_dims.clone(),
                            (AttrName::ToApply, AttrValue::Computation(each[j])),
                        ],
                    )
                })
                .collect()
        }
    };
    // In bounds: 0 <= start_d <= dim_d - window_d for every dimension.
    let pred = Shape::scalar(ElementType::Pred);
    let mut ok: Option<InstrId> = None;
    for (d, &st) in starts.iter().enumerate() {
        let hi = b
            .constant(ity, o_dims[d] - plan.window[d])
            .ok_or_else(|| bad("constant"))?;
        let ge = b.add(
            Opcode::Compare,
            pred.clone(),
            vec![st, zi],
            vec![(
                AttrName::Direction,
                AttrValue::ComparisonDirection(hlo::attrs::ComparisonDirection::Ge),
            )],
        );
        let le = b.add(
            Opcode::Compare,
            pred.clone(),
            vec![st, hi],
            vec![(
                AttrName::Direction,
                AttrValue::ComparisonDirection(hlo::attrs::ComparisonDirection::Le),
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
    let mut root_ops = vec![];
    for j in 0..m {
        let new = b.add(
            Opcode::Select,
            window_shape(otys[j]),
            vec![okb, combined[j], curs[j]],
            Vec::new(),
        );
        let mut dus_ops = vec![operands[j], new];
        dus_ops.extend(&starts);
        root_ops.push(b.add(
            Opcode::DynamicUpdateSlice,
            Shape::array(otys[j], o_dims.clone()),
            dus_ops,
            Vec::new(),
        ));
    }
    let one = b.constant(s32, 1).ok_or_else(|| bad("constant"))?;
    let i1 = b.add(Opcode::Add, Shape::scalar(s32), vec![i, one], Vec::new());
    root_ops.insert(0, i1);
    root_ops.push(indices);
    root_ops.extend(&updates);
    let root = b.add(Opcode::Tuple, state.clone(), root_ops, Vec::new());
    let body =
        b.b.build(Some(root))
            .map_err(|e| PassError::ir("scatter-expander", e))?;
    let names = b.names;
    let cond_id = module.add_computation(cond);
    let body_id = module.add_computation(body);

    let comp = &mut module.computations[ci];
    let wl = Instruction::new(
        names.fresh(&s.name),
        Opcode::While,
        state.clone(),
        vec![init],
    )
    .with_attr(AttrName::Condition, AttrValue::Computation(cond_id))
    .with_attr(AttrName::Body, AttrValue::Computation(body_id));
    let wl = edit::add(comp, wl);
    let results: Vec<InstrId> = (0..m)
        .map(|j| {
            let r = Instruction::new(
                names.fresh(&s.name),
                Opcode::GetTupleElement,
                if m == 1 {
                    (*s.shape).clone()
                } else {
                    s.shape.tuple_shapes()[j].clone()
                },
                vec![wl],
            )
            .with_attr(AttrName::Index, AttrValue::Int(1 + j as i64));
            edit::add(comp, r)
        })
        .collect();
    let res = if m == 1 {
        results[0]
    } else {
        let t = Instruction::new(
            names.fresh(&s.name),
            Opcode::Tuple,
            (*s.shape).clone(),
            results,
        );
        edit::add(comp, t)
    };
    edit::replace_uses(comp, id, res);
    edit::remove_instructions(comp, &std::iter::once(id).collect());
    edit::repair_order(comp);
    Ok(())
}
