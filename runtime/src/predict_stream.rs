//! A streamed GEMM's GEMM priced by the calls the stream makes (backend-cpu's
//! `streamed_rows.rs` and its contraction twin), not as one GEMM over the whole operand.
//!
//! A stream splits the producer's blocks into `slots` runs, in parallel; each run writes
//! `group` blocks into its slot and multiplies their rows with one GEMM call on its own
//! thread. Priced whole, the GEMM was wrong both ways:
//! - calls on a few rows pay a library call and re-read the whole rhs each: pna's streams
//!   of 49152 one-row blocks (`49152 x 64 x 128`) took 31-33 ms where one GEMM is priced
//!   4 ms (model/measured 0.17);
//! - the streamed operand never exists whole, so its bytes come from the cache a slot fits
//!   in, not from DRAM: vae's `200704 x 1 x 288` matrix-vector streams (a 231 MB operand
//!   priced at DRAM bandwidth, 67 ms) took 4-13 ms: its producer writes it a slot at a
//!   time, and the GEMM reads each slot from the cache it fits in.

use device::Device;
use fusion::cost::CostModel;
use fusion::cost_library::GemmWork;
use plan::stream::StreamAxis;
use plan::Thunk;

/// Seconds of one call of streamed GEMM thunk `t` whose producer kernel alone is priced
/// `producer_s`: the producer with its writes of the streamed operand moved from the level
/// the whole operand fits in to the one a slot fits in ([`producer_write_saving`]), plus
/// the GEMM as its calls run ([`streamed_gemm_seconds`]); `None` for another thunk, or one
/// whose producer is no kernel or whose GEMM is no planned GEMM.
pub(crate) fn streamed_thunk_seconds(
    model: &CostModel<'_>,
    t: &Thunk,
    producer_s: f64,
) -> Option<f64> {
    let Thunk::StreamedGemm {
        producer,
        gemm,
        slots,
        group,
        axis,
        ..
    } = t
    else {
        return None;
    };
    let (Thunk::Kernel { blocks, .. }, Thunk::Gemm { shape, .. }) = (&**producer, &**gemm) else {
        return None;
    };
    let calls = StreamCalls {
        blocks: *blocks as f64,
        group: *group as f64,
        slots: *slots as f64,
        contraction: !matches!(axis, StreamAxis::Rows),
    };
    let g = crate::predict_gemm::gemm_work(shape);
    let streamed_bytes = match axis {
        StreamAxis::Contraction { lhs: false } => g.bytes[1],
        _ => g.bytes[0],
    };
    let saving = producer_write_saving(model.device, streamed_bytes, &calls);
    Some((producer_s - saving).max(0.0) + streamed_gemm_seconds(model, &g, &calls))
}

/// Seconds the producer kernel's price overstates where its `bytes` output (the streamed
/// operand) is written a slot at a time: the kernel model writes them at the bandwidth of
/// the level the whole operand fits in (vae's 231 MB patch matrix at DRAM's, 29 ms), the
/// stream at the level one slot fits in (a 3.6 MB slot: the third level's, 9 ms). Never
/// more than the whole write, which the producer's price includes.
fn producer_write_saving(d: &Device, bytes: f64, s: &StreamCalls) -> f64 {
    let slot = bytes * s.group.max(1.0) / s.blocks.max(1.0);
    let whole = bytes / d.reread_bytes_per_s(bytes as u64);
    (whole - bytes / d.reread_bytes_per_s(slot as u64)).max(0.0)
}

/// How a streamed GEMM runs: what each GEMM call multiplies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct StreamCalls {
    /// The producer's blocks.
    pub(crate) blocks: f64,
    /// Producer blocks per GEMM call (at least 1).
    pub(crate) group: f64,
    /// Runs in parallel.
    pub(crate) slots: f64,
    /// Whether the blocks split the contraction (each call adds a product of the whole
    /// result) rather than the result rows.
    pub(crate) contraction: bool,
}

/// Seconds of the GEMM part of a streamed GEMM whose whole product is `g` (one batch
/// element): each call's share of the rows (or of the contraction) priced as a GEMM on
/// one thread (the calls run on their slot's thread), its streamed operand read from the
/// cache it fits in, the rhs (or, along the contraction, the result) whole per call; the
/// calls spread over the slots that run in parallel.
pub(crate) fn streamed_gemm_seconds(model: &CostModel<'_>, g: &GemmWork, s: &StreamCalls) -> f64 {
    let calls = (s.blocks / s.group.max(1.0)).ceil().max(1.0);
    let device: &Device = model.device;
    let mut one = device.clone();
    one.compute.units = 1;
    let on_one = CostModel {
        device: &one,
        ..model.clone()
    };
    let [lhs, rhs, out] = g.bytes;
    let call = if s.contraction {
        // Each call multiplies `k / calls` of the contraction into the whole result.
        GemmWork {
            k: g.k / calls,
            bytes: [lhs / calls, rhs / calls, out],
            ..*g
        }
    } else {
        GemmWork {
            m: g.m / calls,
            bytes: [lhs / calls, rhs, out / calls],
            ..*g
        }
    };
    let threads = s.slots.clamp(1.0, f64::from(device.compute.units.max(1)));
    calls * on_one.gemm(&call).time_s / threads
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion::cost_library::GemmType;

    fn work(m: f64, n: f64, k: f64) -> GemmWork {
        GemmWork {
            batch: 1.0,
            m,
            n,
            k,
            ty: GemmType::F32,
            bytes: [4.0 * m * k, 4.0 * k * n, 4.0 * m * n],
        }
    }

    /// One-row calls pay a call and an rhs read each: pna's 49152 one-row blocks cost
    /// many times the whole GEMM; grouped into 256-row calls they cost about it.
    #[test]
    fn one_row_calls_cost_their_calls() {
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let model = CostModel::for_prediction(&cpu, &rules);
        let g = work(49152.0, 64.0, 128.0);
        let whole = model.gemm(&g).time_s;
        let rows = |group: f64| StreamCalls {
            blocks: 49152.0,
            group,
            slots: 2.0,
            contraction: false,
        };
        let single = streamed_gemm_seconds(&model, &g, &rows(1.0));
        assert!(single > 4.0 * whole, "{single} {whole}");
        let grouped = streamed_gemm_seconds(&model, &g, &rows(256.0));
        assert!(
            grouped < 1.5 * whole && grouped > 0.5 * whole,
            "{grouped} {whole}"
        );
    }

    /// A streamed operand is read a slot at a time from cache, not whole from DRAM: vae's
    /// `200704 x 1 x 288` stream in 64 blocks costs a fraction of the whole product.
    #[test]
    fn a_streamed_operand_is_read_from_cache() {
        let cpu = device::load("cpu").unwrap();
        let rules = codegen::HlocReach::cpu().rules;
        let model = CostModel::for_prediction(&cpu, &rules);
        let g = work(200704.0, 1.0, 288.0);
        let whole = model.gemm(&g).time_s;
        let s = StreamCalls {
            blocks: 64.0,
            group: 1.0,
            slots: 2.0,
            contraction: false,
        };
        let streamed = streamed_gemm_seconds(&model, &g, &s);
        assert!(streamed < whole / 2.0, "{streamed} {whole}");
        // Its producer writes the 231 MB a 3.6 MB slot at a time: most of the DRAM
        // write it was priced at is saved, never more than all of it.
        let saving = producer_write_saving(&cpu, g.bytes[0], &s);
        let dram = g.bytes[0] / cpu.memory.dram_bytes_per_s;
        assert!(saving > dram / 2.0 && saving < dram, "{saving} {dram}");
        let whole_slot = StreamCalls { blocks: 1.0, ..s };
        assert_eq!(producer_write_saving(&cpu, g.bytes[0], &whole_slot), 0.0);
    }
}
