//! The reaches of XLA's emitters: the fused modules `hloc fuse` writes keep to them, so
//! XLA compiles and runs them when it reads them back.

use std::sync::Arc;

use device::{Device, DeviceKind};
use hlo::attrs::FusionKind;

use crate::emitter_reach::{Candidate, EmitterReach, EmitterRules, Unemittable};

impl EmitterRules {
    /// XLA:CPU's rules, as the fused modules for the `cpu` target keep them:
    /// - 64 operands and 1000 instructions per fusion: a kernel's argument list stays
    ///   small, and a 1000-statement C kernel compiles in about 0.1 s (special functions
    ///   fused whole need several hundred);
    /// - reductions in `kLoop` fusions: XLA:CPU runs only kLoop fusions from text;
    /// - no multi-output fusions: XLA:CPU forms none itself and, through JAX (HLO -> MLIR
    ///   -> HLO), aborts on any (even two elementwise outputs of one shape). Measured on
    ///   the corpus with them on: kernels 0.557 and bytes 0.736 of XLA:CPU's (0.784 and
    ///   0.824 off);
    /// - where they are on, outputs of the same dimensions only: XLA:CPU's loop emitter
    ///   needs that of a multi-output fusion;
    /// - transposes of several kinds in one fusion: the loop emitter indexes any;
    /// - loop invariants hoisted, as the `cpu` description said before this switch moved
    ///   here (kept so that `hloc fuse --target cpu` fuses as it did; whether XLA:CPU's
    ///   LLVM pipeline moves every such row value out of the loop is not measured).
    pub fn xla_cpu() -> EmitterRules {
        EmitterRules {
            max_operands: 64,
            max_instructions: 1000,
            reduction_kind: FusionKind::Loop,
            multi_output: false,
            multi_output_same_dims: true,
            one_transpose_kind_per_fusion: false,
            hoists_invariant_values: true,
        }
    }

    /// XLA:GPU's rules: 96 operands and outputs per fusion (XLA's own limit), 400
    /// instructions, reductions in `kInput` fusions (its reduction emitter), multi-output
    /// fusions with reductions beside elementwise outputs of their input's shape, one
    /// transpose permutation per fusion (the transpose emitter tiles one through shared
    /// memory), and no loop invariants hoisted (a reduction stays its kernel's hero).
    pub fn xla_gpu() -> EmitterRules {
        EmitterRules {
            max_operands: 96,
            max_instructions: 400,
            reduction_kind: FusionKind::Input,
            multi_output: true,
            multi_output_same_dims: false,
            one_transpose_kind_per_fusion: true,
            hoists_invariant_values: false,
        }
    }
}

/// The rules of XLA:CPU's emitters ([`crate::xla_cpu`]): fused modules `hloc fuse` writes
/// for the `cpu` target keep to them so that XLA:CPU compiles and runs them too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XlaCpuReach {
    /// The switches ([`EmitterRules::xla_cpu`]).
    pub rules: EmitterRules,
}

impl Default for XlaCpuReach {
    /// With [`EmitterRules::xla_cpu`].
    fn default() -> XlaCpuReach {
        XlaCpuReach {
            rules: EmitterRules::xla_cpu(),
        }
    }
}

impl EmitterReach for XlaCpuReach {
    fn name(&self) -> &str {
        "xla-cpu"
    }

    fn rules(&self) -> &EmitterRules {
        &self.rules
    }

    /// [`crate::xla_cpu::incompatibility`] of a single-output candidate. A multi-output
    /// candidate is held to the same-dimensions rule instead (the one XLA:CPU's loop
    /// emitter has for them).
    fn can_emit(&self, c: &Candidate<'_>) -> Result<(), Unemittable> {
        let [root] = c.roots else {
            return Ok(());
        };
        match crate::xla_cpu::incompatibility(c.comp, c.members, *root, c.per_element, |i| {
            (c.position)(i)
        }) {
            Some((at, why)) => Err(Unemittable {
                at,
                why: why.to_string(),
            }),
            None => Ok(()),
        }
    }

    fn xla_cpu_forms(&self) -> bool {
        true
    }
}

/// The rules of XLA:GPU's emitters: they emit every fusion the switches allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XlaGpuReach {
    /// The switches ([`EmitterRules::xla_gpu`]).
    pub rules: EmitterRules,
}

impl Default for XlaGpuReach {
    /// With [`EmitterRules::xla_gpu`].
    fn default() -> XlaGpuReach {
        XlaGpuReach {
            rules: EmitterRules::xla_gpu(),
        }
    }
}

impl EmitterReach for XlaGpuReach {
    fn name(&self) -> &str {
        "xla-gpu"
    }

    fn rules(&self) -> &EmitterRules {
        &self.rules
    }

    fn can_emit(&self, _: &Candidate<'_>) -> Result<(), Unemittable> {
        Ok(())
    }
}

/// The reach of XLA's emitters for `device`: [`XlaCpuReach`] on a CPU, [`XlaGpuReach`] on
/// a GPU.
pub fn xla_reach(device: &Device) -> Arc<dyn EmitterReach> {
    match device.kind {
        DeviceKind::Cpu => Arc::new(XlaCpuReach::default()),
        DeviceKind::Gpu => Arc::new(XlaGpuReach::default()),
    }
}
