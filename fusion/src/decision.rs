//! One fusion decision: which producer, which consumer, the reason code and the numbers.

use serde::Serialize;

use crate::cost::KernelCost;

/// Why a producer was or was not fused into its consumers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Fused.
    Fused,
    /// Fusing would not lower the modelled time.
    NotProfitable,
    /// Fusing would duplicate an expensive producer (a reduction, transcendentals) into
    /// several consumers at a loss, or recompute a transcendental for every element of a
    /// consumer that reads each of its elements many times (the detail says which, and
    /// how often).
    WouldDuplicateExpensive,
    /// Fusing would create a cycle between kernels.
    WouldCreateCycle,
    /// The fusion would hold heroes its emitter cannot generate together.
    HeroIncompatible,
    /// The fusion would exceed the device's operand or instruction limit.
    TooLarge,
    /// The producer or a consumer never fuses (side effects, custom calls, collectives,
    /// control flow, rng, in-place updates, tuple results, bookkeeping users).
    UnfusibleOp,
    /// A consumer is a library call (dot, convolution, custom call, fft, linear algebra).
    ConsumerIsLibraryCall,
    /// The target's compiler could not take the fusion (on the cpu, XLA:CPU: a fused value
    /// whose layout its emitter needs, see `xla_cpu`); the detail says what.
    TargetIncompatible,
}

impl Reason {
    /// The reason code as written in reports.
    pub fn code(self) -> &'static str {
        match self {
            Reason::Fused => "fused",
            Reason::NotProfitable => "not-profitable",
            Reason::WouldDuplicateExpensive => "would-duplicate-expensive",
            Reason::WouldCreateCycle => "would-create-cycle",
            Reason::HeroIncompatible => "hero-incompatible",
            Reason::TooLarge => "too-large",
            Reason::UnfusibleOp => "unfusible-op",
            Reason::ConsumerIsLibraryCall => "consumer-is-library-call",
            Reason::TargetIncompatible => "target-incompatible",
        }
    }
}

/// The numbers behind a decision: the producer and its consumers as separate kernels
/// against the fused kernels.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Modelled time unfused, µs.
    pub unfused_us: f64,
    /// Modelled time fused, µs.
    pub fused_us: f64,
    /// Bytes moved unfused.
    pub bytes_unfused: f64,
    /// Bytes moved fused.
    pub bytes_fused: f64,
    /// Flops unfused.
    pub flops_unfused: f64,
    /// Flops fused.
    pub flops_fused: f64,
    /// Copies of the producer the fusion makes (its consumer count).
    pub duplication: usize,
}

impl Cost {
    /// From the unfused and fused costs.
    pub fn of(unfused: &KernelCost, fused: &KernelCost, duplication: usize) -> Cost {
        let us = |s: f64| (s * 1e9).round() / 1e3;
        Cost {
            unfused_us: us(unfused.time_s),
            fused_us: us(fused.time_s),
            bytes_unfused: unfused.bytes().round(),
            bytes_fused: fused.bytes().round(),
            flops_unfused: unfused.flops.round(),
            flops_fused: fused.flops.round(),
            duplication,
        }
    }
}

/// One decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// The producer (the root instruction of the producer kernel).
    pub producer: String,
    /// The consumer (root of the consumer kernel; the first blocking one for a refusal).
    pub consumer: String,
    /// The reason code.
    pub reason: Reason,
    /// The numbers.
    pub cost: Cost,
    /// What in particular decided it, where a code alone does not say (for `target-incompatible`,
    /// the value and the emitter's need); shown in the text report, not in the JSON lines.
    #[serde(skip)]
    pub detail: Option<String>,
}
