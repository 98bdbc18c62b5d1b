//! The cost model's prediction for every thunk of a program (`hloc run --profile`'s
//! `model ms` column), to check the model against measured kernel times.
//!
//! A thunk runs one instruction of the optimized module: a kernel the instruction its name
//! was made from (`hloc_k6_fusion_4` runs `fusion.4`), a GEMM the dot whose buffer it
//! writes, a library call the instruction whose result it writes. The prediction is
//! [`fusion::cost::CostModel::kernel`] of the `cpu` description and hloc's CPU emitters'
//! switches ([`codegen::HlocReach::cpu`]) on that instruction: for a
//! fusion, its fused computation (every instruction but the parameters, with the root or
//! the root tuple's operands as outputs); a GEMM, [`CostModel::gemm`] of its planned
//! shape and types; a library call, [`CostModel::library_call`] of its instruction
//! (LAPACK, FFT, sort, top-k by their work at the description's library rates), or where
//! the model does not know the routine (a scatter), that op alone in its computation as a
//! kernel. Copies the runtime inserts (a dynamic-update-slice's base kept
//! alive, an empty result) run no instruction of their own: the model has no figure.

use std::collections::HashMap;

use device::Device;
use fusion::cost::{computation_kernel, CompInfo, CostModel};
use hlo::{CompId, InstrId, Module, Opcode};
use plan::{Program, Thunk};

use crate::predict_gemm::gemm_work;
use crate::roofline_bound::{contraction_type, roofline_seconds};
use crate::{Executable, RuntimeError};

/// The modelled time of each thunk of a program, and its time at the machine's roofline,
/// by its profile label.
#[derive(Clone, Debug, Default)]
pub struct Predictions {
    by_label: HashMap<String, Option<f64>>,
    roofline: HashMap<String, Option<f64>>,
}

impl Predictions {
    /// Predicts every thunk of `program` (nested loop and branch sequences included), built
    /// from `module`, on `device` for the code generator whose switches are `rules`.
    pub fn new(
        module: &Module,
        program: &Program,
        device: &Device,
        rules: &fusion::EmitterRules,
    ) -> Predictions {
        let mut cx = Context {
            module,
            program,
            model: CostModel::for_prediction(device, rules),
            names: NameIndex::new(module),
            infos: HashMap::new(),
        };
        // Thunks sharing a label (which the profile merges) share the mean prediction.
        let mut sums = Sums::default();
        cx.visit(&program.thunks, &mut sums, false);
        Predictions {
            by_label: sums.model.means(),
            roofline: sums.roofline.means(),
        }
    }

    /// Predictions given per label (for tests of what reads them).
    #[cfg(test)]
    pub(crate) fn from_seconds(
        pairs: impl IntoIterator<Item = (String, Option<f64>)>,
    ) -> Predictions {
        Predictions {
            by_label: pairs.into_iter().collect(),
            roofline: HashMap::new(),
        }
    }

    /// Roofline seconds per call given per label (for tests of what reads them).
    #[cfg(test)]
    pub(crate) fn with_roofline(
        mut self,
        pairs: impl IntoIterator<Item = (String, Option<f64>)>,
    ) -> Predictions {
        self.roofline = pairs.into_iter().collect();
        self
    }

    /// Modelled seconds per call of the thunk labelled `label` (see the profile's labels);
    /// `None` where the model has no figure (a copy, a label it never saw).
    pub fn seconds_per_call(&self, label: &str) -> Option<f64> {
        self.by_label.get(label).copied().flatten()
    }

    /// Seconds per call of the thunk labelled `label` at the machine's roofline: its flops
    /// at the peak rate of what could run them (the library GEMM's rate of the whole
    /// device for a GEMM or a kernel that contracts, the vector rate for other kernels)
    /// or its bytes at the DRAM bandwidth, whichever is longer
    /// ([`crate::roofline_bound::roofline_seconds`]); a library call other than a GEMM (sort,
    /// FFT, LAPACK) at its own modelled work without the per-call cost. `None` where the
    /// model has no figure.
    pub fn roofline_seconds_per_call(&self, label: &str) -> Option<f64> {
        self.roofline.get(label).copied().flatten()
    }
}

/// Per label: the sum of the figures of its thunks, how many, and whether all had one.
#[derive(Default)]
struct LabelSums(HashMap<String, (f64, usize, bool)>);

impl LabelSums {
    fn add(&mut self, label: &str, s: Option<f64>) {
        let e = self.0.entry(label.to_string()).or_insert((0.0, 0, true));
        e.0 += s.unwrap_or(0.0);
        e.1 += 1;
        e.2 &= s.is_some();
    }

    /// The mean per label, `None` where a thunk had no figure.
    fn means(self) -> HashMap<String, Option<f64>> {
        self.0
            .into_iter()
            .map(|(label, (sum, n, all))| (label, all.then(|| sum / n.max(1) as f64)))
            .collect()
    }
}

/// The modelled and the roofline seconds of every label.
#[derive(Default)]
struct Sums {
    model: LabelSums,
    roofline: LabelSums,
}

impl Executable {
    /// The `cpu` description's modelled time of each thunk of this executable, for hloc's
    /// CPU emitters, with the GEMM paths of the CPU it runs on ([`crate::roofline_bound::cpu_here`];
    /// computed on every call: for profiles, not for runs).
    pub fn predictions(&self) -> Result<Predictions, RuntimeError> {
        let cpu = crate::roofline_bound::cpu_here()?;
        let plan = self.plan();
        let rules = codegen::HlocReach::cpu().rules;
        Ok(Predictions::new(&plan.module, &plan.program, &cpu, &rules))
    }
}

/// Instructions by name, outside fused computations (whose instructions no thunk runs).
pub(crate) struct NameIndex {
    exact: HashMap<String, (CompId, InstrId)>,
    /// By the name as a C identifier (what kernel names hold); `None` when two collide.
    clean: HashMap<String, Option<(CompId, InstrId)>>,
}

impl NameIndex {
    pub(crate) fn new(module: &Module) -> NameIndex {
        let fused: std::collections::HashSet<CompId> = module
            .computations()
            .flat_map(|(_, c)| c.instructions())
            .filter(|(_, i)| i.opcode() == Opcode::Fusion)
            .filter_map(|(_, i)| i.calls())
            .collect();
        let mut exact = HashMap::new();
        let mut clean: HashMap<String, Option<(CompId, InstrId)>> = HashMap::new();
        for (cid, c) in module.computations() {
            if fused.contains(&cid) {
                continue;
            }
            for (id, i) in c.instructions() {
                exact.insert(i.name().to_string(), (cid, id));
                clean
                    .entry(c_identifier(i.name()))
                    .and_modify(|v| *v = None)
                    .or_insert(Some((cid, id)));
            }
        }
        NameIndex { exact, clean }
    }

    /// The instruction kernel `name` (`hloc_k{N}_{instruction as a C identifier}`) runs.
    fn kernel(&self, name: &str) -> Option<(CompId, InstrId)> {
        let rest = name.strip_prefix("hloc_k")?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let clean = rest[digits..].strip_prefix('_')?;
        self.clean.get(clean).copied().flatten()
    }

    /// The instruction thunk `t` of `p` runs (a streamed GEMM: its GEMM's; `None` for
    /// copies, loops and branches).
    pub(crate) fn instruction(&self, p: &Program, t: &Thunk) -> Option<(CompId, InstrId)> {
        match t {
            Thunk::Kernel { kernel, .. } => self.kernel(&p.kernels.get(*kernel)?.name),
            Thunk::Gemm { out, .. } => self.buffer(&p.buffers.get(*out)?.name),
            Thunk::StreamedGemm { gemm, .. } => self.instruction(p, gemm),
            Thunk::Library { outputs, .. } => {
                self.buffer(&p.buffers.get(outputs.first()?.buffer)?.name)
            }
            // Copies, loops and branches run no instruction of their own.
            _ => None,
        }
    }

    /// The instruction whose result buffer is called `buffer` (the instruction's name, or
    /// `NAME.K` for leaf `K` of a tuple result).
    fn buffer(&self, buffer: &str) -> Option<(CompId, InstrId)> {
        if let Some(&found) = self.exact.get(buffer) {
            return Some(found);
        }
        let (base, leaf) = buffer.rsplit_once('.')?;
        leaf.parse::<usize>().ok()?;
        self.exact.get(base).copied()
    }
}

/// `name` with every character but ASCII letters and digits replaced by `_`, as codegen
/// names kernels.
fn c_identifier(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

struct Context<'a> {
    module: &'a Module,
    program: &'a Program,
    model: CostModel<'a>,
    names: NameIndex,
    infos: HashMap<CompId, CompInfo>,
}

impl Context<'_> {
    /// Predicts `thunks` into `sums`; `in_loop` where they run as a loop's condition or
    /// body (their kernels called again and again, [`warm_call`]).
    fn visit(&mut self, thunks: &[Thunk], sums: &mut Sums, in_loop: bool) {
        for t in thunks {
            match t {
                Thunk::While { cond, body, .. } => {
                    self.visit(cond, sums, true);
                    self.visit(body, sums, true);
                }
                Thunk::Conditional { branches, .. } => {
                    for (b, _) in branches {
                        self.visit(b, sums, in_loop);
                    }
                }
                other => {
                    let label = plan::profile_label(self.program, other);
                    let s = self.thunk_seconds(other, true, in_loop);
                    let s = if in_loop {
                        s.map(|s| warm_call(s, other, &self.model))
                    } else {
                        s
                    };
                    sums.model.add(&label, s.map(|s| s.model));
                    sums.roofline.add(&label, s.map(|s| s.roofline));
                }
            }
        }
    }

    /// The instruction a thunk runs (`None` for copies).
    fn instruction(&self, t: &Thunk) -> Option<(CompId, InstrId)> {
        self.names.instruction(self.program, t)
    }

    /// Modelled and roofline seconds of one call of `t`; `alone` where the runtime calls
    /// it as a thunk of its own (not a streamed GEMM's producer), `in_loop` where a loop
    /// calls it.
    fn thunk_seconds(&mut self, t: &Thunk, alone: bool, in_loop: bool) -> Option<Seconds> {
        if let Thunk::StreamedGemm { producer, gemm, .. } = t {
            let (p, g) = (
                self.thunk_seconds(producer, false, in_loop)?,
                self.thunk_seconds(gemm, false, in_loop)?,
            );
            return Some(Seconds {
                model: crate::predict_stream::streamed_thunk_seconds(&self.model, t, p.model)
                    .unwrap_or(p.model + g.model),
                roofline: p.roofline + g.roofline,
            });
        }
        let device = self.model.device;
        // A GEMM and a library call are priced by what the library runs.
        if let Thunk::Gemm { shape, .. } = t {
            let g = gemm_work(shape);
            let c = self.model.gemm(&g);
            let [lhs, rhs, out] = g.bytes;
            return Some(Seconds {
                model: c.time_s,
                roofline: roofline_seconds(device, c.flops, lhs + rhs + out, Some(g.ty)),
            });
        }
        let (comp, id) = self.instruction(t)?;
        if matches!(t, Thunk::Library { .. }) {
            if let Some(c) = self.model.library_call(self.module, comp, id) {
                return c.time_s.is_finite().then_some(Seconds {
                    model: c.time_s,
                    roofline: c.memory_s.max(c.compute_s),
                });
            }
        }
        let instr = self.module.computation(comp).instr(id);
        let (info_comp, members, roots) = match instr.calls() {
            Some(callee) if instr.opcode() == Opcode::Fusion => {
                let (m, r) = computation_kernel(self.module, callee)?;
                (callee, m, r)
            }
            _ => (comp, vec![id], vec![id]),
        };
        let module = self.module;
        let info = self
            .infos
            .entry(info_comp)
            .or_insert_with(|| CompInfo::new(module, info_comp));
        let cost = self.model.kernel(info, &members, &roots);
        let contraction = contraction_type(module, info_comp, &members);
        let share = block_share(self.program, t);
        // A kernel small enough runs on the calling thread (not a streamed GEMM's
        // producer, whose blocks run on every core); one in a loop finds its bytes warm.
        let work = match t {
            Thunk::Kernel {
                blocks, elements, ..
            } if alone => self.model.work_as_run(
                &cost,
                fusion::cost::Run {
                    one_thread: fusion::cost::runs_on_one_thread(*blocks, *elements),
                    warm: in_loop,
                },
            ),
            _ => cost.time_s - cost.launch_s,
        };
        cost.time_s.is_finite().then(|| Seconds {
            model: work * share + cost.launch_s,
            roofline: share
                * roofline_seconds(
                    device,
                    cost.flops,
                    cost.bytes_read + cost.bytes_written,
                    contraction,
                ),
        })
    }
}

/// `s`, the seconds of one call of `t`, where `t` runs in a loop: a kernel called again
/// and again finds its code and its small operands in cache, and pays
/// [`fusion::cost::WARM_CALL_S`] for the call, not [`fusion::cost::PROFILED_CALL_S`] (a
/// cold call among other kernels). Measured (fastest calls, `hloc run --trace`): gru_scan's,
/// lstm_lm's and linalg_lu_slogdet_inv's scalar counter and index kernels took 30-50 ns a
/// call, priced at 1.5 us.
fn warm_call(s: Seconds, t: &Thunk, model: &CostModel<'_>) -> Seconds {
    match t {
        Thunk::Kernel { .. } => Seconds {
            model: s.model - model.call_s + fusion::cost::WARM_CALL_S,
            ..s
        },
        _ => s,
    }
}

/// The share of its kernel's grid one call of kernel thunk `t` runs: a chain sliced by
/// batch element ([`plan::stream_chain::slice_chains`]: attention's scores, one slice at a time) calls
/// the kernel once per slice over `blocks / slices` of its blocks, each call a slice of the
/// fusion the model prices whole (`unet_down_groupnorm_attn`'s softmax, 32 calls of 2 of 64
/// blocks, was predicted at the whole fusion's 17 ms a call where each took 0.85). 1 for
/// any other thunk.
fn block_share(program: &Program, t: &Thunk) -> f64 {
    match t {
        Thunk::Kernel { kernel, blocks, .. } => match program.kernels.get(*kernel) {
            Some(k) if k.grid.blocks > *blocks && *blocks > 0 => {
                *blocks as f64 / k.grid.blocks as f64
            }
            _ => 1.0,
        },
        _ => 1.0,
    }
}

/// The model's and the roofline's seconds of one call of a thunk.
#[derive(Clone, Copy)]
struct Seconds {
    model: f64,
    roofline: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion::cost_library::{GemmType, GemmWork};

    #[test]
    fn kernel_names_lead_back_to_their_instruction() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n.1 = f32[4] negate(p)\n}",
        )
        .unwrap();
        let names = NameIndex::new(&m);
        let n = m.instr("n.1").unwrap();
        let want = Some((n.comp_id(), n.id()));
        assert_eq!(names.kernel("hloc_k12_n_1"), want);
        assert_eq!(names.kernel("hloc_k3_n_2"), None);
        assert_eq!(names.kernel("other_n_1"), None);
        assert_eq!(names.buffer("n.1"), want);
        assert_eq!(names.buffer("n.1.0"), want);
        assert_eq!(names.buffer("n.1.x"), None);
    }

    #[test]
    fn every_thunk_of_a_plan_is_predicted_but_copies() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[4096] parameter(0)\n  u = f32[8] parameter(1)\n  \
             i = s32[] parameter(2)\n  x = f32[4096] exponential(p)\n  t = f32[4096] tanh(x)\n  \
             w = f32[64,64] reshape(p)\n  g = f32[64,64] dot(w, w), lhs_contracting_dims={1}, \
             rhs_contracting_dims={0}\n  \
             d = f32[4096] dynamic-update-slice(p, u, i)\n  \
             ROOT r = (f32[4096], f32[4096], f32[64,64]) tuple(t, d, g)\n}",
        )
        .unwrap();
        let plan = crate::plan(&m, &crate::CompileOptions::default()).unwrap();
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let pred = Predictions::new(&plan.module, &plan.program, &cpu, &rules);
        let model = CostModel::for_prediction(&cpu, &rules);
        let mut kinds = Vec::new();
        let mut fusions = 0;
        for t in &plan.program.thunks {
            let label = plan::profile_label(&plan.program, t);
            let got = pred.seconds_per_call(&label);
            kinds.push(label.split(' ').next().unwrap_or_default().to_string());
            let roof = pred.roofline_seconds_per_call(&label);
            match t {
                Thunk::Copy { .. } => {
                    assert_eq!(got, None, "{label}");
                    assert_eq!(roof, None, "{label}");
                }
                _ => {
                    let got = got.unwrap_or_else(|| panic!("no prediction for {label}"));
                    assert!(got >= model.call_s, "{label}: {got}");
                    let roof = roof.unwrap_or_else(|| panic!("no roofline for {label}"));
                    assert!(roof > 0.0 && roof < got, "{label}: {roof} of {got}");
                }
            }
            // The GEMM's roofline: 2 x 64^3 flops at both cores' f32 GEMM rate (above its
            // 48 KB at the second level's bandwidth).
            if let Thunk::Gemm { .. } = t {
                let rate = cpu.library.as_ref().unwrap().gemm_f32_flops_per_unit;
                let want = 2.0 * 64f64.powi(3) / (2.0 * rate);
                assert!(
                    (roof.unwrap() - want).abs() < 1e-9 * want,
                    "{roof:?} {want}"
                );
            }
            // A fusion's prediction is the model's cost of its fused computation, as the
            // runtime runs it (on the calling thread where it is small; called once).
            if let Thunk::Kernel {
                kernel,
                blocks,
                elements,
                ..
            } = t
            {
                let name = &plan.program.kernels[*kernel].name;
                let Some(fusion) = plan
                    .module
                    .entry()
                    .instructions()
                    .find(|(_, i)| {
                        i.opcode() == Opcode::Fusion && name.ends_with(&c_identifier(i.name()))
                    })
                    .and_then(|(_, i)| i.calls())
                else {
                    continue;
                };
                let (members, roots) = computation_kernel(&plan.module, fusion).unwrap();
                let info = CompInfo::new(&plan.module, fusion);
                let c = model.kernel(&info, &members, &roots);
                let run = fusion::cost::Run {
                    one_thread: fusion::cost::runs_on_one_thread(*blocks, *elements),
                    warm: false,
                };
                let want = model.work_as_run(&c, run) + c.launch_s;
                assert_eq!(pred.seconds_per_call(&label), Some(want), "{label}");
                fusions += 1;
            }
        }
        assert!(fusions >= 1, "{}", plan.module);
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds, ["copy", "gemm.f32", "kernel"]);
    }

    #[test]
    fn a_kernel_in_a_loop_pays_a_warm_call_not_a_launch() {
        let m = hlo::parse_module(
            "HloModule m\n\
             cond {\n  p = (s32[], f32[64]) parameter(0)\n  \
             i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant(10)\n  \
             ROOT lt = pred[] compare(i, n), direction=LT\n}\n\
             body {\n  p = (s32[], f32[64]) parameter(0)\n  \
             i = s32[] get-tuple-element(p), index=0\n  \
             x = f32[64] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  \
             j = s32[] add(i, one)\n  y = f32[64] exponential(x)\n  \
             ROOT t = (s32[], f32[64]) tuple(j, y)\n}\n\
             ENTRY e {\n  x = f32[64] parameter(0)\n  z = s32[] constant(0)\n  \
             t = (s32[], f32[64]) tuple(z, x)\n  \
             w = (s32[], f32[64]) while(t), condition=cond, body=body\n  \
             y = f32[64] get-tuple-element(w), index=1\n  \
             ROOT r = f32[64] exponential(y)\n}",
        )
        .unwrap();
        let plan = crate::plan(&m, &crate::CompileOptions::default()).unwrap();
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let pred = Predictions::new(&plan.module, &plan.program, &cpu, &rules);
        let launch = fusion::cost::PROFILED_CALL_S;
        let (mut inside, mut outside) = (0, 0);
        for t in &plan.program.thunks {
            match t {
                Thunk::While { cond, body, .. } => {
                    for k in cond.iter().chain(body) {
                        if let Thunk::Kernel { .. } = k {
                            let label = plan::profile_label(&plan.program, k);
                            let s = pred.seconds_per_call(&label).unwrap();
                            // Tiny kernels: the warm call and a few elements' work.
                            assert!(
                                s >= fusion::cost::WARM_CALL_S && s < launch / 4.0,
                                "{label}: {s}"
                            );
                            inside += 1;
                        }
                    }
                }
                Thunk::Kernel { .. } => {
                    let label = plan::profile_label(&plan.program, t);
                    let s = pred.seconds_per_call(&label).unwrap();
                    assert!(s >= launch, "{label}: {s}");
                    outside += 1;
                }
                _ => {}
            }
        }
        assert!(
            inside >= 2 && outside >= 1,
            "{inside} {outside}\n{}",
            plan.module
        );
    }

    #[test]
    fn a_kernel_called_on_a_slice_of_its_blocks_is_priced_for_that_slice() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[64,4096] parameter(0)\n  \
             ROOT x = f32[64,4096] exponential(p)\n}",
        )
        .unwrap();
        let plan = crate::plan(&m, &crate::CompileOptions::default()).unwrap();
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let mut program = (*plan.program).clone();
        let whole = Predictions::new(&plan.module, &program, &cpu, &rules);
        let (i, kernel, full) = program
            .thunks
            .iter()
            .enumerate()
            .find_map(|(i, t)| match t {
                Thunk::Kernel { kernel, .. } => {
                    Some((i, *kernel, program.kernels[*kernel].grid.blocks))
                }
                _ => None,
            })
            .expect("a kernel thunk");
        assert!(full >= 4, "{full} blocks");
        let whole_label = plan::profile_label(&program, &program.thunks[i]);
        let all = whole.seconds_per_call(&whole_label).unwrap();
        // The same kernel called over a quarter of its blocks, as a sliced chain calls it.
        if let Thunk::Kernel { blocks, .. } = &mut program.thunks[i] {
            *blocks = full / 4;
        }
        let sliced = Predictions::new(&plan.module, &program, &cpu, &rules);
        let label = plan::profile_label(&program, &program.thunks[i]);
        let part = sliced.seconds_per_call(&label).unwrap();
        let launch = fusion::cost::PROFILED_CALL_S;
        let want = (all - launch) / 4.0 + launch;
        assert!(
            (part - want).abs() < 1e-9 * want,
            "{part} {want} (kernel {kernel})"
        );
        let roof = sliced.roofline_seconds_per_call(&label).unwrap();
        let roof_all = whole.roofline_seconds_per_call(&whole_label).unwrap();
        assert!(
            (roof * 4.0 - roof_all).abs() < 1e-9 * roof_all,
            "{roof} {roof_all}"
        );
    }

    #[test]
    fn colliding_identifiers_are_not_guessed() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  a.1 = f32[4] negate(p)\n  \
             a_1 = f32[4] negate(p)\n  ROOT s = f32[4] add(a.1, a_1)\n}",
        )
        .unwrap();
        let names = NameIndex::new(&m);
        assert_eq!(names.kernel("hloc_k0_a_1"), None);
        assert!(names.kernel("hloc_k2_s").is_some());
    }

    #[test]
    fn an_s8_gemm_is_predicted_at_the_integer_gemm_rate() {
        // A planned `s8 x s8 -> s32` GEMM runs on the integer GEMM (AMX tiles): priced at
        // the description's s8 rate, not the f32 GEMM's (7x slower) it was priced at.
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  a = s8[512,512] parameter(0)\n  \
             b = s8[512,512] parameter(1)\n  ROOT d = s32[512,512] dot(a, b), \
             lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        )
        .unwrap();
        let plan = crate::plan(&m, &crate::CompileOptions::default()).unwrap();
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let pred = Predictions::new(&plan.module, &plan.program, &cpu, &rules);
        let model = CostModel::for_prediction(&cpu, &rules);
        let mut gemms = 0;
        for t in &plan.program.thunks {
            let Thunk::Gemm { shape, .. } = t else {
                continue;
            };
            let g = gemm_work(shape);
            assert_eq!(g.ty, GemmType::S8);
            let label = plan::profile_label(&plan.program, t);
            let got = pred.seconds_per_call(&label).unwrap();
            assert_eq!(got, model.gemm(&g).time_s);
            let l = cpu.library.as_ref().unwrap();
            let want = 2.0 * 512f64.powi(3) / (2.0 * l.gemm_s8_ops_per_unit) + l.call_s;
            assert!((got - want).abs() < 1e-9 * want, "{got} {want}");
            let as_f32 = model.gemm(&GemmWork {
                ty: GemmType::F32,
                ..g
            });
            assert!(3.0 * got < as_f32.time_s, "{got} {as_f32:?}");
            gemms += 1;
        }
        assert_eq!(gemms, 1, "{}", plan.module);
    }
}
