//! Turns a plan into HLO: every kernel of two or more instructions becomes a `fusion`
//! instruction calling a new computation (`fused_computation`, `fused_computation.1`, ...
//! as XLA names them) whose parameters are the kernel's inputs (`param_0.N`, ...) and whose
//! body is a copy of the members; scalar constants are copied in. A producer duplicated
//! into several fusions keeps its name in the first and gets fresh names in the others.
//! The replaced instructions are removed afterwards, with any other dead code, and the
//! computations are reordered so that callees precede callers.

use std::collections::{HashMap, HashSet};

use hlo::attrs::{AttrName, AttrValue, FusionKind};
use hlo::ir::edit::NameGen;
use hlo::ir::ComputationBuilder;
use hlo::pass::PassError;
use hlo::{CompId, InstrId, Instruction, Module, Opcode};

use crate::cost::CompInfo;
use crate::emitter_reach::{EmitterReach, EmitterRules};
use crate::ops::OpClass;
use crate::plan::{inputs, is_inlined_constant, Kernel};
use crate::xla_cpu;

/// A fusion instruction created from a kernel.
#[derive(Clone, Debug)]
pub struct Created {
    /// The fusion instruction's name.
    pub name: String,
    /// The root of the kernel it replaced.
    pub root: InstrId,
    /// Original names of its members.
    pub members: Vec<String>,
    /// `loop`, `reduction`, `transpose`, ... (the emitter that generates it).
    pub emitter: &'static str,
}

/// Which emitter a kernel needs, and its `kind=` under `rules`.
pub fn emitter_and_kind(
    info: &CompInfo,
    members: &[InstrId],
    rules: &EmitterRules,
) -> (&'static str, FusionKind) {
    let class = |m: &InstrId| info.op(*m).map(|o| o.class);
    if members.iter().any(|m| class(m) == Some(OpClass::Reduction)) {
        return ("reduction", rules.reduction_kind);
    }
    if members.iter().any(|m| class(m) == Some(OpClass::InPlace)) {
        return ("in-place-dynamic-update-slice", FusionKind::Loop);
    }
    if members.iter().any(|m| class(m) == Some(OpClass::Transpose)) {
        return ("transpose", FusionKind::Loop);
    }
    ("loop", FusionKind::Loop)
}

/// Materializes the live kernels of two or more members of computation `comp`, as
/// `reach`'s code generator names them (with the copies XLA:CPU's shape inference needs
/// where it asks for XLA:CPU's forms).
pub fn materialize(
    module: &mut Module,
    comp: CompId,
    info: &CompInfo,
    kernels: &[Kernel],
    reach: &dyn EmitterReach,
    names: &mut NameGen,
) -> Result<Vec<Created>, PassError> {
    let mut to_fuse: Vec<&Kernel> = kernels
        .iter()
        .filter(|k| k.alive && k.members.len() > 1)
        .collect();
    if to_fuse.is_empty() {
        return Ok(Vec::new());
    }
    to_fuse.sort_by_key(|k| info.pos(k.root));
    let mut claimed: HashSet<InstrId> = HashSet::new();
    let mut built = Vec::new();
    {
        let c = module.computation(comp);
        for k in &to_fuse {
            let members: HashSet<InstrId> = k.members.iter().copied().collect();
            let ins = inputs(c, info, &k.members);
            let mut b = ComputationBuilder::with_capacity("", ins.len() + k.members.len());
            let mut map: HashMap<InstrId, InstrId> = HashMap::new();
            for (n, &x) in ins.iter().enumerate() {
                let shape = c.instr(x).shape().clone();
                let name = names.fresh(&format!("param_{n}"));
                map.insert(x, b.add(Instruction::parameter(name, n as i64, shape)));
            }
            for &m in &k.members {
                for &o in c.operands(m) {
                    if !map.contains_key(&o) && is_inlined_constant(c, o) {
                        let mut copy = c.instr(o).clone();
                        copy.users.clear();
                        copy.name = names.fresh(&copy.name);
                        map.insert(o, b.add(copy));
                    }
                }
                let src = c.instr(m);
                let mut pred_copy = None;
                if reach.xla_cpu_forms()
                    && xla_cpu::select_predicate_needs_copy(c, m, |x| members.contains(&x))
                {
                    let pred = src.operands()[0];
                    let copy = Instruction::new(
                        names.fresh("copy"),
                        Opcode::Copy,
                        c.instr(pred).shape().clone(),
                        vec![map[&pred]],
                    );
                    pred_copy = Some(b.add(copy));
                }
                let mut copy = src.clone();
                copy.users.clear();
                copy.attrs
                    .retain(|a| a.name != AttrName::ControlPredecessors);
                copy.name = if claimed.insert(m) {
                    src.name.clone()
                } else {
                    names.fresh(&src.name)
                };
                copy.operands = src
                    .operands()
                    .iter()
                    .map(|o| map.get(o).copied())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        PassError::invalid(
                            "priority-fusion",
                            format!("kernel of `{}` is not closed", src.name),
                        )
                    })?;
                if let Some(p) = pred_copy {
                    copy.operands[0] = p;
                }
                map.insert(m, b.add(copy));
            }
            let root = map[&k.root];
            let fused = b
                .build(Some(root))
                .map_err(|e| PassError::ir("priority-fusion", e))?;
            let (emitter, kind) = emitter_and_kind(info, &k.members, reach.rules());
            built.push((k.root, ins, fused, emitter, kind, k.members.clone()));
        }
    }
    let mut created = Vec::new();
    let mut replaced: HashMap<InstrId, InstrId> = HashMap::new();
    for (root, ins, mut fused, emitter, kind, members) in built {
        let ins: Vec<InstrId> = ins
            .into_iter()
            .map(|x| replaced.get(&x).copied().unwrap_or(x))
            .collect();
        fused.set_name(names.keep_or_fresh("fused_computation"));
        let cid = module.add_computation(fused);
        let c = module.computation_mut(comp);
        let r = c.instr(root);
        let name = names.keep_or_fresh("fusion");
        let mut f = Instruction::new(name.clone(), Opcode::Fusion, r.shape().clone(), ins);
        f.set_attr(AttrName::Kind, AttrValue::FusionKind(kind));
        f.set_attr(AttrName::Calls, AttrValue::Computation(cid));
        if let Some(md) = r.attr(&AttrName::Metadata).cloned() {
            f.set_attr(AttrName::Metadata, md);
        }
        let member_names = members.iter().map(|&m| c.instr(m).name.clone()).collect();
        let id = c
            .add_instruction_before(f, root)
            .map_err(|e| PassError::ir("priority-fusion", e))?;
        c.replace_all_uses(root, id)
            .map_err(|e| PassError::ir("priority-fusion", e))?;
        replaced.insert(root, id);
        created.push(Created {
            name,
            root,
            members: member_names,
            emitter,
        });
    }
    let mut c = std::mem::replace(module.computation_mut(comp), placeholder());
    hlo::ir::edit::remove_dead_code(module, &mut c);
    *module.computation_mut(comp) = c;
    Ok(created)
}

/// A one-parameter computation holding a slot while the real one is borrowed out.
pub(crate) fn placeholder() -> hlo::Computation {
    let mut b = ComputationBuilder::new("");
    b.add(Instruction::parameter(
        "p",
        0,
        hlo::Shape::tuple(Vec::new()),
    ));
    match b.build(None) {
        Ok(c) => c,
        Err(_) => unreachable!("a one-parameter computation builds"),
    }
}
