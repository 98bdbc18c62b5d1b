//! The description's data: what kind of machine, its compute, memory and caches, the
//! limits of one kernel, and the bandwidth a working set of a given size sees.

/// What kind of machine a description is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A multicore CPU: units are cores.
    Cpu,
    /// A GPU: units are streaming multiprocessors.
    Gpu,
}

/// Arithmetic throughput.
#[derive(Clone, Debug, PartialEq)]
pub struct Compute {
    /// Cores or SMs.
    pub units: u32,
    /// f32 flops per second of one unit (an FMA counts two).
    pub f32_flops_per_unit: f64,
    /// bf16 flops per second of one unit.
    pub bf16_flops_per_unit: f64,
}

/// Main memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    /// Peak bandwidth in bytes per second.
    pub dram_peak_bytes_per_s: f64,
    /// Measured (copy kernel) bandwidth in bytes per second: what the cost model uses.
    pub dram_bytes_per_s: f64,
}

/// Cache levels. A level of size 0 does not exist.
#[derive(Clone, Debug, PartialEq)]
pub struct Cache {
    /// L1 data cache per unit.
    pub l1_bytes: u64,
    /// L1 bandwidth of the whole device, bytes per second.
    pub l1_bytes_per_s: f64,
    /// L2 (per core on a CPU, shared on a GPU).
    pub l2_bytes: u64,
    /// L2 bandwidth of the whole device.
    pub l2_bytes_per_s: f64,
    /// L3 (shared on a CPU; 0 on a GPU).
    pub l3_bytes: u64,
    /// L3 bandwidth.
    pub l3_bytes_per_s: f64,
    /// Shared memory one block may use on one SM (0 on a CPU).
    pub shared_memory_per_unit: u64,
}

/// What one kernel costs the machine to start. What a code generator emits and how (its
/// switches) is the code generator's (`fusion::EmitterRules`), not the machine's.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLimits {
    /// Seconds to launch (or, on the CPU, to call) one kernel.
    pub launch_s: f64,
}

/// What the runtime's library calls reach on the machine, per unit (one core): the rates
/// of what actually runs for a GEMM (per operand type: `bf16`/`f16` GEMMs run on AMX tiles
/// where the CPU has them, several times the rate of elementwise `bf16` code), a LAPACK
/// factorization, an FFT or a sort, and the fixed cost of one call. Measured on the
/// machine class of the description (see `descriptions/cpu.toml`); a description without
/// a `[library]` section (the GPUs, whose backend has no such library) prices library
/// calls at its `compute` rates.
#[derive(Clone, Debug, PartialEq)]
pub struct Library {
    /// Seconds of one library call beyond its work: the thunk's dispatch, resolving the
    /// arrays' strides, handing rows to the thread pool.
    pub call_s: f64,
    /// Flops per second of one unit in an `f32` GEMM (an FMA counts two).
    pub gemm_f32_flops_per_unit: f64,
    /// Flops per second of one unit in an `f64` GEMM.
    pub gemm_f64_flops_per_unit: f64,
    /// Flops per second of one unit in a GEMM of `bf16` or `f16` operands (`f32` sums).
    pub gemm_bf16_flops_per_unit: f64,
    /// Operations per second (a multiply-add counts two) of one unit in a GEMM of `s8`
    /// operands summed in `s32` (AMX `tdpbssd` tiles where the CPU has them).
    pub gemm_s8_ops_per_unit: f64,
    /// The same where the CPU has no AMX-INT8: backend-cpu's packed `s16`-pair kernel
    /// (AVX2 or AVX-512 VNNI register tiles; the row-buffer portable kernel only where the
    /// CPU has no AVX2).
    pub gemm_s8_portable_ops_per_unit: f64,
    /// Whether `bf16` GEMMs run on AMX tiles (at [`Library::gemm_bf16_flops_per_unit`]);
    /// where not, `bf16` and `f16` operands are widened to `f32` copies and run as the
    /// `f32` GEMM. The description gives its machine class's answer; a runtime that asks
    /// the CPU it runs on sets it from that.
    pub half_on_tiles: bool,
    /// Whether `bf16` GEMMs that do not run on AMX tiles run on AVX512-BF16 register tiles
    /// (`vdpbf16ps`, at [`Library::gemm_bf16_registers_flops_per_unit`]) rather than
    /// widened. As [`Library::half_on_tiles`].
    pub half_on_registers: bool,
    /// Flops per second of one unit in a `bf16` GEMM on AVX512-BF16 register tiles.
    pub gemm_bf16_registers_flops_per_unit: f64,
    /// Whether `s8` GEMMs run on AMX tiles; where not, on the packed kernel
    /// ([`Library::gemm_s8_portable_ops_per_unit`]). As [`Library::half_on_tiles`].
    pub s8_on_tiles: bool,
    /// Flops per second of one unit in a matrix-vector product (`m` or `n` of 1).
    pub gemv_flops_per_unit: f64,
    /// Flops per second of one unit in a blocked LAPACK routine (`faer`'s Cholesky, LU,
    /// triangular solve, symmetric eigendecomposition and SVD, by LAWN 41's counts) on
    /// matrices of order [`Library::lapack_full_order`] or more.
    pub lapack_flops_per_unit: f64,
    /// The order (the smaller side) from which a blocked LAPACK routine reaches
    /// [`Library::lapack_flops_per_unit`]; a smaller matrix runs at `order / this` of it
    /// (its panels are narrower than the blocks the kernels fill).
    pub lapack_full_order: f64,
    /// Seconds of each matrix of a LAPACK call beyond its flops (the routine's setup, its
    /// views or copies): what a batch of tiny matrices costs.
    pub lapack_matrix_s: f64,
    /// Flops per second of one unit in an unblocked LAPACK routine (QR's `geqrf` and
    /// `orgqr`: the evaluator's scalar Householder steps in `f64` on a row-major copy,
    /// each step a dependent sum down a column) on matrices of up to
    /// [`Library::lapack_unblocked_cols`] columns.
    pub lapack_unblocked_flops_per_unit: f64,
    /// Columns of the row-major copy beyond which an unblocked routine slows in
    /// proportion: its column walks stride `8 x cols` bytes, and wider rows fall out of
    /// the first-level cache's sets.
    pub lapack_unblocked_cols: f64,
    /// Flops per second of one unit in an FFT (`5 n log2 n` per complex transform).
    pub fft_flops_per_unit: f64,
    /// Key comparisons per second of one unit in a sort (or a top-k's sort of the `k` kept).
    pub sort_compares_per_unit: f64,
    /// Elements per second of one unit that a top-k's selection scans (each checked
    /// against the row's current `k`-th largest, most rejected at once).
    pub topk_elements_per_unit: f64,
}

/// What a contraction (a dot or a convolution) costs per core where the code generator runs
/// it as a loop (no library call takes it: a depthwise convolution, its weight gradient, an
/// integer dot): one accumulator per output element, its taps summed in order (the C is
/// compiled without `-ffast-math`, so a floating-point sum is not vectorized and each tap
/// waits for the previous one). Measured by `tools/fit_loop_rates.py` on the machine class
/// of the description; a description without a `[loops]` section prices such loops at its
/// `compute` rates.
#[derive(Clone, Debug, PartialEq)]
pub struct Loops {
    /// Flops per second of one unit (a tap, one multiply-add, counts two) of an `f32`
    /// contraction whose taps stay in the first-level cache.
    pub contraction_f32_flops_per_unit: f64,
    /// The same for `f64` operands.
    pub contraction_f64_flops_per_unit: f64,
    /// The same for `bf16` or `f16` operands (widened to `f32` per tap).
    pub contraction_half_flops_per_unit: f64,
    /// The same for integer operands (an integer sum is associative: it is vectorized).
    pub contraction_int_flops_per_unit: f64,
    /// Seconds one tap takes beyond the sum's chain where an operand moves by a page or
    /// more per step of the innermost loop, is larger than [`Loops::far_operand_bytes`]
    /// and the taps of one output do not fit in the first-level cache: a cache and TLB
    /// miss per tap that no prefetcher follows.
    pub far_tap_s: f64,
    /// Bytes of a page-strided operand above which its taps miss ([`Loops::far_tap_s`]);
    /// below, its pages stay in the second-level cache and TLB.
    pub far_operand_bytes: u64,
}

/// What an elementwise transcendental costs per core as the code generator's vector
/// polynomials run it (the C prelude's `hloc_vexp_f32` and kin, vectorized by the C
/// compiler): several times the flops table's count at the vector FMA rate, because a
/// polynomial is a chain of dependent FMAs plus range reduction, selects and an exponent
/// rebuild. Measured by `tools/fit_kernel_rates.py` (one-op modules of 65536 elements, in
/// the second-level cache); a description without an `[elementwise]` section prices
/// transcendentals by the flops table at its `compute` rates.
#[derive(Clone, Debug, PartialEq)]
pub struct Elementwise {
    /// Seconds one unit takes per element of an `f32` transcendental of the flops table's
    /// 16-flop class (`exp`, `log`, `tanh`, `logistic`; `bf16` and `f16` compute in `f32`).
    /// A costlier opcode (`sin`: 24 flops in the table) takes its flops over 16 times this.
    pub transcendental_f32_s: f64,
    /// The same for `f64`.
    pub transcendental_f64_s: f64,
}

/// A target machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    /// The description's name (`cpu`, `h100`).
    pub name: String,
    /// CPU or GPU.
    pub kind: DeviceKind,
    /// Arithmetic.
    pub compute: Compute,
    /// Main memory.
    pub memory: Memory,
    /// Caches.
    pub cache: Cache,
    /// Kernel launch and fusion limits.
    pub kernel: KernelLimits,
    /// The rates of library calls, where the description measured them.
    pub library: Option<Library>,
    /// The rates of contractions run as loops, where the description measured them.
    pub loops: Option<Loops>,
    /// The cost of elementwise transcendentals, where the description measured it.
    pub elementwise: Option<Elementwise>,
}

impl Device {
    /// f32 flops per second of the whole device.
    pub fn f32_flops_per_s(&self) -> f64 {
        self.compute.f32_flops_per_unit * f64::from(self.compute.units)
    }

    /// bf16 flops per second of the whole device.
    pub fn bf16_flops_per_s(&self) -> f64 {
        self.compute.bf16_flops_per_unit * f64::from(self.compute.units)
    }

    /// The bandwidth at which data of `bytes` is re-read once it was read: the fastest
    /// cache level it fits in, else DRAM.
    pub fn reread_bytes_per_s(&self, bytes: u64) -> f64 {
        let c = &self.cache;
        [
            (c.l1_bytes, c.l1_bytes_per_s),
            (c.l2_bytes, c.l2_bytes_per_s),
            (c.l3_bytes, c.l3_bytes_per_s),
        ]
        .into_iter()
        .find(|&(size, bw)| size > 0 && bw > 0.0 && bytes <= size)
        .map_or(self.memory.dram_bytes_per_s, |(_, bw)| bw)
    }
}
