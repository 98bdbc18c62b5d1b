//! Kernels the cost model predicts far below the machine's roofline (`hloc compile`'s
//! warnings): a contraction the plan left to a generated loop (a dot or convolution of a
//! form no library path takes), or any kernel whose modelled rate is a small share of what
//! its work could reach. The user learns which op of their program falls off the fast
//! path before timing it.
//!
//! A kernel's roofline time is `max(flops / peak, bytes / bandwidth)`
//! ([`crate::roofline_bound`]: the bandwidth of the level its bytes fit in), the peak being
//! the library GEMM's rate of the whole device where the kernel contracts (a dot or a
//! convolution: that is what a GEMM would reach) and the generated vector code's rate
//! otherwise. A kernel is reported when its modelled time exceeds [`FAR_BELOW`] times its
//! roofline time and [`MIN_SECONDS`].

use std::collections::HashMap;

use device::Device;
use fusion::cost::{computation_kernel, CompInfo, CostModel};
use hlo::{CompId, InstrId, Module, Opcode};
use plan::{Program, Thunk};

use crate::predict::NameIndex;
use crate::roofline_bound::{contraction_type, roofline_seconds};
use crate::{Executable, RuntimeError};

/// How many times its roofline time a kernel's modelled time must be to be reported.
pub const FAR_BELOW: f64 = 4.0;

/// Modelled seconds below which no kernel is reported (it does not matter to the run).
pub const MIN_SECONDS: f64 = 1e-3;

/// One kernel predicted far below the roofline.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowKernel {
    /// The instruction the kernel runs (`dot.7`, `fusion.3`).
    pub instruction: String,
    /// Whether it contracts (a dot or convolution in a generated loop).
    pub contraction: bool,
    /// Flops of one call.
    pub flops: f64,
    /// Modelled seconds of one call.
    pub seconds: f64,
    /// Seconds of one call at the roofline.
    pub roofline_s: f64,
}

impl SlowKernel {
    /// `dot.7 runs as a loop: 2.1 GFLOP at ~3 GFLOP/s (roofline ~240 GFLOP/s, 1.2% of it)`.
    pub fn message(&self) -> String {
        let what = if self.contraction {
            "runs as a loop"
        } else {
            "runs far below the roofline"
        };
        let rate = |s: f64| if s > 0.0 { self.flops / s / 1e9 } else { 0.0 };
        format!(
            "{} {what}: {:.3} GFLOP at ~{:.3} GFLOP/s modelled ({:.3} ms; roofline ~{:.1} GFLOP/s, {:.1}% of it)",
            self.instruction,
            self.flops / 1e9,
            rate(self.seconds),
            self.seconds * 1e3,
            rate(self.roofline_s),
            100.0 * self.roofline_s / self.seconds,
        )
    }
}

/// The generated kernels of `program` (loop and branch bodies included) that the cost model
/// of `device`, for the code generator whose switches are `rules`, predicts far below the
/// roofline, slowest first.
pub fn slow_kernels(
    module: &Module,
    program: &Program,
    device: &Device,
    rules: &fusion::EmitterRules,
) -> Vec<SlowKernel> {
    let mut pricer = Pricer::new(CostModel::for_prediction(device, rules));
    let names = NameIndex::new(module);
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<&[Thunk]> = vec![&program.thunks];
    while let Some(thunks) = stack.pop() {
        for t in thunks {
            match t {
                Thunk::While { cond, body, .. } => {
                    stack.push(cond);
                    stack.push(body);
                }
                Thunk::Conditional { branches, .. } => {
                    stack.extend(branches.iter().map(|(b, _)| &b[..]));
                }
                Thunk::Kernel { .. } => {
                    let Some((comp, id)) = names.instruction(program, t) else {
                        continue;
                    };
                    if seen.insert((comp, id)) {
                        out.extend(pricer.kernel(module, comp, id));
                    }
                }
                _ => {}
            }
        }
    }
    out.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    out
}

/// [`slow_kernel`] remembered per fused computation's structure: fusion builds many
/// kernels of one body (a 10,000-instruction chain gave 81 fusions of 4 distinct bodies),
/// and pricing one analyses every member's indexing maps again (`CompInfo::new`, 7% of
/// that module's compile).
struct Pricer<'a> {
    model: CostModel<'a>,
    priced: HashMap<String, Option<SlowKernel>>,
}

impl<'a> Pricer<'a> {
    fn new(model: CostModel<'a>) -> Self {
        Pricer {
            model,
            priced: HashMap::new(),
        }
    }

    /// [`slow_kernel`] of instruction `id` of `comp`; a fusion whose fused computation has
    /// the structure of one priced before takes that answer under its own name.
    fn kernel(&mut self, module: &Module, comp: CompId, id: InstrId) -> Option<SlowKernel> {
        let instr = module.computation(comp).instr(id);
        let callee = match instr.calls() {
            Some(callee) if instr.opcode() == Opcode::Fusion => callee,
            _ => return slow_kernel(module, comp, id, &self.model),
        };
        let key = structure(module, callee);
        let found = match self.priced.get(&key) {
            Some(found) => found.clone(),
            None => {
                let found = slow_kernel(module, comp, id, &self.model);
                self.priced.insert(key, found.clone());
                found
            }
        };
        found.map(|k| SlowKernel {
            instruction: instr.name().to_string(),
            ..k
        })
    }
}

/// What the cost model reads of computation `comp`: per live instruction (arena index
/// order, so members and roots keep their ids) its id, opcode, shape with layout, operand
/// ids, parameter number or constant, whether it is the root, and attributes but metadata
/// (called computations by id, so their bodies are the same ones). Names and source lines
/// are left out: the model reads neither.
fn structure(module: &Module, comp: CompId) -> String {
    let c = module.computation(comp);
    let mut key = String::new();
    for (id, i) in c.instructions() {
        let attrs: Vec<&hlo::attrs::Attribute> = i
            .attrs()
            .iter()
            .filter(|a| !matches!(a.value, hlo::attrs::AttrValue::Metadata(_)))
            .collect();
        key.push_str(&format!(
            "{}:{:?}:{:?}:{:?}:{:?}:{:?}:{:?};",
            id.index(),
            i.opcode(),
            i.shape(),
            i.operands(),
            i.payload,
            c.root() == id,
            attrs
        ));
    }
    key
}

/// Instruction `id` of `comp` as a generated kernel (a fusion: its fused computation), if
/// `model` predicts it far below the roofline of `model`'s device.
pub fn slow_kernel(
    module: &Module,
    comp: CompId,
    id: InstrId,
    model: &CostModel<'_>,
) -> Option<SlowKernel> {
    let instr = module.computation(comp).instr(id);
    let (info_comp, members, roots) = match instr.calls() {
        Some(callee) if instr.opcode() == Opcode::Fusion => {
            let (m, r) = computation_kernel(module, callee)?;
            (callee, m, r)
        }
        _ => (comp, vec![id], vec![id]),
    };
    let info = CompInfo::new(module, info_comp);
    // A dot alone that a library GEMM takes is priced as one: no loop.
    if let [m] = members[..] {
        if info.op(m).is_some_and(|o| o.gemm.is_some()) {
            return None;
        }
    }
    let contraction = contraction_type(module, info_comp, &members);
    let cost = model.kernel(&info, &members, &roots);
    let roofline_s = roofline_seconds(
        model.device,
        cost.flops,
        cost.bytes_read + cost.bytes_written,
        contraction,
    );
    (cost.time_s > MIN_SECONDS && roofline_s > 0.0 && cost.time_s > FAR_BELOW * roofline_s).then(
        || SlowKernel {
            instruction: instr.name().to_string(),
            contraction: contraction.is_some(),
            flops: cost.flops,
            seconds: cost.time_s,
            roofline_s,
        },
    )
}

impl Executable {
    /// The kernels of this executable the `cpu` description's model predicts far below the
    /// roofline ([`slow_kernels`]), for hloc's CPU emitters on the CPU this runs on.
    pub fn slow_kernels(&self) -> Result<Vec<SlowKernel>, RuntimeError> {
        let cpu = crate::roofline_bound::cpu_here()?;
        let plan = self.plan();
        let rules = codegen::HlocReach::cpu().rules;
        Ok(slow_kernels(&plan.module, &plan.program, &cpu, &rules))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion::cost_library::GemmType;

    /// Fusions of one body (other names, other metadata) take the first one's answer under
    /// their own names; a body of another shape or with another root op is priced apart.
    /// Each answer equals [`slow_kernel`]'s own.
    #[test]
    fn fusions_of_one_body_are_priced_once() {
        let body = |name: &str, n: usize, op: &str| {
            format!(
                "{name} {{\n  x{name} = f32[{n},{n}] parameter(0)\n  y{name} = f32[{n},{n}] parameter(1)\n  \
                 t{name} = f32[{n},{n}] dot(x{name}, y{name}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, \
                 metadata={{op_name=\"{name}\"}}\n  ROOT n{name} = f32[{n},{n}] {op}(t{name})\n}}\n"
            )
        };
        let text = format!(
            "HloModule m\n{}{}{}{}ENTRY e {{\n  a = f32[1024,1024] parameter(0)\n  \
             s = f32[512,512] parameter(1)\n  \
             f = f32[1024,1024] fusion(a, a), kind=kLoop, calls=fa\n  \
             g = f32[1024,1024] fusion(a, a), kind=kLoop, calls=fb\n  \
             h = f32[512,512] fusion(s, s), kind=kLoop, calls=fc\n  \
             k = f32[1024,1024] fusion(a, a), kind=kLoop, calls=fd\n  \
             ROOT r = (f32[1024,1024], f32[1024,1024], f32[512,512], f32[1024,1024]) tuple(f, g, h, k)\n}}",
            body("fa", 1024, "tanh"),
            body("fb", 1024, "tanh"),
            body("fc", 512, "tanh"),
            body("fd", 1024, "exponential"),
        );
        let m = hlo::parse_module(&text).unwrap();
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let mut pricer = Pricer::new(CostModel::new(&cpu, &rules));
        for name in ["f", "g", "h", "k"] {
            let i = m.instr(name).unwrap();
            let alone = slow_kernel(&m, i.comp_id(), i.id(), &pricer.model);
            let memo = pricer.kernel(&m, i.comp_id(), i.id());
            assert_eq!(memo, alone, "{name}");
            assert_eq!(memo.expect("a loop").instruction, name);
        }
        assert_eq!(pricer.priced.len(), 3, "f and g share one body");
    }

    /// A dot fused with its consumer (a generated loop) is reported; the same dot alone (a
    /// library GEMM) is not, nor is a plain elementwise kernel.
    #[test]
    fn a_contraction_in_a_loop_is_reported_and_a_library_gemm_is_not() {
        let m = hlo::parse_module(
            "HloModule m\nfc {\n  x = f32[1024,1024] parameter(0)\n  y = f32[1024,1024] parameter(1)\n  \
             t = f32[1024,1024] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
             ROOT n = f32[1024,1024] tanh(t)\n}\nENTRY e {\n  a = f32[1024,1024] parameter(0)\n  \
             b = f32[1024,1024] parameter(1)\n  \
             d = f32[1024,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
             f = f32[1024,1024] fusion(a, b), kind=kLoop, calls=fc\n  \
             x = f32[1024,1024] exponential(a)\n  ROOT r = (f32[1024,1024], f32[1024,1024], f32[1024,1024]) tuple(d, f, x)\n}",
        )
        .unwrap();
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let model = CostModel::new(&cpu, &rules);
        let at = |name: &str| {
            let i = m.instr(name).unwrap();
            slow_kernel(&m, i.comp_id(), i.id(), &model)
        };
        let slow = at("f").expect("the fused dot runs as a loop");
        assert!(slow.contraction);
        assert!(slow.flops >= 2.0 * 1024f64.powi(3), "{slow:?}");
        assert!(
            slow.message().starts_with("f runs as a loop: "),
            "{}",
            slow.message()
        );
        assert_eq!(at("d"), None);
        assert_eq!(at("x"), None);
        // Its roofline: its flops (the dot's 2 x 1024^3 and the tanh's) at both cores'
        // f32 GEMM rate, above the 12 MB moved at the DRAM bandwidth.
        let l = cpu.library.clone().unwrap();
        assert_eq!(
            slow.roofline_s,
            slow.flops / (2.0 * l.gemm_f32_flops_per_unit)
        );
        assert_eq!(
            roofline_seconds(&cpu, 2.0 * 1024f64.powi(3), 12e6, Some(GemmType::F32)),
            2.0 * 1024f64.powi(3) / (2.0 * l.gemm_f32_flops_per_unit)
        );
        assert_eq!(
            roofline_seconds(&cpu, 1e6, 48e6, None),
            48e6 / cpu.memory.dram_bytes_per_s
        );
        // A depthwise weight gradient alone is no GEMM either: its loop, a page-strided
        // miss per tap, is reported (it was priced as vector code and never was).
        let dw = hlo::parse_module(
            "HloModule m\nENTRY e {\n  x = f32[8,32,32,128] parameter(0)\n  \
             g = f32[8,32,32,128] parameter(1)\n  ROOT c = f32[3,3,1,128] convolution(x, g), \
             window={size=32x32 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=128\n}",
        )
        .unwrap();
        let c = dw.instr("c").unwrap();
        let slow = slow_kernel(&dw, c.comp_id(), c.id(), &model).expect("a loop");
        assert!(slow.contraction && slow.seconds > 0.05, "{slow:?}");
        let w = SlowKernel {
            instruction: "dot.7".into(),
            contraction: true,
            flops: 2.1e9,
            seconds: 0.7,
            roofline_s: 0.0175,
        };
        assert_eq!(
            w.message(),
            "dot.7 runs as a loop: 2.100 GFLOP at ~3.000 GFLOP/s modelled (700.000 ms; roofline ~120.0 GFLOP/s, 2.5% of it)"
        );
    }
}
