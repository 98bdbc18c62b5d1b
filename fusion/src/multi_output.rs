//! The `multi-output-fusion` pass: after priority fusion, kernels that read the same
//! operand (siblings) and a producer whose value is also needed outside its consumer
//! (producer-consumer) become one multi-output fusion when one emitter can run both
//! ([`crate::hero`]), no path between them would turn into a cycle (checked with a
//! reachability map; a producer-consumer pair refused so is logged `would-create-cycle`),
//! the device emits tuple-rooted fusions, and the cost model says it pays.

use std::sync::Arc;

use device::Device;
use hlo::attrs::FusionKind;
use hlo::ir::edit::NameGen;
use hlo::pass::{Pass, PassError};
use hlo::{CompId, InstrId, Module};

use crate::cost::{CompInfo, CostModel, InfoCache};
use crate::decision::{Cost, Decision, Reason};
use crate::emitter_reach::{Candidate, EmitterReach, EmitterRules};
use crate::hero::{hero_of, Hero};
use crate::merge::merge_kernels;
use crate::plan::is_inlined_constant;
use crate::reach::Reachability;
use crate::report::{control_flow_computations, FusionLog};

/// Multi-output fusion for one device and code generator.
#[derive(Clone, Debug)]
pub struct MultiOutputFusion {
    device: Device,
    reach: Arc<dyn EmitterReach>,
    log: FusionLog,
    cache: InfoCache,
}

impl MultiOutputFusion {
    /// The pass for `device`, continuing `log` (the priority-fusion pass's), merging for
    /// XLA's emitters ([`crate::xla_reach`]).
    pub fn new(device: Device, log: FusionLog) -> MultiOutputFusion {
        let reach = crate::xla_reach(&device);
        MultiOutputFusion::with_reach(device, reach, log)
    }

    /// The pass for `device`, continuing `log`, forming only fusions `reach` can emit.
    pub fn with_reach(
        device: Device,
        reach: Arc<dyn EmitterReach>,
        log: FusionLog,
    ) -> MultiOutputFusion {
        MultiOutputFusion {
            device,
            reach,
            log,
            cache: InfoCache::default(),
        }
    }

    /// Takes the log out of the pass.
    pub fn take_log(&mut self) -> FusionLog {
        std::mem::take(&mut self.log)
    }

    /// Takes out what the pass learnt of the instructions' costs, for the next pass.
    pub fn take_info_cache(&mut self) -> InfoCache {
        std::mem::take(&mut self.cache)
    }
}

/// A chosen merge: the kernels in order, the decision that names them.
pub(crate) struct Choice {
    pub(crate) set: Vec<InstrId>,
    pub(crate) decisions: Vec<Decision>,
    pub(crate) reduction: bool,
}

/// Kind and emitter of a merged kernel.
pub(crate) fn merged_kind(rules: &EmitterRules, reduction: bool) -> (FusionKind, &'static str) {
    if !reduction {
        return (FusionKind::Loop, "loop");
    }
    (rules.reduction_kind, "reduction")
}

/// Whether every user of a tuple-shaped kernel is a get-tuple-element.
pub(crate) fn users_ok(c: &hlo::Computation, k: InstrId) -> bool {
    !c.instr(k).shape().is_tuple()
        || c.users(k)
            .iter()
            .all(|&u| c.instr(u).opcode() == hlo::Opcode::GetTupleElement)
}

/// Distinct external operands of a set of kernels.
pub(crate) fn operand_count(c: &hlo::Computation, set: &[InstrId]) -> usize {
    let mut seen: Vec<InstrId> = Vec::new();
    for &k in set {
        for &o in c.operands(k) {
            if !set.contains(&o) && !is_inlined_constant(c, o) && !seen.contains(&o) {
                seen.push(o);
            }
        }
    }
    seen.len()
}

impl MultiOutputFusion {
    /// Merges to make in `cid`, each independent of the others (no path between any
    /// members of two of them), so that they can be made one after another.
    fn choose(&mut self, module: &Module, cid: CompId, cache: &mut InfoCache) -> Vec<Choice> {
        let c = module.computation(cid);
        let order = c.def_before_use_order().into_owned();
        let heroes: Vec<Option<Hero>> = order.iter().map(|&id| hero_of(module, c, id)).collect();
        let hero = |id: InstrId| {
            order
                .iter()
                .position(|&x| x == id)
                .and_then(|i| heroes[i].clone())
        };
        let reach = Reachability::new(c);
        let info = CompInfo::with_cache(module, cid, cache);
        let model = CostModel::new(&self.device, self.reach.rules());
        let max_operands = self.reach.rules().max_operands;
        let same_dims = self.reach.rules().multi_output_same_dims;
        // Whether two kernels' outputs may share a multi-output fusion on this device.
        let shapes_ok = |a: &Hero, b: &Hero| {
            !same_dims
                || (a.output_dims == b.output_dims
                    && a.reduction.is_none()
                    && b.reduction.is_none())
        };
        let name = |id: InstrId| c.instr(id).name().to_string();
        let position = |id: InstrId| info.pos(id);
        // Whether the code generator emits kernels `a` and `b` (`a` defined first) as one.
        let emits = |a: InstrId, b: InstrId| {
            let pair = [a, b];
            let candidate = Candidate {
                comp: c,
                members: &pair,
                roots: &pair,
                per_element: false,
                position: &position,
            };
            self.reach.can_emit(&candidate).is_ok()
        };
        let mut chosen: Vec<Choice> = Vec::new();
        let free = |chosen: &[Choice], a: InstrId, b: InstrId| {
            chosen
                .iter()
                .flat_map(|ch| ch.set.iter())
                .all(|&t| t != a && t != b && reach.independent(t, a) && reach.independent(t, b))
        };
        let pays = |a: InstrId, b: InstrId| {
            let mut separate = model.kernel(&info, &[a], &[a]);
            separate.add(&model.kernel(&info, &[b], &[b]));
            let merged = model.kernel(&info, &[a, b], &[a, b]);
            (
                merged.time_s < separate.time_s,
                Cost::of(&separate, &merged, 1),
            )
        };
        // Producer-consumer first: a producer also needed outside its consumer.
        for (i, &p) in order.iter().enumerate() {
            let Some(hp) = heroes[i].as_ref() else {
                continue;
            };
            if hp.reduction.is_some() || c.instr(p).shape().is_tuple() || c.users(p).len() < 2 {
                continue;
            }
            for &u in c.users(p) {
                let Some(hu) = hero(u) else { continue };
                if !hp.compatible(&hu)
                    || !shapes_ok(hp, &hu)
                    || !users_ok(c, u)
                    || operand_count(c, &[p, u]) > max_operands
                    || !emits(p, u)
                {
                    continue;
                }
                let (ok, cost) = pays(p, u);
                let cycle = c.operands(u).iter().any(|&y| y != p && reach.reaches(p, y));
                if cycle {
                    self.log.refuse(Decision {
                        producer: name(p),
                        consumer: name(u),
                        reason: Reason::WouldCreateCycle,
                        cost,
                        detail: None,
                    });
                    continue;
                }
                if ok && free(&chosen, p, u) {
                    let d = Decision {
                        producer: name(p),
                        consumer: name(u),
                        reason: Reason::Fused,
                        cost,
                        detail: None,
                    };
                    chosen.push(Choice {
                        set: vec![p, u],
                        decisions: vec![d],
                        reduction: hu.reduction.is_some(),
                    });
                    break;
                }
            }
        }
        // Siblings: two kernels reading the same operand.
        for &x in &order {
            if is_inlined_constant(c, x) {
                continue;
            }
            let mut users: Vec<InstrId> = c.users(x).to_vec();
            users.sort_by_key(|&u| order.iter().position(|&o| o == u));
            for (ia, &a) in users.iter().enumerate() {
                let Some(ha) = hero(a) else { continue };
                for &b in &users[ia + 1..] {
                    let Some(hb) = hero(b) else { continue };
                    if !ha.compatible(&hb)
                        || !shapes_ok(&ha, &hb)
                        || !reach.independent(a, b)
                        || !users_ok(c, a)
                        || !users_ok(c, b)
                        || operand_count(c, &[a, b]) > max_operands
                        || !emits(a, b)
                    {
                        continue;
                    }
                    if !free(&chosen, a, b) {
                        continue;
                    }
                    let (ok, cost) = pays(a, b);
                    if ok {
                        let d = Decision {
                            producer: name(a),
                            consumer: name(b),
                            reason: Reason::Fused,
                            cost,
                            detail: None,
                        };
                        chosen.push(Choice {
                            set: vec![a, b],
                            decisions: vec![d],
                            reduction: ha.reduction.is_some() || hb.reduction.is_some(),
                        });
                    }
                }
            }
        }
        chosen
    }
}

/// Applies `choose` to every control-flow computation until it finds nothing, merging
/// each choice and logging it. `choose` gets `cache` for the whole run, so each analysis
/// after a merge recomputes only the merged kernels' maps.
pub(crate) fn run_merges(
    module: &mut Module,
    rules: &EmitterRules,
    log: &mut FusionLog,
    cache: &mut InfoCache,
    mut choose: impl FnMut(&Module, CompId, &mut FusionLog, &mut InfoCache) -> Vec<Choice>,
) -> Result<bool, PassError> {
    let mut names = NameGen::new(module);
    let comp_names: Vec<String> = control_flow_computations(module)
        .iter()
        .map(|&c| module.computation(c).name().to_string())
        .collect();
    let mut changed = false;
    for cname in comp_names {
        let limit = module
            .computation_by_name(&cname)
            .map_or(0, |c| module.computation(c).instruction_count());
        for _ in 0..limit {
            let Some(cid) = module.computation_by_name(&cname) else {
                break;
            };
            let choices = choose(module, cid, log, cache);
            if choices.is_empty() {
                break;
            }
            for choice in choices {
                // Merging drops computations: find this one again by name.
                let Some(cid) = module.computation_by_name(&cname) else {
                    break;
                };
                let c = module.computation(cid);
                let parts: Vec<String> = choice
                    .set
                    .iter()
                    .map(|&k| c.instr(k).name().to_string())
                    .collect();
                let (kind, emitter) = merged_kind(rules, choice.reduction);
                let new = merge_kernels(module, cid, &choice.set, kind, &mut names)?;
                log.merged(&parts, &new, emitter, choice.decisions);
                changed = true;
            }
        }
    }
    Ok(changed)
}

impl Pass for MultiOutputFusion {
    fn name(&self) -> &str {
        "multi-output-fusion"
    }

    fn description(&self) -> &str {
        "merges sibling kernels and producers needed outside their consumer into multi-output fusions"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        if !self.reach.rules().multi_output {
            return Ok(false);
        }
        let rules = self.reach.rules().clone();
        let mut log = std::mem::take(&mut self.log);
        let mut cache = std::mem::take(&mut self.cache);
        let result = run_merges(
            module,
            &rules,
            &mut log,
            &mut cache,
            |m, cid, log, cache| {
                std::mem::swap(&mut self.log, log);
                let choice = self.choose(m, cid, cache);
                std::mem::swap(&mut self.log, log);
                choice
            },
        );
        self.log = log;
        self.cache = cache;
        result
    }
}
