//! Running [`Thunk::Collective`] steps: this device's operands packed into the contiguous
//! pieces a [`Communicator`] moves (the pieces of a dimension in the operand's physical
//! layout: outer elements x member x inner run), posted, and the received bytes unpacked
//! into the results. The communicator is the one the device's thread runs under
//! ([`plan::current_communicator`]); without one (a single-device run) every group must
//! be this device alone. An async start's ticket waits in this thread's table until its
//! done.
//!
//! [`Thunk::Collective`]: plan::Thunk::Collective

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use plan::{
    ArraySpec, Collective, CollectiveKind, CommError, CommOp, Communicator, Phase, Program,
    Request, Ticket,
};

use crate::error::BackendError;
use crate::memory::Memory;

/// How the bytes a posted collective receives become a result.
enum Unpack {
    /// Straight into output `k`.
    Whole(usize),
    /// `[member][outer][chunk]` into output `k` as `[outer][member][chunk]`.
    Interleave {
        k: usize,
        members: usize,
        outer: usize,
    },
    /// Piece `i` of `members` equal pieces into output `i`.
    Split(usize),
    /// The first member's piece of `members` into output `k`.
    First { k: usize, members: usize },
    /// Into output `k`, or zeros there when nothing was sent to this device.
    OrZero(usize),
}

/// A posted exchange: its ticket, the bytes it receives and where they go.
struct Posted {
    ticket: Ticket,
    recv_bytes: usize,
    unpack: Unpack,
}

thread_local! {
    /// The async starts of this thread's device, by pair number, waiting for their done.
    static PENDING: RefCell<HashMap<usize, Vec<Posted>>> = RefCell::new(HashMap::new());
}

/// The operands and results of a step.
type Arrays<'t> = (&'t [ArraySpec], &'t [ArraySpec]);

/// Runs collective step `c` of `p` (its operands and results `io`) on this device.
pub(crate) fn run(
    p: &Program,
    c: &Collective,
    io: Arrays<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let comm: Arc<dyn Communicator> =
        plan::current_communicator().unwrap_or_else(|| Arc::new(Lone));
    let fail = |e: CommError| {
        if !e.peer_failed {
            comm.fail(&format!("`{}`: {e}", c.name));
        }
        BackendError::Internal(format!("collective `{}`: {e}", c.name))
    };
    match (&c.kind, c.phase) {
        (CollectiveKind::ReplicaId | CollectiveKind::PartitionId, _) => {
            let id = match c.kind {
                CollectiveKind::ReplicaId => comm.replica_id(),
                _ => comm.partition_id(),
            };
            let out = io.1.first().ok_or_else(|| internal(c, "no result"))?;
            mem[p.buffers[out.buffer].allocation].write(&(id as u32).to_ne_bytes())
        }
        (_, Phase::Sync) => {
            let posted = post(p, c, io.0, mem, comm.as_ref()).map_err(|e| e.map(fail))?;
            complete(p, c, io.1, mem, comm.as_ref(), posted).map_err(|e| e.map(fail))
        }
        (_, Phase::Start(id)) => {
            let posted = post(p, c, io.0, mem, comm.as_ref()).map_err(|e| e.map(fail))?;
            PENDING.with(|t| t.borrow_mut().insert(id, posted));
            Ok(())
        }
        (_, Phase::Done(id)) => {
            let posted = PENDING
                .with(|t| t.borrow_mut().remove(&id))
                .ok_or_else(|| internal(c, "a done without its start"))?;
            complete(p, c, io.1, mem, comm.as_ref(), posted).map_err(|e| e.map(fail))
        }
    }
}

/// An error of a step: the backend's, or the communicator's (reported to the others).
enum StepError {
    Backend(BackendError),
    Comm(CommError),
}

impl StepError {
    fn map(self, f: impl Fn(CommError) -> BackendError) -> BackendError {
        match self {
            StepError::Backend(e) => e,
            StepError::Comm(e) => f(e),
        }
    }
}

impl From<BackendError> for StepError {
    fn from(e: BackendError) -> StepError {
        StepError::Backend(e)
    }
}

impl From<CommError> for StepError {
    fn from(e: CommError) -> StepError {
        StepError::Comm(e)
    }
}

fn internal(c: &Collective, m: &str) -> BackendError {
    BackendError::Internal(format!("collective `{}`: {m}", c.name))
}

fn bytes_of(spec: &ArraySpec) -> usize {
    spec.dims
        .iter()
        .map(|&d| d.max(0) as usize)
        .product::<usize>()
        * spec.ty.byte_width() as usize
}

/// Elements more major than `dim` in `spec`'s physical layout, and bytes of one run of
/// `dim` and everything more minor.
fn outer_inner(spec: &ArraySpec, dim: usize) -> Option<(usize, usize)> {
    let major_to_minor: Vec<usize> = spec
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| d as usize)
        .collect();
    let pos = major_to_minor.iter().position(|&d| d == dim)?;
    let size =
        |ds: &[usize]| -> usize { ds.iter().map(|&d| spec.dims[d].max(0) as usize).product() };
    let outer = size(&major_to_minor[..pos]);
    let inner = size(&major_to_minor[pos..]) * spec.ty.byte_width() as usize;
    Some((outer, inner))
}

/// `[outer][members][chunk]` as `[members][outer][chunk]`.
fn member_major(src: &[u8], members: usize, outer: usize, chunk: usize) -> Vec<u8> {
    let mut dst = vec![0u8; src.len()];
    for o in 0..outer {
        for m in 0..members {
            let from = (o * members + m) * chunk;
            let to = (m * outer + o) * chunk;
            dst[to..to + chunk].copy_from_slice(&src[from..from + chunk]);
        }
    }
    dst
}

/// `[members][outer][chunk]` into `dst` as `[outer][members][chunk]`.
fn outer_major(src: &[u8], dst: &mut [u8], members: usize, outer: usize, chunk: usize) {
    for m in 0..members {
        for o in 0..outer {
            let from = (m * outer + o) * chunk;
            let to = (o * members + m) * chunk;
            dst[to..to + chunk].copy_from_slice(&src[from..from + chunk]);
        }
    }
}

/// Posts this device's part of `c` (one exchange per operand, or one for a tuple
/// all-to-all).
fn post(
    p: &Program,
    c: &Collective,
    inputs: &[ArraySpec],
    mem: &[Memory<'_>],
    comm: &dyn Communicator,
) -> Result<Vec<Posted>, StepError> {
    let me = comm.device_id();
    let group: &[i64] = c
        .group_of(me)
        .ok_or_else(|| internal(c, &format!("device {me} is in none of its groups")))?;
    let members = group.len();
    let read = |spec: &ArraySpec| mem[p.buffers[spec.buffer].allocation].bytes(bytes_of(spec));
    let start = |op: CommOp<'_>, send: &[u8], recv_bytes: usize, unpack: Unpack| {
        let ticket = comm.start(&Request { op, group, send })?;
        Ok::<Posted, StepError>(Posted {
            ticket,
            recv_bytes,
            unpack,
        })
    };
    let mut posted = Vec::new();
    if let CollectiveKind::AllToAll { split_dim: None } = c.kind {
        if inputs.len() != members {
            return Err(internal(c, "a tuple all-to-all needs one operand per member").into());
        }
        let send: Vec<u8> = inputs.iter().flat_map(|s| read(s).to_vec()).collect();
        let n = send.len();
        return Ok(vec![start(
            CommOp::AllToAll,
            &send,
            n,
            Unpack::Split(members),
        )?]);
    }
    for (k, spec) in inputs.iter().enumerate() {
        let bytes = read(spec);
        let n = bytes.len();
        let split = |dim: usize| {
            outer_inner(spec, dim).ok_or_else(|| internal(c, "dimension out of range"))
        };
        match &c.kind {
            CollectiveKind::AllReduce { reducer } => {
                let op = CommOp::AllReduce {
                    reducer: *reducer,
                    ty: spec.ty,
                };
                posted.push(start(op, bytes, n, Unpack::Whole(k))?)
            }
            CollectiveKind::AllGather { dim } => {
                let (outer, _) = split(*dim)?;
                let unpack = Unpack::Interleave { k, members, outer };
                posted.push(start(CommOp::AllGather, bytes, n * members, unpack)?)
            }
            CollectiveKind::ReduceScatter { dim, reducer } => {
                let (outer, inner) = split(*dim)?;
                if inner % members != 0 {
                    return Err(internal(c, "the scattered dimension does not split").into());
                }
                let send = member_major(bytes, members, outer, inner / members);
                let op = CommOp::ReduceScatter {
                    reducer: *reducer,
                    ty: spec.ty,
                };
                posted.push(start(op, &send, n / members, Unpack::Whole(k))?)
            }
            CollectiveKind::AllToAll { split_dim: Some(d) } => {
                let (outer, inner) = split(*d)?;
                if inner % members != 0 {
                    return Err(internal(c, "the split dimension does not split").into());
                }
                let send = member_major(bytes, members, outer, inner / members);
                let unpack = Unpack::Interleave { k, members, outer };
                posted.push(start(CommOp::AllToAll, &send, n, unpack)?)
            }
            CollectiveKind::CollectivePermute { pairs } => {
                let op = CommOp::CollectivePermute { pairs };
                posted.push(start(op, bytes, n, Unpack::OrZero(k))?)
            }
            CollectiveKind::CollectiveBroadcast => {
                let unpack = Unpack::First { k, members };
                posted.push(start(CommOp::AllGather, bytes, n * members, unpack)?)
            }
            _ => return Err(internal(c, "not an exchange").into()),
        }
    }
    Ok(posted)
}

/// Waits for every exchange of `posted` and writes the results of `c`.
fn complete(
    p: &Program,
    c: &Collective,
    outputs: &[ArraySpec],
    mem: &mut [Memory<'_>],
    comm: &dyn Communicator,
    posted: Vec<Posted>,
) -> Result<(), StepError> {
    for post in posted {
        let mut recv = vec![0u8; post.recv_bytes];
        let received = comm.finish(post.ticket, &mut recv)?;
        let mut write = |k: usize, data: &[u8]| -> Result<(), BackendError> {
            let spec = outputs
                .get(k)
                .ok_or_else(|| internal(c, "no such result"))?;
            if data.len() != bytes_of(spec) {
                return Err(internal(c, "a result of another size than received"));
            }
            mem[p.buffers[spec.buffer].allocation].write(data)
        };
        match post.unpack {
            Unpack::Whole(k) => write(k, &recv)?,
            Unpack::OrZero(k) => match received {
                true => write(k, &recv)?,
                false => write(k, &vec![0u8; recv.len()])?,
            },
            Unpack::Interleave { k, members, outer } => {
                let mut out = vec![0u8; recv.len()];
                let chunk = recv.len() / (members * outer).max(1);
                outer_major(&recv, &mut out, members, outer, chunk);
                write(k, &out)?
            }
            Unpack::Split(members) => {
                let w = recv.len() / members.max(1);
                for i in 0..members {
                    write(i, &recv[i * w..(i + 1) * w])?;
                }
            }
            Unpack::First { k, members } => {
                let w = recv.len() / members.max(1);
                write(k, &recv[..w])?
            }
        }
    }
    Ok(())
}

/// The communicator of a single-device run: device 0 alone, every group of one.
struct Lone;

impl Communicator for Lone {
    fn device_id(&self) -> i64 {
        0
    }

    fn replica_id(&self) -> i64 {
        0
    }

    fn partition_id(&self) -> i64 {
        0
    }

    fn start(&self, request: &Request<'_>) -> Result<Ticket, CommError> {
        if request.group != [0] {
            return Err(CommError {
                message: format!(
                    "a collective over devices {:?} in a single-device run (run it on as many devices)",
                    request.group
                ),
                peer_failed: false,
            });
        }
        // Every collective of one member returns its own bytes (a permute only when the
        // device sends to itself).
        let sent = match request.op {
            CommOp::CollectivePermute { pairs } => pairs.contains(&(0, 0)),
            _ => true,
        };
        Ok(Ticket(Box::new(sent.then(|| request.send.to_vec()))))
    }

    fn finish(&self, ticket: Ticket, recv: &mut [u8]) -> Result<bool, CommError> {
        let bytes = ticket
            .0
            .downcast::<Option<Vec<u8>>>()
            .map_err(|_| CommError {
                message: "a ticket of another communicator".into(),
                peer_failed: false,
            })?;
        match *bytes {
            Some(b) if b.len() == recv.len() => {
                recv.copy_from_slice(&b);
                Ok(true)
            }
            Some(_) => Err(CommError {
                message: "a result of another size than sent".into(),
                peer_failed: false,
            }),
            None => Ok(false),
        }
    }

    fn fail(&self, _message: &str) {}
}
