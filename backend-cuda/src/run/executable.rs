//! The CUDA executor: a program's thunks walked over any [`Device`]. One device
//! allocation per executable holds every allocation at its [`DeviceLayout`] offset
//! (constants uploaded once); a run uploads the parameters, issues kernels, copies and
//! GEMMs in order on the device's stream, reads back a loop's or a conditional's
//! predicate, runs library calls on the host (operands downloaded, `backend-cpu`'s
//! routine with the host-compiled scalar functions, results uploaded) and downloads the
//! outputs. Each run has a device block of its own, taken from the executable's pool
//! (constants uploaded once per block), so runs may overlap (the devices of an SPMD run
//! are threads running one executable at once); collective steps run on the host too,
//! through the calling thread's communicator.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backend_cpu::reuse::{
    collective_on_host, constant_spec, from_buffer, library_on_host, permute, to_buffer,
};
use hlo::Literal;
use plan::{
    AllocationKind, BackendError, BufferId, GemmShape, Prepared, PreparedRun, Profile, Program,
    RawOutputs, Thunk,
};

use crate::error::CudaError;
use crate::run::device::{DevPtr, Device};
use crate::run::host_device::HostDevice;
use crate::run::layout::{device_layout, DeviceLayout};

/// A program loaded on a device, ready to run ([`plan::Executable`]).
pub struct CudaExecutable {
    program: Arc<Program>,
    device: Arc<dyn Device>,
    /// Runs the library calls' scalar functions (the device itself on the host).
    library: Option<Arc<HostDevice>>,
    layout: DeviceLayout,
    /// Device blocks of finished runs (their constants in place), for later runs.
    pool: Mutex<Vec<DevPtr>>,
    profile: Mutex<Option<Profile>>,
    max_while_iterations: u64,
    cache_hit: bool,
}

/// A run's outputs in their physical layouts, downloaded.
pub struct CudaOutputs(Vec<Vec<u8>>);

impl CudaExecutable {
    /// Loads `program` on `device`: lays out and allocates its memory and uploads its
    /// constants. `library` runs library calls' scalar functions (needed when the program
    /// has library calls); `cache_hit` says whether the compiled code came from a cache.
    pub fn new(
        program: Arc<Program>,
        device: Arc<dyn Device>,
        library: Option<Arc<HostDevice>>,
        max_while_iterations: u64,
        cache_hit: bool,
    ) -> Result<CudaExecutable, BackendError> {
        let layout = device_layout(&program).map_err(BackendError::Internal)?;
        let exe = CudaExecutable {
            program,
            device,
            library,
            layout,
            pool: Mutex::new(Vec::new()),
            profile: Mutex::new(None),
            max_while_iterations,
            cache_hit,
        };
        // The first run's block, constants uploaded now (compile time, not run time).
        let block = exe.fresh_block()?;
        exe.give_back(block);
        Ok(exe)
    }

    /// A new device block with the program's constants uploaded.
    fn fresh_block(&self) -> Result<DevPtr, BackendError> {
        let block = self.device.alloc(self.layout.bytes)?;
        for (i, a) in self.program.allocations.iter().enumerate() {
            if let AllocationKind::Constant(lit) = &a.kind {
                let uploaded = constant_spec(lit).and_then(|spec| {
                    let bytes = to_buffer(lit, &spec).ok_or_else(|| {
                        BackendError::Internal("constant of an unsupported element type".into())
                    })?;
                    Ok(self.device.upload(block + self.layout.offsets[i], &bytes)?)
                });
                if let Err(e) = uploaded {
                    self.device.free(block);
                    return Err(e);
                }
            }
        }
        Ok(block)
    }

    /// A block for one run: a pooled one, else a fresh one.
    fn take_block(&self) -> Result<DevPtr, BackendError> {
        match self.pool.lock().ok().and_then(|mut p| p.pop()) {
            Some(b) => Ok(b),
            None => self.fresh_block(),
        }
    }

    /// Returns a run's block to the pool.
    fn give_back(&self, block: DevPtr) {
        match self.pool.lock() {
            Ok(mut p) => p.push(block),
            Err(_) => self.device.free(block),
        }
    }

    /// The program it runs.
    pub fn program(&self) -> &Program {
        &self.program
    }

    fn check_count(&self, given: usize) -> Result<(), BackendError> {
        let expected = self.program.parameters.len();
        if given != expected {
            return Err(BackendError::Argument {
                index: given,
                message: format!("{given} arguments for {expected} parameters"),
            });
        }
        Ok(())
    }

    /// Runs once on arguments in the parameters' physical layouts.
    fn run_prepared(&self, args: &[Cow<'_, [u8]>]) -> Result<CudaOutputs, BackendError> {
        let base = self.take_block()?;
        let outs = Run { exe: self, base }.run(args);
        self.give_back(base);
        outs
    }
}

/// One run: the executable and the device block it runs in.
struct Run<'e> {
    exe: &'e CudaExecutable,
    base: DevPtr,
}

impl std::ops::Deref for Run<'_> {
    type Target = CudaExecutable;

    fn deref(&self) -> &CudaExecutable {
        self.exe
    }
}

impl Run<'_> {
    fn alloc_addr(&self, a: usize) -> DevPtr {
        self.base + self.layout.offsets[a]
    }

    fn addr(&self, b: BufferId) -> DevPtr {
        self.alloc_addr(self.program.buffers[b].allocation)
    }

    fn run(&self, args: &[Cow<'_, [u8]>]) -> Result<CudaOutputs, BackendError> {
        let p = &self.program;
        for (i, a) in p.allocations.iter().enumerate() {
            if let AllocationKind::Parameter(n) = a.kind {
                let arg = args
                    .get(n)
                    .ok_or_else(|| BackendError::Internal(format!("no argument {n}")))?;
                let len = (a.bytes as usize).min(arg.len());
                self.device.upload(self.alloc_addr(i), &arg[..len])?;
            }
        }
        let mut profile = self.profile.lock().ok().and_then(|mut s| s.take());
        let ran = self.run_seq(&p.thunks, &mut profile);
        if let (Some(done), Ok(mut slot)) = (profile, self.profile.lock()) {
            *slot = Some(done);
        }
        ran?;
        self.device.synchronize()?;
        let mut outs = Vec::with_capacity(p.outputs.len());
        for spec in &p.outputs {
            let mut bytes = vec![0u8; p.buffers[spec.buffer].bytes as usize];
            self.device.download(self.addr(spec.buffer), &mut bytes)?;
            outs.push(bytes);
        }
        Ok(CudaOutputs(outs))
    }

    fn run_seq(&self, thunks: &[Thunk], profile: &mut Option<Profile>) -> Result<(), BackendError> {
        let p = &self.program;
        for t in thunks {
            match t {
                Thunk::While {
                    name,
                    cond,
                    cond_result,
                    body,
                    body_results,
                    state,
                    init,
                    ..
                } => {
                    self.copy_all(init, state)?;
                    let mut iterations = 0u64;
                    loop {
                        self.run_seq(cond, profile)?;
                        if self.read::<1>(*cond_result)?[0] == 0 {
                            break;
                        }
                        iterations += 1;
                        if iterations > self.max_while_iterations {
                            return Err(BackendError::LoopLimit {
                                instr: name.clone(),
                                limit: self.max_while_iterations,
                            });
                        }
                        self.run_seq(body, profile)?;
                        self.copy_all(body_results, state)?;
                    }
                }
                Thunk::Conditional {
                    selector,
                    selector_is_pred,
                    branches,
                    results,
                } => {
                    let n = branches.len();
                    let k = if *selector_is_pred {
                        usize::from(self.read::<1>(*selector)?[0] == 0)
                    } else {
                        let v = i32::from_ne_bytes(self.read::<4>(*selector)?);
                        usize::try_from(v)
                            .ok()
                            .filter(|&v| v < n)
                            .unwrap_or(n.saturating_sub(1))
                    };
                    let (thunks, res) = branches.get(k).ok_or_else(|| {
                        BackendError::Internal("conditional without branches".into())
                    })?;
                    self.run_seq(thunks, profile)?;
                    self.copy_all(res, results)?;
                }
                other => match profile {
                    Some(prof) => {
                        let start = Instant::now();
                        let transfers = self.run_one(other)?;
                        self.device.synchronize()?;
                        let took = start.elapsed();
                        let label = plan::profile_label(p, other);
                        if transfers > Duration::ZERO {
                            prof.record_call(
                                format!("host copies of {label} (library and collective steps run on the host)"),
                                start,
                                transfers,
                            );
                        }
                        prof.record_call(label, start, took.saturating_sub(transfers));
                    }
                    None => {
                        self.run_one(other)?;
                    }
                },
            }
        }
        Ok(())
    }

    /// Runs one step; returns the time spent copying between device and host (library
    /// calls).
    fn run_one(&self, t: &Thunk) -> Result<Duration, BackendError> {
        let p = &self.program;
        match t {
            Thunk::Kernel {
                kernel,
                args,
                blocks,
                ..
            } => {
                let addrs: Vec<DevPtr> = args.iter().map(|&b| self.addr(b)).collect();
                self.launch(*kernel, *blocks, &addrs)?;
            }
            Thunk::StreamedGemm {
                producer,
                lhs_arg,
                block_elements,
                gemm,
                axis: plan::stream::StreamAxis::Rows,
                ..
            } => self.run_streamed(producer, *lhs_arg, *block_elements, gemm)?,
            // The plan streams over the contraction for the CPU target only.
            Thunk::StreamedGemm { .. } => {
                return Err(BackendError::Unsupported {
                    printer: "cuda",
                    what: "a GEMM streamed over its contraction".into(),
                })
            }
            Thunk::Gemm {
                shape,
                lhs,
                rhs,
                out,
            } => self.gemm(shape, self.addr(*lhs), *rhs, *out)?,
            Thunk::Library {
                call,
                inputs,
                outputs,
            } => {
                let lib = self.library.as_ref().ok_or_else(|| {
                    BackendError::Internal("library call without host kernels".into())
                })?;
                return self.on_host((inputs, outputs), |host| {
                    library_on_host(p, call, (inputs, outputs), lib.kernels(), host)
                });
            }
            Thunk::Collective {
                step,
                inputs,
                outputs,
            } => {
                return self.on_host((inputs, outputs), |host| {
                    collective_on_host(p, step, (inputs, outputs), host)
                })
            }
            Thunk::Copy { src, dst, bytes } => {
                let (s, d) = (p.buffers[*src].allocation, p.buffers[*dst].allocation);
                if s != d && *bytes > 0 {
                    self.device
                        .copy(self.alloc_addr(d), self.alloc_addr(s), *bytes)?;
                }
            }
            Thunk::While { .. } | Thunk::Conditional { .. } => {
                let mut none = None;
                self.run_seq(std::slice::from_ref(t), &mut none)?;
            }
        }
        Ok(Duration::ZERO)
    }

    /// Runs `step` on host copies of the allocations of `inputs` and `outputs`
    /// (downloaded after the work issued before), then uploads the outputs; returns the
    /// time the copies took.
    fn on_host(
        &self,
        (inputs, outputs): (&[plan::ArraySpec], &[plan::ArraySpec]),
        step: impl FnOnce(Vec<Vec<u64>>) -> Result<Vec<Vec<u64>>, BackendError>,
    ) -> Result<Duration, BackendError> {
        let p = &self.program;
        let t0 = Instant::now();
        let mut host: Vec<Vec<u64>> = vec![Vec::new(); p.allocations.len()];
        for spec in inputs.iter().chain(outputs) {
            let a = p.buffers[spec.buffer].allocation;
            if host[a].is_empty() {
                let bytes = p.allocations[a].bytes as usize;
                let mut words = vec![0u64; bytes.div_ceil(8).max(1)];
                self.device
                    .download(self.alloc_addr(a), &mut as_bytes_mut(&mut words)[..bytes])?;
                host[a] = words;
            }
        }
        let down = t0.elapsed();
        let host = step(host)?;
        let t1 = Instant::now();
        for spec in outputs {
            let b = &p.buffers[spec.buffer];
            let words = &host[b.allocation];
            let bytes = &as_bytes(words)[..(b.bytes as usize).min(words.len() * 8)];
            self.device.upload(self.addr(spec.buffer), bytes)?;
        }
        Ok(down + t1.elapsed())
    }

    fn launch(&self, kernel: usize, blocks: i64, args: &[DevPtr]) -> Result<(), BackendError> {
        let k = &self.program.kernels[kernel];
        let blocks = u32::try_from(blocks)
            .ok()
            .filter(|&b| b > 0 && b < (1 << 31))
            .ok_or_else(|| {
                CudaError::UnsupportedStep(format!("kernel `{}` of {blocks} blocks", k.name))
            })?;
        let threads = u32::try_from(k.grid.threads)
            .ok()
            .filter(|&t| (1..=1024).contains(&t))
            .ok_or_else(|| {
                CudaError::UnsupportedStep(format!(
                    "kernel `{}` of {} threads per block",
                    k.name, k.grid.threads
                ))
            })?;
        Ok(self.device.launch(kernel, blocks, threads, args)?)
    }

    fn gemm(
        &self,
        shape: &GemmShape,
        lhs: DevPtr,
        rhs: BufferId,
        out: BufferId,
    ) -> Result<(), BackendError> {
        if shape.k == 0 {
            let zeros = vec![0u8; self.program.buffers[out].bytes as usize];
            return Ok(self.device.upload(self.addr(out), &zeros)?);
        }
        Ok(self
            .device
            .gemm(shape, lhs, self.addr(rhs), self.addr(out))?)
    }

    /// A streamed GEMM as its producer over every block (its left-hand side written whole
    /// into the scratch region) and then its GEMM over all rows.
    fn run_streamed(
        &self,
        producer: &Thunk,
        lhs_arg: usize,
        block_elements: i64,
        gemm: &Thunk,
    ) -> Result<(), BackendError> {
        let parts = plan::streamed_parts(producer, block_elements, gemm)?;
        let scratch = self.base + self.layout.scratch;
        let mut addrs: Vec<DevPtr> = parts.args.iter().map(|&b| self.addr(b)).collect();
        *addrs
            .get_mut(lhs_arg)
            .ok_or_else(|| BackendError::Internal("streamed gemm lhs argument".into()))? = scratch;
        self.launch(parts.kernel, parts.blocks, &addrs)?;
        let whole = GemmShape {
            m: (parts.blocks as usize) * parts.block_rows,
            batch: Vec::new(),
            ..parts.shape.clone()
        };
        self.gemm(&whole, scratch, parts.rhs, parts.out)
    }

    /// Copies `src[i]` into `dst[i]` for every `i`, every source read before any
    /// destination is written where a copy writes what a later one reads.
    fn copy_all(&self, src: &[BufferId], dst: &[BufferId]) -> Result<(), BackendError> {
        let p = &self.program;
        let alloc = |b: BufferId| p.buffers[b].allocation;
        let overlap = (0..dst.len()).any(|i| {
            alloc(src[i]) != alloc(dst[i])
                && src[i + 1..].iter().any(|&s| alloc(s) == alloc(dst[i]))
        });
        let pairs = src.iter().zip(dst).filter(|(&s, &d)| alloc(s) != alloc(d));
        if !overlap {
            for (&s, &d) in pairs {
                self.device
                    .copy(self.addr(d), self.addr(s), p.buffers[s].bytes)?;
            }
            return Ok(());
        }
        let pairs: Vec<_> = pairs.collect();
        let room = |b: BufferId| p.buffers[b].bytes.div_ceil(256) * 256;
        let total: u64 = pairs.iter().map(|(&s, _)| room(s)).sum();
        let tmp = self.device.alloc(total)?;
        let copied = (|| -> Result<(), CudaError> {
            let mut at = tmp;
            for (&s, _) in &pairs {
                self.device.copy(at, self.addr(s), p.buffers[s].bytes)?;
                at += room(s);
            }
            let mut at = tmp;
            for (&s, &d) in &pairs {
                self.device.copy(self.addr(d), at, p.buffers[s].bytes)?;
                at += room(s);
            }
            self.device.synchronize()
        })();
        self.device.free(tmp);
        Ok(copied?)
    }

    /// The first `N` bytes of buffer `b`, after the work issued before.
    fn read<const N: usize>(&self, b: BufferId) -> Result<[u8; N], BackendError> {
        let mut out = [0u8; N];
        self.device.download(self.addr(b), &mut out)?;
        Ok(out)
    }
}

/// Host words as bytes (plain integers: every byte pattern is valid).
fn as_bytes(words: &[u64]) -> &[u8] {
    bytemuck::cast_slice(words)
}

fn as_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    bytemuck::cast_slice_mut(words)
}

impl Drop for CudaExecutable {
    fn drop(&mut self) {
        if let Ok(pool) = self.pool.get_mut() {
            for &b in pool.iter() {
                self.device.free(b);
            }
        }
    }
}

/// Prepared arguments of a [`CudaExecutable`] (physical-layout bytes, borrowed where the
/// caller's are already in that order).
struct CudaPrepared<'a> {
    exe: &'a CudaExecutable,
    args: Vec<Cow<'a, [u8]>>,
}

impl PreparedRun for CudaPrepared<'_> {
    fn run(&self) -> Result<RawOutputs, BackendError> {
        Ok(RawOutputs::new(self.exe.run_prepared(&self.args)?))
    }
}

impl plan::Executable for CudaExecutable {
    fn cache_hit(&self) -> bool {
        self.cache_hit
    }

    fn prepare<'a>(&'a self, args: &'a [Literal]) -> Result<Prepared<'a>, BackendError> {
        self.check_count(args.len())?;
        let mut out = Vec::with_capacity(args.len());
        for (n, (arg, spec)) in args.iter().zip(&self.program.parameters).enumerate() {
            let bad = |message: String| BackendError::Argument { index: n, message };
            let lit = arg.as_array().ok_or_else(|| bad("not an array".into()))?;
            if lit.shape().dims() != spec.dims.as_slice() || lit.element_type() != spec.element_type
            {
                return Err(bad(format!(
                    "expected {}{:?}, got {}{:?}",
                    spec.element_type.as_str(),
                    spec.dims,
                    lit.element_type().as_str(),
                    lit.shape().dims()
                )));
            }
            let bytes =
                to_buffer(lit, spec).ok_or_else(|| bad("unsupported element type".into()))?;
            out.push(Cow::Owned(bytes));
        }
        Ok(Prepared::new(
            self,
            Box::new(CudaPrepared {
                exe: self,
                args: out,
            }),
        ))
    }

    fn prepare_bytes<'a>(&'a self, args: &[&'a [u8]]) -> Result<Prepared<'a>, BackendError> {
        self.check_count(args.len())?;
        let mut out = Vec::with_capacity(args.len());
        for (n, (&bytes, spec)) in args.iter().zip(&self.program.parameters).enumerate() {
            let w = spec.ty.byte_width() as usize;
            spec.check_bytes(n, bytes)?;
            out.push(permute(bytes, w, &spec.dims, &spec.minor_to_major, true));
        }
        Ok(Prepared::new(
            self,
            Box::new(CudaPrepared {
                exe: self,
                args: out,
            }),
        ))
    }

    fn literals(&self, raw: &RawOutputs) -> Result<Vec<Literal>, BackendError> {
        let outs = raw
            .downcast_ref::<CudaOutputs>()
            .ok_or_else(|| BackendError::Internal("outputs of another backend".into()))?;
        self.program
            .outputs
            .iter()
            .zip(&outs.0)
            .map(|(spec, bytes)| {
                from_buffer(bytes, spec)
                    .map(Literal::Array)
                    .ok_or_else(|| BackendError::Internal("output of an unsupported shape".into()))
            })
            .collect()
    }

    fn output_bytes<'r>(&self, raw: &'r RawOutputs, k: usize) -> Option<Cow<'r, [u8]>> {
        let outs = raw.downcast_ref::<CudaOutputs>()?;
        let spec = self.program.outputs.get(k)?;
        Some(permute(
            outs.0.get(k)?,
            spec.ty.byte_width() as usize,
            &spec.dims,
            &spec.minor_to_major,
            false,
        ))
    }

    fn set_profiling(&self, on: bool) {
        if let Ok(mut slot) = self.profile.lock() {
            *slot = on.then(Profile::default);
        }
    }

    fn take_profile(&self) -> Option<Profile> {
        let mut slot = self.profile.lock().ok()?;
        let p = slot.take();
        if p.is_some() {
            *slot = Some(Profile::default());
        }
        p
    }
}
