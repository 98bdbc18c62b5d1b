//! The exact half of hloc's reach ([`crate::HlocReach`]'s `confirm`): a candidate fusion
//! built as the fusion pass would form it (its inputs as parameters in order of first use,
//! scalar constants copied in, the members' called computations beside it), in a module of
//! its own, and its body emitted ([`crate::emit::check_instruction`], the code that builds
//! the kernel, stopped before the root tiling and loop nest, which refuse nothing). How
//! members index each other (a value read under a guard, an operand read over a range)
//! refuses as surely as an op without an emitter, and only the emitter knows.

use std::collections::HashMap;

use fusion::{Candidate, Unemittable};
use hlo::attrs::{AttrName, AttrValue, FusionKind};
use hlo::ir::ComputationBuilder;
use hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};

use crate::{CodegenError, EmitTarget};

/// `Ok` when the emitters of `target` emit `c` (of a computation of `module`) as one
/// fusion; otherwise the member at fault (by the emitter's message) and why.
pub(crate) fn check(
    module: &Module,
    target: &EmitTarget,
    c: &Candidate<'_>,
) -> Result<(), Unemittable> {
    let root = *c.roots.first().ok_or_else(|| Unemittable {
        at: c.members[0],
        why: "a candidate without a root".into(),
    })?;
    let internal = |e: String| Unemittable {
        at: root,
        why: format!("not buildable as a fusion ({e})"),
    };
    let (scratch, entry, fusion) = scratch_module(module, c).map_err(internal)?;
    match crate::emit::check_instruction(&scratch, target, entry, fusion) {
        Ok(()) => Ok(()),
        Err(CodegenError::Unsupported { op, instr, reason }) => Err(Unemittable {
            at: culprit(c, &op, &instr).unwrap_or(root),
            why: format!("in a kernel whose emitter refuses `{op}` ({reason})"),
        }),
        // Other errors are the program builder's to report, as for a formed fusion.
        Err(_) => Ok(()),
    }
}

/// The member the emitter's message names: by name, else the first of its opcode.
fn culprit(c: &Candidate<'_>, op: &str, instr: &str) -> Option<InstrId> {
    let members = c.members.iter().copied();
    members
        .clone()
        .find(|&m| c.comp.instr(m).name() == instr)
        .or_else(|| {
            members
                .clone()
                .find(|&m| c.comp.instr(m).opcode().as_str() == op)
        })
}

/// A module holding the computations the members call, the fused computation and an entry
/// that calls it with one parameter per input: `(module, entry, fusion instruction)`.
fn scratch_module(module: &Module, c: &Candidate<'_>) -> Result<(Module, CompId, InstrId), String> {
    let mut computations: Vec<Computation> = Vec::new();
    let called = called_closure(module, c);
    let remap: HashMap<CompId, CompId> = called
        .iter()
        .enumerate()
        .map(|(n, &old)| (old, CompId::from_index(n)))
        .collect();
    for &old in &called {
        let mut comp = module.computation(old).clone();
        comp.is_entry = false;
        let ids: Vec<InstrId> = comp.instructions().map(|(id, _)| id).collect();
        for id in ids {
            remap_calls(comp.instr_mut(id), &remap)?;
        }
        computations.push(comp);
    }
    let (fused, inputs) = fused_computation(c, &remap)?;
    computations.push(fused);
    let fused_id = CompId::from_index(computations.len() - 1);
    let mut b = ComputationBuilder::with_capacity("entry", inputs.len() + 1);
    let params: Vec<InstrId> = inputs
        .iter()
        .enumerate()
        .map(|(n, &x)| {
            let shape = c.comp.instr(x).shape().clone();
            b.add(Instruction::parameter(format!("in{n}"), n as i64, shape))
        })
        .collect();
    let shape = fused_shape(c);
    let mut f = Instruction::new("candidate", Opcode::Fusion, shape, params);
    f.set_attr(AttrName::Kind, AttrValue::FusionKind(FusionKind::Loop));
    f.set_attr(AttrName::Calls, AttrValue::Computation(fused_id));
    let fusion = b.add(f);
    let mut entry = b.build(Some(fusion)).map_err(|e| e.to_string())?;
    entry.is_entry = true;
    computations.push(entry);
    let entry_id = CompId::from_index(computations.len() - 1);
    let m = Module::new("candidate", computations, entry_id).map_err(|e| e.to_string())?;
    Ok((m, entry_id, fusion))
}

/// The computations the members call, transitively, each once.
fn called_closure(module: &Module, c: &Candidate<'_>) -> Vec<CompId> {
    let mut out: Vec<CompId> = Vec::new();
    let mut stack: Vec<CompId> = c
        .members
        .iter()
        .flat_map(|&m| c.comp.instr(m).called_computations_iter())
        .collect();
    while let Some(cid) = stack.pop() {
        if out.contains(&cid) {
            continue;
        }
        out.push(cid);
        for (_, i) in module.computation(cid).instructions() {
            stack.extend(i.called_computations_iter());
        }
    }
    out
}

/// `instr`'s called computations renamed by `remap`.
fn remap_calls(instr: &mut Instruction, remap: &HashMap<CompId, CompId>) -> Result<(), String> {
    let name = instr.name.clone();
    let new = |cid: &CompId| {
        remap
            .get(cid)
            .copied()
            .ok_or_else(|| format!("`{name}` calls a computation outside the closure"))
    };
    for a in &mut instr.attrs {
        match &mut a.value {
            AttrValue::Computation(cid) => *cid = new(cid)?,
            AttrValue::Computations(cids) => {
                for cid in cids {
                    *cid = new(cid)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The fused computation of `c` as the fusion pass materializes it, and its inputs (the
/// operands of members outside the candidate, each once, in order of first use; scalar
/// constants are copied in instead).
fn fused_computation(
    c: &Candidate<'_>,
    remap: &HashMap<CompId, CompId>,
) -> Result<(Computation, Vec<InstrId>), String> {
    let members: std::collections::HashSet<InstrId> = c.members.iter().copied().collect();
    let mut sorted = c.members.to_vec();
    sorted.sort_by_key(|&m| (c.position)(m));
    let mut inputs: Vec<InstrId> = Vec::new();
    for &m in &sorted {
        for &o in c.comp.operands(m) {
            if !members.contains(&o)
                && !fusion::plan::is_inlined_constant(c.comp, o)
                && !inputs.contains(&o)
            {
                inputs.push(o);
            }
        }
    }
    let mut b = ComputationBuilder::with_capacity("fused", inputs.len() + sorted.len() + 1);
    let mut map: HashMap<InstrId, InstrId> = HashMap::new();
    for (n, &x) in inputs.iter().enumerate() {
        let shape = c.comp.instr(x).shape().clone();
        let name = format!("candidate.param_{n}");
        map.insert(x, b.add(Instruction::parameter(name, n as i64, shape)));
    }
    for &m in &sorted {
        for &o in c.comp.operands(m) {
            if !map.contains_key(&o) && fusion::plan::is_inlined_constant(c.comp, o) {
                let mut copy = c.comp.instr(o).clone();
                copy.users.clear();
                map.insert(o, b.add(copy));
            }
        }
        let mut copy = c.comp.instr(m).clone();
        copy.users.clear();
        copy.attrs
            .retain(|a| a.name != AttrName::ControlPredecessors);
        remap_calls(&mut copy, remap)?;
        let mapped = |o: &InstrId| {
            map.get(o)
                .copied()
                .ok_or_else(|| format!("an operand of `{}` is defined after it", copy.name))
        };
        copy.operands = c
            .comp
            .operands(m)
            .iter()
            .map(mapped)
            .collect::<Result<_, _>>()?;
        map.insert(m, b.add(copy));
    }
    let mapped = |r: &InstrId| {
        map.get(r)
            .copied()
            .ok_or_else(|| "a root outside the members".to_string())
    };
    let root = match c.roots {
        [r] => mapped(r)?,
        roots => {
            let elems: Vec<InstrId> = roots.iter().map(mapped).collect::<Result<_, _>>()?;
            let shape = fused_shape(c);
            b.add(Instruction::new("tuple", Opcode::Tuple, shape, elems))
        }
    };
    Ok((b.build(Some(root)).map_err(|e| e.to_string())?, inputs))
}

/// The shape of the fusion of `c`: its root's, or the tuple of its roots'.
fn fused_shape(c: &Candidate<'_>) -> hlo::Shape {
    match c.roots {
        [r] => c.comp.instr(*r).shape().clone(),
        roots => hlo::Shape::tuple(
            roots
                .iter()
                .map(|&r| c.comp.instr(r).shape().clone())
                .collect(),
        ),
    }
}
