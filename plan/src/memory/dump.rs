//! Dumps in XLA's layout (issue 32 item 7), so that a person diffs hloc's buffer
//! assignment against XLA's: `*.after_optimizations-buffer-assignment.txt` (every
//! allocation with its size and kind, the values in it with offset and size, the total,
//! then each used value's positions) and `*.after_optimizations-memory-usage-report.txt`
//! (the total, then the allocations largest first with cumulative sizes). hloc's
//! allocations as XLA counts them: one per parameter, constant and output (with the
//! temporaries it holds before the output is written), and one `preallocated-temp`
//! holding every other temporary at its offset.

use std::collections::HashMap;
use std::fmt::Write;

use hlo::{Module, Shape};

use crate::{AllocationKind, Program};

/// One allocation as XLA lists it, with its values: (buffer, offset).
struct XlaAllocation {
    header: String,
    bytes: u64,
    values: Vec<(usize, u64)>,
}

/// Bytes as XLA's `HumanReadableNumBytes` writes them (`512B`, `20.02KiB`).
pub fn human_bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n}B");
    }
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2}{}", units[u])
}

/// The shape of every instruction by name (the buffers of a program are named after
/// their instruction, `NAME.k` for leaf `k` of a tuple).
fn shapes(module: &Module) -> HashMap<String, Shape> {
    let mut out = HashMap::new();
    for (_, c) in module.computations() {
        for (_, i) in c.instructions() {
            out.insert(i.name().to_string(), i.shape().clone());
        }
    }
    out
}

fn shape_text(shapes: &HashMap<String, Shape>, name: &str) -> String {
    if let Some(s) = shapes.get(name) {
        return s.to_string();
    }
    if let Some((base, k)) = name.rsplit_once('.') {
        if let (Some(s), Ok(k)) = (shapes.get(base), k.parse::<usize>()) {
            if let Some(e) = s.tuple_shapes().get(k) {
                return e.to_string();
            }
        }
    }
    "?".to_string()
}

/// `p`'s allocations as XLA counts them (parameters, constants, outputs, then the temp
/// block), each with its values.
fn xla_allocations(module: &Module, p: &Program) -> Vec<XlaAllocation> {
    let shapes = shapes(module);
    let mut own: Vec<XlaAllocation> = Vec::new();
    let mut index_of: HashMap<usize, usize> = HashMap::new();
    let mut temps: Vec<(usize, u64)> = Vec::new();
    for (i, a) in p.allocations.iter().enumerate() {
        if a.offset.is_some() {
            continue;
        }
        index_of.insert(i, own.len());
        let n = own.len();
        let header = match &a.kind {
            AllocationKind::Parameter(k) => {
                let name = p
                    .parameters
                    .get(*k)
                    .map(|s| p.buffers[s.buffer].name.clone())
                    .unwrap_or_default();
                // A donated parameter's allocation holds its output too (XLA's aliased
                // parameter allocations are maybe-live-out).
                let live_out = super::donate::donated_allocations(p)[i];
                format!(
                    "allocation {n}: size {}, parameter {k}, shape |{}| at ShapeIndex {{}}{}:",
                    a.bytes,
                    shape_text(&shapes, &name),
                    if live_out { ", maybe-live-out" } else { "" }
                )
            }
            AllocationKind::Constant(_) => format!("allocation {n}: size {}, constant:", a.bytes),
            AllocationKind::Output(k) => {
                let name = p
                    .outputs
                    .get(*k)
                    .map(|s| p.buffers[s.buffer].name.clone())
                    .unwrap_or_default();
                format!(
                    "allocation {n}: size {}, output shape is |{}|, maybe-live-out:",
                    a.bytes,
                    shape_text(&shapes, &name)
                )
            }
            AllocationKind::Temp => format!("allocation {n}: size {}, thread-local:", a.bytes),
        };
        own.push(XlaAllocation {
            header,
            bytes: a.bytes,
            values: Vec::new(),
        });
    }
    for (b, buf) in p.buffers.iter().enumerate() {
        let Some(a) = p.allocations.get(buf.allocation) else {
            continue;
        };
        let host = a.parent.and_then(|h| index_of.get(&h));
        match (a.offset, host, index_of.get(&buf.allocation)) {
            (Some(offset), Some(&k), _) => own[k].values.push((b, offset)),
            (Some(offset), None, _) => temps.push((b, offset)),
            (None, _, Some(&k)) => own[k].values.push((b, 0)),
            (None, _, None) => {}
        }
    }
    if p.temp_block_bytes > 0 {
        temps.sort_by_key(|&(b, o)| (o, b));
        own.push(XlaAllocation {
            header: format!(
                "allocation {}: size {}, preallocated-temp:",
                own.len(),
                p.temp_block_bytes
            ),
            bytes: p.temp_block_bytes,
            values: temps,
        });
    }
    own
}

fn value_line(
    module_shapes: &HashMap<String, Shape>,
    p: &Program,
    b: usize,
    offset: u64,
) -> String {
    let buf = &p.buffers[b];
    format!(
        " value: <{b} {} @0> (size={},offset={offset}): {}",
        buf.name,
        buf.bytes,
        shape_text(module_shapes, &buf.name)
    )
}

/// XLA's `after_optimizations-buffer-assignment.txt` of `p`, built from `module`.
pub fn xla_buffer_assignment_text(module: &Module, p: &Program) -> String {
    let shapes = shapes(module);
    let allocations = xla_allocations(module, p);
    let total: u64 = allocations.iter().map(|a| a.bytes).sum();
    let mut out = String::from("BufferAssignment:\n");
    for a in &allocations {
        let _ = writeln!(out, "{}", a.header);
        for &(b, offset) in &a.values {
            let _ = writeln!(out, "{}", value_line(&shapes, p, b, offset));
        }
    }
    let _ = writeln!(out, "\nTotal bytes used: {total} ({})", human_bytes(total));
    let _ = writeln!(out, "\nUsed values:");
    for (b, buf) in p.buffers.iter().enumerate() {
        let _ = writeln!(out, "<{b} {} @0>", buf.name);
        let _ = writeln!(out, " positions:\n  {}", buf.name);
        let range = match (buf.defined_at, buf.last_use) {
            (Some(d), Some(u)) if u == usize::MAX => format!("[{d}, end]"),
            (Some(d), Some(u)) => format!("[{d}, {u}]"),
            _ => "the whole run".to_string(),
        };
        let _ = writeln!(out, " live: {range}");
    }
    out
}

/// XLA's `after_optimizations-memory-usage-report.txt` of `p`: the total, then the
/// allocations largest first with the cumulative size and what remains.
pub fn xla_memory_usage_report(module: &Module, p: &Program) -> String {
    let shapes = shapes(module);
    let mut allocations = xla_allocations(module, p);
    let total: u64 = allocations.iter().map(|a| a.bytes).sum();
    allocations.sort_by_key(|a| std::cmp::Reverse(a.bytes));
    let mut out = format!("Total bytes used: {total} ({})\n\n", human_bytes(total));
    out += "Allocations sorted by size:\n\n";
    out += "cumulative_size; total_size - cumulative_size; allocation\n";
    out += &"-".repeat(78);
    out += "\n";
    let mut cumulative = 0u64;
    for a in &allocations {
        cumulative += a.bytes;
        let percent = (cumulative * 100).checked_div(total).unwrap_or(100);
        let _ = writeln!(
            out,
            "{:>10}({percent:>3}%); {:>10}; {}",
            human_bytes(cumulative),
            human_bytes(total - cumulative),
            a.header
        );
    }
    out += "\n\nAllocations sorted by size with their values:\n";
    for a in &allocations {
        let _ = writeln!(out, "{}", a.header);
        for &(b, offset) in &a.values {
            let _ = writeln!(out, "\t{}", value_line(&shapes, p, b, offset).trim_start());
        }
    }
    out
}

/// The two dump files of module number `number` named `name` (XLA's names:
/// `module_0000.NAME.after_optimizations-...`), with their contents, to write into a
/// `--dump-to` directory.
pub fn xla_memory_dumps(number: usize, module: &Module, p: &Program) -> Vec<(String, String)> {
    let stem = format!("module_{number:04}.{}.after_optimizations", module.name());
    vec![
        (
            format!("{stem}-buffer-assignment.txt"),
            xla_buffer_assignment_text(module, p),
        ),
        (
            format!("{stem}-memory-usage-report.txt"),
            xla_memory_usage_report(module, p),
        ),
    ]
}
