//! One run of an executable without needless copies: arguments are prepared once in the
//! parameters' physical layouts (a row-major literal is borrowed, not copied), kernels read
//! them in place, temporaries come from a pool kept between runs (no page faults after the
//! first run), and each output allocation is moved out once, never copied twice; outputs
//! the caller has dropped come back as spare memory for later runs' outputs (a caching
//! allocator's effect: no fresh pages to fault in for every run).

use std::borrow::Cow;
use std::sync::{Arc, Mutex, Weak};

use hlo::Literal;
use plan::{AllocationKind, Program};

use crate::data;
use crate::error::BackendError;
use crate::exec;
use crate::launch::Env;
use crate::loaded::Loaded;
use crate::memory::{self, Memory};
use plan::Profile;

/// The arguments of a run, in the executable's parameter layouts ([`CpuExecutable::prepare`]).
pub struct CpuPrepared<'a> {
    args: Vec<Memory<'a>>,
}

/// The outputs of a run in their physical layouts ([`CpuExecutable::run_prepared`]); turned into
/// literals by [`CpuExecutable::literals`]. Dropped, their memory returns to the executable
/// (if it still exists) for later runs.
pub struct CpuOutputs {
    pub(crate) bufs: Vec<Vec<u64>>,
    pub(crate) spare: Weak<Spare>,
}

impl Drop for CpuOutputs {
    fn drop(&mut self) {
        if let Some(spare) = self.spare.upgrade() {
            spare.give(std::mem::take(&mut self.bufs));
        }
    }
}

/// Memory of dropped outputs, kept for the next runs' outputs (at most [`MAX_SPARE`]
/// blocks).
#[derive(Default)]
pub(crate) struct Spare(Mutex<Vec<Vec<u64>>>);

/// Most spare blocks an executable keeps.
const MAX_SPARE: usize = 16;

impl Spare {
    pub(crate) fn give(&self, bufs: Vec<Vec<u64>>) {
        if let Ok(mut s) = self.0.lock() {
            for b in bufs {
                if s.len() < MAX_SPARE && !b.is_empty() {
                    s.push(b);
                }
            }
        }
    }

    /// The smallest spare block of at least `words` words.
    fn take(&self, words: usize) -> Option<Vec<u64>> {
        let mut s = self.0.lock().ok()?;
        let i = (0..s.len())
            .filter(|&i| s[i].len() >= words)
            .min_by_key(|&i| s[i].len())?;
        Some(s.swap_remove(i))
    }
}

/// What an executable keeps between runs: the temporaries' pool, spare output memory and,
/// when profiling, the per-thunk times.
#[derive(Default)]
pub(crate) struct RunState {
    pool: TempPool,
    spare: Arc<Spare>,
    profile: Mutex<Option<Profile>>,
}

/// Temporary allocations kept from one run for the next, indexed by allocation: one set
/// per run at a time. The devices of an in-process SPMD run run one executable at once;
/// with one set, the first device took it and every other allocated (and zeroed, and
/// faulted in) a fresh temp block on every run: 13% of an 8-device attention step's samples.
#[derive(Default)]
struct TempPool(Mutex<Vec<Vec<Option<Vec<u64>>>>>);

/// Most sets of temporaries a pool keeps (one per device running at once).
const MAX_POOLED_RUNS: usize = 64;

impl TempPool {
    /// A set of pooled allocations, for one run (one lock for the run, not one per
    /// allocation: a module of many small kernels has many temporaries); empty when every
    /// set is in use.
    fn take_all(&self) -> Vec<Option<Vec<u64>>> {
        self.0
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default()
    }

    /// Keeps a run's temporaries for a next run.
    fn put_all(&self, pooled: Vec<Option<Vec<u64>>>) {
        if let Ok(mut p) = self.0.lock() {
            if p.len() < MAX_POOLED_RUNS {
                p.push(pooled);
            }
        }
    }
}

/// The bytes of `a`, a view inside a parameter's or constant's memory (already bound in
/// `mem`, which holds the allocations before `a`'s), read-only.
fn read_only_view<'a>(
    mem: &[Memory<'a>],
    a: &plan::Allocation,
) -> Result<Memory<'a>, BackendError> {
    let (Some(h), Some(offset)) = (a.parent, a.offset) else {
        return Err(BackendError::Internal("a view without its base".into()));
    };
    let bytes = match mem.get(h) {
        Some(Memory::Borrowed(bytes)) => *bytes,
        _ => {
            return Err(BackendError::Internal(format!(
                "allocation {h} holds a read-only view but is not read-only memory"
            )))
        }
    };
    let at = usize::try_from(offset).unwrap_or(usize::MAX);
    let end = at.checked_add(usize::try_from(a.bytes).unwrap_or(usize::MAX));
    match end.and_then(|end| bytes.get(at..end)) {
        Some(view) => Ok(Memory::Borrowed(view)),
        None => Err(BackendError::Internal(format!(
            "a view of {} bytes at {offset} lies outside allocation {h} ({} bytes)",
            a.bytes,
            bytes.len()
        ))),
    }
}

/// The memory of temporary allocation `a` of `bytes` bytes: its pooled memory if large
/// enough, else a spare block, else fresh memory.
fn temp_memory(
    pooled: &mut [Option<Vec<u64>>],
    a: usize,
    bytes: u64,
    spare: &Spare,
) -> Memory<'static> {
    Memory::Owned(temp_words(pooled, a, bytes, spare))
}

/// The words of [`temp_memory`].
fn temp_words(pooled: &mut [Option<Vec<u64>>], a: usize, bytes: u64, spare: &Spare) -> Vec<u64> {
    let words = (bytes as usize).div_ceil(8).max(1);
    let reused = pooled
        .get_mut(a)
        .and_then(Option::take)
        .filter(|v| v.len() >= words)
        .or_else(|| spare.take(words));
    match reused {
        Some(mut v) if v.len() >= words => {
            // Poison reused memory in debug builds: a kernel that reads a temporary
            // before writing it then fails the tests instead of passing by luck.
            if cfg!(debug_assertions) {
                v.fill(0x7fc0_0001_7fc0_0001);
            }
            v
        }
        _ => memory::owned_words(bytes),
    }
}

/// A program compiled for this CPU and loaded, ready to run (see the run methods).
pub struct CpuExecutable {
    pub(crate) program: Arc<Program>,
    pub(crate) loaded: Loaded,
    /// Constant data in physical order, as aligned words (`None` for other allocations).
    pub(crate) constants: Vec<Option<Vec<u64>>>,
    pub(crate) run_state: RunState,
    pub(crate) threads: usize,
    pub(crate) max_while_iterations: u64,
    pub(crate) cache_hit: bool,
}

impl CpuExecutable {
    /// Whether the compiled object came from the cache.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit
    }

    /// The program it runs.
    pub fn program(&self) -> &Program {
        &self.program
    }
}

impl std::fmt::Debug for CpuExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuExecutable({})", self.program.name)
    }
}

impl CpuExecutable {
    /// Fails unless `given` arguments match the entry parameters' count.
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

    /// Checks `args` (one literal per entry parameter) against the parameters and puts each
    /// in its parameter's physical layout; a row-major numeric literal is borrowed as is.
    pub fn prepare<'a>(&self, args: &'a [Literal]) -> Result<CpuPrepared<'a>, BackendError> {
        let p = &self.program;
        self.check_count(args.len())?;
        let mut prepared = Vec::with_capacity(args.len());
        for (n, (arg, spec)) in args.iter().zip(&p.parameters).enumerate() {
            let lit = arg.as_array().ok_or_else(|| BackendError::Argument {
                index: n,
                message: "not an array".into(),
            })?;
            if lit.shape().dims() != spec.dims.as_slice() || lit.element_type() != spec.element_type
            {
                return Err(BackendError::Argument {
                    index: n,
                    message: format!(
                        "expected {}{:?}, got {}{:?}",
                        spec.element_type.as_str(),
                        spec.dims,
                        lit.element_type().as_str(),
                        lit.shape().dims()
                    ),
                });
            }
            prepared.push(
                data::to_memory(lit, spec).ok_or_else(|| BackendError::Argument {
                    index: n,
                    message: "unsupported element type".into(),
                })?,
            );
        }
        Ok(CpuPrepared { args: prepared })
    }

    /// Checks `args` (each parameter's elements as row-major native-endian bytes, one byte
    /// per `pred`) against the parameters' sizes and puts each in its parameter's physical
    /// layout: a row-major parameter is borrowed as is, without a copy (the Python
    /// package's path for C-contiguous numpy arrays).
    pub fn prepare_bytes<'a>(&self, args: &[&'a [u8]]) -> Result<CpuPrepared<'a>, BackendError> {
        let p = &self.program;
        self.check_count(args.len())?;
        let mut prepared = Vec::with_capacity(args.len());
        for (n, (&bytes, spec)) in args.iter().zip(&p.parameters).enumerate() {
            let w = spec.ty.byte_width() as usize;
            spec.check_bytes(n, bytes)?;
            prepared.push(
                match data::permute(bytes, w, &spec.dims, &spec.minor_to_major, true) {
                    Cow::Borrowed(b) => Memory::Borrowed(b),
                    Cow::Owned(v) => Memory::Owned(memory::words_of(&v)),
                },
            );
        }
        Ok(CpuPrepared { args: prepared })
    }

    /// Output `k` of a run as row-major native-endian bytes (one byte per `pred`):
    /// borrowed from the run's buffer when the output's layout is row-major, else
    /// permuted once; `None` past the last output.
    pub fn output_bytes<'r>(&self, raw: &'r CpuOutputs, k: usize) -> Option<Cow<'r, [u8]>> {
        let p = &self.program;
        let spec = p.outputs.get(k)?;
        let bytes = memory::word_bytes(raw.bufs.get(k)?);
        let len = (p.buffers[spec.buffer].bytes as usize).min(bytes.len());
        Some(data::permute(
            &bytes[..len],
            spec.ty.byte_width() as usize,
            &spec.dims,
            &spec.minor_to_major,
            false,
        ))
    }

    /// Runs on prepared arguments: parameters are read in place, temporaries come from the
    /// pool, and the outputs are returned in their physical layouts.
    pub fn run_prepared(&self, args: &CpuPrepared<'_>) -> Result<CpuOutputs, BackendError> {
        let p = &self.program;
        let mut pooled = self.run_state.pool.take_all();
        // The temp block, pooled after the allocations.
        let block_at = p.allocations.len();
        let mut block_memory = temp_memory(
            &mut pooled,
            block_at,
            p.temp_block_bytes,
            &self.run_state.spare,
        );
        let block = match &mut block_memory {
            Memory::Owned(v) => memory::Block::new(v),
            _ => return Err(BackendError::Internal("temp block not owned".into())),
        };
        // Each output allocation's memory lives apart: the output and the temporaries it
        // holds before the output is written are views of it, and it is moved out whole.
        let is_host: Vec<bool> = p
            .allocations
            .iter()
            .map(|a| matches!(a.kind, AllocationKind::Output(_)) && a.offset.is_none())
            .collect();
        let mut hosts: Vec<(usize, Vec<u64>)> = Vec::new();
        for (i, a) in p.allocations.iter().enumerate() {
            if is_host[i] {
                // Padded as the temp block's values are: the temporaries it holds have
                // their 16-byte rooms (plan::memory::assign).
                let bytes = a.bytes.div_ceil(16) * 16;
                let words = temp_words(&mut pooled, i, bytes, &self.run_state.spare);
                hosts.push((i, words));
            }
        }
        let mut host_blocks: Vec<Option<memory::Block<'_>>> = vec![None; p.allocations.len()];
        for (i, words) in hosts.iter_mut() {
            host_blocks[*i] = Some(memory::Block::new(words));
        }
        // A donated parameter's allocation also holds its output: writable memory starting
        // as the argument (one copy per run: the caller keeps its array), moved out whole.
        let donated = plan::memory::donate::donated_allocations(p);
        let mut mem: Vec<Memory<'_>> = Vec::with_capacity(p.allocations.len());
        for (i, a) in p.allocations.iter().enumerate() {
            mem.push(match &a.kind {
                AllocationKind::Parameter(n) => {
                    let arg = args
                        .args
                        .get(*n)
                        .ok_or_else(|| BackendError::Internal(format!("no argument {n}")))?
                        .bytes(usize::MAX);
                    match donated[i] {
                        true => Memory::Owned(memory::words_of(arg)),
                        false => Memory::Borrowed(arg),
                    }
                }
                AllocationKind::Constant(_) => match &self.constants[i] {
                    Some(words) => Memory::Borrowed(memory::word_bytes(words)),
                    None => return Err(BackendError::Internal("constant without data".into())),
                },
                // A view of a read-only parameter or constant (a sliced chain's operand,
                // plan::stream_chain): its bytes, read in place.
                AllocationKind::Temp
                    if a.parent.is_some_and(|h| {
                        matches!(
                            p.allocations.get(h).map(|x| &x.kind),
                            Some(AllocationKind::Parameter(_) | AllocationKind::Constant(_))
                        )
                    }) =>
                {
                    read_only_view(&mem, a)?
                }
                AllocationKind::Temp | AllocationKind::Output(_) => {
                    let within = match (a.offset, a.parent) {
                        (Some(offset), Some(h)) => {
                            Some((host_blocks.get(h).copied().flatten(), offset))
                        }
                        (Some(offset), None) => Some((Some(block), offset)),
                        (None, _) => host_blocks[i].map(|b| (Some(b), 0)),
                    };
                    match within {
                        Some((Some(b), offset)) if b.holds(offset, a.bytes) => {
                            b.view(offset, a.bytes)
                        }
                        Some(_) => {
                            return Err(BackendError::Internal(format!(
                                "allocation {i} lies outside the memory holding it"
                            )))
                        }
                        None => temp_memory(&mut pooled, i, a.bytes, &self.run_state.spare),
                    }
                }
            });
        }
        let mut profile = self
            .run_state
            .profile
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .map(Mutex::new);
        let env = Env {
            kernels: &self.loaded.kernels,
            threads: crate::collective_exec::device_threads(self.threads),
            max_while_iterations: self.max_while_iterations,
            profile: profile.as_ref(),
        };
        let ran = match crate::check_buffers::enabled() {
            true => crate::check_buffers::run_checked(p, &env, &mut mem),
            false => exec::run_thunks(p, &env, &mut mem),
        };
        if let (Some(done), Ok(mut slot)) = (profile.take(), self.run_state.profile.lock()) {
            *slot = done.into_inner().ok();
        }
        ran?;
        // Outputs in borrowed memory are copied; those in an output allocation are moved
        // out of it once the views are gone (two outputs of one allocation: a copy).
        let mut bufs: Vec<Vec<u64>> = Vec::with_capacity(p.outputs.len());
        let mut taken: Vec<Option<usize>> = vec![None; p.allocations.len()];
        for (k, spec) in p.outputs.iter().enumerate() {
            let b = &p.buffers[spec.buffer];
            let a = b.allocation;
            bufs.push(match (is_host[a], donated[a], taken[a], &mut mem[a]) {
                (true, ..) => Vec::new(),
                (false, true, None, Memory::Owned(v)) => {
                    taken[a] = Some(k);
                    std::mem::take(v)
                }
                (false, true, Some(first), _) => bufs[first].clone(),
                (false, ..) => memory::words_of(mem[a].bytes(b.bytes as usize)),
            });
        }
        pooled.resize_with(block_at + 1, || None);
        for (i, m) in mem.into_iter().enumerate() {
            if let Memory::Owned(v) = m {
                if !v.is_empty() && matches!(p.allocations[i].kind, AllocationKind::Temp) {
                    pooled[i] = Some(v);
                }
            }
        }
        for (k, spec) in p.outputs.iter().enumerate() {
            let a = p.buffers[spec.buffer].allocation;
            if !is_host[a] {
                continue;
            }
            bufs[k] = match taken[a] {
                Some(first) => bufs[first].clone(),
                None => {
                    taken[a] = Some(k);
                    hosts
                        .iter_mut()
                        .find(|(i, _)| *i == a)
                        .map(|(_, w)| std::mem::take(w))
                        .unwrap_or_default()
                }
            };
        }
        if let Memory::Owned(v) = block_memory {
            pooled[block_at] = Some(v);
        }
        self.run_state.pool.put_all(pooled);
        Ok(CpuOutputs {
            bufs,
            spare: Arc::downgrade(&self.run_state.spare),
        })
    }

    /// The outputs of a run as literals, the root's leaves in flattened tuple order.
    pub fn literals(&self, raw: &CpuOutputs) -> Result<Vec<Literal>, BackendError> {
        let p = &self.program;
        let mut outs = Vec::with_capacity(p.outputs.len());
        for (spec, words) in p.outputs.iter().zip(&raw.bufs) {
            let bytes = memory::word_bytes(words);
            let len = (p.buffers[spec.buffer].bytes as usize).min(bytes.len());
            let lit = data::from_buffer(&bytes[..len], spec)
                .ok_or_else(|| BackendError::Internal("output of an unsupported shape".into()))?;
            outs.push(Literal::Array(lit));
        }
        Ok(outs)
    }

    /// Starts recording per-thunk times (every run until [`Self::take_profile`]), or stops.
    pub fn set_profiling(&self, on: bool) {
        if let Ok(mut slot) = self.run_state.profile.lock() {
            *slot = on.then(Profile::default);
        }
    }

    /// The per-thunk times recorded since profiling started (then starts afresh).
    pub fn take_profile(&self) -> Option<Profile> {
        let mut slot = self.run_state.profile.lock().ok()?;
        let p = slot.take();
        if p.is_some() {
            *slot = Some(Profile::default());
        }
        p
    }

    /// Runs on `args` (one literal per entry parameter); returns the outputs, the root's
    /// leaves in flattened tuple order.
    pub fn run(&self, args: &[Literal]) -> Result<Vec<Literal>, BackendError> {
        let prepared = self.prepare(args)?;
        let raw = self.run_prepared(&prepared)?;
        self.literals(&raw)
    }
}
