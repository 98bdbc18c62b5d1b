//! A kernel's elementwise transcendentals (`exp`, `log`, `tanh`, `sin`, ...) priced at what
//! the code generator's vector polynomials take per element ([`device::Elementwise`]),
//! not at the flops table's count at the vector FMA rate: a polynomial is a chain of
//! dependent FMAs plus range reduction and selects, several times the table's 16 flops
//! at full FMA throughput. Softmax-like kernels (a row max, `exp(x - max)`, a row sum, a
//! division) spend most of their time here: the table priced one `exp` at 0.17 ns per core
//! where the prelude's takes 0.37 ns (`f32`) and 0.9 ns (`f64`).

use hlo::ElementType;

use crate::cost::{CompInfo, CostModel, Evaluation};
use crate::ops::{self, OpClass};

/// The table's flops of the class the description's per-element times are measured for
/// (`exp`, `log`, `tanh`, `logistic`): an opcode of more flops takes proportionally longer.
const MEASURED_CLASS_FLOPS: f64 = 16.0;

/// The transcendentals of one kernel: the flops the composition counted for them (at the
/// vector rate) and the seconds their polynomials take.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TranscendentalTime {
    /// Flops [`crate::cost::evaluate`] counted for the transcendentals.
    pub flops: f64,
    /// Seconds of their evaluations on all units.
    pub seconds: f64,
}

/// Whether `op` is priced per element here: an elementwise opcode of at least a
/// transcendental's flops in the table.
pub fn is_transcendental(class: OpClass, opcode: hlo::Opcode) -> bool {
    class == OpClass::Loop
        && opcode.is_elementwise()
        && ops::flops_per_element(opcode) >= MEASURED_CLASS_FLOPS
}

impl CostModel<'_> {
    /// The transcendentals among a kernel's members, from its evaluation `ev` (each
    /// evaluation of a member is one element of its polynomial); `None` where it has none
    /// or the device has no measured figure.
    pub fn transcendentals(&self, info: &CompInfo, ev: &Evaluation) -> Option<TranscendentalTime> {
        let figures = self.device.elementwise.as_ref()?;
        let units = f64::from(self.device.compute.units.max(1));
        let mut t = TranscendentalTime::default();
        for (&m, &e) in &ev.evals {
            let Some(op) = info.op(m) else { continue };
            if !is_transcendental(op.class, op.opcode) {
                continue;
            }
            let per_element = match op.element_type {
                Some(ElementType::F64 | ElementType::C128) => figures.transcendental_f64_s,
                _ => figures.transcendental_f32_s,
            };
            t.flops += e * op.flops_per_element;
            t.seconds += e * per_element * op.flops_per_element / MEASURED_CLASS_FLOPS / units;
        }
        (t.flops > 0.0).then_some(t)
    }
}

/// Seconds per element per core a `bf16` elementwise op of a CPU kernel takes beyond its
/// flops: the code generator computes it in `f32` and rounds the result back to `bf16` at
/// every op, as HLO's semantics require (`hloc_f32_to_bf16`: a NaN test, a
/// round-to-nearest-even add, a shift, and the widening of each operand), integer work on
/// 16-bit lanes that the flops table does not count. Measured on a microbenchmark of chains
/// of 2, 8 and 16 `add`/`multiply` ops over 65536 elements (one thread, fastest of 20
/// calls, session 56): 0.085, 0.13 and 0.16 ns per op per element (`f32` chains 0.08 ns per
/// element in all). Session 55 fitted 0.35 ns on the fresh programs' tanh-GELU kernels, a
/// figure that took in whatever else those kernels spend (their `tanh` widened from `bf16`).
pub const BF16_ROUNDING_S: f64 = 0.15e-9;

/// Seconds per element per core an `f16` elementwise op of a CPU kernel takes beyond its
/// flops: as for `bf16` ([`BF16_ROUNDING_S`]) the op computes in `f32` and rounds back at
/// every op, but an `f16` conversion has no shortcut (`hloc_f16_to_f32` and
/// `hloc_f32_to_f16` select among subnormal, normal and inf/NaN forms computed side by
/// side so that gcc vectorizes them: a dozen integer ops each way). Measured on a
/// microbenchmark of chains of 2, 8 and 16 `add`/`multiply` ops over 65536 elements (one
/// thread, fastest of 20 calls; `f32` chains of the same length 0.08 ns per element in
/// all): 0.38, 0.41 and 0.42 ns per op per element. The model without this priced the
/// tanh-GELU and layer-norm kernels of f16_bert_encoder_inference at 0.06 of their
/// measurement.
pub const F16_ROUNDING_S: f64 = 0.4e-9;

/// Seconds per element per core a CPU kernel's elementwise op of element type `ty` spends
/// rounding its `f32` result back to `ty`, beyond its flops: `bf16` and `f16` only.
pub fn rounding_s(ty: Option<ElementType>) -> Option<f64> {
    match ty {
        Some(ElementType::BF16) => Some(BF16_ROUNDING_S),
        Some(ElementType::F16) => Some(F16_ROUNDING_S),
        _ => None,
    }
}

impl CostModel<'_> {
    /// The seconds a kernel's `bf16` and `f16` elementwise members spend rounding
    /// ([`rounding_s`] per evaluation, the units sharing them), from its evaluation `ev`;
    /// `None` where it has none.
    pub fn half_roundings(&self, info: &CompInfo, ev: &Evaluation) -> Option<f64> {
        let units = f64::from(self.device.compute.units.max(1));
        let mut seconds = 0.0;
        for (&m, &e) in &ev.evals {
            let Some(op) = info.op(m) else { continue };
            if op.class != OpClass::Loop || !op.opcode.is_elementwise() {
                continue;
            }
            if let Some(s) = rounding_s(op.element_type) {
                seconds += e * s / units;
            }
        }
        (seconds > 0.0).then_some(seconds)
    }
}

/// The elements of a row of `n` that gcc's vectorized loop leaves to its scalar remainder:
/// at `-march=native` (AVX-512) it runs 16 `f32` (8 `f64`) lanes, then one epilogue of half
/// as many, then one element at a time. `f32` rows of 127 (a causal mask's shifted
/// sequence) leave 7: 16 x 7 + 8 + 7. Rows shorter than the epilogue's lanes are left to
/// the flops table (gcc may still vectorize them in narrower vectors).
pub fn scalar_remainder(n: i64, f64_lanes: bool) -> i64 {
    let epilogue = if f64_lanes { 4 } else { 8 };
    if n < epilogue {
        0
    } else {
        n % epilogue
    }
}

impl CostModel<'_> {
    /// The flops of a kernel's transcendentals that run in the scalar remainder of their
    /// row loop ([`scalar_remainder`] of their output's minor extent), from its evaluation
    /// `ev`: one polynomial after another, priced like a recomputed transcendental
    /// (`SCALAR_RECOMPUTE_SLOWDOWN`); `None` where there are none.
    pub fn scalar_tail_flops(&self, info: &CompInfo, ev: &Evaluation) -> Option<f64> {
        let mut flops = 0.0;
        for (&m, &e) in &ev.evals {
            let Some(op) = info.op(m) else { continue };
            if !is_transcendental(op.class, op.opcode) {
                continue;
            }
            let wide = matches!(op.element_type, Some(ElementType::F64 | ElementType::C128));
            let tail = scalar_remainder(op.minor_extent, wide);
            flops += e * tail as f64 / op.minor_extent as f64 * op.flops_per_element;
        }
        (flops > 0.0).then_some(flops)
    }
}
