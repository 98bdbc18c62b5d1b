//! Which serial loops the CUDA printer keeps rolled (`#pragma unroll 1`, through the
//! prelude's `HLOC_ROLLED`): the innermost serial loops of a nest of serial loops.
//!
//! Why: NVRTC unrolls constant-trip loops on its own, and in a nest it unrolls the inner
//! loop inside the outer one's unrolled copies. With guards in the body (a sorted scatter's
//! run of positions: 32 chunks of 64, each position guarded) every copy keeps its own
//! predicates live, and ptxas spilled (up1's cumprod_cummax_segments, `scatter_add`: 148 PTX
//! predicates, 32 registers, 12 spill bytes; rolled: 0 spill bytes). Measured over the
//! corpus' 208 kernels and the fresh programs' with the rule applied to the dumped text:
//! registers only went down and nothing spilled. A single serial loop (no serial loop
//! around it) and thread loops are left to NVRTC, as before.

use std::collections::HashSet;

use codegen::kir::{Kernel, LoopKind, Stmt};

/// The names of the loop variables of `k`'s innermost serial loops that sit inside another
/// serial loop.
pub fn rolled_loops(k: &Kernel) -> HashSet<String> {
    let mut out = HashSet::new();
    walk(&k.body, false, &mut out);
    out
}

/// Records the rolled loops under `body`; returns whether `body` holds a serial loop.
/// `in_serial`: whether a serial loop encloses `body`.
fn walk(body: &[Stmt], in_serial: bool, out: &mut HashSet<String>) -> bool {
    let mut has_serial = false;
    for s in body {
        match s {
            Stmt::Loop {
                kind, var, body, ..
            } => {
                let serial = *kind == LoopKind::Serial;
                let inner = walk(body, in_serial || serial, out);
                if serial && in_serial && !inner {
                    out.insert(var.to_string());
                }
                has_serial |= serial || inner;
            }
            Stmt::If {
                body, else_body, ..
            } => {
                let a = walk(body, in_serial, out);
                let b = walk(else_body, in_serial, out);
                has_serial |= a || b;
            }
            Stmt::Atomic { body, .. } => has_serial |= walk(body, in_serial, out),
            _ => {}
        }
    }
    has_serial
}
