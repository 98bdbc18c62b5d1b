//! What each thunk of a program does, counted from the HLO, so that `hloc run --profile`
//! can turn measured times into rates (GFLOP/s, GB/s) and name the user's code a thunk
//! runs (the `op_name` metadata JAX writes, `jit(f)/.../dot_general`).
//!
//! Flops are those of the instructions the thunk runs (a fusion: every instruction of its
//! fused computation): a dot or convolution two per multiply-add (`2·M·N·K`, a
//! convolution's window and input features as `K`), an elementwise arithmetic op one per
//! output element, a reduce one per element reduced, a reduce-window one per window
//! element; data movement (broadcast, transpose, slice, convert, ...) none. A library GEMM
//! counts `2·M·N·K` per batch element from the shape it runs. Library calls other than
//! GEMMs (sort, LAPACK, FFT, scatter) have no count. Bytes are those of the buffers the
//! thunk binds, each read or written once (a copy: its bytes read and written).

use std::collections::HashMap;

use hlo::{CompId, InstrId, Module, Opcode};
use plan::{Program, Thunk};

use crate::predict::NameIndex;
use crate::Executable;

/// One call's work of a thunk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Work {
    /// Floating-point (or integer arithmetic) operations; `None` where nothing is counted
    /// (a library call), `Some(0.0)` for pure data movement.
    pub flops: Option<f64>,
    /// Bytes of the buffers it reads and writes.
    pub bytes: f64,
    /// The distinct `op_name` metadata of the instructions it runs, in program order.
    pub op_names: Vec<String>,
}

/// The work of every thunk of a program, by profile label ([`plan::profile_label`]).
#[derive(Clone, Debug, Default)]
pub struct ThunkWork {
    by_label: HashMap<String, Work>,
}

impl ThunkWork {
    /// Counts every thunk of `program` (loop and branch bodies included), built from
    /// `module`. Thunks sharing a label (which the profile merges) keep the first one's
    /// op names and the mean of their figures.
    pub fn new(module: &Module, program: &Program) -> ThunkWork {
        let names = NameIndex::new(module);
        let mut sums: HashMap<String, (Work, usize)> = HashMap::new();
        visit(module, program, &names, &program.thunks, &mut sums);
        let by_label = sums
            .into_iter()
            .map(|(label, (mut w, n))| {
                let n = n.max(1) as f64;
                w.flops = w.flops.map(|f| f / n);
                w.bytes /= n;
                (label, w)
            })
            .collect();
        ThunkWork { by_label }
    }

    /// Work given per label (for tests of what reads it).
    #[cfg(test)]
    pub(crate) fn from_parts(pairs: impl IntoIterator<Item = (String, Work)>) -> ThunkWork {
        ThunkWork {
            by_label: pairs.into_iter().collect(),
        }
    }

    /// The work of one call of the thunk labelled `label`.
    pub fn get(&self, label: &str) -> Option<&Work> {
        self.by_label.get(label)
    }
}

impl Executable {
    /// The work of each thunk of this executable (computed on every call: for profiles).
    pub fn thunk_work(&self) -> ThunkWork {
        let plan = self.plan();
        ThunkWork::new(&plan.module, &plan.program)
    }
}

fn visit(
    module: &Module,
    p: &Program,
    names: &NameIndex,
    thunks: &[Thunk],
    sums: &mut HashMap<String, (Work, usize)>,
) {
    for t in thunks {
        match t {
            Thunk::While { cond, body, .. } => {
                visit(module, p, names, cond, sums);
                visit(module, p, names, body, sums);
            }
            Thunk::Conditional { branches, .. } => {
                for (b, _) in branches {
                    visit(module, p, names, b, sums);
                }
            }
            other => {
                let w = thunk_work(module, p, names, other);
                let label = plan::profile_label(p, other);
                match sums.get_mut(&label) {
                    Some((sum, n)) => {
                        sum.flops = sum.flops.zip(w.flops).map(|(a, b)| a + b);
                        sum.bytes += w.bytes;
                        *n += 1;
                    }
                    None => {
                        sums.insert(label, (w, 1));
                    }
                }
            }
        }
    }
}

/// The work of one call of `t` (not a loop or a branch).
fn thunk_work(module: &Module, p: &Program, names: &NameIndex, t: &Thunk) -> Work {
    let bytes_of = |b: usize| p.buffers.get(b).map_or(0.0, |b| b.bytes as f64);
    match t {
        Thunk::StreamedGemm { producer, gemm, .. } => {
            let a = thunk_work(module, p, names, producer);
            let b = thunk_work(module, p, names, gemm);
            let mut op_names = a.op_names;
            for n in b.op_names {
                if !op_names.contains(&n) {
                    op_names.push(n);
                }
            }
            Work {
                flops: a.flops.zip(b.flops).map(|(x, y)| x + y),
                bytes: a.bytes + b.bytes,
                op_names,
            }
        }
        Thunk::Gemm {
            shape,
            lhs,
            rhs,
            out,
        } => {
            let batch: usize = shape.batch.iter().map(|b| b.0).product();
            Work {
                flops: Some(2.0 * (shape.m * shape.n * shape.k) as f64 * batch as f64),
                bytes: bytes_of(*lhs) + bytes_of(*rhs) + bytes_of(*out),
                op_names: op_names(module, names.instruction(p, t)),
            }
        }
        Thunk::Kernel { args, .. } => {
            let mut seen = Vec::new();
            let mut bytes = 0.0;
            for &b in args {
                if !seen.contains(&b) {
                    seen.push(b);
                    bytes += bytes_of(b);
                }
            }
            let at = names.instruction(p, t);
            Work {
                flops: at.map(|(c, i)| instruction_flops(module, c, i)),
                bytes,
                op_names: op_names(module, at),
            }
        }
        Thunk::Library {
            inputs, outputs, ..
        } => Work {
            flops: None,
            bytes: inputs
                .iter()
                .chain(outputs)
                .map(|a| bytes_of(a.buffer))
                .sum(),
            op_names: op_names(module, names.instruction(p, t)),
        },
        Thunk::Copy { bytes, .. } => Work {
            flops: Some(0.0),
            bytes: 2.0 * *bytes as f64,
            op_names: Vec::new(),
        },
        // Loops and branches are visited step by step; other steps have no count.
        _ => Work::default(),
    }
}

/// The instructions `at` runs in program order: a fusion's fused instructions, then the
/// fusion itself (which carries its root's metadata); else the instruction itself.
fn members(module: &Module, (comp, id): (CompId, InstrId)) -> Vec<(CompId, InstrId)> {
    let instr = module.computation(comp).instr(id);
    let mut out = Vec::new();
    if let Some(callee) = instr.calls().filter(|_| instr.opcode() == Opcode::Fusion) {
        for (fid, _) in module.computation(callee).instructions() {
            // A nested fusion: its instructions in turn.
            out.extend(members(module, (callee, fid)));
        }
    }
    out.push((comp, id));
    out
}

/// The distinct `op_name`s of the instructions `at` runs.
fn op_names(module: &Module, at: Option<(CompId, InstrId)>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (c, i) in at.map(|at| members(module, at)).unwrap_or_default() {
        let name = module
            .computation(c)
            .instr(i)
            .metadata()
            .and_then(|m| m.op_name());
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            if !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The flops of one evaluation of instruction `id` of `comp` (a fusion: of its body).
fn instruction_flops(module: &Module, comp: CompId, id: InstrId) -> f64 {
    members(module, (comp, id))
        .into_iter()
        .map(|(c, i)| op_flops(module, c, i))
        .sum()
}

/// The flops of one instruction alone (see the module's doc).
fn op_flops(module: &Module, comp: CompId, id: InstrId) -> f64 {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let elements = |s: &hlo::Shape| s.dims().iter().product::<i64>().max(0) as f64;
    let operand_shape = |k: usize| instr.operands().get(k).map(|&o| c.instr(o).shape());
    let out = elements(instr.shape());
    match instr.opcode() {
        Opcode::Dot => {
            let Some(lhs) = operand_shape(0) else {
                return 0.0;
            };
            let k: i64 = instr
                .dot_dimension_numbers()
                .lhs_contracting_dims
                .iter()
                .filter_map(|&d| lhs.dims().get(d as usize))
                .product();
            2.0 * out * k as f64
        }
        Opcode::Convolution => {
            let (Some(kernel), Some(dn)) = (operand_shape(1), instr.conv_dimension_numbers())
            else {
                return 0.0;
            };
            let kd = kernel.dims();
            let window: i64 = dn
                .kernel_spatial_dimensions
                .iter()
                .filter_map(|&d| kd.get(d as usize))
                .product();
            let features = kd
                .get(dn.kernel_input_feature_dimension as usize)
                .copied()
                .unwrap_or(1);
            2.0 * out * (window * features) as f64
        }
        Opcode::Reduce => {
            // The first half of the operands are the inputs reduced.
            let inputs = instr.operands().len() / 2;
            (0..inputs)
                .filter_map(operand_shape)
                .map(elements)
                .sum::<f64>()
        }
        Opcode::ReduceWindow => {
            let window: i64 = instr
                .window()
                .map_or(1, |w| w.dims.iter().map(|d| d.size).product());
            out * window as f64
        }
        Opcode::Convert | Opcode::Copy | Opcode::BitcastConvert => 0.0,
        op if op.is_elementwise() => out,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_count_two_flops_per_multiply_add_and_ops_name_their_source() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  a = f32[8,16] parameter(0)\n  \
             b = f32[16,4] parameter(1)\n  \
             d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, \
             metadata={op_name=\"jit(f)/dot_general\"}\n  \
             ROOT x = f32[8,4] exponential(d), metadata={op_name=\"jit(f)/exp\"}\n}",
        )
        .unwrap();
        let c = m.entry();
        let find = |n: &str| c.instructions().find(|(_, i)| i.name() == n).unwrap().0;
        let e = m.entry_id();
        assert_eq!(instruction_flops(&m, e, find("d")), 2.0 * 8.0 * 4.0 * 16.0);
        assert_eq!(instruction_flops(&m, e, find("x")), 32.0);
        assert_eq!(op_names(&m, Some((e, find("x")))), ["jit(f)/exp"]);
    }

    #[test]
    fn a_compiled_program_counts_its_gemm_and_its_fusion() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  a = f32[64,64] parameter(0)\n  \
             g = f32[64,64] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}, \
             metadata={op_name=\"jit(f)/matmul\"}\n  \
             x = f32[64,64] exponential(g), metadata={op_name=\"jit(f)/exp\"}\n  \
             ROOT t = f32[64,64] tanh(x), metadata={op_name=\"jit(f)/tanh\"}\n}",
        )
        .unwrap();
        let plan = crate::plan(&m, &crate::CompileOptions::default()).unwrap();
        let work = ThunkWork::new(&plan.module, &plan.program);
        let mut seen = Vec::new();
        for t in &plan.program.thunks {
            let label = plan::profile_label(&plan.program, t);
            let w = work
                .get(&label)
                .unwrap_or_else(|| panic!("no work for {label}"));
            match t {
                Thunk::Gemm { .. } => {
                    assert_eq!(w.flops, Some(2.0 * 64f64.powi(3)), "{label}");
                    assert_eq!(w.bytes, 3.0 * 64.0 * 64.0 * 4.0, "{label}");
                    assert_eq!(w.op_names, ["jit(f)/matmul"], "{label}");
                    seen.push("gemm");
                }
                Thunk::Kernel { .. } => {
                    // exp and tanh fused: two flops per element, read and written once.
                    assert_eq!(w.flops, Some(2.0 * 64.0 * 64.0), "{label}");
                    assert_eq!(w.bytes, 2.0 * 64.0 * 64.0 * 4.0, "{label}");
                    assert_eq!(w.op_names, ["jit(f)/exp", "jit(f)/tanh"], "{label}");
                    seen.push("kernel");
                }
                _ => {}
            }
        }
        seen.sort();
        assert_eq!(seen, ["gemm", "kernel"], "{}", plan.module);
    }
}
