//! Layouts chosen, not kept, in a module before XLA's layout assignment (`choose-layouts`).
//!
//! JAX writes a layout on every instruction of the modules it hands XLA
//! (`before_optimizations`), but they are not semantic: the values do not depend on them
//! (no `bitcast` reads bytes across layouts before layout assignment), and XLA's layout
//! assignment treats all of them as unconstrained. JAX's transposed weight gradient
//! `f32[784,1024]{0,1} transpose(dot)` makes the Adam update that reads it with the
//! row-major moments write its moments `{0,1}` too, so every kernel of the update would
//! read or write a 4 KB stride if the layouts were kept. Even the entry's are chosen:
//! compiled through PJRT (what JAX and `tools/bench_vs_xla.py` do), XLA lays the entry's
//! parameters and results out in the default layout whatever the module's
//! `entry_computation_layout` says (measured: XLA's compiled `mlp_adam_step` returns
//! those moments `{1,0}` where the module wrote `{0,1}`), and hloc's callers hand in and
//! receive arrays in logical order, so an entry layout is no contract with them either.
//!
//! The choice, XLA's defaults where nothing asks for another:
//! - every array is row-major (the default `{rank-1, ..., 0}`; layout suffixes kept);
//! - a custom call keeps the result layout it was written with (a library's output, such
//!   as LAPACK's column-major factors), and what only renames a value takes the layout of
//!   what it renames: a `get-tuple-element` its tuple's element, a `tuple` and an
//!   `opt-barrier` their operands', a `call` its callee's root;
//! - a dot read only by transposes (all of one permutation) is laid out so that they are
//!   no-ops in memory, as XLA folds `transpose(dot)` into the dot: the GEMM writes the
//!   transposed product through its strides. Only where the batch dimensions stay the
//!   most major and each free dimension group contiguous and in order, so that it is
//!   still one GEMM per batch element, on a matrix of its own.
//!
//! What crosses a computation boundary may still differ on the two sides (a custom call's
//! column-major result carried by a loop whose body reads it row-major):
//! `plan::MatchBoundaryLayouts` converts those, as it does for any module.
//!
//! A module whose layouts are physical is left as it is ([`layouts_are_physical`]): XLA's
//! optimized dumps (`is_scheduled=true`), and any module holding fusions, bitcasts or
//! asynchronous pairs, which only XLA's passes after layout assignment form.

use hlo::ir::call_graph::callees_first;
use hlo::ir::{ComputationLayout, Instruction, ModuleAttrValue};
use hlo::pass::{Pass, PassError};
use hlo::shape::Layout;
use hlo::{CompId, InstrId, Module, Opcode, Shape};

/// The pass: see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChooseLayouts;

impl Pass for ChooseLayouts {
    fn name(&self) -> &str {
        "choose-layouts"
    }

    fn description(&self) -> &str {
        "chooses the layouts of a module before XLA's layout assignment: row-major, custom-call results kept, dots laid out so that their transposes are no-ops"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        if layouts_are_physical(module) {
            return Ok(false);
        }
        let mut changed = false;
        for cid in callees_first(module) {
            let order = module.computation(cid).def_before_use_order().into_owned();
            for id in order {
                let want = chosen(module, cid, id);
                changed |= set_shape(module, cid, id, want);
            }
            for id in module.computation(cid).instruction_ids().to_vec() {
                if let Some(want) = dot_read_transposed(module, cid, id) {
                    changed |= set_shape(module, cid, id, Some(want));
                }
            }
        }
        if changed {
            record_entry_layout(module);
        }
        Ok(changed)
    }
}

/// Whether `module`'s layouts are physical (see the module documentation): scheduled,
/// or holding an instruction only XLA's passes after layout assignment create.
pub fn layouts_are_physical(module: &Module) -> bool {
    module.is_scheduled()
        || module
            .computations()
            .any(|(_, c)| c.instructions().any(|(_, i)| after_layout_assignment(i)))
}

/// Whether `i` is of a kind only XLA's passes after layout assignment form.
fn after_layout_assignment(i: &Instruction) -> bool {
    use Opcode::*;
    i.opcode().is_async()
        || matches!(
            i.opcode(),
            Fusion
                | Bitcast
                | CopyStart
                | CopyDone
                | AllGatherStart
                | AllGatherDone
                | AllReduceStart
                | AllReduceDone
                | CollectivePermuteStart
                | CollectivePermuteDone
        )
}

/// Gives `id` the shape `want` (if any, and different); whether it changed.
fn set_shape(module: &mut Module, cid: CompId, id: InstrId, want: Option<Shape>) -> bool {
    let Some(want) = want else { return false };
    let comp = module.computation_mut(cid);
    if comp.instr(id).shape() == &want {
        return false;
    }
    comp.instr_mut(id).set_shape(want);
    true
}

/// The shape chosen for `id` (its operands and callees already chosen), or `None` to
/// keep its own.
fn chosen(module: &Module, cid: CompId, id: InstrId) -> Option<Shape> {
    let comp = module.computation(cid);
    let i = comp.instr(id);
    let operand = |k: usize| i.operands().get(k).map(|&o| comp.instr(o).shape().clone());
    match i.opcode() {
        Opcode::CustomCall => None,
        Opcode::GetTupleElement => {
            let tuple = operand(0)?;
            let k = usize::try_from(i.tuple_index()?).ok()?;
            let element = tuple.tuple_shapes().get(k)?.clone();
            element.compatible(i.shape()).then_some(element)
        }
        Opcode::Tuple => {
            let elements: Vec<Shape> = (0..i.operands().len()).filter_map(operand).collect();
            let tuple = Shape::tuple(elements);
            tuple.compatible(i.shape()).then_some(tuple)
        }
        Opcode::OptimizationBarrier => operand(0).filter(|s| s.compatible(i.shape())),
        Opcode::Call => {
            let callee = module.computation(i.to_apply()?);
            let root = callee.root_instr().shape().clone();
            root.compatible(i.shape()).then_some(root)
        }
        _ => Some(defaulted(i.shape())),
    }
}

/// `shape` with every array leaf of rank one or more in the default layout, suffixes
/// kept; a leaf written without a layout keeps none (it reads as the default).
fn defaulted(shape: &Shape) -> Shape {
    if shape.is_tuple() {
        return Shape::tuple(shape.tuple_shapes().iter().map(defaulted).collect());
    }
    let mut out = shape.clone();
    if let Some(l) = shape.layout() {
        if !l.is_row_major() && l.minor_to_major.len() == shape.rank() {
            let order = Layout::row_major(shape.rank()).minor_to_major;
            let layout = match l.suffixes() {
                Some(s) => Layout::with_suffixes(order, s.clone()),
                None => Layout::new(order),
            };
            out.set_layout(Some(layout));
        }
    }
    out
}

/// Dimensions from the most major to the most minor of a rank-`rank` array shape.
fn major_to_minor(s: &Shape) -> Vec<usize> {
    match s.layout() {
        Some(l) => l.minor_to_major.iter().rev().map(|&d| d as usize).collect(),
        None => (0..s.rank()).collect(),
    }
}

/// The shape of dot `id` that makes its users, all transposes of one permutation, no-ops
/// in memory, when that keeps it one GEMM (see the module documentation).
fn dot_read_transposed(module: &Module, cid: CompId, id: InstrId) -> Option<Shape> {
    let comp = module.computation(cid);
    let dot = comp.instr(id);
    if dot.opcode() != Opcode::Dot || !dot.shape().is_array() || comp.root() == id {
        return None;
    }
    let users = dot.users();
    let first = comp.instr(*users.first()?);
    let perm = first.dimensions()?.to_vec();
    let out = first.shape().clone();
    let same = |u: &InstrId| {
        let t = comp.instr(*u);
        t.opcode() == Opcode::Transpose
            && t.dimensions() == Some(&perm[..])
            && major_to_minor(t.shape()) == major_to_minor(&out)
    };
    if !users.iter().all(same) {
        return None;
    }
    // Logical dimension perm[k] of the dot is dimension k of the transpose.
    let order: Vec<usize> = major_to_minor(&out)
        .iter()
        .map(|&k| usize::try_from(*perm.get(k)?).ok())
        .collect::<Option<_>>()?;
    let lhs_rank = comp.instr(*dot.operands().first()?).shape().rank();
    if order.len() != dot.shape().rank() || !free_groups_merge(dot, lhs_rank, &order) {
        return None;
    }
    let mut shape = dot.shape().clone();
    let m2m: Vec<i64> = order.iter().rev().map(|&d| d as i64).collect();
    let layout = match shape.layout().and_then(Layout::suffixes) {
        Some(s) => Layout::with_suffixes(m2m, s.clone()),
        None => Layout::new(m2m),
    };
    shape.set_layout(Some(layout));
    (shape != *dot.shape()).then_some(shape)
}

/// Whether, with the dot's result dimensions in physical `order` (major to minor), each
/// operand's free dimensions of extent above one stay adjacent and in their logical order,
/// so that they still merge into one GEMM dimension. `lhs_rank` is the lhs operand's rank.
fn free_groups_merge(dot: &Instruction, lhs_rank: usize, order: &[usize]) -> bool {
    let dn = dot.dot_dimension_numbers();
    let dims = dot.shape().dims();
    let rank = dims.len();
    let batch = dn.lhs_batch_dims.len();
    // Result dimensions: batch, then the lhs's free ones, then the rhs's (XLA's order).
    let lhs_free = lhs_rank.saturating_sub(batch + dn.lhs_contracting_dims.len());
    let split = (batch + lhs_free).min(rank);
    let groups = [batch.min(split)..split, split..rank];
    // Batch dimensions stay the most major: each batch element's product one contiguous
    // matrix (gpt_forward_topk's attention `[8,4,64,128]` read as `[8,128,4,64]` ran
    // slower with the heads between the GEMM's columns than with the transpose kept).
    if order.iter().take(batch).enumerate().any(|(k, &d)| d != k) {
        return false;
    }
    // Dimensions of extent one take no place in memory.
    let placed: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&d| dims.get(d).is_some_and(|&n| n > 1))
        .collect();
    groups.iter().all(|g| {
        let members: Vec<(usize, usize)> = placed
            .iter()
            .enumerate()
            .filter(|(_, &d)| g.contains(&d))
            .map(|(pos, &d)| (pos, d))
            .collect();
        members
            .windows(2)
            .all(|w| w[1].0 == w[0].0 + 1 && w[0].1 < w[1].1)
    })
}

/// Rewrites `entry_computation_layout` (when written) to the entry's chosen parameter
/// and root shapes, which it must describe.
fn record_entry_layout(module: &mut Module) {
    let entry = module.entry();
    let parameters: Vec<Shape> = entry
        .parameters()
        .iter()
        .map(|&p| entry.instr(p).shape().clone())
        .collect();
    let result = entry.root_instr().shape().clone();
    for attr in module.attrs_mut() {
        if let ModuleAttrValue::Layout(l) = &mut attr.value {
            if attr.name == "entry_computation_layout" {
                *l = ComputationLayout {
                    parameters: parameters.clone(),
                    result: result.clone(),
                };
            }
        }
    }
}
