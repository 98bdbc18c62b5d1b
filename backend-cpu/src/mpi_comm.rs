//! The MPI [`Communicator`] (cargo feature `mpi`): each process of an `mpirun -np N` job
//! is one device (device id = its rank in `MPI_COMM_WORLD`), and every collective runs on
//! an MPI communicator of exactly its group's ranks, in group order, made with
//! `MPI_Comm_create_group` (collective over the group only, so devices outside it need not
//! take part) and cached per group.
//!
//! Results are bit for bit those of the in-process communicator ([`crate::InProcess`]):
//! MPI leaves the order of a reduction unspecified (`MPI_Allreduce` may combine in a tree,
//! and differently for different message sizes), which changes float sums. So a reduction
//! goes to an MPI operation only where the operation is exact in any order: integer
//! `add`/`multiply` (wrapping, computed on the unsigned type of the same width, whose bits
//! are the signed result's), `and`/`or`/`xor`, and integer `maximum`/`minimum`. Every
//! other reduction (floats, `pred`) gathers the members' pieces and folds them locally in
//! group order with [`crate::reduce_bytes::combine`], exactly as the in-process hub does.
//!
//! MPI is initialized with `MPI_THREAD_FUNNELED`: only the thread that initialized it may
//! call MPI, which every method checks (an error, not undefined behavior). The executor
//! calls the communicator on the thread that runs the program, so a run on that thread
//! works. A collective completes in [`Communicator::start`] (the async pairs of a program
//! do not overlap with compute over MPI yet); every member posts its collectives in
//! program order, so the blocking calls pair up as the in-process hub pairs them. Before
//! each exchange the members' byte counts are compared (one small all-gather), so that
//! buffers of different sizes are an error as in-process, not an MPI truncation abort.
//! A device that fails aborts the whole job ([`Communicator::fail`]: `MPI_Abort`), as MPI
//! has no way to end the other processes' waits otherwise.

// The one `unsafe`: sending the raw MPI handles' owner across the `Communicator` bound.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;

use codegen::kir::ScalarType;
use hlo::ir::reducer::Reducer;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator as _;
use mpi::traits::*;
use mpi::Threading;
use plan::{CommError, CommOp, Communicator, Request, Ticket};

use crate::reduce_bytes::combine;

/// The communicators of the groups seen, keyed by their global device ids in order.
type Groups = HashMap<Vec<i64>, SimpleCommunicator>;

/// The MPI state, used only on the thread that initialized MPI ([`MpiDevice::owner`]).
/// Fields drop in order: the group communicators, then `MPI_Finalize` (the universe).
struct Mpi {
    /// One communicator per group seen, keyed by the group's global device ids in order.
    groups: Mutex<Groups>,
    world: SimpleCommunicator,
    _universe: Universe,
}

/// This process's device of an MPI run (see the module docs). Dropping it (on the thread
/// that created it) finalizes MPI.
pub struct MpiDevice {
    /// `None` only while dropping.
    mpi: Option<Mpi>,
    /// The thread that initialized MPI, the only one that may call it.
    owner: ThreadId,
    rank: i64,
    size: i64,
    partitions: i64,
}

// SAFETY: `Mpi` holds raw MPI handles, which are not tied to a thread by Rust's rules but
// must, under MPI_THREAD_FUNNELED, only be used from the thread that initialized MPI.
// Every access goes through `MpiDevice::mpi`, which returns an error on any other thread,
// and `Drop` finalizes MPI only on that thread (elsewhere it leaks the handles); the
// `Mutex` serializes the one shared map.
unsafe impl Send for MpiDevice {}
// SAFETY: as for `Send`: shared references reach MPI only through the thread check.
unsafe impl Sync for MpiDevice {}

/// The result of a collective, computed in `start` (a collective-permute that sent nothing
/// to this device: `None`).
struct Done(Option<Vec<u8>>);

impl MpiDevice {
    /// Initializes MPI (once per process) for a run on `replicas` x `partitions` devices:
    /// the world's size must be their count (one device per rank), else an error that
    /// says how to start the job.
    pub fn init(replicas: i64, partitions: i64) -> Result<MpiDevice, String> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or("MPI is already initialized in this process")?;
        if threading < Threading::Funneled {
            return Err(format!(
                "the MPI library offers thread level {threading:?}; hloc needs at least Funneled"
            ));
        }
        let world = universe.world();
        let (rank, size) = (i64::from(world.rank()), i64::from(world.size()));
        let want = replicas.max(1) * partitions.max(1);
        if size != want {
            return Err(format!(
                "the module runs on {want} devices but the MPI job has {size} rank(s): start it as \
                 `mpirun -np {want} hloc run ... --devices {want} --collectives mpi` (one device per rank)"
            ));
        }
        Ok(MpiDevice {
            mpi: Some(Mpi {
                groups: Mutex::new(HashMap::new()),
                world,
                _universe: universe,
            }),
            owner: std::thread::current().id(),
            rank,
            size,
            partitions: partitions.max(1),
        })
    }

    /// This process's rank in the world (its device id).
    pub fn rank(&self) -> i64 {
        self.rank
    }

    /// The number of ranks (devices).
    pub fn size(&self) -> i64 {
        self.size
    }

    /// Waits until every rank has reached this call.
    pub fn world_barrier(&self) -> Result<(), String> {
        self.mpi().map_err(|e| e.message)?.world.barrier();
        Ok(())
    }

    /// Every rank's `bytes` on rank 0, in rank order (`None` on the other ranks); the
    /// ranks may send different lengths.
    pub fn gather_to_root(&self, bytes: &[u8]) -> Result<Option<Vec<Vec<u8>>>, String> {
        let mpi = self.mpi().map_err(|e| e.message)?;
        let count = mpi_count(bytes.len()).map_err(|e| e.message)?;
        let root = mpi.world.process_at_rank(0);
        if self.rank != 0 {
            root.gather_into(&count);
            root.gather_varcount_into(bytes);
            return Ok(None);
        }
        let mut counts = vec![0i32; self.size as usize];
        root.gather_into_root(&count, &mut counts[..]);
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        mpi_count(total).map_err(|e| e.message)?;
        let displs: Vec<i32> = counts
            .iter()
            .scan(0i32, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let mut all = vec![0u8; total];
        let mut parts = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        root.gather_varcount_into_root(bytes, &mut parts);
        Ok(Some(
            counts
                .iter()
                .zip(&displs)
                .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
                .collect(),
        ))
    }

    /// The MPI state, on the thread that may use it.
    fn mpi(&self) -> Result<&Mpi, CommError> {
        if std::thread::current().id() != self.owner {
            return Err(comm_error(
                "MPI is called from a thread other than the one that initialized it (MPI_THREAD_FUNNELED)"
                    .into(),
            ));
        }
        self.mpi
            .as_ref()
            .ok_or_else(|| comm_error("MPI is already finalized".into()))
    }

    /// The communicator of `group` (made on first use) and this device's position in it.
    fn group_comm(&self, group: &[i64]) -> Result<(MutexGuard<'_, Groups>, usize), CommError> {
        let mpi = self.mpi()?;
        let me = group.iter().position(|&d| d == self.rank).ok_or_else(|| {
            comm_error(format!(
                "device {} is not among the participants {group:?}",
                self.rank
            ))
        })?;
        let mut seen = std::collections::HashSet::new();
        if let Some(d) = group
            .iter()
            .find(|&&d| !(0..self.size).contains(&d) || !seen.insert(d))
        {
            return Err(comm_error(format!(
                "participants {group:?}: device {d} is repeated or not one of the {} ranks",
                self.size
            )));
        }
        let mut groups = mpi.groups.lock().unwrap_or_else(|e| e.into_inner());
        if !groups.contains_key(group) {
            let ranks: Vec<mpi::Rank> = group.iter().map(|&d| d as mpi::Rank).collect();
            let members = mpi.world.group().include(&ranks[..]);
            let comm = mpi.world.split_by_subgroup(&members).ok_or_else(|| {
                comm_error(format!("MPI made no communicator for the group {group:?}"))
            })?;
            groups.insert(group.to_vec(), comm);
        }
        Ok((groups, me))
    }
}

impl Drop for MpiDevice {
    fn drop(&mut self) {
        if let Some(mpi) = self.mpi.take() {
            match std::thread::current().id() == self.owner {
                true => drop(mpi),
                // Freeing handles or finalizing from another thread is not allowed.
                false => std::mem::forget(mpi),
            }
        }
    }
}

fn comm_error(message: String) -> CommError {
    CommError {
        message,
        peer_failed: false,
    }
}

/// `n` as an MPI count (a C `int`): larger exchanges are not supported.
fn mpi_count(n: usize) -> Result<i32, CommError> {
    i32::try_from(n).map_err(|_| {
        comm_error(format!(
            "Unsupported: an MPI exchange of {n} bytes (MPI counts are 32-bit)"
        ))
    })
}

impl Communicator for MpiDevice {
    fn device_id(&self) -> i64 {
        self.rank
    }

    fn replica_id(&self) -> i64 {
        self.rank / self.partitions
    }

    fn partition_id(&self) -> i64 {
        self.rank % self.partitions
    }

    fn start(&self, request: &Request<'_>) -> Result<Ticket, CommError> {
        let (groups, me) = self.group_comm(request.group)?;
        let comm = groups
            .get(request.group)
            .ok_or_else(|| comm_error("the group's communicator vanished".into()))?;
        let out = exchange(comm, me, request)?;
        Ok(Ticket(Box::new(Done(out))))
    }

    fn finish(&self, ticket: Ticket, recv: &mut [u8]) -> Result<bool, CommError> {
        let done = ticket
            .0
            .downcast::<Done>()
            .map_err(|_| comm_error("a ticket of another communicator".into()))?;
        match done.0 {
            None => Ok(false),
            Some(bytes) if bytes.len() == recv.len() => {
                recv.copy_from_slice(&bytes);
                Ok(true)
            }
            Some(bytes) => Err(comm_error(format!(
                "a result of {} bytes for {} bytes received",
                recv.len(),
                bytes.len()
            ))),
        }
    }

    fn fail(&self, message: &str) {
        eprintln!(
            "error: device {} (MPI rank {}) failed: {message}; aborting the MPI job",
            self.rank, self.rank
        );
        match self.mpi() {
            Ok(mpi) => mpi.world.abort(1),
            // Off the MPI thread: ending the process makes mpirun end the others.
            Err(_) => std::process::exit(1),
        }
    }
}

/// Runs `r` on `comm` (its members in group order, this device at `me`): the result bytes.
fn exchange(
    comm: &SimpleCommunicator,
    me: usize,
    r: &Request<'_>,
) -> Result<Option<Vec<u8>>, CommError> {
    if let CommOp::Barrier = r.op {
        comm.barrier();
        return Ok(Some(Vec::new()));
    }
    let n = comm.size() as usize;
    let len = r.send.len();
    mpi_count(len.saturating_mul(n))?;
    let mut lens = vec![0u64; n];
    comm.all_gather_into(&(len as u64), &mut lens[..]);
    if lens.iter().any(|&l| l != len as u64) {
        return Err(comm_error(
            "participants sent buffers of different sizes".into(),
        ));
    }
    let piece = || match len % n {
        0 => Ok(len / n),
        _ => Err(comm_error(format!(
            "{len} bytes do not split into {n} pieces"
        ))),
    };
    Ok(Some(match r.op {
        CommOp::AllReduce { reducer, ty } => match exact_op(reducer, ty) {
            Some(op) => reduce_exact(comm, op, r.send, false)?,
            None => {
                let mut all = vec![0u8; len * n];
                comm.all_gather_into(r.send, &mut all[..]);
                fold(reducer, ty, all.chunks(len.max(1)), len)?
            }
        },
        CommOp::AllGather => {
            let mut all = vec![0u8; len * n];
            comm.all_gather_into(r.send, &mut all[..]);
            all
        }
        CommOp::ReduceScatter { reducer, ty } => {
            let w = piece()?;
            match exact_op(reducer, ty) {
                Some(op) => reduce_exact(comm, op, r.send, true)?,
                None => {
                    // Member k's piece `me` lands at k * w: fold them in group order.
                    let mut mine = vec![0u8; len];
                    comm.all_to_all_into(r.send, &mut mine[..]);
                    fold(reducer, ty, mine.chunks(w.max(1)), w)?
                }
            }
        }
        CommOp::AllToAll => {
            piece()?;
            let mut out = vec![0u8; len];
            comm.all_to_all_into(r.send, &mut out[..]);
            out
        }
        CommOp::CollectivePermute { pairs } => return Ok(permute(comm, me, r, pairs)),
        CommOp::Barrier => Vec::new(),
    }))
}

/// `pieces` (one per member, in group order, each `len` bytes) folded left to right.
fn fold<'a>(
    reducer: Reducer,
    ty: ScalarType,
    mut pieces: impl Iterator<Item = &'a [u8]>,
    len: usize,
) -> Result<Vec<u8>, CommError> {
    let mut acc = match len {
        0 => return Ok(Vec::new()),
        _ => pieces.next().unwrap_or_default().to_vec(),
    };
    for p in pieces {
        combine(reducer, ty, &mut acc, p).map_err(comm_error)?;
    }
    Ok(acc)
}

/// The element type an exact MPI reduction runs on.
#[derive(Clone, Copy)]
enum Lane {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

/// The MPI operation and element type that compute `reducer` over `ty` exactly as
/// [`combine`] does in any order; `None` where only the ordered fold is (floats, `pred`).
fn exact_op(reducer: Reducer, ty: ScalarType) -> Option<(SystemOperation, Lane)> {
    use ScalarType as T;
    let (unsigned, signed) = match ty {
        T::S8 => (Lane::U8, Lane::I8),
        T::S16 => (Lane::U16, Lane::I16),
        T::S32 => (Lane::U32, Lane::I32),
        T::S64 => (Lane::U64, Lane::I64),
        T::U8 => (Lane::U8, Lane::U8),
        T::U16 => (Lane::U16, Lane::U16),
        T::U32 => (Lane::U32, Lane::U32),
        T::U64 => (Lane::U64, Lane::U64),
        _ => return None,
    };
    Some(match reducer {
        // Two's complement: wrapping add and multiply have the same bits signed or not.
        Reducer::Add => (SystemOperation::sum(), unsigned),
        Reducer::Mul => (SystemOperation::product(), unsigned),
        Reducer::And => (SystemOperation::bitwise_and(), unsigned),
        Reducer::Or => (SystemOperation::bitwise_or(), unsigned),
        Reducer::Xor => (SystemOperation::bitwise_xor(), unsigned),
        Reducer::Max => (SystemOperation::max(), signed),
        Reducer::Min => (SystemOperation::min(), signed),
    })
}

/// An all-reduce (or, with `scatter`, a reduce-scatter of equal blocks) of `send` by an
/// exact MPI operation ([`exact_op`]).
fn reduce_exact(
    comm: &SimpleCommunicator,
    (op, lane): (SystemOperation, Lane),
    send: &[u8],
    scatter: bool,
) -> Result<Vec<u8>, CommError> {
    fn on<T: Equivalence + bytemuck::Pod>(
        comm: &SimpleCommunicator,
        op: SystemOperation,
        send: &[u8],
        scatter: bool,
    ) -> Result<Vec<u8>, CommError> {
        let width = std::mem::size_of::<T>();
        if !send.len().is_multiple_of(width) {
            return Err(comm_error(format!(
                "{} bytes are not a whole number of {width}-byte elements",
                send.len()
            )));
        }
        let send: Vec<T> = bytemuck::pod_collect_to_vec(send);
        let n = comm.size() as usize;
        let mut out = vec![T::zeroed(); if scatter { send.len() / n } else { send.len() }];
        match scatter {
            true => comm.reduce_scatter_block_into(&send[..], &mut out[..], op),
            false => comm.all_reduce_into(&send[..], &mut out[..], op),
        }
        Ok(bytemuck::cast_slice(&out).to_vec())
    }
    match lane {
        Lane::U8 => on::<u8>(comm, op, send, scatter),
        Lane::U16 => on::<u16>(comm, op, send, scatter),
        Lane::U32 => on::<u32>(comm, op, send, scatter),
        Lane::U64 => on::<u64>(comm, op, send, scatter),
        Lane::I8 => on::<i8>(comm, op, send, scatter),
        Lane::I16 => on::<i16>(comm, op, send, scatter),
        Lane::I32 => on::<i32>(comm, op, send, scatter),
        Lane::I64 => on::<i64>(comm, op, send, scatter),
    }
}

/// A collective-permute over the scope `comm`: this device receives from the source of the
/// first pair that targets it (as the in-process hub reads the pairs) and sends to every
/// target whose first pair is this device's; sources and targets outside the scope take
/// no part. The byte counts were checked equal before.
fn permute(
    comm: &SimpleCommunicator,
    me: usize,
    r: &Request<'_>,
    pairs: &[(i64, i64)],
) -> Option<Vec<u8>> {
    let id = r.group[me];
    let pos = |d: i64| r.group.iter().position(|&g| g == d);
    let source_of = |t: i64| pairs.iter().find(|(_, pt)| *pt == t).map(|(s, _)| *s);
    let source = source_of(id).and_then(pos);
    let targets: Vec<usize> = pairs
        .iter()
        .filter(|&&(s, t)| s == id && source_of(t) == Some(id))
        .filter_map(|&(_, t)| pos(t))
        .filter(|&t| t != me)
        .collect();
    mpi::request::scope(|scope| {
        let sends: Vec<_> = targets
            .iter()
            .map(|&t| {
                comm.process_at_rank(t as mpi::Rank)
                    .immediate_send(scope, r.send)
            })
            .collect();
        let got = source.map(|s| match s == me {
            true => r.send.to_vec(),
            false => {
                let mut buf = vec![0u8; r.send.len()];
                comm.process_at_rank(s as mpi::Rank)
                    .receive_into(&mut buf[..]);
                buf
            }
        });
        for s in sends {
            s.wait();
        }
        got
    })
}
