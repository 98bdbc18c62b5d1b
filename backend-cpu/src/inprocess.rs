//! The in-process [`Communicator`]: N devices are N executors on N threads of one
//! process (as XLA:CPU runs forced host devices), meeting at a shared hub. Starting a
//! collective leaves a copy of the device's bytes under a key (its collective number on
//! that device and the participants) and returns; finishing waits until every participant
//! has left its bytes and computes this device's result from them. A device that fails
//! marks the hub failed, so no other device waits for it forever; a wait longer than the
//! timeout is an error too.
//!
//! Two things keep a large collective from costing more than its bytes: the buffers the
//! devices leave are reused (a spare whose last reader is gone takes the next message, so
//! a 1 MB message does not touch fresh pages on every step), and a large all-reduce is
//! folded once, by its participants together (each claims chunks of the result, as a
//! reduce-scatter would, and then every one copies the whole): each device folding every
//! value itself did the reduction N times over, on a machine with fewer cores than devices.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hlo::ir::reducer::Reducer;
use plan::{CommError, CommOp, Communicator, Request, Ticket};

use codegen::kir::ScalarType;

/// How long a device waits at a collective for the others by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The prefix of the message a device gets when another device failed first.
const PEER_FAILED: &str = "another device failed:";

type Key = (u64, Vec<i64>);

/// An all-reduce of at least this many bytes is folded once, in shared chunks; a smaller
/// one by every participant alone (no second wait for a few microseconds of work).
const SHARED_REDUCE_MIN: usize = 64 << 10;

/// The smallest chunk of a shared reduction, in bytes (a multiple of every element width).
const REDUCE_CHUNK_MIN: usize = 32 << 10;

/// How many retired message buffers the hub keeps for reuse.
const SPARE_MAX: usize = 64;

/// The bytes the participants of one collective left.
struct Slot {
    values: Vec<Option<Arc<Vec<u8>>>>,
    readers_left: usize,
    /// The shared fold of a large all-reduce (see [`Reduction`]), made by its first reader.
    reduction: Option<Arc<Reduction>>,
}

/// A large all-reduce's result, folded once in chunks that its participants claim: a
/// participant that reaches the finish claims chunks until none are left, then waits until
/// every claimed chunk is done and copies the whole result.
struct Reduction {
    chunk: usize,
    parts: Vec<OnceLock<Arc<Vec<u8>>>>,
    next: AtomicUsize,
    done: AtomicUsize,
    /// Participants that have copied the result; the last one retires the parts.
    copied: AtomicUsize,
}

#[derive(Default)]
struct HubState {
    slots: HashMap<Key, Slot>,
    failed: Option<String>,
    /// Retired buffers (messages and result chunks), reused once their last reader is gone.
    spare: Vec<Arc<Vec<u8>>>,
}

impl HubState {
    /// A buffer of at least `len` bytes' capacity nobody else holds, emptied, if a spare one
    /// is; else a new one.
    fn take(&mut self, len: usize) -> Vec<u8> {
        let found = self
            .spare
            .iter()
            .position(|b| Arc::strong_count(b) == 1 && b.capacity() >= len);
        let mut v = found
            .and_then(|i| Arc::try_unwrap(self.spare.swap_remove(i)).ok())
            .unwrap_or_else(|| Vec::with_capacity(len));
        v.clear();
        v
    }

    /// Keeps `buffers` for reuse (the oldest beyond [`SPARE_MAX`] are dropped).
    fn retire(&mut self, buffers: impl IntoIterator<Item = Arc<Vec<u8>>>) {
        self.spare.extend(buffers);
        if self.spare.len() > SPARE_MAX {
            let extra = self.spare.len() - SPARE_MAX;
            self.spare.drain(..extra);
        }
    }
}

/// Where the devices of one run meet.
struct Hub {
    state: Mutex<HubState>,
    arrived: Condvar,
    timeout: Duration,
}

/// One device of an in-process run (see the module docs).
pub struct InProcess {
    replica: i64,
    partition: i64,
    partitions: i64,
    hub: Arc<Hub>,
    /// The number of collectives this device has started.
    seq: AtomicU64,
}

/// What [`InProcess::finish`] needs of a started collective.
struct Pending {
    key: Key,
    me: usize,
    op: Op,
}

/// [`CommOp`] without borrowed data.
enum Op {
    AllReduce(Reducer, ScalarType),
    AllGather,
    ReduceScatter(Reducer, ScalarType),
    AllToAll,
    /// The scope index of the source sending to this device, if any.
    Permute(Option<usize>),
    Barrier,
}

impl InProcess {
    /// The devices of a run on `replicas` x `partitions` devices, in device-id order
    /// (device `r * partitions + p`), sharing one hub whose waits end after `timeout`.
    pub fn devices(replicas: i64, partitions: i64, timeout: Duration) -> Vec<Arc<InProcess>> {
        let hub = Arc::new(Hub {
            state: Mutex::new(HubState::default()),
            arrived: Condvar::new(),
            timeout,
        });
        (0..replicas.max(1) * partitions.max(1))
            .map(|id| {
                Arc::new(InProcess {
                    replica: id / partitions.max(1),
                    partition: id % partitions.max(1),
                    partitions: partitions.max(1),
                    hub: Arc::clone(&hub),
                    seq: AtomicU64::new(0),
                })
            })
            .collect()
    }

    /// Whether `message` is the consequence of another device's failure.
    pub fn is_peer_failure(message: &str) -> bool {
        message.contains(PEER_FAILED)
    }
}

fn error(message: String) -> CommError {
    CommError {
        peer_failed: message.contains(PEER_FAILED),
        message,
    }
}

impl Communicator for InProcess {
    fn device_id(&self) -> i64 {
        self.replica * self.partitions + self.partition
    }

    fn replica_id(&self) -> i64 {
        self.replica
    }

    fn partition_id(&self) -> i64 {
        self.partition
    }

    fn start(&self, request: &Request<'_>) -> Result<Ticket, CommError> {
        let id = self.device_id();
        let group = request.group;
        let me = group.iter().position(|&d| d == id).ok_or_else(|| {
            error(format!(
                "device {id} is not among the participants {group:?}"
            ))
        })?;
        let op = match request.op {
            CommOp::AllReduce { reducer, ty } => Op::AllReduce(reducer, ty),
            CommOp::AllGather => Op::AllGather,
            CommOp::ReduceScatter { reducer, ty } => Op::ReduceScatter(reducer, ty),
            CommOp::AllToAll => Op::AllToAll,
            CommOp::CollectivePermute { pairs } => Op::Permute(
                pairs
                    .iter()
                    .find(|(_, t)| *t == id)
                    .and_then(|(s, _)| group.iter().position(|d| d == s)),
            ),
            CommOp::Barrier => Op::Barrier,
        };
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let key = (seq, group.to_vec());
        let n = group.len();
        // The copy is made outside the lock, into a reused buffer.
        let mut bytes = self.hub.lock().take(request.send.len());
        bytes.extend_from_slice(request.send);
        let mut s = self.hub.lock();
        if let Some(f) = &s.failed {
            return Err(error(format!("{PEER_FAILED} {f}")));
        }
        let slot = s.slots.entry(key.clone()).or_insert_with(|| Slot {
            values: (0..n).map(|_| None).collect(),
            readers_left: n,
            reduction: None,
        });
        if slot.values.len() != n || slot.values[me].is_some() {
            return Err(error(
                "two collectives met under one key (devices out of step)".into(),
            ));
        }
        slot.values[me] = Some(Arc::new(bytes));
        // Waiters wait for a complete slot: only its last participant wakes them (a
        // wake-up per arrival woke every waiting device N times per collective).
        if slot.values.iter().all(Option::is_some) {
            self.hub.arrived.notify_all();
        }
        Ok(Ticket(Box::new(Pending { key, me, op })))
    }

    fn finish(&self, ticket: Ticket, recv: &mut [u8]) -> Result<bool, CommError> {
        let pending = ticket
            .0
            .downcast::<Pending>()
            .map_err(|_| error("a ticket of another communicator".into()))?;
        let shared = matches!(pending.op, Op::AllReduce(..)) && recv.len() >= SHARED_REDUCE_MIN;
        let (values, reduction) = self.wait(&pending.key, shared)?;
        match (&pending.op, reduction) {
            (Op::AllReduce(r, ty), Some(red)) => self.reduce_shared(&red, *r, *ty, &values, recv),
            _ => result(&pending, &values, recv).map_err(error),
        }
    }

    fn fail(&self, message: &str) {
        let mut s = self.hub.lock();
        if s.failed.is_none() {
            s.failed = Some(format!("device {}: {message}", self.device_id()));
        }
        self.hub.arrived.notify_all();
    }
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps on `arrived` for what is left of the timeout since `begin`; once it has
    /// passed, records the failure (`what` says what was waited for) so that the other
    /// devices stop too, and returns it.
    fn wait_or_time_out<'a>(
        &self,
        s: std::sync::MutexGuard<'a, HubState>,
        begin: Instant,
        what: impl FnOnce(&HubState) -> String,
    ) -> Result<std::sync::MutexGuard<'a, HubState>, CommError> {
        let left = self.timeout.saturating_sub(begin.elapsed());
        if left.is_zero() {
            let mut s = s;
            let m = format!("waited {:?} for {}", self.timeout, what(&s));
            s.failed = Some(m.clone());
            self.arrived.notify_all();
            return Err(error(m));
        }
        Ok(self
            .arrived
            .wait_timeout(s, left)
            .unwrap_or_else(|e| e.into_inner())
            .0)
    }
}

impl InProcess {
    /// Every participant's bytes of collective `key`, once all have left them, and with
    /// `shared` the collective's shared [`Reduction`] (made by the first reader).
    fn wait(&self, key: &Key, shared: bool) -> Result<Values, CommError> {
        let hub = &self.hub;
        let mut s = hub.lock();
        let begin = Instant::now();
        loop {
            if let Some(f) = &s.failed {
                return Err(error(format!("{PEER_FAILED} {f}")));
            }
            let slot = s
                .slots
                .get_mut(key)
                .ok_or_else(|| error("the collective's values vanished".into()))?;
            if slot.values.iter().all(Option::is_some) {
                let out: Vec<Arc<Vec<u8>>> = slot.values.iter().flatten().cloned().collect();
                let reduction = match shared {
                    true => Some(Arc::clone(slot.reduction.get_or_insert_with(|| {
                        Arc::new(Reduction::new(out[0].len(), out.len()))
                    }))),
                    false => None,
                };
                slot.readers_left -= 1;
                if slot.readers_left == 0 {
                    if let Some(done) = s.slots.remove(key) {
                        s.retire(done.values.into_iter().flatten());
                    }
                }
                return Ok((out, reduction));
            }
            s = hub.wait_or_time_out(s, begin, |s| {
                let values = s.slots.get(key).map(|slot| &slot.values[..]);
                let missing: Vec<i64> = key
                    .1
                    .iter()
                    .zip(values.unwrap_or_default())
                    .filter(|(_, v)| v.is_none())
                    .map(|(&d, _)| d)
                    .collect();
                format!("devices {missing:?} to reach the collective")
            })?;
        }
    }
}

/// Every participant's bytes of a collective and its shared reduction, if any.
type Values = (Vec<Arc<Vec<u8>>>, Option<Arc<Reduction>>);

impl Reduction {
    /// The chunks of a `len`-byte result folded by up to `members` participants: about one
    /// chunk each, none under [`REDUCE_CHUNK_MIN`] bytes but the last.
    fn new(len: usize, members: usize) -> Reduction {
        let even = len.div_ceil(members.max(1)).div_ceil(64) * 64;
        let chunk = even.max(REDUCE_CHUNK_MIN);
        Reduction {
            chunk,
            parts: (0..len.div_ceil(chunk).max(1))
                .map(|_| OnceLock::new())
                .collect(),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            copied: AtomicUsize::new(0),
        }
    }
}

impl InProcess {
    /// This participant's part of a shared all-reduce: folds the chunks it claims, waits
    /// for the others' and copies the whole result into `recv`.
    fn reduce_shared(
        &self,
        red: &Reduction,
        r: Reducer,
        ty: ScalarType,
        values: &[Arc<Vec<u8>>],
        recv: &mut [u8],
    ) -> Result<bool, CommError> {
        let len = recv.len();
        if values.iter().any(|v| v.len() != len) {
            return Err(error("participants sent buffers of different sizes".into()));
        }
        let count = red.parts.len();
        loop {
            let c = red.next.fetch_add(1, Ordering::AcqRel);
            if c >= count {
                break;
            }
            let range = c * red.chunk..((c + 1) * red.chunk).min(len);
            let mut part = self.hub.lock().take(range.len());
            part.extend_from_slice(&values[0][range.clone()]);
            for v in &values[1..] {
                crate::reduce_bytes::combine(r, ty, &mut part, &v[range.clone()]).map_err(error)?;
            }
            // Each chunk is claimed once, so it is set once.
            let _ = red.parts[c].set(Arc::new(part));
            if red.done.fetch_add(1, Ordering::AcqRel) + 1 == count {
                // Under the lock, so a waiter between its check and its wait is not missed.
                let _s = self.hub.lock();
                self.hub.arrived.notify_all();
            }
        }
        self.wait_until(|| red.done.load(Ordering::Acquire) == count)?;
        for (c, part) in red.parts.iter().enumerate() {
            let part = part
                .get()
                .ok_or_else(|| error("a chunk of the reduction is missing".into()))?;
            recv[c * red.chunk..c * red.chunk + part.len()].copy_from_slice(part);
        }
        if red.copied.fetch_add(1, Ordering::AcqRel) + 1 == values.len() {
            let parts: Vec<Arc<Vec<u8>>> =
                red.parts.iter().filter_map(|p| p.get().cloned()).collect();
            self.hub.lock().retire(parts);
        }
        Ok(true)
    }

    /// Waits on the hub until `ready` holds (checked under the hub's lock), another
    /// device fails, or the timeout passes.
    fn wait_until(&self, ready: impl Fn() -> bool) -> Result<(), CommError> {
        let hub = &self.hub;
        let mut s = hub.lock();
        let begin = Instant::now();
        loop {
            if ready() {
                return Ok(());
            }
            if let Some(f) = &s.failed {
                return Err(error(format!("{PEER_FAILED} {f}")));
            }
            s = hub.wait_or_time_out(s, begin, |_| "the devices' shared reduction".into())?;
        }
    }
}

/// This participant's result from every participant's bytes.
fn result(p: &Pending, values: &[Arc<Vec<u8>>], recv: &mut [u8]) -> Result<bool, String> {
    let n = values.len();
    let len = values[0].len();
    if values.iter().any(|v| v.len() != len) {
        return Err("participants sent buffers of different sizes".into());
    }
    let expect = |want: usize, recv: &[u8]| match recv.len() == want {
        true => Ok(()),
        false => Err(format!(
            "a result of {} bytes for {want} bytes received",
            recv.len()
        )),
    };
    let piece = |k: usize| -> Result<std::ops::Range<usize>, String> {
        match len % n {
            0 => Ok(k * (len / n)..(k + 1) * (len / n)),
            _ => Err(format!("{len} bytes do not split into {n} pieces")),
        }
    };
    match p.op {
        Op::AllReduce(r, ty) => {
            expect(len, recv)?;
            recv.copy_from_slice(&values[0]);
            for v in &values[1..] {
                crate::reduce_bytes::combine(r, ty, recv, v)?;
            }
        }
        Op::AllGather => {
            expect(len * n, recv)?;
            for (k, v) in values.iter().enumerate() {
                recv[k * len..(k + 1) * len].copy_from_slice(v);
            }
        }
        Op::ReduceScatter(r, ty) => {
            let mine = piece(p.me)?;
            expect(mine.len(), recv)?;
            recv.copy_from_slice(&values[0][mine.clone()]);
            for v in &values[1..] {
                crate::reduce_bytes::combine(r, ty, recv, &v[mine.clone()])?;
            }
        }
        Op::AllToAll => {
            let mine = piece(p.me)?;
            expect(len, recv)?;
            let w = mine.len();
            for (k, v) in values.iter().enumerate() {
                recv[k * w..(k + 1) * w].copy_from_slice(&v[mine.clone()]);
            }
        }
        Op::Permute(source) => match source {
            Some(s) => {
                expect(len, recv)?;
                recv.copy_from_slice(&values[s]);
            }
            None => return Ok(false),
        },
        Op::Barrier => {}
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    /// Runs `f` on every device of a 1 x `n` grid at once.
    fn on_devices<T: Send>(n: i64, f: impl Fn(&InProcess) -> T + Sync) -> Vec<T> {
        let devs = InProcess::devices(1, n, Duration::from_secs(20));
        std::thread::scope(|s| {
            let hs: Vec<_> = devs.iter().map(|d| s.spawn(|| f(d))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn every_collective_on_four_devices() {
        let group = [0, 1, 2, 3];
        let out = on_devices(4, |d| {
            let me = d.device_id() as f32;
            let mut sum = vec![0u8; 8];
            d.all_reduce(
                &group,
                Reducer::Add,
                ScalarType::F32,
                &f32s(&[me, 1.0]),
                &mut sum,
            )
            .unwrap();
            let mut all = vec![0u8; 16];
            d.all_gather(&group, &f32s(&[me]), &mut all).unwrap();
            let mut rs = vec![0u8; 4];
            let pieces = f32s(&[me, 10.0 * me, 100.0 * me, 1000.0 * me]);
            d.reduce_scatter(&group, Reducer::Add, ScalarType::F32, &pieces, &mut rs)
                .unwrap();
            let mut a2a = vec![0u8; 16];
            d.all_to_all(&group, &pieces, &mut a2a).unwrap();
            let mut perm = vec![0u8; 4];
            let got = d
                .collective_permute(&group, &[(0, 1), (1, 2), (2, 0)], &f32s(&[me]), &mut perm)
                .unwrap();
            d.barrier(&group).unwrap();
            (sum, all, rs, a2a, got.then_some(perm))
        });
        for (k, (sum, all, rs, a2a, perm)) in out.into_iter().enumerate() {
            let k = k as f32;
            assert_eq!(sum, f32s(&[6.0, 4.0]));
            assert_eq!(all, f32s(&[0.0, 1.0, 2.0, 3.0]));
            assert_eq!(rs, f32s(&[6.0 * 10f32.powi(k as i32)]));
            let scale = 10f32.powi(k as i32);
            assert_eq!(a2a, f32s(&[0.0, scale, 2.0 * scale, 3.0 * scale]));
            let source = [Some(2.0), Some(0.0), Some(1.0), None][k as usize];
            assert_eq!(perm, source.map(|s: f32| f32s(&[s])));
        }
    }

    #[test]
    fn async_starts_overlap_and_groups_split() {
        // Two starts posted before either finishes; groups {0,1} and {2,3}.
        let out = on_devices(4, |d| {
            let group: Vec<i64> = match d.device_id() < 2 {
                true => vec![0, 1],
                false => vec![2, 3],
            };
            let me = d.device_id() as f32;
            let op = CommOp::AllReduce {
                reducer: Reducer::Max,
                ty: ScalarType::F32,
            };
            let a = f32s(&[me]);
            let b = f32s(&[-me]);
            let t1 = d
                .start(&Request {
                    op,
                    group: &group,
                    send: &a,
                })
                .unwrap();
            let t2 = d
                .start(&Request {
                    op,
                    group: &group,
                    send: &b,
                })
                .unwrap();
            let (mut r1, mut r2) = (vec![0u8; 4], vec![0u8; 4]);
            d.finish(t2, &mut r2).unwrap();
            d.finish(t1, &mut r1).unwrap();
            (r1, r2)
        });
        assert_eq!(out[0], (f32s(&[1.0]), f32s(&[-0.0])));
        assert_eq!(out[3], (f32s(&[3.0]), f32s(&[-2.0])));
    }

    /// All-reduces large enough to be folded in shared chunks (sizes that do not split
    /// evenly, a max with NaNs, an integer sum), repeated so the message buffers are
    /// reused: every device gets the fold of every device's values.
    #[test]
    fn large_all_reduces_fold_in_shared_chunks() {
        let group = [0, 1, 2, 3];
        for len in [SHARED_REDUCE_MIN / 4, 100_003, 300_017] {
            let out = on_devices(4, |d| {
                let me = d.device_id();
                let mut got = Vec::new();
                for round in 0..3 {
                    let v: Vec<f32> = (0..len)
                        .map(|i| match (i + me as usize) % 97 {
                            0 if round == 1 => f32::NAN,
                            _ => (i % 13) as f32 * (me + 1) as f32 + round as f32,
                        })
                        .collect();
                    let mut r = vec![0u8; len * 4];
                    let red = if round == 1 {
                        Reducer::Max
                    } else {
                        Reducer::Add
                    };
                    d.all_reduce(&group, red, ScalarType::F32, &f32s(&v), &mut r)
                        .unwrap();
                    got.push(r);
                }
                let s: Vec<u8> = (0..len as i32)
                    .flat_map(|i| (i * (me as i32 + 1)).to_ne_bytes())
                    .collect();
                let mut r = vec![0u8; s.len()];
                d.all_reduce(&group, Reducer::Add, ScalarType::S32, &s, &mut r)
                    .unwrap();
                got.push(r);
                got
            });
            for i in [0, 1, 96, 97, len / 2, len - 1] {
                let at = |r: &[u8]| f32::from_ne_bytes(r[i * 4..i * 4 + 4].try_into().unwrap());
                let base = (i % 13) as f32;
                let nan = (0..4).any(|m| (i + m) % 97 == 0);
                for dev in &out {
                    assert_eq!(at(&dev[0]), base * 10.0, "sum at {i}");
                    assert_eq!(at(&dev[2]), base * 10.0 + 8.0, "sum at {i}");
                    match nan {
                        true => assert!(at(&dev[1]).is_nan(), "max at {i}"),
                        false => assert_eq!(at(&dev[1]), base * 4.0 + 1.0, "max at {i}"),
                    }
                    let s = i32::from_ne_bytes(dev[3][i * 4..i * 4 + 4].try_into().unwrap());
                    assert_eq!(s, i as i32 * 10, "s32 sum at {i}");
                }
            }
        }
    }

    /// A retired buffer is reused only once nobody reads it, and the spares stay bounded.
    #[test]
    fn spare_buffers_are_reused_only_when_free() {
        let mut s = HubState::default();
        let held = Arc::new(vec![7u8; 100]);
        s.retire([Arc::clone(&held)]);
        let fresh = s.take(10);
        assert!(fresh.is_empty());
        assert_eq!(s.spare.len(), 1, "the held buffer stays a spare");
        drop(held);
        let reused = s.take(50);
        assert!(reused.is_empty() && reused.capacity() >= 100);
        assert!(s.spare.is_empty());
        s.retire((0..SPARE_MAX + 5).map(|_| Arc::new(Vec::new())));
        assert_eq!(s.spare.len(), SPARE_MAX);
    }

    #[test]
    fn a_failed_device_ends_the_others_waits() {
        let out = on_devices(2, |d| {
            if d.device_id() == 1 {
                d.fail("boom");
                return Err(error("boom".into()));
            }
            let mut r = vec![0u8; 4];
            d.all_gather(&[0, 1], &[0u8; 2], &mut r)
        });
        let e = out[0].clone().unwrap_err();
        assert!(e.peer_failed, "{e}");
        assert!(e.message.contains("device 1: boom"), "{e}");
    }
}
