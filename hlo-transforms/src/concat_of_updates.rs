//! A concatenate of updated slices of one array as updates of that array:
//! `concatenate(reshape(dus(reshape(slice(S, p_0)), u_0, i_0)), ..., slice(S, p_k), ...)`
//! where the slices tile `S` along the concatenated dimension, in order, becomes the chain
//! `S_1 = dus(S, u_0', i_0'), S_2 = dus(S_1, ...)`. A decoding loop that keeps every
//! layer's KV cache in one stacked array `[L, ...]` slices each layer's cache out, writes
//! the step's row into it, and stacks the layers back: a copy of every slice plus a copy of
//! the whole stack per step, where the chain writes only the rows (and runs in place on the
//! loop's state, `plan`'s in-place updates). Whatever else read an updated slice reads the
//! same bytes sliced from the chain right after its update (`slice(S_{j+1}, p_j)`), so its
//! value is unchanged.
//!
//! Exact: the updates write disjoint parts of `S` (each within its own slice), so their
//! order does not change the result; they are chained in the computation's def-before-use
//! order of the original updates, so an update computed from an earlier slice's readers
//! (the next layer's keys, from this layer's attention) comes after that slice's update
//! and no cycle forms. The reshapes between a slice and its update may only insert or drop
//! dimensions of size 1; a start index is clamped into the slice as the update clamped it
//! (a clamp and an offset where the slice is part of the concatenated dimension and the
//! index is not a constant), and dimensions of size 1 start at the slice's offset.

use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::pass::{Pass, PassError};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// The pass (`concat-of-updated-slices`).
#[derive(Debug, Default)]
pub struct ConcatOfUpdatedSlices;

impl Pass for ConcatOfUpdatedSlices {
    fn name(&self) -> &str {
        "concat-of-updated-slices"
    }

    fn description(&self) -> &str {
        "a concatenate of updated slices tiling one array as a chain of updates of the array"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for comp in &mut module.computations {
            let concats: Vec<InstrId> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Concatenate)
                .map(|(id, _)| id)
                .collect();
            let mut here = false;
            for c in concats {
                // An earlier rewrite may have made this concatenate dead or changed its
                // operands' users: match on the current graph.
                if let Some(m) = matched(comp, c) {
                    rewrite(comp, c, m, &mut names);
                    here = true;
                }
            }
            if here {
                edit::repair_order(comp);
                changed = true;
            }
        }
        if changed {
            // The concatenates, and the slices and updates nothing reads any more.
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

/// Where one dimension of an update of the whole array starts.
#[derive(Clone, Copy, Debug)]
enum Start {
    /// A known offset.
    At(i64),
    /// The update's own start index (the slice spans the whole dimension).
    Same(InstrId),
    /// `offset + clamp(0, index, hi)`: the update's index clamped into its slice.
    Clamped {
        index: InstrId,
        hi: i64,
        offset: i64,
    },
}

/// One updated slice of the concatenate.
struct Update {
    /// The dynamic-update-slice of the slice.
    dus: InstrId,
    /// Its update operand.
    value: InstrId,
    /// The update's dimensions in the whole array's rank.
    dims: Vec<i64>,
    /// Where it starts in each dimension of the whole array.
    starts: Vec<Start>,
    /// The slice's bounds in the whole array.
    bounds: Vec<SliceDim>,
}

/// What a concatenate matched: the array its slices tile, the start indices' type and the
/// updated slices in def-before-use order.
struct Matched {
    whole: InstrId,
    index_type: ElementType,
    updates: Vec<Update>,
}

/// The constant value of a scalar integer instruction.
fn constant_int(comp: &Computation, id: InstrId) -> Option<i64> {
    let i = comp.instr(id);
    if i.opcode != Opcode::Constant || !i.shape.dims().is_empty() {
        return None;
    }
    let v = i.literal()?.as_array()?.get_f64(0)?;
    (v.fract() == 0.0 && v.abs() < 9.0e15).then_some(v as i64)
}

/// The non-unit dimensions of `dims` (positions), for matching a reshape that only inserts
/// or drops dimensions of size 1.
fn non_unit(dims: &[i64]) -> Vec<usize> {
    (0..dims.len()).filter(|&k| dims[k] != 1).collect()
}

/// Matches concatenate `c` (see the module docs).
fn matched(comp: &Computation, c: InstrId) -> Option<Matched> {
    let ci = comp.instr(c);
    let d = usize::try_from(*ci.dimensions()?.first()?).ok()?;
    let mut whole = None;
    let mut next = 0i64;
    let mut updates = Vec::new();
    let mut index_type = None;
    for &x in &ci.operands {
        let xi = comp.instr(x);
        let (slice, dus) = match xi.opcode {
            Opcode::Slice => (x, None),
            _ => {
                let u = match xi.opcode {
                    Opcode::Reshape => *xi.operands.first()?,
                    _ => x,
                };
                let ui = comp.instr(u);
                if ui.opcode != Opcode::DynamicUpdateSlice {
                    return None;
                }
                let base = *ui.operands.first()?;
                let s = match comp.instr(base).opcode {
                    Opcode::Reshape => *comp.instr(base).operands.first()?,
                    _ => base,
                };
                (s, Some(u))
            }
        };
        let si = comp.instr(slice);
        if si.opcode != Opcode::Slice || si.shape.dims() != xi.shape.dims() {
            return None;
        }
        let s = *si.operands.first()?;
        if *whole.get_or_insert(s) != s {
            return None;
        }
        let full = comp.instr(s).shape.dims();
        let bounds = si.slice()?.to_vec();
        if bounds.len() != full.len() || d >= full.len() {
            return None;
        }
        for (a, b) in bounds.iter().enumerate() {
            let ok = b.stride == 1
                && match a == d {
                    true => b.start == next && b.limit > b.start,
                    false => b.start == 0 && b.limit == full[a],
                };
            if !ok {
                return None;
            }
        }
        next = bounds[d].limit;
        if let Some(u) = dus {
            let up = update(comp, u, &bounds, d)?;
            for k in 2..comp.instr(u).operands.len() {
                let t = comp.instr(comp.instr(u).operands[k]).shape.element_type()?;
                if *index_type.get_or_insert(t) != t {
                    return None;
                }
            }
            updates.push(up);
        }
    }
    let whole = whole?;
    let (ws, cs) = (&comp.instr(whole).shape, &ci.shape);
    if updates.is_empty() || next != *cs.dims().get(d)? || **ws != **cs || ws.is_dynamic() {
        return None;
    }
    let order = comp.def_before_use_order();
    let position = |id: InstrId| order.iter().position(|&o| o == id);
    updates.sort_by_key(|u| position(u.dus));
    Some(Matched {
        whole,
        index_type: index_type?,
        updates,
    })
}

/// The update `u` (a dynamic-update-slice of the slice `bounds` of the whole array, perhaps
/// through a reshape of size-1 dimensions) as an update of the whole array.
fn update(comp: &Computation, u: InstrId, bounds: &[SliceDim], d: usize) -> Option<Update> {
    let ui = comp.instr(u);
    let value = *ui.operands.get(1)?;
    let q = ui.shape.dims();
    let v = comp.instr(value).shape.dims();
    let e: Vec<i64> = bounds.iter().map(|b| b.limit - b.start).collect();
    let (ne, nq) = (non_unit(&e), non_unit(q));
    let same = ne.len() == nq.len() && ne.iter().zip(&nq).all(|(&a, &j)| e[a] == q[j]);
    if !same || v.len() != q.len() || v.iter().any(|&n| n <= 0) || ui.operands.len() != 2 + q.len()
    {
        return None;
    }
    let mut dims = Vec::with_capacity(e.len());
    let mut starts = Vec::with_capacity(e.len());
    let mut k = 0;
    for (a, &ea) in e.iter().enumerate() {
        if ea == 1 {
            dims.push(1);
            starts.push(Start::At(bounds[a].start));
            continue;
        }
        let j = nq[k];
        k += 1;
        let (index, hi) = (ui.operands[2 + j], ea - v[j]);
        dims.push(v[j]);
        // Off the concatenated dimension the slice spans the whole dimension: the
        // array's update clamps the index as the slice's did.
        starts.push(match (a == d, constant_int(comp, index)) {
            (false, _) => Start::Same(index),
            (true, Some(c)) => Start::At(bounds[a].start + c.clamp(0, hi)),
            (true, None) => Start::Clamped {
                index,
                hi,
                offset: bounds[a].start,
            },
        });
    }
    Some(Update {
        dus: u,
        value,
        dims,
        starts,
        bounds: bounds.to_vec(),
    })
}

/// A scalar integer constant of type `ty`.
fn int_constant(comp: &mut Computation, names: &mut NameGen, ty: ElementType, v: i64) -> InstrId {
    let lit = ArrayData::new(ty)
        .and_then(|mut data| {
            data.push_int(ty, i128::from(v)).ok()?;
            ArrayLiteral::new(Shape::scalar(ty), data)
        })
        .map(Literal::Array);
    match lit {
        Some(lit) => edit::add(
            comp,
            Instruction::constant(names.fresh("constant"), Shape::scalar(ty), lit),
        ),
        // `matched` took the type from integer start indices, which always hold one.
        None => unreachable!("an integer constant of {ty:?}"),
    }
}

/// A scalar binary or ternary instruction of type `ty`.
fn scalar(
    comp: &mut Computation,
    names: &mut NameGen,
    op: Opcode,
    ty: ElementType,
    operands: Vec<InstrId>,
) -> InstrId {
    let i = Instruction::new(names.fresh(op.as_str()), op, Shape::scalar(ty), operands);
    edit::add(comp, i)
}

/// `shape` with dimensions `dims` (its element type and layout: same rank).
fn with_dims(shape: &Shape, dims: Vec<i64>) -> Shape {
    let et = shape.element_type().unwrap_or(ElementType::F32);
    Shape::array_with(et, dims, Vec::new(), shape.layout().cloned())
}

/// Replaces concatenate `c` by the chain of `m`'s updates of the whole array; each old
/// update's other readers read the chain's value right after it, sliced as before.
fn rewrite(comp: &mut Computation, c: InstrId, m: Matched, names: &mut NameGen) {
    let whole_shape = (*comp.instr(c).shape).clone();
    let ty = m.index_type;
    let mut cur = m.whole;
    for u in &m.updates {
        let dus_name = comp.instr(u.dus).name.clone();
        let value_shape = (*comp.instr(u.value).shape).clone();
        let value = match value_shape.dims() == u.dims.as_slice() {
            true => u.value,
            false => {
                let s = with_dims(&whole_shape, u.dims.clone());
                let r = Instruction::new(names.fresh("reshape"), Opcode::Reshape, s, vec![u.value]);
                edit::add(comp, r)
            }
        };
        let mut operands = vec![cur, value];
        for s in &u.starts {
            operands.push(match *s {
                Start::At(v) => int_constant(comp, names, ty, v),
                Start::Same(i) => i,
                Start::Clamped { index, hi, offset } => {
                    let lo = int_constant(comp, names, ty, 0);
                    let top = int_constant(comp, names, ty, hi);
                    let clamped = scalar(comp, names, Opcode::Clamp, ty, vec![lo, index, top]);
                    let off = int_constant(comp, names, ty, offset);
                    scalar(comp, names, Opcode::Add, ty, vec![clamped, off])
                }
            });
        }
        let chained = Instruction::new(
            names.fresh(&dus_name),
            Opcode::DynamicUpdateSlice,
            whole_shape.clone(),
            operands,
        );
        cur = edit::add(comp, chained);
        // The old update's value, read back from the chain.
        let slice_dims = u.bounds.iter().map(|b| b.limit - b.start).collect();
        let slice = Instruction::new(
            names.fresh("slice"),
            Opcode::Slice,
            with_dims(&whole_shape, slice_dims),
            vec![cur],
        )
        .with_attr(AttrName::Slice, AttrValue::Slice(u.bounds.clone()));
        let slice = edit::add(comp, slice);
        let dus_shape = (*comp.instr(u.dus).shape).clone();
        let back = match dus_shape.dims() == comp.instr(slice).shape.dims() {
            true => slice,
            false => {
                let r = Instruction::new(
                    names.fresh("reshape"),
                    Opcode::Reshape,
                    dus_shape,
                    vec![slice],
                );
                edit::add(comp, r)
            }
        };
        edit::replace_uses(comp, u.dus, back);
    }
    edit::replace_uses(comp, c, cur);
}
