//! Text dumps of a program's thunks and buffer assignment.

use std::fmt::Write as _;

use super::{AllocationKind, Program, Thunk};

/// `thunks.txt`: one line per thunk (nested sequences indented under their thunk).
pub fn thunks_text(p: &Program) -> String {
    let mut out = String::new();
    sequence(p, &p.thunks, 0, &mut out);
    out
}

fn names(p: &Program, bufs: &[usize]) -> String {
    bufs.iter()
        .map(|&b| format!("%{}", p.buffers[b].name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sequence(p: &Program, thunks: &[Thunk], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for (i, t) in thunks.iter().enumerate() {
        match t {
            Thunk::Kernel {
                kernel,
                args,
                blocks,
                ..
            } => {
                let args: Vec<String> = args
                    .iter()
                    .enumerate()
                    .map(|(j, &b)| format!("b{j}=%{}", p.buffers[b].name))
                    .collect();
                let _ = writeln!(
                    out,
                    "{pad}{i}: kernel {} blocks={blocks} ({})",
                    p.kernels[*kernel].name,
                    args.join(", ")
                );
            }
            Thunk::StreamedGemm {
                producer,
                block_elements,
                slots,
                gemm,
                axis,
                group,
                ..
            } => {
                let over = match axis {
                    crate::stream::StreamAxis::Rows => "",
                    crate::stream::StreamAxis::Contraction { .. } => " over the contraction",
                };
                let operand = match axis {
                    crate::stream::StreamAxis::Contraction { lhs: false } => "rhs",
                    _ => "lhs",
                };
                let grouped = if *group > 1 {
                    format!(", {group} blocks per gemm call")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "{pad}{i}: streamed gemm{over}: {block_elements} {operand} elements per block, {slots} scratch slots{grouped}"
                );
                let pair = [(**producer).clone(), (**gemm).clone()];
                sequence(p, &pair, depth + 1, out);
            }
            Thunk::Gemm {
                shape,
                lhs,
                rhs,
                out: o,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{i}: gemm.{} m={} n={} k={} batch={} (%{} x %{} -> %{})",
                    shape.type_label(),
                    shape.m,
                    shape.n,
                    shape.k,
                    shape.batch.iter().map(|b| b.0).product::<usize>(),
                    p.buffers[*lhs].name,
                    p.buffers[*rhs].name,
                    p.buffers[*o].name
                );
            }
            Thunk::Library {
                call,
                inputs,
                outputs,
            } => {
                let ins: Vec<usize> = inputs.iter().map(|a| a.buffer).collect();
                let outs: Vec<usize> = outputs.iter().map(|a| a.buffer).collect();
                let _ = writeln!(
                    out,
                    "{pad}{i}: library {} ({}) -> ({})",
                    call.name(),
                    names(p, &ins),
                    names(p, &outs)
                );
            }
            Thunk::Collective {
                step: c,
                inputs,
                outputs,
            } => {
                let ins: Vec<usize> = inputs.iter().map(|a| a.buffer).collect();
                let outs: Vec<usize> = outputs.iter().map(|a| a.buffer).collect();
                let groups = match c.groups.is_empty() {
                    true => String::new(),
                    false => format!(" groups={}", c.groups_text()),
                };
                let _ = writeln!(
                    out,
                    "{pad}{i}: {}{groups} ({}) -> ({})",
                    c.label(),
                    names(p, &ins),
                    names(p, &outs)
                );
            }
            Thunk::Copy { src, dst, bytes } => {
                let _ = writeln!(
                    out,
                    "{pad}{i}: copy {bytes} bytes %{} -> %{}",
                    p.buffers[*src].name, p.buffers[*dst].name
                );
            }
            Thunk::While {
                cond,
                cond_result,
                body,
                body_results,
                state,
                init,
                trips,
                ..
            } => {
                let trips = trips.map_or_else(String::new, |n| format!(" trips={n}"));
                let _ = writeln!(
                    out,
                    "{pad}{i}: while state=({}) init=({}){trips}",
                    names(p, state),
                    names(p, init)
                );
                let _ = writeln!(out, "{pad}  condition -> %{}", p.buffers[*cond_result].name);
                sequence(p, cond, depth + 2, out);
                let _ = writeln!(out, "{pad}  body -> ({})", names(p, body_results));
                sequence(p, body, depth + 2, out);
            }
            Thunk::Conditional {
                selector,
                branches,
                results,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{i}: conditional on %{} -> ({})",
                    p.buffers[*selector].name,
                    names(p, results)
                );
                for (k, (thunks, res)) in branches.iter().enumerate() {
                    let _ = writeln!(out, "{pad}  branch {k} -> ({})", names(p, res));
                    sequence(p, thunks, depth + 2, out);
                }
            }
        }
    }
}

/// `buffer-assignment.txt`: allocations, then every buffer value with its allocation and
/// live range, then the totals.
pub fn buffer_assignment_text(p: &Program) -> String {
    let mut out = String::new();
    for (i, a) in p.allocations.iter().enumerate() {
        let kind = match &a.kind {
            AllocationKind::Parameter(n) => format!("parameter {n}"),
            AllocationKind::Constant(_) => "constant".to_string(),
            AllocationKind::Temp => "temp".to_string(),
            AllocationKind::Output(n) => format!("output {n}"),
        };
        let at = match (a.offset, a.parent) {
            (Some(o), Some(host)) => format!(", in allocation {host} at offset {o}"),
            (Some(o), None) => format!(", temp block offset {o}"),
            (None, _) => String::new(),
        };
        let _ = writeln!(out, "allocation {i}: size {}, {kind}{at}", a.bytes);
    }
    for (i, b) in p.buffers.iter().enumerate() {
        let range = match (b.defined_at, b.last_use) {
            (Some(d), Some(u)) if u == usize::MAX => format!(" live [{d}, end]"),
            (Some(d), Some(u)) => format!(" live [{d}, {u}]"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "value {i} %{}: size {} -> allocation {}{range}",
            b.name, b.bytes, b.allocation
        );
    }
    let _ = writeln!(out, "temp block: size {}", p.temp_block_bytes);
    let _ = writeln!(out, "buffer_bytes: {}", p.buffer_bytes());
    let _ = writeln!(out, "temp_bytes: {}", p.temp_bytes());
    let _ = writeln!(out, "peak_bytes: {}", p.peak_bytes);
    out
}
