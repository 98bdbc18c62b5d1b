//! Donated parameters (issue 32 item 1): the module's `input_output_alias` (JAX writes it
//! for `donate_argnums`) lets an output take its parameter's bytes, as XLA's buffer
//! assignment puts a donated parameter and its output in one allocation. The output buffer
//! moves into the parameter's allocation where that is safe: the same bytes in the same
//! physical order, and the parameter dead when the output is written, or read for the last
//! time by the very thunk writing it where that thunk writes element `i` only after reading
//! element `i` (an in-place kernel proven by the indexing maps, [`super::in_place`]; a
//! copy of the parameter into the output, which then copies nothing; a loop whose state
//! element starts from the parameter). Elsewhere the output keeps memory of its own, as
//! XLA's `may-alias` allows. A parameter no output takes is never written.

use codegen::kir::{Access, Kernel};
use hlo::Module;

use super::in_place::Candidate;
use super::values::parse_input_output_alias;
use crate::{ArraySpec, Buffer, BufferId, Program, Thunk};

/// An output written over its donated parameter's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Donation {
    /// The output's index (a leaf of the root, in flattened order).
    pub output: usize,
    /// The parameter's number.
    pub parameter: usize,
    /// The in-place kernel that reads the parameter for the last time and writes the
    /// output (its parameter's access becomes `inout`); `None` where the parameter is dead
    /// before, or a copy or loop takes it over.
    pub kernel: Option<Candidate>,
}

/// The flattened leaf index of a root tuple index, for a root of `shape`.
fn leaf_of(shape: &hlo::Shape, index: &[i64]) -> Option<usize> {
    let Some((&first, rest)) = index.split_first() else {
        return (!shape.is_tuple()).then_some(0);
    };
    let elements = shape.tuple_shapes();
    let k = usize::try_from(first)
        .ok()
        .filter(|&k| k < elements.len())?;
    let before: usize = elements[..k]
        .iter()
        .map(|s| super::values::leaf_indices(s).len())
        .sum();
    Some(before + leaf_of(&elements[k], rest)?)
}

/// Whether `a` and `b` describe the same bytes in the same physical order.
fn same_array(a: &ArraySpec, b: &ArraySpec) -> bool {
    a.ty == b.ty && a.dims == b.dims && a.minor_to_major == b.minor_to_major
}

/// Whether thunk `t` may write `output` over `param` although it reads `param` (its
/// last reader): a copy of it, a loop starting a state element from it, or a kernel among
/// the in-place `candidates` whose parameters reading it are all read-only.
fn takes_over_at(
    t: &Thunk,
    (output, param): (BufferId, BufferId),
    kernels: &[Kernel],
    candidates: &[Candidate],
) -> Option<Option<Candidate>> {
    match t {
        Thunk::Copy { src, dst, .. } => (*src == param && *dst == output).then_some(None),
        Thunk::While { init, state, .. } => init
            .iter()
            .zip(state)
            .any(|(&i, &s)| i == param && s == output)
            .then_some(None),
        Thunk::Kernel { kernel, args, .. } => {
            let c = candidates
                .iter()
                .find(|c| c.kernel == *kernel && c.output == output && c.operand == param)?;
            let k = kernels.get(*kernel)?;
            let read_only = args.len() == k.buffers.len()
                && args
                    .iter()
                    .zip(&k.buffers)
                    .all(|(&a, p)| a != param || p.access == Access::In);
            (read_only && args.contains(&output)).then_some(Some(*c))
        }
        _ => None,
    }
}

/// The donations of `module`'s `input_output_alias` that are safe in the built entry
/// sequence `thunks` (see the module docs): each output and each parameter at most once,
/// an output that is a fresh value (not a parameter or constant itself).
pub fn donations(
    module: &Module,
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    candidates: &[Candidate],
    (parameters, outputs): (&[ArraySpec], &[ArraySpec]),
) -> Vec<Donation> {
    let Some(hlo::ir::ModuleAttrValue::Raw(text)) = module.attr("input_output_alias") else {
        return Vec::new();
    };
    let root = module.entry().root_instr().shape();
    let mut out: Vec<Donation> = Vec::new();
    for (out_index, parameter, param_index) in parse_input_output_alias(text) {
        let Some(output) = leaf_of(root, &out_index) else {
            continue;
        };
        let (Some(o), Some(p)) = (outputs.get(output), parameters.get(parameter)) else {
            continue;
        };
        let (ob, pb) = (&buffers[o.buffer], &buffers[p.buffer]);
        let Some(t) = ob.defined_at else {
            continue;
        };
        let taken = out
            .iter()
            .any(|d| d.parameter == parameter || outputs[d.output].buffer == o.buffer);
        if !param_index.is_empty()
            || taken
            || o.buffer == p.buffer
            || ob.allocation != usize::MAX
            || ob.bytes != pb.bytes
            || !same_array(o, p)
        {
            continue;
        }
        let kernel = match pb.last_use {
            None => None,
            Some(u) if u < t => None,
            Some(u) if u == t => {
                match thunks
                    .get(t)
                    .and_then(|th| takes_over_at(th, (o.buffer, p.buffer), kernels, candidates))
                {
                    Some(k) => k,
                    None => continue,
                }
            }
            Some(_) => continue,
        };
        out.push(Donation {
            output,
            parameter,
            kernel,
        });
    }
    out
}

/// The parameters `module`'s `input_output_alias` names: an output may take their bytes
/// ([`donations`]), so nothing may read them through a view bound before that is decided
/// (a sliced chain's operands, [`crate::stream_chain`]).
pub fn aliased_parameters(module: &Module) -> Vec<usize> {
    match module.attr("input_output_alias") {
        Some(hlo::ir::ModuleAttrValue::Raw(text)) => parse_input_output_alias(text)
            .into_iter()
            .map(|(_, parameter, _)| parameter)
            .collect(),
        _ => Vec::new(),
    }
}

/// For each allocation of `p`: whether it is a donated parameter's, holding an output
/// too (the executor makes it writable memory holding the argument, and hands it back as
/// that output).
pub fn donated_allocations(p: &Program) -> Vec<bool> {
    let mut donated = vec![false; p.allocations.len()];
    for o in &p.outputs {
        let a = p.buffers[o.buffer].allocation;
        let param = p
            .parameters
            .iter()
            .any(|s| s.buffer != o.buffer && p.buffers[s.buffer].allocation == a);
        if let Some(d) = donated.get_mut(a) {
            *d |= param;
        }
    }
    donated
}
