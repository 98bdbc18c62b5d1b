//! Library calls priced by what actually runs, not as the loops their indexing maps
//! describe.
//!
//! A dot that runs as a library GEMM packs each operand once and computes `2 m n k` flops
//! at the GEMM's rate for its operand type (a `bf16` GEMM on AMX tiles reaches several
//! times the rate of elementwise `bf16` code, and faer's `f32` GEMM more than twice the
//! generated vector code's); [`crate::cost::evaluate`]'s composition of reads prices it
//! as a naive loop that re-reads `k` operand elements per output element (5-18x over for
//! large GEMMs, measured). LAPACK calls are priced by their flop counts as their kind of
//! routine runs them ([`crate::cost_lapack`]), an FFT by `5 n log2 n` per complex
//! transform, a sort by `n log2 n` comparisons per row and a top-k by a scan of every element plus a sort of the `k` kept, all at the rates
//! the description's `[library]` section measured, plus its fixed cost of one call
//! (`call_s`). A description without that section prices them at its compute rates.

use device::{Device, DeviceKind};
use hlo::{CompId, InstrId, Module, Opcode};

use crate::cost::{shape_size, CostModel, KernelCost};
pub use crate::cost_gemm::{GemmType, GemmWork};
use crate::cost_lapack::LapackWork;

/// Multiply-adds below which a library GEMM runs on one thread
/// ([`crate::cost::GEMM_ONE_THREAD_MULTIPLY_ADDS`], backend-cpu's `PARALLEL_MIN_FLOPS`).
fn gemm_threads(device: &Device, multiply_adds: f64) -> f64 {
    if multiply_adds < crate::cost::GEMM_ONE_THREAD_MULTIPLY_ADDS {
        1.0
    } else {
        f64::from(device.compute.units.max(1))
    }
}

/// What runs a GEMM of this work on this device: the operand type's library path, and for
/// `bf16`/`f16` and `s8` operands whether the AMX tiles take it ([`device::Library`]'s
/// `half_on_tiles` and `s8_on_tiles`; an `s8` contraction under 32 runs on the portable
/// kernel even there, backend-cpu's `gemm_amx::MIN_K_S8`), and without them whether
/// `bf16 x bf16` runs on AVX512-BF16 register tiles (`half_on_registers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GemmPath {
    F32,
    F64,
    HalfTiles,
    HalfRegisters,
    HalfWidened,
    S8Tiles,
    S8Portable,
}

/// The shortest `s8` contraction the tiles take (backend-cpu's `gemm_amx::MIN_K_S8`).
const MIN_K_S8_TILES: f64 = 32.0;

fn gemm_path(d: &Device, g: &GemmWork) -> GemmPath {
    let lib = d.library.as_ref();
    match g.ty {
        GemmType::F32 => GemmPath::F32,
        GemmType::F64 => GemmPath::F64,
        GemmType::Half if lib.is_none_or(|l| l.half_on_tiles) => GemmPath::HalfTiles,
        GemmType::Half if lib.is_some_and(|l| l.half_on_registers) => GemmPath::HalfRegisters,
        GemmType::Half | GemmType::Widened => GemmPath::HalfWidened,
        GemmType::S8 if lib.is_none_or(|l| l.s8_on_tiles) && g.k >= MIN_K_S8_TILES => {
            GemmPath::S8Tiles
        }
        GemmType::S8 => GemmPath::S8Portable,
    }
}

/// `(m or n, k)` below which a GEMM on this path runs its micro-kernel at a share of its
/// rate (`x / block` along each): narrow products waste the micro-kernel's register block
/// and do not amortize the packing. Fitted with the rates of `cpu.toml`'s `[library]` on
/// 907 GEMM calls of the fresh programs (benches/README.md): faer's `f32`/`f64` kernels
/// (and the widened half path, which is faer's `f32` GEMM) reach their rate from 16 along
/// each; the AMX path (16 x 16 tiles over 32 pairs, with its operands converted into tile
/// order first) only from 64 rows or columns and a contraction of 256; the `s8` GEMM runs
/// on the same blocking. Without the tiles the `s8` GEMM runs on backend-cpu's packed
/// `s16`-pair kernel: 6-row by 16- or 32-column register tiles (rows and columns padded
/// to them) over pairs along the contraction, so it fills its block from 16 along each as
/// faer's kernels do.
fn gemm_blocks(path: GemmPath) -> (f64, f64) {
    match path {
        GemmPath::F32 | GemmPath::F64 | GemmPath::HalfWidened | GemmPath::S8Portable => {
            (16.0, 16.0)
        }
        GemmPath::HalfTiles | GemmPath::S8Tiles => (64.0, 256.0),
        // 8 x 32 register tiles over pairs: 32 columns fill a tile's row of registers;
        // short contractions leave the packing unamortized (16 x 8192 x 384: 126 GFLOP/s
        // on two cores, against 470 at 1024^3).
        GemmPath::HalfRegisters => (32.0, 64.0),
    }
}

/// Multiply-adds' worth of time each result element costs beyond its `k` multiply-adds on
/// the register-blocked paths (its accumulator loaded, stored, and the panel's edge
/// handled). Microbench (tools/fit_kernel_rates.py --only gemm, session 56): a batch of 64
/// outer products `64 x 128 x 1` reaches 48 GFLOP/s on one core, a quarter of the
/// `64^3` rate: `1 / (1 + 4)` of the kernel's.
const RESULT_OVERHEAD_MULTIPLY_ADDS: f64 = 4.0;

/// The share of its rate a GEMM keeps at contraction `k` where the path's block is `block`.
/// The AMX tiles (a block of 256) waste the tile's unfilled pairs: `k / block`. The
/// register-blocked paths (16) pay a fixed cost per result element
/// ([`RESULT_OVERHEAD_MULTIPLY_ADDS`]), so a short contraction costs `k + c` per element,
/// not `block`: `k / block` priced `k = 1` products (outer products, batched rank-1 updates)
/// 4-8x over (maml's 64 x 128 x 1 batches, dpsgd's per-example outer products).
fn contraction_fill(k: f64, block: f64) -> f64 {
    if block > 16.0 {
        return (k / block).min(1.0);
    }
    let c = RESULT_OVERHEAD_MULTIPLY_ADDS;
    ((k / (k + c)) * ((block + c) / block)).min(1.0)
}

impl CostModel<'_> {
    /// The cost of one library GEMM call: its flops at the description's GEMM rate for the
    /// operand type (a share of it where `m`, `n` or `k` is narrower than a micro-kernel's
    /// block), on one thread below the parallel threshold; its operands read and its result
    /// written once each (the packing) at the bandwidth of the level they fit in; plus the
    /// fixed cost of a library call.
    pub fn gemm(&self, g: &GemmWork) -> KernelCost {
        let d = self.device;
        let path = gemm_path(d, g);
        let per_unit = match (&d.library, path) {
            (Some(l), GemmPath::F32) => l.gemm_f32_flops_per_unit,
            (Some(l), GemmPath::F64) => l.gemm_f64_flops_per_unit,
            (Some(l), GemmPath::HalfTiles) => l.gemm_bf16_flops_per_unit,
            (Some(l), GemmPath::HalfRegisters) => l.gemm_bf16_registers_flops_per_unit,
            // Widened copies run as the `f32` GEMM; the widening is priced below.
            (Some(l), GemmPath::HalfWidened) => l.gemm_f32_flops_per_unit,
            (Some(l), GemmPath::S8Tiles) => l.gemm_s8_ops_per_unit,
            (Some(l), GemmPath::S8Portable) => l.gemm_s8_portable_ops_per_unit,
            (None, GemmPath::HalfTiles | GemmPath::HalfRegisters | GemmPath::HalfWidened) => {
                d.compute.bf16_flops_per_unit
            }
            // Converted to `f32` where the backend has no integer GEMM.
            (None, GemmPath::S8Tiles | GemmPath::S8Portable) => d.compute.f32_flops_per_unit,
            (None, GemmPath::F64) => d.compute.f32_flops_per_unit / 2.0,
            (None, GemmPath::F32) => d.compute.f32_flops_per_unit,
        };
        let flops = g.flops();
        let threads = if d.kind == DeviceKind::Cpu {
            gemm_threads(d, flops / 2.0)
        } else {
            f64::from(d.compute.units.max(1))
        };
        // Share of the micro-kernel's rate a narrow dimension leaves.
        let fill = |x: f64, block: f64| (x / block).min(1.0);
        let (mn_block, k_block) = gemm_blocks(path);
        let efficiency = fill(g.m.min(g.n), mn_block) * contraction_fill(g.k, k_block);
        let compute_s = if g.m.min(g.n) <= 1.0 {
            // A matrix-vector product: a stream over the matrix at the vector kernel's rate.
            let gemv = d
                .library
                .as_ref()
                .map_or(d.compute.f32_flops_per_unit / 4.0, |l| {
                    l.gemv_flops_per_unit
                });
            flops / (gemv * threads)
        } else {
            flops / (per_unit * threads * efficiency.max(1.0 / 64.0))
        };
        let [lhs, rhs, out] = g.bytes;
        let read = lhs + rhs;
        let memory_s = lhs / d.reread_bytes_per_s(lhs as u64)
            + rhs / d.reread_bytes_per_s(rhs as u64)
            + out / d.reread_bytes_per_s(out as u64);
        let launch_s = library_call_s(d);
        // Widened half operands: each half array read and its `f32` copy written (the
        // result the other way round) before and after the product, not overlapped with it.
        let widen_s = if path == GemmPath::HalfWidened {
            g.bytes
                .iter()
                .map(|&b| 3.0 * b / d.reread_bytes_per_s((3.0 * b) as u64))
                .sum::<f64>()
                / threads
        } else {
            0.0
        };
        KernelCost {
            time_s: memory_s.max(compute_s) + widen_s + launch_s,
            memory_s,
            compute_s,
            launch_s,
            bytes_read: read,
            bytes_reread: 0.0,
            bytes_written: out,
            flops,
            recomputed_flops: 0.0,
        }
    }

    /// The cost of instruction `id` of `comp` run as one of the runtime's library calls: a
    /// dot ([`CostModel::gemm`]), a LAPACK custom call, an FFT, a sort or a top-k; `None`
    /// for anything else (the caller prices it as a kernel).
    pub fn library_call(&self, module: &Module, comp: CompId, id: InstrId) -> Option<KernelCost> {
        if let Some(g) = GemmWork::of_dot(module, comp, id) {
            return Some(self.gemm(&g));
        }
        let c = module.get_computation(comp)?;
        let i = c.instr(id);
        let d = self.device;
        let operand = |k: usize| i.operands().get(k).map(|&o| c.instr(o).shape());
        let (in_elements, in_bytes) = i
            .operands()
            .iter()
            .map(|&o| shape_size(c.instr(o).shape()))
            .fold((0.0, 0.0), |(e, b), (oe, ob)| (e + oe, b + ob));
        let (out_elements, out_bytes) = shape_size(i.shape());
        let units = f64::from(d.compute.units.max(1));
        let lib = d.library.as_ref();
        // (work, compute seconds).
        let (work, compute_s) = match i.opcode() {
            // LAPACK: priced by how its kind of routine runs (crate::cost_lapack).
            Opcode::CustomCall => LapackWork::of(i, operand(0)?, operand(1))?.seconds(d),
            Opcode::Fft => {
                let lengths = i.fft_length()?;
                let n: f64 = lengths.iter().map(|&l| l.max(1) as f64).product();
                let real = matches!(i.fft_type(), Some("RFFT" | "IRFFT"));
                let transforms = out_elements.max(in_elements) / n.max(1.0);
                let complex = if real { 2.5 } else { 5.0 };
                let flops = transforms.max(1.0) * complex * n * n.log2().max(1.0);
                let rate = lib.map_or(d.compute.f32_flops_per_unit / 4.0, |l| l.fft_flops_per_unit);
                (flops, flops / (rate * units))
            }
            Opcode::Sort => {
                let a = operand(0)?;
                let dim = usize::try_from(*i.dimensions()?.first()?).ok()?;
                let n = (*a.dims().get(dim)?).max(1) as f64;
                let rows = shape_size(a).0 / n;
                let compares = rows * n * n.log2().max(1.0);
                (
                    compares,
                    compares / (sort_rate(d) * units.min(rows.max(1.0))),
                )
            }
            Opcode::TopK => {
                let a = operand(0)?;
                let n = (*a.dims().last()?).max(1) as f64;
                let rows = shape_size(a).0 / n;
                let k = first_dim_last(i.shape()).unwrap_or(1.0);
                // The scan of every element at the selection's rate, then a sort of the
                // `k` kept, both as comparisons at the sort's rate.
                let scan = lib.map_or(1.0, |l| l.sort_compares_per_unit / l.topk_elements_per_unit);
                let compares = rows * (n * scan + k * k.log2().max(1.0));
                (
                    compares,
                    compares / (sort_rate(d) * units.min(rows.max(1.0))),
                )
            }
            _ => return None,
        };
        let memory_s = in_bytes / d.reread_bytes_per_s(in_bytes as u64)
            + out_bytes / d.reread_bytes_per_s(out_bytes as u64);
        let launch_s = library_call_s(d);
        Some(KernelCost {
            time_s: memory_s.max(compute_s) + launch_s,
            memory_s,
            compute_s,
            launch_s,
            bytes_read: in_bytes,
            bytes_reread: 0.0,
            bytes_written: out_bytes,
            flops: work,
            recomputed_flops: 0.0,
        })
    }
}

/// The fixed cost of one library call: the description's, else a kernel launch.
fn library_call_s(d: &Device) -> f64 {
    d.library.as_ref().map_or(d.kernel.launch_s, |l| l.call_s)
}

/// Comparisons per second of one unit: the description's, else one per 4 f32 flops.
fn sort_rate(d: &Device) -> f64 {
    d.library
        .as_ref()
        .map_or(d.compute.f32_flops_per_unit / 4.0, |l| {
            l.sort_compares_per_unit
        })
}

/// The last dimension of the first array of a (tuple) shape: a top-k's `k`.
fn first_dim_last(s: &hlo::Shape) -> Option<f64> {
    let a = if s.is_tuple() {
        s.tuple_shapes().first()?
    } else {
        s
    };
    a.dims().last().map(|&k| k.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EmitterRules;

    fn cpu(half_on_tiles: bool, s8_on_tiles: bool) -> Device {
        let mut d = device::load("cpu").unwrap();
        let l = d.library.as_mut().unwrap();
        l.half_on_tiles = half_on_tiles;
        l.s8_on_tiles = s8_on_tiles;
        d
    }

    fn square(ty: GemmType, s: f64, width: [f64; 3]) -> GemmWork {
        GemmWork {
            batch: 1.0,
            m: s,
            n: s,
            k: s,
            ty,
            bytes: width.map(|w| w * s * s),
        }
    }

    /// Without AMX tiles a `bf16` GEMM is the `f32` GEMM of widened copies (measured
    /// 1024^3: 10.8 ms against the tiles' price of 2.7 ms): its price is the `f32` GEMM's
    /// plus the widening passes, never the tiles' rate.
    #[test]
    fn a_bf16_gemm_without_tiles_is_the_f32_gemm_of_widened_copies() {
        let (tiles, none) = (cpu(true, true), cpu(false, true));
        let rules = EmitterRules::xla_cpu();
        let g = square(GemmType::Half, 1024.0, [2.0, 2.0, 2.0]);
        let f = square(GemmType::F32, 1024.0, [4.0, 4.0, 4.0]);
        let on_tiles = CostModel::for_prediction(&tiles, &rules).gemm(&g);
        let widened = CostModel::for_prediction(&none, &rules).gemm(&g);
        let as_f32 = CostModel::for_prediction(&none, &rules).gemm(&f);
        assert!(
            widened.time_s > 2.0 * on_tiles.time_s,
            "{widened:?} {on_tiles:?}"
        );
        assert!(widened.time_s > as_f32.time_s, "{widened:?} {as_f32:?}");
        assert!(
            widened.time_s < 1.5 * as_f32.time_s,
            "{widened:?} {as_f32:?}"
        );
    }

    /// `f16` operands (and a `bf16` one with an `f32` one) are widened on every CPU.
    #[test]
    fn f16_operands_are_widened_even_with_tiles() {
        assert_eq!(
            GemmType::of(hlo::ElementType::F16, hlo::ElementType::F16),
            GemmType::Widened
        );
        assert_eq!(
            GemmType::of(hlo::ElementType::BF16, hlo::ElementType::F32),
            GemmType::Widened
        );
        assert_eq!(
            GemmType::of(hlo::ElementType::BF16, hlo::ElementType::BF16),
            GemmType::Half
        );
        let d = cpu(true, true);
        let g = square(GemmType::Widened, 512.0, [2.0, 2.0, 2.0]);
        assert_eq!(gemm_path(&d, &g), GemmPath::HalfWidened);
    }

    /// Without AMX-INT8, and for contractions under 32 even with it, an `s8` GEMM runs on
    /// the portable kernel at its own rate.
    #[test]
    fn an_s8_gemm_without_tiles_runs_at_the_portable_rate() {
        let rules = EmitterRules::xla_cpu();
        let (tiles, none) = (cpu(true, true), cpu(true, false));
        let g = square(GemmType::S8, 512.0, [1.0, 1.0, 4.0]);
        let l = none.library.as_ref().unwrap();
        let got = CostModel::for_prediction(&none, &rules).gemm(&g);
        let want = g.flops() / (2.0 * l.gemm_s8_portable_ops_per_unit);
        assert!((got.compute_s - want).abs() < 1e-9 * want, "{got:?} {want}");
        let on_tiles = CostModel::for_prediction(&tiles, &rules).gemm(&g);
        assert!(on_tiles.compute_s < got.compute_s, "{on_tiles:?} {got:?}");
        let short = GemmWork { k: 16.0, ..g };
        assert_eq!(gemm_path(&tiles, &short), GemmPath::S8Portable);
        assert_eq!(gemm_path(&tiles, &g), GemmPath::S8Tiles);
    }
}
