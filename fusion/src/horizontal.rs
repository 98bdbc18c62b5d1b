//! The `horizontal-fusion` pass: independent small loop kernels of one computation (whose
//! modelled time is mostly the launch) become one multi-output kernel, saving launches.
//! Kernels join a group in program order while no path links them to a member and the
//! operand limit holds; a group of two or more merges when the cost model says the
//! merged kernel is faster than the separate ones.

use std::sync::Arc;

use device::Device;
use hlo::pass::{Pass, PassError};
use hlo::{CompId, InstrId, Module};

use crate::cost::{CompInfo, CostModel, InfoCache, KernelCost};
use crate::decision::{Cost, Decision, Reason};
use crate::emitter_reach::{Candidate, EmitterReach};
use crate::hero::hero_of;
use crate::multi_output::{operand_count, run_merges, users_ok, Choice};
use crate::reach::Reachability;
use crate::report::FusionLog;

/// Horizontal fusion for one device and code generator.
#[derive(Clone, Debug)]
pub struct HorizontalFusion {
    device: Device,
    reach: Arc<dyn EmitterReach>,
    log: FusionLog,
    cache: InfoCache,
}

impl HorizontalFusion {
    /// The pass for `device`, continuing `log`, merging for XLA's emitters
    /// ([`crate::xla_reach`]).
    pub fn new(device: Device, log: FusionLog) -> HorizontalFusion {
        let reach = crate::xla_reach(&device);
        HorizontalFusion::with_reach(device, reach, log)
    }

    /// The pass for `device`, continuing `log`, forming only fusions `reach` can emit.
    pub fn with_reach(
        device: Device,
        reach: Arc<dyn EmitterReach>,
        log: FusionLog,
    ) -> HorizontalFusion {
        HorizontalFusion {
            device,
            reach,
            log,
            cache: InfoCache::default(),
        }
    }

    /// Starts from what an earlier pass learnt of the instructions' costs.
    pub fn with_info_cache(mut self, cache: InfoCache) -> HorizontalFusion {
        self.cache = cache;
        self
    }

    /// Takes the log out of the pass.
    pub fn take_log(&mut self) -> FusionLog {
        std::mem::take(&mut self.log)
    }
}

fn choose(
    device: &Device,
    emitter: &dyn EmitterReach,
    module: &Module,
    cid: CompId,
    cache: &mut InfoCache,
) -> Option<Choice> {
    let c = module.computation(cid);
    let order = c.def_before_use_order().into_owned();
    let info = CompInfo::with_cache(module, cid, cache);
    let model = CostModel::new(device, emitter.rules());
    let launch = device.kernel.launch_s;
    // Small kernels with their output dimensions.
    let small: Vec<(InstrId, Vec<i64>)> = order
        .iter()
        .filter_map(|&k| {
            let hero = hero_of(module, c, k).filter(|h| h.reduction.is_none())?;
            let t = model.kernel(&info, &[k], &[k]);
            (users_ok(c, k) && t.memory_s.max(t.compute_s) < launch)
                .then_some((k, hero.output_dims))
        })
        .collect();
    if small.len() < 2 {
        return None;
    }
    let reach = Reachability::new(c);
    let max_operands = emitter.rules().max_operands;
    // Whether the code generator emits `kernels` (in def-before-use order) as one.
    let position = |id: InstrId| info.pos(id);
    let emits = |kernels: &[InstrId]| {
        let candidate = Candidate {
            comp: c,
            members: kernels,
            roots: kernels,
            per_element: false,
            position: &position,
        };
        emitter.can_emit(&candidate).is_ok()
    };
    // On a device whose multi-output fusions keep one output shape, the group takes the
    // kernels of its first member's dimensions.
    let mut group: Vec<InstrId> = Vec::new();
    let mut group_dims: Option<Vec<i64>> = None;
    for (k, dims) in small {
        let mut with = group.clone();
        with.push(k);
        let shape_ok = !emitter.rules().multi_output_same_dims
            || group_dims.as_ref().is_none_or(|g| *g == dims);
        if shape_ok
            && group.iter().all(|&g| reach.independent(g, k))
            && operand_count(c, &with) <= max_operands
            && emits(&with)
        {
            group = with;
            group_dims.get_or_insert(dims);
        }
    }
    if group.len() < 2 {
        return None;
    }
    let mut separate = KernelCost::default();
    for &k in &group {
        separate.add(&model.kernel(&info, &[k], &[k]));
    }
    let merged = model.kernel(&info, &group, &group);
    if merged.time_s >= separate.time_s {
        return None;
    }
    let cost = Cost::of(&separate, &merged, 1);
    let name = |id: InstrId| c.instr(id).name().to_string();
    let decisions = group
        .windows(2)
        .map(|w| Decision {
            producer: name(w[1]),
            consumer: name(w[0]),
            reason: Reason::Fused,
            cost: cost.clone(),
            detail: None,
        })
        .collect();
    Some(Choice {
        set: group,
        decisions,
        reduction: false,
    })
}

impl Pass for HorizontalFusion {
    fn name(&self) -> &str {
        "horizontal-fusion"
    }

    fn description(&self) -> &str {
        "merges independent small loop kernels into one multi-output kernel to save launches"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        if !self.reach.rules().multi_output {
            return Ok(false);
        }
        let device = self.device.clone();
        let emitter = self.reach.clone();
        let rules = emitter.rules().clone();
        run_merges(
            module,
            &rules,
            &mut self.log,
            &mut self.cache,
            |m, cid, _, cache| {
                choose(&device, emitter.as_ref(), m, cid, cache)
                    .into_iter()
                    .collect()
            },
        )
    }
}
