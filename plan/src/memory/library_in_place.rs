//! Library calls writing a result over an operand that dies there (issue 32: sort's
//! scratch). A sort, top-k, scatter, select-and-scatter or rng-bit-generator thunk reads
//! every operand whole into arrays of its own before it writes any result (the CPU
//! runtime's `library::run` copies them; the CUDA executor copies each allocation to the
//! host first), so a result may take the bytes of an operand that no later thunk reads,
//! as XLA's sort writes over its operands' copies. `sort_argsort` sorted `(b, iota)`
//! with the `iota` and both results apart: 2 MiB of temp where XLA needs 1.25. Not FFT
//! and the direct LAPACK routines: they read and write the executor's memory in place,
//! element by element.

use std::collections::HashSet;

use crate::{Buffer, BufferId, LibraryCall, Thunk};

/// Whether the routine of `call` reads all its operands before it writes a result (see
/// the module docs).
fn reads_operands_first(call: &LibraryCall) -> bool {
    matches!(
        call,
        LibraryCall::Sort { .. }
            | LibraryCall::TopK { .. }
            | LibraryCall::Scatter { .. }
            | LibraryCall::SelectAndScatter { .. }
            | LibraryCall::RngBitGenerator { .. }
    )
}

/// The pairs `(result, operand)` of library thunks where the result may take the
/// operand's bytes: the operand is a temporary (no allocation yet) defined before the
/// thunk and read last by it, of the result's size. As for in-place kernels
/// ([`super::in_place::accept`]), each result and each operand is paired once, counting
/// the pairs of `shares` (a chain, a kernel writing over a library result that took its
/// operand's bytes, is one place: the values follow each other); no buffer of `apart`
/// (loop state held in place, [`super::carried`]) is paired. Thunks of the entry
/// sequence by the builder's indices; thunks of loop bodies and branches by their own
/// steps ([`super::steps`]), where a loop's state and results never qualify (they live
/// through the whole loop).
pub fn pairs(
    thunks: &[Thunk],
    buffers: &[Buffer],
    shares: &[(BufferId, BufferId)],
    apart: &[BufferId],
) -> Vec<(BufferId, BufferId)> {
    let mut written: HashSet<BufferId> = shares
        .iter()
        .map(|p| p.0)
        .chain(apart.iter().copied())
        .collect();
    let mut overwritten: HashSet<BufferId> = shares
        .iter()
        .map(|p| p.1)
        .chain(apart.iter().copied())
        .collect();
    let mut out = Vec::new();
    let mut take = |inputs: &[BufferId], outputs: &[BufferId], dies: &dyn Fn(BufferId) -> bool| {
        for &o in outputs {
            if written.contains(&o) || buffers[o].allocation != usize::MAX {
                continue;
            }
            let operand = inputs.iter().copied().find(|&b| {
                !overwritten.contains(&b)
                    && !outputs.contains(&b)
                    && buffers[b].allocation == usize::MAX
                    && buffers[b].bytes == buffers[o].bytes
                    && dies(b)
            });
            if let Some(b) = operand {
                written.insert(o);
                overwritten.insert(b);
                out.push((o, b));
            }
        }
    };
    let specs = |t: &Thunk| match t {
        Thunk::Library {
            call,
            inputs,
            outputs,
        } if reads_operands_first(call) => Some((
            inputs.iter().map(|s| s.buffer).collect::<Vec<_>>(),
            outputs.iter().map(|s| s.buffer).collect::<Vec<_>>(),
        )),
        _ => None,
    };
    for (t, thunk) in thunks.iter().enumerate() {
        let Some((inputs, outputs)) = specs(thunk) else {
            continue;
        };
        if outputs.iter().any(|&o| buffers[o].defined_at != Some(t)) {
            continue;
        }
        let dies = |b: BufferId| {
            buffers[b].defined_at.is_some_and(|d| d < t) && buffers[b].last_use == Some(t)
        };
        take(&inputs, &outputs, &dies);
    }
    let steps = super::steps::live_steps(thunks, buffers);
    for (s, thunk) in super::steps::nested_leaves(thunks) {
        let Some((inputs, outputs)) = specs(thunk) else {
            continue;
        };
        if outputs
            .iter()
            .any(|&o| steps.get(o).map(|r| r.0) != Some(Some(s)))
        {
            continue;
        }
        let dies =
            |b: BufferId| matches!(steps.get(b), Some(&(Some(d), Some(l))) if d < s && l == s);
        take(&inputs, &outputs, &dies);
    }
    out
}
