//! Merges several kernels of one computation (fusions or single fusible ops) into one
//! multi-output fusion: the fused computation holds a copy of each kernel's body (a
//! kernel reading another of the set reads its value inside), and its root is a tuple of
//! every kernel's outputs in order. Users outside the set read them through
//! `get-tuple-element`; a multi-output kernel's own get-tuple-element users are re-pointed
//! with shifted indices. The merged kernels and their computations are then removed.

use std::collections::{HashMap, HashSet};

use hlo::attrs::{AttrName, AttrValue, FusionKind};
use hlo::ir::edit::NameGen;
use hlo::ir::ComputationBuilder;
use hlo::pass::PassError;
use hlo::{CompId, InstrId, Instruction, Module, Opcode, Shape};

use crate::plan::is_inlined_constant;

const PASS: &str = "multi-output-fusion";

/// The values (in `b`) of each output of `value`, adding get-tuple-elements for a tuple
/// result that is not a `tuple` instruction.
fn outputs_of(
    b: &mut ComputationBuilder,
    names: &mut NameGen,
    value: InstrId,
    instr: &Instruction,
) -> Vec<(InstrId, Shape)> {
    if !instr.shape().is_tuple() {
        return vec![(value, instr.shape().clone())];
    }
    if instr.opcode() == Opcode::Tuple {
        return instr
            .operands()
            .iter()
            .zip(instr.shape().tuple_shapes())
            .map(|(&o, s)| (o, s.clone()))
            .collect();
    }
    instr
        .shape()
        .tuple_shapes()
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let g = Instruction::new(
                names.fresh("get-tuple-element"),
                Opcode::GetTupleElement,
                s.clone(),
                vec![value],
            )
            .with_attr(AttrName::Index, AttrValue::Int(k as i64));
            (b.add(g), s.clone())
        })
        .collect()
}

/// Merges `set` (kernel instructions of computation `comp`, in def-before-use order) into
/// one fusion of `kind`. Every kernel of the set that another one reads must have an
/// array result; every user of a tuple-shaped kernel must be a get-tuple-element. Returns
/// the new fusion's name.
pub fn merge_kernels(
    module: &mut Module,
    comp: CompId,
    set: &[InstrId],
    kind: FusionKind,
    names: &mut NameGen,
) -> Result<String, PassError> {
    let in_set: HashSet<InstrId> = set.iter().copied().collect();
    let call_counts = {
        let mut n: HashMap<CompId, usize> = HashMap::new();
        for (_, c) in module.computations() {
            for (_, i) in c.instructions() {
                for callee in i.called_computations_iter() {
                    *n.entry(callee).or_default() += 1;
                }
            }
        }
        n
    };
    let c = module.computation(comp);
    let mut b = ComputationBuilder::new("");
    let mut params: Vec<InstrId> = Vec::new();
    let mut param_of: HashMap<InstrId, InstrId> = HashMap::new();
    let mut value_of: HashMap<InstrId, InstrId> = HashMap::new();
    let mut outputs: Vec<(InstrId, Shape)> = Vec::new();
    let mut offsets: Vec<usize> = Vec::new();
    let mut dropped: Vec<CompId> = Vec::new();
    // Parameters first: the external operands of every kernel, in order of first use.
    for &k in set {
        for &o in c.operands(k) {
            if in_set.contains(&o) || param_of.contains_key(&o) || is_inlined_constant(c, o) {
                continue;
            }
            let n = params.len();
            let p = Instruction::parameter(
                names.fresh(&format!("param_{n}")),
                n as i64,
                c.instr(o).shape().clone(),
            );
            param_of.insert(o, b.add(p));
            params.push(o);
        }
    }
    for &k in set {
        let instr = c.instr(k);
        let mut args = Vec::with_capacity(instr.operands().len());
        for &o in instr.operands() {
            let v = if let Some(&v) = value_of.get(&o) {
                v
            } else if let Some(&v) = param_of.get(&o) {
                v
            } else if is_inlined_constant(c, o) {
                let mut copy = c.instr(o).clone();
                copy.users.clear();
                copy.name = names.fresh(&copy.name);
                let v = b.add(copy);
                value_of.insert(o, v);
                v
            } else {
                return Err(PassError::invalid(
                    PASS,
                    format!("`{}` reads a tuple-shaped kernel of the set", instr.name()),
                ));
            };
            args.push(v);
        }
        let (root_value, root_instr) = match (instr.opcode(), instr.calls()) {
            (Opcode::Fusion, Some(callee)) => {
                let body = module.computation(callee);
                let keep_names = call_counts.get(&callee) == Some(&1);
                let mut map: HashMap<InstrId, InstrId> = HashMap::new();
                for (n, &p) in body.parameters().iter().enumerate() {
                    let a = args.get(n).copied().ok_or_else(|| {
                        PassError::invalid(PASS, format!("`{}`: missing operand {n}", instr.name()))
                    })?;
                    map.insert(p, a);
                }
                for &id in body.def_before_use_order().iter() {
                    if map.contains_key(&id) {
                        continue;
                    }
                    let src = body.instr(id);
                    let mut copy = src.clone();
                    copy.users.clear();
                    copy.attrs
                        .retain(|a| a.name != AttrName::ControlPredecessors);
                    if !keep_names {
                        copy.name = names.fresh(&src.name);
                    }
                    copy.operands = src.operands().iter().map(|o| map[o]).collect();
                    map.insert(id, b.add(copy));
                }
                if keep_names {
                    dropped.push(callee);
                }
                // The root as copied: its operands are the copies' ids.
                let mut root = body.root_instr().clone();
                root.operands = root.operands.iter().map(|o| map[o]).collect();
                (map[&body.root()], root)
            }
            _ => {
                let mut copy = instr.clone();
                copy.users.clear();
                copy.attrs
                    .retain(|a| a.name != AttrName::ControlPredecessors);
                copy.operands = args;
                let v = b.add(copy.clone());
                (v, copy)
            }
        };
        value_of.insert(k, root_value);
        offsets.push(outputs.len());
        outputs.extend(outputs_of(&mut b, names, root_value, &root_instr));
    }
    let shape = Shape::tuple(outputs.iter().map(|(_, s)| s.clone()).collect());
    let root = b.add(Instruction::new(
        names.fresh("tuple"),
        Opcode::Tuple,
        shape.clone(),
        outputs.iter().map(|(v, _)| *v).collect(),
    ));
    let mut fused = b.build(Some(root)).map_err(|e| PassError::ir(PASS, e))?;
    // A multi-output kernel's own root tuple was replaced by the new one.
    hlo::ir::edit::remove_dead_code(module, &mut fused);
    fused.set_name(names.keep_or_fresh("fused_computation"));
    let metadata = c.instr(set[0]).attr(&AttrName::Metadata).cloned();
    let cid = module.add_computation(fused);
    let c = module.computation_mut(comp);
    let name = names.keep_or_fresh("fusion");
    let mut f = Instruction::new(name.clone(), Opcode::Fusion, shape.clone(), params);
    f.set_attr(AttrName::Kind, AttrValue::FusionKind(kind));
    f.set_attr(AttrName::Calls, AttrValue::Computation(cid));
    if let Some(md) = metadata {
        f.set_attr(AttrName::Metadata, md);
    }
    let fid = c.add_instruction(f).map_err(|e| PassError::ir(PASS, e))?;
    for (&k, &offset) in set.iter().zip(&offsets) {
        if c.instr(k).shape().is_tuple() {
            for u in c.users(k).to_vec() {
                let ui = c.instr(u);
                let index = ui
                    .tuple_index()
                    .filter(|_| ui.opcode() == Opcode::GetTupleElement);
                let Some(index) = index else {
                    return Err(PassError::invalid(
                        PASS,
                        format!(
                            "`{}` is used by `{}`, not a get-tuple-element",
                            c.instr(k).name(),
                            ui.name()
                        ),
                    ));
                };
                c.set_operand(u, 0, fid)
                    .map_err(|e| PassError::ir(PASS, e))?;
                c.instr_mut(u)
                    .set_attr(AttrName::Index, AttrValue::Int(offset as i64 + index));
            }
        } else {
            let g = Instruction::new(
                names.fresh("get-tuple-element"),
                Opcode::GetTupleElement,
                shape.tuple_shapes()[offset].clone(),
                vec![fid],
            )
            .with_attr(AttrName::Index, AttrValue::Int(offset as i64));
            let gid = c.add_instruction(g).map_err(|e| PassError::ir(PASS, e))?;
            c.replace_all_uses(k, gid)
                .map_err(|e| PassError::ir(PASS, e))?;
        }
    }
    hlo::ir::edit::repair_order(c);
    let mut owned = std::mem::replace(
        module.computation_mut(comp),
        crate::materialize::placeholder(),
    );
    hlo::ir::edit::remove_dead_code(module, &mut owned);
    *module.computation_mut(comp) = owned;
    if !dropped.is_empty() {
        hlo::ir::call_graph::remove_unreachable_computations(module);
    }
    hlo::ir::call_graph::sort_computations(module);
    Ok(name)
}
