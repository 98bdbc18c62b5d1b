//! The `priority-fusion` pass: plans every computation ENTRY runs (itself and the
//! computations of its while loops, conditionals and calls) with [`crate::plan`] and
//! materializes the plan as fusion instructions, logging every decision.

use std::collections::HashMap;
use std::sync::Arc;

use device::Device;
use hlo::ir::edit::NameGen;
use hlo::pass::{Pass, PassError};
use hlo::Module;

use crate::cost::{CompInfo, CostModel};
use crate::emitter_reach::EmitterReach;
use crate::materialize::materialize;
use crate::plan::plan;
use crate::report::{control_flow_computations, FusionLog};

/// Priority fusion for one device and code generator.
#[derive(Clone, Debug)]
pub struct PriorityFusion {
    device: Device,
    reach: Arc<dyn EmitterReach>,
    log: FusionLog,
}

impl PriorityFusion {
    /// The pass for `device`, fusing for XLA's emitters ([`crate::xla_reach`]).
    pub fn new(device: Device) -> PriorityFusion {
        let reach = crate::xla_reach(&device);
        PriorityFusion::with_reach(device, reach)
    }

    /// The pass for `device`, forming only fusions `reach` can emit.
    pub fn with_reach(device: Device, reach: Arc<dyn EmitterReach>) -> PriorityFusion {
        PriorityFusion {
            device,
            reach,
            log: FusionLog::default(),
        }
    }

    /// What the last run decided.
    pub fn log(&self) -> &FusionLog {
        &self.log
    }

    /// Takes the log out of the pass.
    pub fn take_log(&mut self) -> FusionLog {
        std::mem::take(&mut self.log)
    }
}

impl Pass for PriorityFusion {
    fn name(&self) -> &str {
        "priority-fusion"
    }

    fn description(&self) -> &str {
        "fuses producers into all their consumers in order of modelled time saved (duplicating cheap producers)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let model = CostModel::new(&self.device, self.reach.rules());
        let mut names = NameGen::new(module);
        let mut changed = false;
        // The loops XLA:CPU emits per element (the rewrites below add none and move none).
        let per_element = crate::xla_cpu::per_element_computations(module);
        if self.reach.xla_cpu_forms() {
            let mut reducers = std::collections::HashMap::new();
            let mut adders = std::collections::HashMap::new();
            for cid in control_flow_computations(module) {
                let concats = crate::concat_as_pads::rewrite(module, cid, &mut names)?;
                // Gathers first: the reshapes that make their indices `[N, k]` are unit
                // reshapes too where they only drop dimensions of size 1.
                let lookups =
                    crate::gather_lookups::rewrite(module, cid, &mut names, &mut reducers)?;
                let scalars =
                    crate::unit_reshapes::rewrite(module, cid, &mut names, &mut reducers)?;
                // A loop XLA emits per element fuses no broadcast or reduction's operand:
                // its dots stay dots.
                let dots = match per_element.contains(&cid) {
                    true => 0,
                    false => crate::dot_strength::rewrite(module, cid, &mut names, &mut adders)?,
                };
                if concats + scalars + lookups + dots > 0 {
                    changed = true;
                    let mut c = std::mem::replace(
                        module.computation_mut(cid),
                        crate::materialize::placeholder(),
                    );
                    hlo::ir::edit::remove_dead_code(module, &mut c);
                    *module.computation_mut(cid) = c;
                }
            }
        }
        for cid in control_flow_computations(module) {
            let info = CompInfo::new(module, cid);
            let p = plan(
                module,
                module.computation(cid),
                per_element.contains(&cid),
                &info,
                &model,
                self.reach.as_ref(),
            );
            let created = materialize(
                module,
                cid,
                &info,
                &p.kernels,
                self.reach.as_ref(),
                &mut names,
            )?;
            changed |= !created.is_empty();
            let c = module.computation(cid);
            let mut final_name: HashMap<hlo::InstrId, String> = HashMap::new();
            for f in &created {
                final_name.insert(f.root, f.name.clone());
            }
            for k in p.kernels.iter().filter(|k| k.alive) {
                if let Some(f) = created.iter().find(|f| f.root == k.root) {
                    self.log.fusions.insert(
                        f.name.clone(),
                        (f.members.clone(), f.emitter, k.decisions.clone()),
                    );
                }
            }
            for (root, d) in p.refusals {
                let name = final_name
                    .get(&root)
                    .cloned()
                    .unwrap_or_else(|| c.instr(root).name().to_string());
                self.log.refusals.insert(name, vec![d]);
            }
        }
        if changed {
            hlo::ir::call_graph::sort_computations(module);
        }
        Ok(changed)
    }
}
