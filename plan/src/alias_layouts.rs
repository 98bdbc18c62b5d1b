//! An output the module's `input_output_alias` (JAX's `donate_argnums`) aliases to a
//! parameter can take that parameter's bytes only when both lay their elements out in
//! the same order ([`crate::memory::donate`]). JAX writes the layouts of its values as
//! they fall out of its lowering: an Adam moment computed from a transposed gradient is
//! `f32[256,256]{0,1}` although its parameter is `{1,0}`. XLA's layout assignment
//! constrains an aliased output to its parameter's layout; [`adopt_parameter_layouts`]
//! does the same where the value is computed by a kernel that can write any layout (an
//! elementwise operation or a broadcast) and every other reader of it reads through its
//! layout (elementwise operations, broadcasts, reductions, slices, pads,
//! concatenations, reverses): the value's declared layout becomes the parameter's, and
//! so do the root tuple's element (and `entry_computation_layout`'s result, when written)
//! that hold it. The caller never sees the change: outputs are handed out in logical
//! order whatever their physical layout. Anything else keeps its layout (the output then
//! keeps memory of its own, as `may-alias` allows).

use hlo::ir::{ComputationLayout, ModuleAttrValue};
use hlo::{InstrId, Module, Opcode, Shape};

use crate::memory::values::parse_input_output_alias;

/// Whether an instruction of `op` computes its result through a kernel that writes any
/// layout asked of it.
fn writes_any_layout(op: Opcode) -> bool {
    (op.is_elementwise() && op != Opcode::BitcastConvert) || op == Opcode::Broadcast
}

/// Whether an instruction of `op` reads its operands through their declared layouts,
/// whatever they are (never reinterpreting bytes, never a library call).
fn reads_any_layout(op: Opcode) -> bool {
    writes_any_layout(op)
        || matches!(
            op,
            Opcode::Reduce
                | Opcode::Slice
                | Opcode::Pad
                | Opcode::Concatenate
                | Opcode::Reverse
                | Opcode::DynamicSlice
        )
}

/// The layout (minor-to-major) of an array shape, row-major when it has none.
fn order(s: &Shape) -> Option<Vec<i64>> {
    let a = s.as_array()?;
    Some(
        a.layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_else(|| (0..a.dims().len() as i64).rev().collect()),
    )
}

/// The element at `index` of tuple shape `s`, mutably.
fn subshape_mut<'a>(s: &'a mut Shape, index: &[i64]) -> Option<&'a mut Shape> {
    let Some((&first, rest)) = index.split_first() else {
        return Some(s);
    };
    match s {
        Shape::Tuple(elements) => {
            subshape_mut(elements.get_mut(usize::try_from(first).ok()?)?, rest)
        }
        Shape::Array(_) => None,
    }
}

/// The tuples from the entry's root down to output `index` (each with the operand taken)
/// and the instruction computing that output, where every step is a `tuple` instruction
/// read by nothing but the step above it, holding the next operand once.
fn path_to_output(module: &Module, index: &[i64]) -> Option<(Vec<(InstrId, usize)>, InstrId)> {
    let comp = module.entry();
    let mut at = comp.root();
    let mut path = Vec::new();
    for &i in index {
        let t = comp.instr(at);
        if t.opcode() != Opcode::Tuple {
            return None;
        }
        let k = usize::try_from(i).ok()?;
        let next = *t.operands().get(k)?;
        let once = t.operands().iter().filter(|&&o| o == next).count() == 1;
        let only_above = match path.last() {
            None => comp.users(at).is_empty(),
            Some(&(above, _)) => comp.users(at).iter().all(|&u| u == above),
        };
        if !once || !only_above {
            return None;
        }
        path.push((at, k));
        at = next;
    }
    Some((path, at))
}

/// Gives each output aliased to a parameter of the same element type and dimensions but
/// another layout the parameter's layout, where its computation allows it (see the module
/// documentation); returns whether any changed.
pub(crate) fn adopt_parameter_layouts(module: &mut Module) -> bool {
    let Some(ModuleAttrValue::Raw(text)) = module.attr("input_output_alias") else {
        return false;
    };
    let aliases = parse_input_output_alias(text);
    let mut changed = false;
    for (out_index, parameter, param_index) in aliases {
        let entry = module.entry();
        let Some(param_shape) = entry
            .parameter(parameter)
            .and_then(|p| entry.instr(p).shape().subshape(&param_index).cloned())
        else {
            continue;
        };
        let Some((path, value)) = path_to_output(module, &out_index) else {
            continue;
        };
        let v = entry.instr(value);
        let (Some(want), Some(have)) = (order(&param_shape), order(v.shape())) else {
            continue;
        };
        let parent = path.last().map(|&(t, _)| t);
        let readers_ok = entry
            .users(value)
            .iter()
            .all(|&u| Some(u) == parent || reads_any_layout(entry.instr(u).opcode()));
        if want == have
            || !v.shape().compatible(&param_shape)
            || !writes_any_layout(v.opcode())
            || !readers_ok
        {
            continue;
        }
        let mut new_shape = v.shape().clone();
        new_shape.set_layout(param_shape.layout().cloned());
        let id = module.entry_id();
        let comp = module.computation_mut(id);
        comp.instr_mut(value).set_shape(new_shape.clone());
        // Each tuple above holds the changed element at its index path below it.
        for (depth, &(t, _)) in path.iter().enumerate() {
            let below: Vec<i64> = path[depth..].iter().map(|&(_, k)| k as i64).collect();
            let mut s = comp.instr(t).shape().clone();
            if let Some(slot) = subshape_mut(&mut s, &below) {
                *slot = new_shape.clone();
            }
            comp.instr_mut(t).set_shape(s);
        }
        for attr in module.attrs_mut() {
            if let ModuleAttrValue::Layout(ComputationLayout { result, .. }) = &mut attr.value {
                if let Some(slot) = subshape_mut(result, &out_index) {
                    if slot.compatible(&new_shape) {
                        *slot = new_shape.clone();
                    }
                }
            }
        }
        changed = true;
    }
    changed
}
