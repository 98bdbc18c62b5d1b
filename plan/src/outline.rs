//! Dots inside fusions as library GEMMs: a fusion handed to hloc (an output fusion of a dot
//! and its elementwise epilogue, as XLA dumps them) would otherwise compute its dot as a
//! generated loop nest, about a hundred times slower than the GEMM library on a 512^3
//! product. [`OutlineFusedGemms`] moves every such dot out of its fusion: the dot becomes
//! an instruction of the calling computation (a [`super::GemmShape`] library call), and
//! the fusion, if anything is left of it, reads the product as a new parameter (its
//! epilogue kernel). A fusion that is only the dot is replaced by it.

use std::collections::HashSet;

use hlo::attrs::{AttrName, AttrValue, FusionKind};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{call_graph, Instruction, Payload};
use hlo::pass::{Pass, PassError};
use hlo::{CompId, InstrId, Module, Opcode};

use super::gemm::gemm_shape;

/// Products smaller than this many multiply-adds (`m n k`, over the batch) stay in their
/// fusion: a library call and a second kernel cost more than a small loop nest.
pub const OUTLINE_MIN_MULTIPLY_ADDS: usize = 1 << 18;

/// The pass: see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutlineFusedGemms;

impl Pass for OutlineFusedGemms {
    fn name(&self) -> &str {
        "outline-fused-gemms"
    }

    fn description(&self) -> &str {
        "moves large f32/f64 dots out of fusions so they run as library GEMMs; the fusion keeps their epilogue"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut changed = false;
        let mut names = NameGen::new(module);
        while let Some((comp, fusion, dot)) = find(module) {
            outline(module, comp, fusion, dot, &mut names)?;
            changed = true;
        }
        if changed {
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// A fusion (computation and instruction) with a dot to outline: a library GEMM of at
/// least [`OUTLINE_MIN_MULTIPLY_ADDS`] whose operands are parameters of a fused
/// computation only that fusion calls.
fn find(module: &Module) -> Option<(CompId, InstrId, InstrId)> {
    let sites = call_graph::call_sites(module);
    for (cid, c) in module.computations() {
        for (fid, f) in c.instructions() {
            let Some(fc) = f.calls().filter(|_| f.opcode() == Opcode::Fusion) else {
                continue;
            };
            if sites.get(fc.index()).map_or(0, Vec::len) != 1 {
                continue;
            }
            let body = module.computation(fc);
            for (did, d) in body.instructions() {
                let params = d
                    .operands()
                    .iter()
                    .all(|&o| body.instr(o).opcode() == Opcode::Parameter);
                let big = gemm_shape(module, fc, did).is_some_and(|s| {
                    let batch: usize = s.batch.iter().map(|b| b.0).product();
                    s.m.saturating_mul(s.n)
                        .saturating_mul(s.k)
                        .saturating_mul(batch)
                        >= OUTLINE_MIN_MULTIPLY_ADDS
                });
                if d.opcode() == Opcode::Dot && params && big {
                    return Some((cid, fid, did));
                }
            }
        }
    }
    None
}

/// Moves dot `dot` of fusion `fusion` (in computation `comp`) into `comp`.
fn outline(
    module: &mut Module,
    comp: CompId,
    fusion: InstrId,
    dot: InstrId,
    names: &mut NameGen,
) -> Result<(), PassError> {
    let pass = "outline-fused-gemms";
    let f = module.computation(comp).instr(fusion).clone();
    let fc = f
        .calls()
        .ok_or_else(|| PassError::invalid(pass, "fusion without a computation"))?;
    let body = module.computation(fc);
    let d = body.instr(dot).clone();
    let is_root = body.root() == dot;
    // The dot's operands: the fusion operands its parameters stand for.
    let mut operands = Vec::with_capacity(2);
    for &o in d.operands() {
        let n = body
            .instr(o)
            .parameter_number()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| PassError::invalid(pass, "dot operand is not a parameter"))?;
        let arg =
            f.operands().get(n).copied().ok_or_else(|| {
                PassError::invalid(pass, format!("`{}` lacks operand {n}", f.name()))
            })?;
        operands.push(arg);
    }
    let mut outer = d.clone();
    outer.users.clear();
    outer.operands = operands;
    outer.name = names.fresh(d.name());
    let _ = edit::default_layouts(outer.shape_mut());
    let shape = outer.shape().clone();
    let c = module.computation_mut(comp);
    let outer = c
        .add_instruction_before(outer, fusion)
        .map_err(|e| PassError::invalid(pass, e.to_string()))?;
    if is_root {
        // Nothing but the dot: the fusion is the dot.
        edit::replace_uses(c, fusion, outer);
        edit::remove_instructions(c, &HashSet::from([fusion]));
        edit::repair_order(c);
        return Ok(());
    }
    // The fusion reads the product as a new last parameter; parameters only the dot read
    // are dropped (with their operands).
    let body = module.computation(fc);
    let dead: Vec<InstrId> = body
        .params
        .iter()
        .copied()
        .filter(|&p| d.operands().contains(&p) && body.users(p).iter().all(|&u| u == dot))
        .collect();
    let mut wider = f.clone();
    wider.users.clear();
    wider.operands = f
        .operands()
        .iter()
        .zip(&body.params)
        .filter(|(_, p)| !dead.contains(p))
        .map(|(&o, _)| o)
        .collect();
    wider.operands.push(outer);
    // What is left is elementwise work over the product: a loop fusion.
    wider.set_attr(AttrName::Kind, AttrValue::FusionKind(FusionKind::Loop));
    let c = module.computation_mut(comp);
    let wider = c
        .add_instruction_before(wider, fusion)
        .map_err(|e| PassError::invalid(pass, e.to_string()))?;
    edit::replace_uses(c, fusion, wider);
    edit::remove_instructions(c, &HashSet::from([fusion]));
    edit::repair_order(c);
    let body = module.computation_mut(fc);
    let param = Instruction::parameter(names.fresh("param_dot"), 0, shape);
    let param = body
        .add_instruction(param)
        .map_err(|e| PassError::invalid(pass, e.to_string()))?;
    edit::replace_uses(body, dot, param);
    let mut gone: HashSet<InstrId> = dead.iter().copied().collect();
    gone.insert(dot);
    edit::remove_instructions(body, &gone);
    body.params.retain(|p| !dead.contains(p));
    body.params.push(param);
    for (n, p) in body.params.clone().into_iter().enumerate() {
        body.instr_mut(p).payload = Payload::Parameter(n as i64);
    }
    edit::repair_order(body);
    Ok(())
}
