//! The cost model: the modelled time of one kernel (a fusion or a single op) from the
//! indexing maps of its instructions and a [`Device`].
//!
//! For every instruction of a computation, [`CompInfo`] holds the reads of each operand per
//! output element: the number of points of the op's output-to-input maps (the
//! utilization of its maps: a broadcast reads each input element once per output row, a
//! reduce reads its whole reduced extent per output element) divided by its output
//! elements. A kernel's cost composes these counts from its root down: each member is
//! evaluated once per read of it by another member (a producer duplicated behind a
//! broadcast is evaluated once per broadcast element), and each input of the kernel is
//! read that many times. The first read of each input element moves its bytes; re-reads
//! hit the cache level the whole input fits in (a broadcast re-read from L1 costs a tenth
//! of a DRAM read). Every transfer is charged at the bandwidth of the level its tensor
//! fits in (a tensor just written and small enough stays in cache). Then
//! `time = max(memory time, compute time) + launch`, compute time being the flops of every
//! member (per-opcode table, [`crate::ops::flops_per_element`]) at the device's rate for
//! the element type.
//!
//! The model is split by responsibility: [`crate::cost_reads`] (what one op reads per
//! element), [`crate::cost_info`] (the per-instruction facts and their composition over a
//! kernel), this file (the kernel's time from them), and the pricing rules of particular
//! loops in the other `cost_*` files.

use device::{Device, DeviceKind};
use hlo::{ElementType, InstrId, Opcode};
use serde::Serialize;

use crate::cost_strided;
use crate::emitter_reach::EmitterRules;

pub use crate::cost_info::{evaluate, CompInfo, Evaluation, InfoCache, OpInfo, Recomputed};
pub use crate::cost_reads::{computation_kernel, map_points, shape_size};

/// The modelled cost of one kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KernelCost {
    /// Modelled time in seconds: `max(memory_s, compute_s) + launch_s`.
    pub time_s: f64,
    /// Time moving bytes.
    pub memory_s: f64,
    /// Time computing.
    pub compute_s: f64,
    /// Launch (or call) overhead.
    pub launch_s: f64,
    /// Bytes read: each input element once.
    pub bytes_read: f64,
    /// Bytes read again (served by a cache level when the input fits).
    pub bytes_reread: f64,
    /// Bytes written.
    pub bytes_written: f64,
    /// Flops.
    pub flops: f64,
    /// The part of `flops` that recomputes a transcendental per element of a reader
    /// ([`Evaluation::recomputed_flops`]).
    pub recomputed_flops: f64,
}

impl KernelCost {
    /// Adds another kernel's cost (for the cost of several kernels).
    pub fn add(&mut self, o: &KernelCost) {
        self.time_s += o.time_s;
        self.memory_s += o.memory_s;
        self.compute_s += o.compute_s;
        self.launch_s += o.launch_s;
        self.bytes_read += o.bytes_read;
        self.bytes_reread += o.bytes_reread;
        self.bytes_written += o.bytes_written;
        self.flops += o.flops;
        self.recomputed_flops += o.recomputed_flops;
    }

    /// Bytes moved: read, re-read and written.
    pub fn bytes(&self) -> f64 {
        self.bytes_read + self.bytes_reread + self.bytes_written
    }
}

/// The bytes an in-place root writes: a dynamic-update-slice writes its update into its
/// operand's buffer (the runtime aliases the two, copying the base first where it must
/// stay alive: a copy of its own), a scatter its updates' elements; `None` for any other
/// op (it writes all of its result).
fn in_place_update_bytes(info: &CompInfo, op: &OpInfo) -> Option<f64> {
    let bytes = |o: &InstrId| info.op(*o).map_or(0.0, |x| x.bytes);
    match op.opcode {
        Opcode::DynamicUpdateSlice => op.operands.get(1).map(bytes),
        Opcode::Scatter if op.operands.len() >= 3 => {
            let updates = (op.operands.len() - 1) / 2;
            let update_bytes: f64 = op.operands[updates + 1..].iter().map(bytes).sum();
            Some(update_bytes.min(op.bytes))
        }
        _ => None,
    }
}

/// How many times slower than the flops table's rate (vectorized polynomials at the
/// device's f32 rate) a transcendental runs when a CPU kernel recomputes it per element of
/// a reader. Such a read indexes the value through a division of the loop's index (a
/// broadcast behind a reshape root: `b[s0 * 8 + d1 / 32000]`), which the C compiler does not
/// vectorize, so the polynomial runs as one scalar call per element. Measured: beam search's
/// log-softmax kernel (`log` of a `[16,8]` sum recomputed for each of `[16,8,32000]`) took
/// 67.5 ms, 16.5 ns per element, where the table at the `cpu` description's 192 GFLOP/s
/// prices a log at 0.083 ns; backend-cpu measured its polynomials as scalar calls at
/// 10-20 ns (sin 16 ns, f64 log 21 ns). 128 prices a 16-flop log at 10.7 ns.
pub const SCALAR_RECOMPUTE_SLOWDOWN: f64 = 128.0;

/// Seconds of one call of a generated kernel among others, beyond its work, as
/// `--profile` times it: the kernel's call on the calling thread (or its blocks handed to
/// the pool and back) with its arguments bound, its code and operands cold. The profile
/// does not time the thunk's dispatch around it, which the description's `launch_s`
/// (1.5 us) also prices for the fusion passes. Fitted on a microbenchmark (session 56): 32
/// distinct kernels of 64 elements (a multiply and an exp, tanh or sine each), each after a
/// kernel sweeping 16 MiB that leaves the caches as a real program's large kernels leave
/// them: fastest calls 0.30-0.56 us (10th to 90th percentile), median 0.35; the same
/// kernels one after another, caches warm, 0.06. Session 55 fitted 0.8 on the fresh
/// programs' own thunks (their small kernels' cold reads, priced now in
/// [`CostModel::work_as_run`], included).
pub const PROFILED_CALL_S: f64 = 0.35e-6;

/// Seconds of one call of a generated kernel that a loop calls again and again, beyond
/// its work: its code, its arguments and its small operands stay in cache from the last
/// iteration, where a call among other kernels (the description's `launch_s`) misses on
/// them. Measured as the fastest calls of `hloc run --trace` (load 8): the scalar counter,
/// compare and index kernels of gru_scan, lstm_lm, ode_rk4_gray_scott and
/// linalg_lu_slogdet_inv's loops took 30-50 ns a call (`launch_s` priced each at 1.5 us,
/// 30-50x). For `--profile`'s predictions of thunks in loops.
pub const WARM_CALL_S: f64 = 40e-9;

/// Multiply-adds (all batch elements together) below which a CPU GEMM runs on the calling
/// thread alone: backend-cpu's `gemm::PARALLEL_MIN_FLOPS` (handing half of a smaller product
/// to the thread pool costs what the half saves: a recurrent step's `[16,192] x [192,192]`
/// took ~50 us in two parts, 16-21 on one thread). XLA:CPU's Eigen contractions pick one
/// thread for small products too.
pub const GEMM_ONE_THREAD_MULTIPLY_ADDS: f64 = (1u64 << 20) as f64;

/// Elements (the largest buffer a kernel reads or writes) below which the CPU runtime runs a
/// kernel's whole grid on the calling thread: backend-cpu's `launch::PARALLEL_MIN_ELEMENTS`
/// (mirrored here as [`GEMM_ONE_THREAD_MULTIPLY_ADDS`] mirrors the GEMM's threshold; the
/// fusion crate does not depend on the backend).
pub const PARALLEL_MIN_ELEMENTS: i64 = 1 << 17;

/// Whether the CPU runtime runs a kernel of `blocks` blocks touching `elements` elements on
/// the calling thread alone (backend-cpu's `launch::runs_on_one_thread` with a pool of more
/// than one thread): one block, or too few elements to pay for waking the pool.
pub fn runs_on_one_thread(blocks: i64, elements: i64) -> bool {
    blocks <= 1 || elements < PARALLEL_MIN_ELEMENTS
}

/// Bytes per second a CPU kernel that a loop calls again and again moves where its bytes
/// fit in L2: the last iteration left them there. Measured on a microbenchmark (a `while`
/// of 100 iterations whose body computes `x * 0.5 + y` over `n` `f32` elements, fastest of
/// 500 calls): 246, 317, 277 and 280 GB/s for n = 1024 to 65536 (one thread, 12-768 KiB),
/// 210 GB/s at 131072 (1.5 MiB, both cores); the description's `l2_bytes_per_s` (55 GB/s,
/// a level reached cold) priced them 4-5x over, and the fresh programs' loop kernels of
/// 1-10 us (elementwise updates of recurrent state) read 1.7x over.
pub const WARM_CACHE_BYTES_PER_S: f64 = 250e9;

/// How the runtime runs one kernel call, for [`CostModel::work_as_run`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// On the calling thread alone ([`runs_on_one_thread`]).
    pub one_thread: bool,
    /// Called by a loop again and again (its operands left in cache by the last call).
    pub warm: bool,
}

/// The cost model of one device and the code generator that emits its kernels.
#[derive(Clone, Debug)]
pub struct CostModel<'d> {
    /// The device.
    pub device: &'d Device,
    /// Whether the code generator computes loop invariants once before the innermost loop
    /// ([`EmitterRules::hoists_invariant_values`]): [`evaluate`]'s `hoist`.
    pub hoists_invariant_values: bool,
    /// Whether reads down a column cost a cache line per element ([`cost_strided`]) and
    /// row sums the emitter leaves in order their chains ([`cost_chains`]): on for
    /// `--profile`'s predictions ([`CostModel::for_prediction`]); off for the fusion
    /// passes, whose decisions they change (19 of 66 fresh programs fused differently,
    /// transposes and slices leaving their consumers' kernels, softmax rows split) and
    /// which keep the earlier pricing until a same-run timing shows those decisions
    /// faster.
    pub prices_loop_order: bool,
    /// Seconds of one kernel call beyond its work: the description's `launch_s` (a thunk
    /// dispatched onto the pool and back, what fusing two kernels saves) for the fusion
    /// passes; for `--profile`'s predictions on a CPU, [`PROFILED_CALL_S`], the call the
    /// profile times.
    pub call_s: f64,
}

impl<'d> CostModel<'d> {
    /// The model of kernels that the code generator whose switches are `rules` emits for
    /// `device`: the machine's facts from the one, how its kernels compute from the other.
    pub fn new(device: &'d Device, rules: &EmitterRules) -> CostModel<'d> {
        CostModel {
            device,
            hoists_invariant_values: rules.hoists_invariant_values,
            prices_loop_order: false,
            call_s: device.kernel.launch_s,
        }
    }

    /// [`CostModel::new`] pricing what the emitter's loop order costs besides
    /// ([`CostModel::prices_loop_order`]): the model of `--profile`'s predictions.
    pub fn for_prediction(device: &'d Device, rules: &EmitterRules) -> CostModel<'d> {
        CostModel {
            prices_loop_order: true,
            call_s: if device.kind == DeviceKind::Cpu {
                PROFILED_CALL_S
            } else {
                device.kernel.launch_s
            },
            ..CostModel::new(device, rules)
        }
    }
}

impl CostModel<'_> {
    /// The cost of a kernel made of `members` whose outputs are `roots`.
    pub fn kernel(&self, info: &CompInfo, members: &[InstrId], roots: &[InstrId]) -> KernelCost {
        let ev = evaluate(info, members, roots, self.hoists_invariant_values);
        self.kernel_evaluated(info, members, roots, &ev)
    }

    /// [`CostModel::kernel`] given `ev`, the kernel's [`evaluate`] with this model's
    /// `hoists_invariant_values`: for callers that need the evaluation too (priority
    /// fusion's hero checks), so a growing kernel is walked once per candidate, not twice.
    pub fn kernel_evaluated(
        &self,
        info: &CompInfo,
        members: &[InstrId],
        roots: &[InstrId],
        ev: &Evaluation,
    ) -> KernelCost {
        let d = self.device;
        if d.kind == DeviceKind::Cpu {
            // A dot alone is a library GEMM on the CPU: priced by what the library runs.
            if let [m] = members {
                if let Some(g) = info.op(*m).and_then(|o| o.gemm.as_ref()) {
                    return self.gemm(g);
                }
            }
        }
        let mut c = KernelCost {
            launch_s: self.call_s,
            flops: ev.flops,
            ..KernelCost::default()
        };
        // A contraction of 16-bit floats widens its operands to `f32` where it packs them
        // (hloc's GEMM and XLA's alike): their re-reads move `f32` bytes.
        let widens = members.iter().filter_map(|&m| info.op(m)).any(|o| {
            matches!(o.opcode, Opcode::Dot | Opcode::Convolution)
                && matches!(o.element_type, Some(ElementType::BF16 | ElementType::F16))
        });
        // The buffers in-place roots update: aliased, not read (but where read otherwise).
        let updated: Vec<(InstrId, f64)> = roots
            .iter()
            .filter_map(|&r| info.op(r))
            .filter(|o| in_place_update_bytes(info, o).is_some())
            .filter_map(|o| Some((*o.operands.first()?, o.elements)))
            .collect();
        for (&input, &reads) in &ev.reads {
            let Some(op) = info.op(input) else { continue };
            let aliased: f64 = updated
                .iter()
                .filter(|&&(b, _)| b == input)
                .map(|&(_, e)| e)
                .sum();
            let reads = (reads - aliased).max(0.0);
            if op.elements <= 0.0 {
                continue;
            }
            let mut per_element = op.bytes / op.elements;
            if widens {
                per_element = per_element.max(4.0);
            }
            let first = reads.min(op.elements) * per_element;
            let again = (reads - op.elements).max(0.0) * per_element;
            c.bytes_read += first;
            c.bytes_reread += again;
            // Re-reads come from the cache level the input fits in, or the level one row
            // fits in where the kernel works row by row.
            let working_set = ev.row_bytes.map_or(op.bytes, |r| r.min(op.bytes));
            c.memory_s += first / d.reread_bytes_per_s(op.bytes as u64)
                + again / d.reread_bytes_per_s(working_set as u64);
            if d.kind == DeviceKind::Cpu && self.prices_loop_order {
                // Reads down a column fetch a line per element, from the level the input
                // fits in.
                if let Some(&(n, stride)) = ev.strided_reads.get(&input) {
                    let lines = cost_strided::extra_line_bytes(per_element, n, stride);
                    c.bytes_reread += lines;
                    c.memory_s += lines / d.reread_bytes_per_s(op.bytes as u64);
                }
            }
        }
        for &r in roots {
            if let Some(op) = info.op(r) {
                let written = in_place_update_bytes(info, op).unwrap_or(op.bytes);
                c.bytes_written += written;
                c.memory_s += written / d.reread_bytes_per_s(written as u64);
            }
        }
        let bf16 = roots
            .iter()
            .filter_map(|&r| info.op(r))
            .all(|o| o.element_type == Some(ElementType::BF16));
        let rate = if bf16 {
            d.bf16_flops_per_s()
        } else {
            d.f32_flops_per_s()
        };
        c.compute_s = c.flops / rate;
        if let Some(l) = self.loop_contractions(info, ev) {
            // Contractions run as loops: their taps at the loop's rate, not the vector rate.
            c.compute_s += l.seconds - l.flops / rate;
        }
        if d.kind == DeviceKind::Cpu && self.prices_loop_order {
            if let Some((flops, seconds)) = self.chained_reductions(info, ev) {
                // Short or narrow rows summed in order: a dependent step per element.
                c.compute_s += seconds - flops / rate;
            }
        }
        if let Some(t) = self.transcendentals(info, ev) {
            // Transcendentals at their polynomials' measured time per element.
            c.compute_s += t.seconds - t.flops / rate;
        }
        if d.kind == DeviceKind::Cpu && self.prices_loop_order {
            if let Some(s) = self.half_roundings(info, ev) {
                // Every `bf16` and `f16` op rounds its result back from `f32`.
                c.compute_s += s;
            }
        }
        if d.kind == DeviceKind::Cpu {
            // A transcendental recomputed for every element that reads it (through a
            // broadcast the code generator does not hoist) is evaluated at an index that is
            // not the loop's: one polynomial after another, not a vector of them.
            c.recomputed_flops = ev.recomputed_flops;
            c.compute_s += ev.recomputed_flops * (SCALAR_RECOMPUTE_SLOWDOWN - 1.0) / rate;
            if self.prices_loop_order {
                if let Some(tail) = self.scalar_tail_flops(info, ev) {
                    // Rows whose length is no multiple of the vector loop's lanes finish
                    // their transcendentals one at a time.
                    c.compute_s += tail * (SCALAR_RECOMPUTE_SLOWDOWN - 1.0) / rate;
                }
            }
        }
        c.time_s = c.memory_s.max(c.compute_s) + c.launch_s;
        c
    }

    /// The chained row reductions among a kernel's members ([`cost_chains`]), from its
    /// evaluation `ev`: `(flops the composition counted for them at the vector rate,
    /// seconds of their chains)`, each element a reduction reads one dependent step, the
    /// rows shared by the units; `None` where it has none or the device has no `[loops]`
    /// section.
    fn chained_reductions(&self, info: &CompInfo, ev: &Evaluation) -> Option<(f64, f64)> {
        let units = f64::from(self.device.compute.units.max(1));
        let (mut flops, mut seconds) = (0.0, 0.0);
        for (&m, &e) in &ev.evals {
            let Some(op) = info.op(m) else { continue };
            let Some(chain) = op.chained_row else {
                continue;
            };
            let steps = e * op.reads_per_element.first().copied().unwrap_or(0.0);
            flops += steps * op.flops_per_element;
            seconds += steps * chain.seconds_per_step(self.device)? / units;
        }
        (flops > 0.0).then_some((flops, seconds))
    }

    /// Seconds of `c`'s work (without its call) as the runtime runs the kernel: `run` says
    /// on how many threads and whether a loop calls it again and again.
    /// - On the calling thread ([`runs_on_one_thread`]) its compute runs on one core, not
    ///   shared by the device's units as [`CostModel::kernel`] prices it (every compute
    ///   term there is divided by the units). Measured (fastest calls, 104 fresh programs,
    ///   session 56): kernels on the calling thread of 30-100 us read 0.64 of their
    ///   measurement with the compute shared, those split over the cores 1.06.
    /// - Called by a loop, a kernel whose bytes fit in L2 finds them there, written or read
    ///   by the last iteration on the same core: they move at [`WARM_CACHE_BYTES_PER_S`],
    ///   not at the rate of a level first reached cold (the description's `l2_bytes_per_s`).
    /// - Called once among other kernels, its inputs come from L2 at best: the kernels
    ///   between its producers and it (and between runs) sweep the 48 KiB of L1 that
    ///   [`CostModel::kernel`] prices a small input's first read from. Microbenchmark
    ///   (session 56; each kernel `z + z` over a cold row after a kernel sweeping 16 MiB,
    ///   one thread, median of 16 kernels' fastest calls): 1024 elements 0.60 us, 4096
    ///   0.94 us; priced from L1 with the call 0.44 and 0.69 (0.42 and 0.65 from L2). From
    ///   L3 at best (0.51 and 1.0 there) the fresh programs' kernels of 2^14-2^17 elements,
    ///   most of whose inputs the kernel before had just written, read 1.5-4x over.
    pub fn work_as_run(&self, c: &KernelCost, run: Run) -> f64 {
        let units = f64::from(self.device.compute.units.max(1));
        let compute = if run.one_thread {
            c.compute_s * units
        } else {
            c.compute_s
        };
        let bytes = c.bytes();
        let cache = &self.device.cache;
        let memory = if run.warm && bytes <= cache.l2_bytes as f64 {
            c.memory_s.min(bytes / WARM_CACHE_BYTES_PER_S)
        } else if !run.warm && cache.l2_bytes_per_s > 0.0 {
            c.memory_s.max(c.bytes_read / cache.l2_bytes_per_s)
        } else {
            c.memory_s
        };
        memory.max(compute)
    }

    /// The cost of running `kernels` (each `(members, roots)`) one after another.
    pub fn kernels<'a>(
        &self,
        info: &CompInfo,
        kernels: impl IntoIterator<Item = (&'a [InstrId], &'a [InstrId])>,
    ) -> KernelCost {
        let mut total = KernelCost::default();
        for (m, r) in kernels {
            total.add(&self.kernel(info, m, r));
        }
        total
    }
}
