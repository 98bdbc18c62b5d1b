//! The SPMD custom calls with their global meaning, on the devices of an N-device run of
//! an unpartitioned module (every device holds the global value outside manual regions):
//! `Sharding` annotates its operand and returns it; `SPMDFullToShardShape` gives this
//! partition's shard of the global value (by its operand's sharding, padded with zeros
//! to the per-device shape); `SPMDShardToFullShape` assembles the global value from every
//! partition's shard (by its own sharding) and gives it to every device. A sharding with
//! a `manual` subgroup (a region nested in a partially manual one, whose devices hold
//! their manual coordinate's value) reads the manual subgroup as devices holding the
//! same tile, and its exit assembles the value from its manual coordinate's partitions.
//! Shardy's form of the same boundaries (`xla.sdy.*`) is `spmd_sdy_calls.rs`'s.

use hlo::ir::Computation;
use hlo::sharding::{Sharding, ShardingKind, SubgroupKind};
use hlo::{Instruction, Literal, Module};

use crate::control::zeros;
use crate::data::array;
use crate::device::Device;
use crate::error::EvalError;
use crate::multi_device_shards::{put_shard, take_shard};
use hlo::shape::Shape;

/// The custom-call targets [`evaluate`] handles.
pub(crate) fn handles(target: Option<&str>) -> bool {
    matches!(
        target,
        Some("Sharding" | "SPMDFullToShardShape" | "SPMDShardToFullShape")
    ) || crate::spmd_sdy_calls::handles(target)
}

/// Evaluates SPMD custom call `instr` on this device.
pub(crate) fn evaluate(
    dev: &mut Device,
    module: &Module,
    c: &Computation,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    if crate::spmd_sdy_calls::handles(instr.custom_call_target()) {
        return crate::spmd_sdy_calls::evaluate(dev, module, instr, vals);
    }
    let what = instr.name();
    let v = *vals
        .first()
        .ok_or_else(|| EvalError::invalid(what, "missing operand"))?;
    match instr.custom_call_target() {
        Some("Sharding") => Ok(v.clone()),
        Some("SPMDFullToShardShape") => {
            let operand = instr.operand(0).map(|o| c.instr(o));
            let s = operand.and_then(Instruction::sharding).ok_or_else(|| {
                EvalError::invalid(what, "SPMDFullToShardShape needs its operand's sharding=")
            })?;
            let (s, _) = within_manual(s, what)?;
            full_to_shard(dev, &s, v, instr.shape(), what)
        }
        Some("SPMDShardToFullShape") => {
            let s = instr.sharding().ok_or_else(|| {
                EvalError::invalid(what, "SPMDShardToFullShape needs its sharding=")
            })?;
            let (s, keys) = within_manual(s, what)?;
            shard_to_full(dev, &s, keys.as_deref(), v, instr.shape(), what)
        }
        other => Err(EvalError::invalid(
            what,
            format!("not an SPMD custom call: {other:?}"),
        )),
    }
}

/// `s` as it tiles each manual coordinate's value (a `manual` subgroup read as a
/// replicated one), and each partition's manual coordinate where it has that subgroup.
fn within_manual(s: &Sharding, what: &str) -> Result<(Sharding, Option<Vec<i64>>), EvalError> {
    let ShardingKind::Tiled(t) = &s.kind else {
        return Ok((s.clone(), None));
    };
    let Some(at) = t.subgroups.iter().position(|k| *k == SubgroupKind::Manual) else {
        return Ok((s.clone(), None));
    };
    let data_rank = t.tiles.dims().len() - t.subgroups.len();
    let keys = (0..t.tiles.num_tiles())
        .map(|p| {
            t.index_of(p)
                .and_then(|i| i.get(data_rank + at).copied())
                .ok_or_else(|| {
                    EvalError::invalid(what, format!("sharding {s} does not name partition {p}"))
                })
        })
        .collect::<Result<Vec<i64>, EvalError>>()?;
    let mut open = t.clone();
    open.subgroups[at] = SubgroupKind::Replicated;
    Ok((Sharding::new(ShardingKind::Tiled(open)), Some(keys)))
}

/// This partition's shard of global value `v`, zero-padded to `shape`.
fn full_to_shard(
    dev: &Device,
    s: &Sharding,
    v: &Literal,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let a = array(v, what)?;
    let dims = a.shape().dims().to_vec();
    let shard = s
        .shard(dev.partition, &dims)
        .map_err(|m| EvalError::invalid(what, m))?;
    let Some(shard) = shard else {
        return zeros(shape, what);
    };
    if shard.shape != shape.dims() {
        return Err(EvalError::invalid(
            what,
            format!(
                "the shard of {dims:?} is {:?} but the result is {}",
                shard.shape, shape
            ),
        ));
    }
    take_shard(v, &shard, shape, what)
}

/// The global value of `shape` assembled from every partition's shard `v` (of this
/// device's manual coordinate's partitions only where `keys` gives each partition's).
fn shard_to_full(
    dev: &mut Device,
    s: &Sharding,
    keys: Option<&[i64]>,
    v: &Literal,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let g = dev.grid;
    let scope: Vec<i64> = (0..g.partitions)
        .map(|p| dev.replica * g.partitions + p)
        .collect();
    let all = dev.exchange(&scope, v.clone(), what)?;
    let dims = shape.dims().to_vec();
    let Literal::Array(mut full) = zeros(shape, what)? else {
        return Err(EvalError::invalid(what, "expects an array"));
    };
    let mut filled = false;
    let mine = keys.and_then(|k| k.get(dev.partition as usize));
    for (p, value) in all.iter().enumerate() {
        if mine.is_some() && keys.and_then(|k| k.get(p)) != mine {
            // Another manual coordinate's value.
            continue;
        }
        let shard = s
            .shard(p as i64, &dims)
            .map_err(|m| EvalError::invalid(what, m))?;
        let Some(shard) = shard else { continue };
        filled = true;
        full = put_shard(full, value, &shard, shape, what)?;
    }
    if !filled {
        return Err(EvalError::invalid(
            what,
            format!(
                "no partition of {} holds a shard of sharding {s}",
                g.partitions
            ),
        ));
    }
    Ok(Literal::Array(full))
}
