//! hloc's own emitters as the fusion passes ask them ([`fusion::EmitterReach`]): which
//! fusions they generate, and the switches the passes follow for them.

use fusion::{Candidate, EmitterReach, EmitterRules, Unemittable};
use hlo::Module;

use crate::EmitTarget;

/// What hloc's emitters generate: a candidate fusion is refused where one of its members is
/// an op the elemental emitter lacks, a value of an element type kernels lack, or a complex
/// operation they do not compute (the tables the emitter's own dispatch follows,
/// `emit::unemittable`: cheap, asked of every candidate). How an op is indexed inside a
/// fusion can still make the emitter refuse, so right before a fusion forms the emitter
/// itself runs on it ([`EmitterReach::confirm`], `candidate::check`): the fusion passes
/// form no fusion the emitters cannot take.
#[derive(Clone, Debug, PartialEq)]
pub struct HlocReach {
    /// The switches ([`HlocReach::cpu`]).
    pub rules: EmitterRules,
    /// The emitters' target, whose emitters confirm a fusion before it forms.
    pub target: EmitTarget,
}

impl HlocReach {
    /// The C backend's switches, the values its fusion has used so far:
    /// - 64 operands per fusion: a C kernel's argument list stays small;
    /// - 1000 instructions per fusion: a 1000-statement C kernel compiles in about 0.1 s
    ///   (special functions fused whole need several hundred);
    /// - reductions in `kLoop` fusions: one loop emitter takes every fusion;
    /// - no multi-output fusions yet: the grouped emitter runs them (outputs of several
    ///   shapes included), but forming them changes what every module runs and is to be
    ///   measured on its own (so is lifting the same-dimensions rule that goes with them);
    /// - transposes of several kinds in one fusion: the loop emitter indexes any, and
    ///   cache-blocks a transposed read;
    /// - loop invariants hoisted: every kernel's body goes through
    ///   [`crate::kir::hoist_invariants`], so a row's reduction read through a broadcast
    ///   runs once per row.
    pub fn cpu() -> HlocReach {
        HlocReach::for_target(EmitTarget::cpu())
    }

    /// [`HlocReach::cpu`]'s switches, confirmed by the emitters of `target` (the GPU's
    /// emitters take the fusions the CPU's rules form). Where `target` has GPU emitters
    /// ([`EmitTarget::gpu_emitters`]) no invariant is counted as hoisted: a reduction
    /// there is its kernel's hero, not a value computed before a loop.
    pub fn for_target(target: EmitTarget) -> HlocReach {
        HlocReach {
            rules: EmitterRules {
                max_operands: 64,
                max_instructions: 1000,
                reduction_kind: hlo::attrs::FusionKind::Loop,
                multi_output: false,
                multi_output_same_dims: true,
                one_transpose_kind_per_fusion: false,
                hoists_invariant_values: !target.gpu_emitters,
            },
            target,
        }
    }
}

impl Default for HlocReach {
    /// [`HlocReach::cpu`].
    fn default() -> HlocReach {
        HlocReach::cpu()
    }
}

impl EmitterReach for HlocReach {
    fn name(&self) -> &str {
        "hloc"
    }

    fn rules(&self) -> &EmitterRules {
        &self.rules
    }

    fn can_emit(&self, c: &Candidate<'_>) -> Result<(), Unemittable> {
        for &m in c.members {
            if let Some(why) = crate::emit::unemittable(c.comp, m) {
                return Err(Unemittable { at: m, why });
            }
            if !self.target.gpu_emitters {
                if let Some(why) = reshaped_column_reduction(c, m) {
                    return Err(Unemittable { at: m, why });
                }
            }
            if c.members.len() > 1 && c.comp.instr(m).opcode() == hlo::Opcode::DynamicUpdateSlice {
                // Alone, the program builder writes only the update's elements, in place
                // (`emit_dus_in_place`); in a fusion, the loop emitter rewrites the whole
                // buffer: a scan stacking its outputs rewrote all T rows every step.
                return Err(Unemittable {
                    at: m,
                    why: "a dynamic-update-slice, which runs in place only unfused".into(),
                });
            }
        }
        Ok(())
    }

    fn confirm(&self, module: &Module, c: &Candidate<'_>) -> Result<(), Unemittable> {
        crate::candidate::check(module, &self.target, c)
    }
}

/// Why member `m` of `c` may not join a CPU kernel with the reduction it reshapes: the
/// column emitter (`emit::column`) finds a reduction that keeps its input's minor-most
/// dimension by walking from the kernel's root through same-shaped elementwise ops and
/// reshapes that only add or remove dimensions of size 1 (`emit::keeps_columns`), so any
/// other reshape (or bitcast) between them hides it, and the kernel falls back to one
/// untiled loop per output that strides across the whole input (cnn_batchnorm_train,
/// before the emitter looked through its size-1 reshape of `f32[32]` to `f32[1,1,1,32]`:
/// a 0.35 ms column sum took 9 ms).
fn reshaped_column_reduction(c: &Candidate<'_>, m: hlo::InstrId) -> Option<String> {
    let instr = c.comp.instr(m);
    if !matches!(instr.opcode(), hlo::Opcode::Reshape | hlo::Opcode::Bitcast) {
        return None;
    }
    let &o = instr.operands().first()?;
    let reduce = c.comp.instr(o);
    if reduce.opcode() != hlo::Opcode::Reduce || !c.members.contains(&o) {
        return None;
    }
    let input = c
        .comp
        .instr(*reduce.operands().first()?)
        .shape()
        .as_array()?;
    let rank = input.dims().len() as i64;
    let input_minor = input
        .layout()
        .and_then(|l| l.minor_to_major.first().copied())
        .unwrap_or(rank - 1);
    if reduce.dimensions()?.contains(&input_minor)
        || crate::emit::keeps_columns(reduce.shape(), instr.shape(), instr.opcode())
    {
        return None;
    }
    Some("a reshape of a column reduction, which the column emitter would not tile".into())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::CodegenError;

    /// `module` fused for the `cpu` description under `reach`, and its report.
    fn fused(text: &str, reach: Arc<dyn EmitterReach>) -> (hlo::Module, fusion::FusionReport) {
        let cpu = device::load("cpu").unwrap();
        let mut m = hlo::parse_module(text).unwrap();
        let log = fusion::fuse_logged_with(&mut m, &cpu, reach).unwrap();
        let report = fusion::FusionReport::build(&m, &log);
        (m, report)
    }

    fn fusions(m: &hlo::Module) -> usize {
        m.entry()
            .instructions()
            .filter(|(_, i)| i.opcode() == hlo::Opcode::Fusion)
            .count()
    }

    /// Ops the elemental emitter refuses, each with a consumer priority fusion would fuse
    /// it into: `acos` (elementwise, no elemental emitter), `tanh` and an ordered
    /// comparison of complex values.
    const REFUSED: [&str; 3] = [
        "HloModule m\nENTRY e {\n  p = f32[64] parameter(0)\n  a = f32[64] acos(p)\n  ROOT n = f32[64] negate(a)\n}",
        "HloModule m\nENTRY e {\n  p = c64[64] parameter(0)\n  a = c64[64] tanh(p)\n  ROOT n = c64[64] negate(a)\n}",
        "HloModule m\nENTRY e {\n  p = c64[64] parameter(0)\n  q = c64[64] negate(p)\n  a = pred[64] compare(q, p), direction=LT\n  ROOT n = pred[64] not(a)\n}",
    ];

    #[test]
    fn a_fusion_the_emitters_cannot_take_is_not_formed() {
        for text in REFUSED {
            let (m, _) = fused(text, Arc::new(fusion::XlaCpuReach::default()));
            assert_eq!(fusions(&m), 1, "XLA:CPU's reach fuses it:\n{text}");
            let (m, report) = fused(text, Arc::new(HlocReach::cpu()));
            assert_eq!(fusions(&m), 0, "{}", hlo::print_module(&m));
            let refused: Vec<_> = report.edges().map(|e| e.reason.code()).collect();
            assert!(
                !refused.is_empty() && refused.iter().all(|r| *r == "target-incompatible"),
                "{refused:?}\n{text}"
            );
        }
    }

    #[test]
    fn what_the_reach_refuses_the_emitter_refuses() {
        let target = crate::EmitTarget::cpu();
        for text in REFUSED {
            let m = hlo::parse_module(text).unwrap();
            let entry = m.entry_id();
            let c = m.computation(entry);
            let mut refused = 0;
            for (id, i) in c.instructions() {
                if i.opcode() == hlo::Opcode::Parameter {
                    continue;
                }
                let emitted = crate::emit::check_instruction(&m, &target, entry, id);
                match crate::emit::unemittable(c, id) {
                    Some(why) => {
                        refused += 1;
                        assert!(
                            matches!(emitted, Err(CodegenError::Unsupported { .. })),
                            "`{}` is {why}, yet the emitter takes it: {emitted:?}",
                            i.name()
                        );
                    }
                    None => assert!(emitted.is_ok(), "`{}`: {emitted:?}", i.name()),
                }
            }
            assert_eq!(refused, 1, "{text}");
        }
    }

    /// A column sum behind a reshape that only adds dimensions of size 1 (not minor-most)
    /// takes it into its kernel (the column emitter looks through it); behind any other
    /// reshape it stays its own kernel, so the column emitter tiles it; a row sum takes the
    /// reshape.
    #[test]
    fn a_column_reduction_takes_only_a_size_one_reshape() {
        let kernel_of = |dims: &str, n: &str, out: &str| {
            let text = format!(
                "HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  p = f32[64,32] parameter(0)
  q = f32[64,32] parameter(1)
  z = f32[] constant(0)
  m = f32[64,32] multiply(p, q)
  r = f32[{n}] reduce(m, z), dimensions={{{dims}}}, to_apply=add
  ROOT o = f32[{out}] reshape(r)
}}"
            );
            let (m, _) = fused(&text, Arc::new(HlocReach::cpu()));
            m.entry().root_instr().opcode()
        };
        assert_eq!(kernel_of("0", "32", "1,32"), hlo::Opcode::Fusion);
        // The size-1 dimension minor-most: the column emitter would not tile it.
        assert_eq!(kernel_of("0", "32", "1,1,32,1"), hlo::Opcode::Reshape);
        assert_eq!(kernel_of("0", "32", "4,8"), hlo::Opcode::Reshape);
        assert_eq!(kernel_of("1", "64", "1,64"), hlo::Opcode::Fusion);
    }

    /// A scan stacking its outputs: the update's producers do not fuse into the
    /// dynamic-update-slice, which stays alone and runs in place.
    #[test]
    fn a_dynamic_update_slice_stays_unfused() {
        let text = "HloModule m
ENTRY e {
  ys = f32[64,32,512] parameter(0)
  h = f32[32,512] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  t = f32[32,512] tanh(h)
  r = f32[1,32,512] reshape(t)
  ROOT u = f32[64,32,512] dynamic-update-slice(ys, r, i, z, z)
}";
        let (m, _) = fused(text, Arc::new(HlocReach::cpu()));
        let root = m.entry().root_instr();
        assert_eq!(
            root.opcode(),
            hlo::Opcode::DynamicUpdateSlice,
            "{}",
            hlo::print_module(&m)
        );
    }

    /// A sine and cosine concatenated, broadcast and concatenated beside an input: the
    /// tables take every member, yet fused into the concatenates the cosine would be read
    /// under a guard the elemental emitter refuses. The emitter itself refuses it before
    /// the fusion forms, and the report says so.
    #[test]
    fn the_emitter_confirms_a_fusion_before_it_forms() {
        let text = "HloModule m
ENTRY e {
  t = f32[] parameter(0)
  x = f32[64,128] parameter(1)
  i = f32[32] iota(), iota_dimension=0
  tb = f32[32] broadcast(t), dimensions={}
  a = f32[32] multiply(tb, i)
  s = f32[32] sine(a)
  c = f32[32] cosine(a)
  cat = f32[64] concatenate(s, c), dimensions={0}
  b = f32[64,64] broadcast(cat), dimensions={1}
  r = f32[64,192] concatenate(x, b), dimensions={1}
  ROOT n = f32[64,192] negate(r)
}";
        let (m, report) = fused(text, Arc::new(HlocReach::cpu()));
        let target = crate::EmitTarget::cpu();
        let entry = m.entry_id();
        for (id, i) in m.entry().instructions() {
            if i.opcode() == hlo::Opcode::Fusion {
                crate::emit::check_instruction(&m, &target, entry, id).unwrap();
            }
        }
        let refused: Vec<_> = report
            .edges()
            .filter(|e| e.reason.code() == "target-incompatible")
            .filter_map(|e| e.detail.clone())
            .collect();
        assert!(
            refused.iter().any(|d| d.contains("emitter refuses")),
            "{refused:?}\n{}",
            hlo::print_module(&m)
        );
    }

    #[test]
    fn everything_else_fuses_as_under_xla_cpus_rules_without_them() {
        let text = "HloModule m\nENTRY e {\n  p = f32[64,32] parameter(0)\n  t = f32[32,64] transpose(p), dimensions={1,0}\n  e = f32[32,64] exponential(t)\n  ROOT n = f32[32,64] negate(e)\n}";
        let (m, report) = fused(text, Arc::new(HlocReach::cpu()));
        assert_eq!(fusions(&m), 1, "{}", hlo::print_module(&m));
        assert_eq!(report.edges().count(), 0);
        // XLA:CPU keeps a transpose that is not the root out of its fusions.
        let (_, report) = fused(text, Arc::new(fusion::XlaCpuReach::default()));
        assert!(report
            .edges()
            .any(|e| e.reason.code() == "target-incompatible"));
    }
}
