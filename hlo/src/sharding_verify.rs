//! The verifier's checks of `sharding=`: a tuple sharding has one element per leaf of the
//! instruction's shape, a tiled sharding tiles as many dimensions as each array it applies
//! to has, and, when the module header says how many devices there are
//! (`num_partitions` x `replica_count`), every device the sharding names is one of them.

use crate::attrs::{AttrName, AttrValue};
use crate::ir::{Module, ModuleAttrValue};
use crate::shape::Shape;
use crate::sharding_types::{Sharding, ShardingKind};
use crate::verifier::VerifyError;

/// Non-tuple parts of a shape, depth first.
fn leaves<'s>(shape: &'s Shape, out: &mut Vec<&'s Shape>) {
    if shape.is_tuple() {
        for s in shape.tuple_shapes() {
            leaves(s, out);
        }
    } else {
        out.push(shape);
    }
}

/// `num_partitions` x `replica_count`, when the header writes either.
fn device_count(module: &Module) -> Option<i64> {
    let int = |name| match module.attr(name) {
        Some(ModuleAttrValue::Int(n)) => Some(*n),
        _ => None,
    };
    let (p, r) = (int("num_partitions"), int("replica_count"));
    if p.is_none() && r.is_none() {
        return None;
    }
    Some(p.unwrap_or(1).saturating_mul(r.unwrap_or(1)))
}

/// What is wrong with `sharding` on a value of `shape` among `devices` devices.
fn problem(sharding: &Sharding, shape: &Shape, devices: Option<i64>) -> Option<String> {
    let mut parts = Vec::new();
    leaves(shape, &mut parts);
    let pairs: Vec<(&Sharding, &Shape)> = match &sharding.kind {
        ShardingKind::Tuple(_) => {
            let given = sharding.leaves();
            let required = parts.len().max(1);
            if !shape.is_tuple() || given.len() != required {
                return Some(format!(
                    "the tuple sharding has {} elements but the shape {} needs {}",
                    given.len(),
                    shape,
                    if shape.is_tuple() { required } else { 0 }
                ));
            }
            given.into_iter().zip(parts).collect()
        }
        _ => parts.into_iter().map(|p| (sharding, p)).collect(),
    };
    for (s, p) in pairs {
        if !p.is_array() {
            continue;
        }
        if let Err(m) = s.as_tiled(p.rank()) {
            return Some(format!("{m} (shape {p})"));
        }
    }
    let named = match sharding.named_devices() {
        Ok(n) => n,
        Err(m) => return Some(m),
    };
    match (devices, named.last()) {
        (Some(n), Some(&d)) if d >= n => Some(format!(
            "the sharding names device {d} but the module has {n} devices \
             (num_partitions x replica_count)"
        )),
        _ => None,
    }
}

/// Every instruction's sharding problems.
pub(crate) fn check(module: &Module) -> Vec<VerifyError> {
    let devices = device_count(module);
    let mut errors = Vec::new();
    for (cid, c) in module.computations() {
        for (id, instr) in c.instructions() {
            let Some(AttrValue::Sharding(s)) = instr.attr(&AttrName::Sharding) else {
                continue;
            };
            if let Some(message) = problem(&s.sharding, instr.shape(), devices) {
                errors.push(VerifyError {
                    computation: c.name().to_string(),
                    instruction: Some(instr.name().to_string()),
                    ids: Some((cid, Some(id))),
                    line: None,
                    column: None,
                    message: format!("sharding={}: {message}", s.text),
                });
            }
        }
    }
    errors
}
