//! Who takes part in a collective on one device of an N-device evaluation: the device's
//! group and, for collective-permute, its scope, resolved by [`hlo::collective_groups`]
//! (the one copy of XLA's group modes, shared with `plan`'s collective steps).

use hlo::collective_groups::{group_of, permute_scopes, Grid};
use hlo::Instruction;

use crate::device::Device;
use crate::error::EvalError;

/// The device grid in `hlo`'s terms.
fn grid(dev: &Device) -> Grid {
    Grid {
        replicas: dev.grid.replicas,
        partitions: dev.grid.partitions,
    }
}

/// The global device ids of `dev`'s group for `instr`, in group order.
pub(crate) fn participants(instr: &Instruction, dev: &Device) -> Result<Vec<i64>, EvalError> {
    group_of(instr, grid(dev), dev.id()).map_err(|e| EvalError::invalid(instr.name(), e))
}

/// For collective-permute: every device that may send to or receive from `dev` (its
/// partitions with a channel id, its replicas without), and `dev`'s number among them
/// as the source-target pairs name it.
pub(crate) fn permute_scope(instr: &Instruction, dev: &Device) -> (Vec<i64>, i64) {
    let scope = permute_scopes(instr, grid(dev))
        .into_iter()
        .find(|s| s.contains(&dev.id()))
        .unwrap_or_default();
    let me = scope.iter().position(|&d| d == dev.id()).unwrap_or(0) as i64;
    (scope, me)
}
