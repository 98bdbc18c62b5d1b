//! Sharding remover: on a module that runs on one device, the SPMD annotation custom calls
//! are the identity, so each is replaced by its operand (XLA's `ShardingRemover` does the
//! same on its single-device pipelines). JAX writes them wherever a program uses
//! `with_sharding_constraint` or `shard_map`, also when it runs on one device; the
//! evaluator reads them as the identity there, and the compiled backends must too.
//!
//! Removed: `Sharding`, `SPMDFullToShardShape`, `SPMDShardToFullShape` and Shardy's
//! `xla.sdy.GlobalToLocalShape`, `xla.sdy.LocalToGlobalShape` and
//! `xla.sdy.FuncResultSharding` — each only when it has one operand whose shape equals its
//! result's (a shard of one device is the whole value) and no side effect. A module
//! whose header asks for several devices (`replica_count` or `num_partitions` above 1)
//! is left alone: there the calls mean a partitioning, which `spmd` reads.

use hlo::collective_groups::Grid;
use hlo::ir::edit;
use hlo::ir::Module;
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The custom-call targets that are the identity on one device.
const IDENTITY_ON_ONE_DEVICE: [&str; 6] = [
    "Sharding",
    "SPMDFullToShardShape",
    "SPMDShardToFullShape",
    "xla.sdy.GlobalToLocalShape",
    "xla.sdy.LocalToGlobalShape",
    "xla.sdy.FuncResultSharding",
];

/// The pass (`sharding-remover`).
#[derive(Debug, Default)]
pub struct ShardingRemover;

impl Pass for ShardingRemover {
    fn name(&self) -> &str {
        "sharding-remover"
    }

    fn description(&self) -> &str {
        "replaces SPMD annotation custom calls by their operand on a one-device module"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        if Grid::of_module(module).count() != 1 {
            return Ok(false);
        }
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &module.computations[ci];
            let targets: Vec<_> = comp
                .instructions()
                .filter(|(_, i)| {
                    i.opcode == Opcode::CustomCall
                        && i.custom_call_target()
                            .is_some_and(|t| IDENTITY_ON_ONE_DEVICE.contains(&t))
                        && i.operands.len() == 1
                        && !edit::has_side_effect(module, i)
                })
                .filter(|(_, i)| *comp.instr(i.operands[0]).shape == *i.shape)
                .map(|(id, _)| id)
                .collect();
            let comp = &mut module.computations[ci];
            for id in targets {
                // Read the operand now: an annotation of an annotation was replaced first.
                let operand = comp.instr(id).operands[0];
                edit::replace_uses(comp, id, operand);
                changed = true;
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}
