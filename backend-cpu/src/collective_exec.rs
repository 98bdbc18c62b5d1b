//! Running [`Thunk::Collective`] steps: this device's operands packed into the contiguous
//! pieces a [`Communicator`] moves (the pieces of a dimension in the operand's physical
//! layout: outer elements x member x inner run), posted, and the received bytes unpacked
//! into the results ([`collective_pack`](crate::collective_pack): one message per step,
//! combined operands together). The communicator is the one the device's thread runs under
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

use crate::collective_pack::{self, Unpack};
use crate::error::BackendError;
use crate::memory::Memory;

/// A posted exchange: its ticket, the bytes it receives and where they go.
struct Posted {
    ticket: Ticket,
    recv_bytes: usize,
    unpack: Unpack,
}

thread_local! {
    /// The async starts of this thread's device, by pair number, waiting for their done.
    static PENDING: RefCell<HashMap<usize, Vec<Posted>>> = RefCell::new(HashMap::new());
    /// This thread's receive buffer, reused by every exchange it completes: a fresh
    /// zeroed one per step touched new pages for every megabyte a loop's all-reduce moved.
    static RECV: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
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
        (CollectiveKind::AllReduce { .. }, Phase::Sync) if io.0.len() == 1 && io.1.len() == 1 => {
            all_reduce_lent(p, c, io, mem, comm.as_ref()).map_err(|e| e.map(fail))
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

/// The threads a run on this thread may split its work among: `threads` shared by the
/// devices of this process ([`Communicator::devices_in_process`]), at least one. Eight
/// device threads on two cores each handing their GEMMs to the shared pool spent a fifth of
/// an 8-device pipeline's samples asleep on the pool's latches and waking one another.
pub(crate) fn device_threads(threads: usize) -> usize {
    match plan::current_communicator() {
        Some(comm) => (threads / comm.devices_in_process().max(1)).max(1),
        None => threads,
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

/// Posts this device's part of `c`: one message per step (per element type for a
/// combined all-reduce or reduce-scatter, per operand for the others but a tuple
/// all-to-all), as [`collective_pack::messages`] packs them.
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
    let operands: Vec<(&ArraySpec, &[u8])> = inputs
        .iter()
        .map(|spec| {
            (
                spec,
                mem[p.buffers[spec.buffer].allocation].bytes(bytes_of(spec)),
            )
        })
        .collect();
    let messages =
        collective_pack::messages(&c.kind, group.len(), &operands).map_err(|e| internal(c, &e))?;
    let mut posted = Vec::with_capacity(messages.len());
    for m in messages {
        let ticket = comm.start(&Request {
            op: m.op,
            group,
            send: &m.send,
        })?;
        posted.push(Posted {
            ticket,
            recv_bytes: m.recv_bytes,
            unpack: m.unpack,
        });
    }
    Ok(posted)
}

/// A blocking all-reduce of one operand: the operand's memory is lent to the communicator
/// for the call ([`Communicator::blocking`]; the in-process one folds it in place, with no
/// copy of it) and the result received straight into its memory. An operand and result
/// in one allocation go the posted way (the operand copied first).
fn all_reduce_lent(
    p: &Program,
    c: &Collective,
    io: Arrays<'_>,
    mem: &mut [Memory<'_>],
    comm: &dyn Communicator,
) -> Result<(), StepError> {
    let (input, output) = (&io.0[0], &io.1[0]);
    let (a_in, a_out) = (
        p.buffers[input.buffer].allocation,
        p.buffers[output.buffer].allocation,
    );
    let Some((src, dst)) = read_and_write(mem, a_in, a_out) else {
        let posted = post(p, c, io.0, mem, comm)?;
        return complete(p, c, io.1, mem, comm, posted);
    };
    let me = comm.device_id();
    let group: &[i64] = c
        .group_of(me)
        .ok_or_else(|| internal(c, &format!("device {me} is in none of its groups")))?;
    let send = src.bytes(bytes_of(input));
    let mut messages = collective_pack::messages(&c.kind, group.len(), &[(input, send)])
        .map_err(|e| internal(c, &e))?;
    let (Some(m), true) = (messages.pop(), messages.is_empty()) else {
        return Err(internal(c, "an all-reduce of one operand posts one message").into());
    };
    if send.len() != bytes_of(input) || bytes_of(output) != m.recv_bytes {
        return Err(internal(c, "a result of another size than received").into());
    }
    let recv = dst
        .bytes_mut()
        .and_then(|b| b.get_mut(..m.recv_bytes))
        .ok_or_else(|| internal(c, "a result in read-only or short memory"))?;
    comm.blocking(m.op, group, &m.send, recv)?;
    Ok(())
}

/// Allocation `read` to read and allocation `write` to write at once, when they differ.
fn read_and_write<'m, 'a>(
    mem: &'m mut [Memory<'a>],
    read: usize,
    write: usize,
) -> Option<(&'m Memory<'a>, &'m mut Memory<'a>)> {
    match read.cmp(&write) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Less => {
            let (low, high) = mem.split_at_mut(write);
            Some((low.get(read)?, high.first_mut()?))
        }
        std::cmp::Ordering::Greater => {
            let (low, high) = mem.split_at_mut(read);
            let w = low.get_mut(write)?;
            Some((high.first()?, w))
        }
    }
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
    let mut recv = RECV.with(|r| std::mem::take(&mut *r.borrow_mut()));
    let done = complete_into(p, c, outputs, mem, comm, posted, &mut recv);
    RECV.with(|r| *r.borrow_mut() = recv);
    done
}

/// [`complete`] receiving into `recv` (resized to each exchange's bytes; every
/// communicator writes all of them, or reports that it received nothing).
fn complete_into(
    p: &Program,
    c: &Collective,
    outputs: &[ArraySpec],
    mem: &mut [Memory<'_>],
    comm: &dyn Communicator,
    posted: Vec<Posted>,
    recv: &mut Vec<u8>,
) -> Result<(), StepError> {
    for post in posted {
        if let Some(k) = whole_result(&post) {
            let spec = outputs
                .get(k)
                .ok_or_else(|| internal(c, "no such result"))?;
            if bytes_of(spec) != post.recv_bytes {
                return Err(internal(c, "a result of another size than received").into());
            }
            let dst = mem[p.buffers[spec.buffer].allocation]
                .bytes_mut()
                .and_then(|b| b.get_mut(..post.recv_bytes))
                .ok_or_else(|| internal(c, "a result in read-only or short memory"))?;
            if !comm.finish(post.ticket, dst)? {
                dst.fill(0);
            }
            continue;
        }
        recv.resize(post.recv_bytes, 0);
        let received = comm.finish(post.ticket, recv)?;
        let mut outs = results_memory(p, c, outputs, mem)?;
        collective_pack::unpack_into(&post.unpack, recv, received, &mut outs)
            .map_err(|e| internal(c, &e))?;
    }
    Ok(())
}

/// The writable memory of each of the step's results (`outputs[k]`'s bytes at `k`); two
/// results in one allocation are an error (results defined together live together).
fn results_memory<'m>(
    p: &Program,
    c: &Collective,
    outputs: &[ArraySpec],
    mem: &'m mut [Memory<'_>],
) -> Result<Vec<Option<&'m mut [u8]>>, BackendError> {
    let allocations: Vec<usize> = outputs
        .iter()
        .map(|s| p.buffers[s.buffer].allocation)
        .collect();
    let mut outs: Vec<Option<&'m mut [u8]>> = (0..outputs.len()).map(|_| None).collect();
    for (a, m) in mem.iter_mut().enumerate() {
        let mut ks = (0..outputs.len()).filter(|&k| allocations[k] == a);
        let Some(k) = ks.next() else {
            continue;
        };
        if ks.next().is_some() {
            return Err(internal(c, "two results in one allocation"));
        }
        outs[k] = Some(
            m.bytes_mut()
                .and_then(|b| b.get_mut(..bytes_of(&outputs[k])))
                .ok_or_else(|| internal(c, "a result in read-only or short memory"))?,
        );
    }
    Ok(outs)
}

/// The result an exchange's received bytes are, whole and as they lie (a one-operand
/// all-reduce, a collective-permute): received straight into that result's memory, not
/// through the thread's buffer and a second copy.
fn whole_result(post: &Posted) -> Option<usize> {
    match &post.unpack {
        Unpack::Parts(parts) => match parts[..] {
            [collective_pack::Part { k, at: 0, len }] if len == post.recv_bytes => Some(k),
            _ => None,
        },
        Unpack::OrZero(k) => Some(*k),
        _ => None,
    }
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
