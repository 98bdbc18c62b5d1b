//! The general fallback (as XLA's partitioner has one): an op without a rule of its own
//! gets every operand resharded to whole (all-gathers, counted in `collective_bytes`),
//! runs whole on every device and leaves a whole result, which a user that wants it split
//! slices by partition id (a dynamic-slice: no communication). A `while`, `conditional`
//! or any op that calls computations keeps them as they are: their values are whole on
//! every device, so the global computation is the per-device one. That is correct for
//! every op whose result is the same on every device given the same operands; ops whose
//! result is not (`rng`, state updates, I/O) and called computations that hold per-device
//! ops (collectives, ids, manual regions) are named unsupported.

use hlo::{CompId, Instruction, Module, Opcode};

use crate::context::Ctx;
use crate::decision::{Decision, ValueTiling};
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The decision for `instr` run whole on every device.
pub(crate) fn replicated(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    if let Some(why) = not_replicable(instr) {
        return Err(SpmdError::unsupported(instr, why));
    }
    for c in instr.called_computations() {
        check_called(ctx.module, c, instr, 0)?;
    }
    let out = whole_value(ctx, instr.shape(), instr)?;
    let mut operands = Vec::with_capacity(instr.operands().len());
    let mut tuple_operands = Vec::with_capacity(instr.operands().len());
    let mut gathered = 0;
    for i in 0..instr.operands().len() {
        let (a, t) = match ctx.operand(instr, i)? {
            ValueTiling::Array(t) if t.is_replicated() => (None, None),
            ValueTiling::Array(t) => (Some(Tiling::replicated(t.tiles.len(), ctx.devices)), None),
            ValueTiling::Tuple(ts) if ts.iter().all(Tiling::is_replicated) => (None, None),
            ValueTiling::Tuple(ts) => (
                None,
                Some(
                    ts.iter()
                        .map(|t| Tiling::replicated(t.tiles.len(), ctx.devices))
                        .collect(),
                ),
            ),
            ValueTiling::Manual => {
                return Err(SpmdError::unsupported(
                    instr,
                    format!("operand {i} is a manual region's value"),
                ))
            }
        };
        gathered += usize::from(a.is_some() || t.is_some());
        operands.push(a);
        tuple_operands.push(t);
    }
    let why = match gathered {
        0 => format!(
            "{}: no partitioning rule; runs whole on every device (operands whole already)",
            instr.opcode().as_str()
        ),
        n => format!(
            "{}: no partitioning rule; {n} operand(s) gathered whole, runs whole on every device",
            instr.opcode().as_str()
        ),
    };
    Ok(Decision {
        out: out.clone(),
        local: out,
        operands,
        tuple_operands,
        partial: None,
        window: None,
        halos: Vec::new(),
        called: Vec::new(),
        why,
    })
}

/// Why `instr` may not run whole on every device (its result would differ by device).
fn not_replicable(instr: &Instruction) -> Option<&'static str> {
    use Opcode::*;
    match instr.opcode() {
        Rng | RngGetAndUpdateState => {
            Some("a random op without explicit state differs by device when run whole on each")
        }
        Send | SendDone | Recv | RecvDone | Infeed | Outfeed | AfterAll | AddDependency => {
            Some("an I/O or token op cannot run whole on every device")
        }
        _ => None,
    }
}

/// The whole value of `shape` (an array, or a tuple of arrays).
fn whole_value(
    ctx: &Ctx<'_>,
    shape: &hlo::Shape,
    instr: &Instruction,
) -> Result<ValueTiling, SpmdError> {
    if shape.is_array() {
        return Ok(ValueTiling::Array(Tiling::replicated(
            shape.dims().len(),
            ctx.devices,
        )));
    }
    if shape.is_tuple() && shape.tuple_shapes().iter().all(hlo::Shape::is_array) {
        return Ok(ValueTiling::Tuple(
            shape
                .tuple_shapes()
                .iter()
                .map(|s| Tiling::replicated(s.dims().len(), ctx.devices))
                .collect(),
        ));
    }
    Err(SpmdError::unsupported(
        instr,
        "a result that is neither an array nor a tuple of arrays",
    ))
}

/// Fails when computation `c` (called by `instr`), or one it calls, holds an op whose
/// value differs by device or that cannot run whole on each.
pub(crate) fn check_called(
    module: &Module,
    c: CompId,
    instr: &Instruction,
    depth: usize,
) -> Result<(), SpmdError> {
    check_called_ops(module, c, instr, depth, false)
}

/// [`check_called`], but manual regions and their per-device ops are allowed where
/// `regions` (a loop body the partitioner partitions as it does the entry).
pub(crate) fn check_called_ops(
    module: &Module,
    c: CompId,
    instr: &Instruction,
    depth: usize,
    regions: bool,
) -> Result<(), SpmdError> {
    if depth > 64 {
        return Err(SpmdError::unsupported(instr, "calls nest deeper than 64"));
    }
    for (_, i) in module.computation(c).instructions() {
        let manual = crate::rules_manual::enters(i) || crate::rules_manual::leaves(i);
        if !regions && (manual || crate::rules_manual::per_device(i.opcode())) {
            return Err(SpmdError::unsupported(
                instr,
                format!(
                    "its computation `{}` holds `{}`, a per-device op (a manual region inside a loop or branch is not partitioned yet)",
                    module.computation(c).name(),
                    i.name()
                ),
            ));
        }
        if let Some(why) = not_replicable(i) {
            return Err(SpmdError::unsupported(
                instr,
                format!("its computation holds `{}`: {why}", i.name()),
            ));
        }
        for called in i.called_computations() {
            check_called_ops(module, called, instr, depth + 1, regions)?;
        }
    }
    Ok(())
}
