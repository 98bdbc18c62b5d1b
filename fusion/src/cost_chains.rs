//! Row reductions the CPU code generator sums as one dependent chain: each element waits
//! for the previous step (about four cycles), where the flops table prices it at the
//! vector FMA rate.
//!
//! The elemental emitter spreads a reduction's innermost reduced loop over partial
//! accumulators (codegen's `multi_accumulator`: `LANES` lanes, twice as many for a float
//! max or min) only for a single accumulator of a reducer it recognizes
//! ([`hlo::ir::reducer::classify`]), of 32 bits or more for a sum (HLO rounds a 16-bit
//! float sum at every step, so it stays in order), over at least two chunks of lanes (one
//! for an idempotent max or min, whose last chunk overlaps the one before). Any other row
//! reduction longer than the row-lane rule's reach (`row_lanes`: reductions of at most 16
//! elements run one lane per output row) is a chain: a graph attention layer's dot of two
//! gathered 32-element rows ran at 2.8 ns per element (`gat_segment_softmax`, 199 ms for
//! 71 M elements), a bf16 sum over any row likewise. The chain's step is a loop
//! contraction's tap ([`device::Loops`]: the same dependent add, measured per operand type).

use device::Device;
use hlo::ir::reducer::{classify, Reducer};
use hlo::{ElementType, Instruction, Module, Opcode};

/// The code generator's CPU lanes per partial-accumulator chunk (codegen's `Target::lanes`
/// for the C backend).
const LANES: i64 = 32;

/// Reduced elements up to which the row-lane rule runs a reduction one lane per output
/// row (codegen's `row_lanes::MAX_REDUCED`).
const ROW_LANES_MAX_REDUCED: i64 = 16;

/// A row reduction summed as one chain: its element type, and whether its rows are short
/// enough ([`OVERLAPPED_ROW`]) for the core to run the next rows' chains while one waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The accumulator's type.
    pub ty: ElementType,
    /// Whether consecutive rows' chains overlap.
    pub overlapped: bool,
}

/// Elements a row may have for the out-of-order core to overlap consecutive rows' chains
/// (each row's sum is independent): the partial-accumulator threshold, so every `f32` and
/// `f64` sum the emitter leaves in order is such a row, and a long `bf16` sum is not.
pub const OVERLAPPED_ROW: i64 = 2 * LANES;

/// Rows' chains in flight at once where they overlap: a [65536, 32] `f32` row sum ran at
/// 0.5 ns per element per core (0.52 ms on both cores at load 9), where one chain's
/// step (a loop contraction's tap) is 1.1 ns and the data's bytes take 0.34 ms.
pub const OVERLAPPING_CHAINS: f64 = 2.0;

impl Chain {
    /// Seconds of one step of this chain on one unit of `device`: the dependent step
    /// ([`step_seconds`]), shared by the chains in flight where rows overlap; `None`
    /// without a `[loops]` section.
    pub fn seconds_per_step(&self, device: &Device) -> Option<f64> {
        let step = step_seconds(device, self.ty)?;
        Some(if self.overlapped {
            step / OVERLAPPING_CHAINS
        } else {
            step
        })
    }
}

/// The chain of a reduction that runs as one chain along its minor dimension, or `None`
/// where the emitter spreads it over lanes (or it does not reduce the minor
/// dimension, or its type is an integer: an integer step is one cycle, not a float's
/// four). `operand_dims` are its first operand's.
pub fn chained_row(module: &Module, instr: &Instruction, operand_dims: &[i64]) -> Option<Chain> {
    if instr.opcode() != Opcode::Reduce {
        return None;
    }
    let rank = operand_dims.len();
    let reduced = instr.dimensions()?;
    let minor = rank.checked_sub(1)?;
    if !reduced.contains(&(minor as i64)) {
        return None;
    }
    let extent = operand_dims[minor];
    if extent <= ROW_LANES_MAX_REDUCED {
        return None;
    }
    let ty = instr
        .shape()
        .element_type()
        .or_else(|| instr.shape().tuple_shapes().first()?.element_type())?;
    if !ty.is_float() {
        return None;
    }
    let chain = Chain {
        ty,
        overlapped: extent <= OVERLAPPED_ROW,
    };
    let single = instr.operands().len() == 2;
    let kind = instr.to_apply().and_then(|r| classify(module, r));
    let Some(kind) = kind.filter(|_| single) else {
        return Some(chain);
    };
    let max_min = matches!(kind, Reducer::Max | Reducer::Min);
    let narrow = ty.byte_width().is_some_and(|w| w < 4);
    if narrow && !max_min {
        return Some(chain);
    }
    let lanes = if max_min { 2 * LANES } else { LANES };
    let chunks = extent / lanes;
    let overlap = max_min && !narrow;
    if chunks >= 2 || (overlap && chunks == 1) {
        return None;
    }
    Some(chain)
}

/// Seconds of one dependent step of a chain of `ty` on one unit: a loop contraction's tap
/// of that type (two flops at the `[loops]` rate); `None` without a `[loops]` section.
pub fn step_seconds(device: &Device, ty: ElementType) -> Option<f64> {
    let l = device.loops.as_ref()?;
    let rate = match ty {
        ElementType::F64 => l.contraction_f64_flops_per_unit,
        ElementType::BF16 | ElementType::F16 => l.contraction_half_flops_per_unit,
        _ => l.contraction_f32_flops_per_unit,
    };
    Some(2.0 / rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chained(ty: &str, row: i64, reducer: &str) -> Option<ElementType> {
        chain_of(ty, row, reducer).map(|c| c.ty)
    }

    fn chain_of(ty: &str, row: i64, reducer: &str) -> Option<Chain> {
        let text = format!(
            "HloModule m\nr {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
             ROOT s = {ty}[] {reducer}(a, b)\n}}\nENTRY e {{\n  p = {ty}[64,{row}] parameter(0)\n  \
             z = {ty}[] constant(0)\n  ROOT s = {ty}[64] reduce(p, z), dimensions={{1}}, to_apply=r\n}}"
        );
        let m = hlo::parse_module(&text).unwrap();
        let c = m.entry();
        let dims = c
            .instr(c.root_instr().operands()[0])
            .shape()
            .dims()
            .to_vec();
        chained_row(&m, c.root_instr(), &dims)
    }

    #[test]
    fn short_float_rows_and_narrow_sums_are_chains() {
        // 32 f32 elements: one chunk of 32 lanes, so no partial accumulators.
        assert_eq!(chained("f32", 32, "add"), Some(ElementType::F32));
        // 64: two chunks, partial accumulators.
        assert_eq!(chained("f32", 64, "add"), None);
        // At most 16: one lane per output row.
        assert_eq!(chained("f32", 16, "add"), None);
        // A max of 64 f32: one chunk of 64 lanes, overlapping: in lanes.
        assert_eq!(chained("f32", 64, "maximum"), None);
        assert_eq!(chained("f32", 40, "maximum"), Some(ElementType::F32));
        // A bf16 sum stays in order whatever its length; its max runs in f32 lanes.
        assert_eq!(chained("bf16", 4096, "add"), Some(ElementType::BF16));
        assert_eq!(chained("bf16", 4096, "maximum"), None);
        // Integer sums are one cycle a step.
        assert_eq!(chained("s32", 32, "add"), None);
        // Short rows overlap; a long bf16 row waits for every step.
        assert!(chain_of("f32", 32, "add").unwrap().overlapped);
        assert!(chain_of("bf16", 64, "add").unwrap().overlapped);
        assert!(!chain_of("bf16", 4096, "add").unwrap().overlapped);
    }
}
