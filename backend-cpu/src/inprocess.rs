//! The in-process [`Communicator`]: N devices are N executors on N threads of one
//! process (as XLA:CPU runs forced host devices), meeting at a shared hub
//! ([`collective_hub`](crate::collective_hub)). Starting a collective leaves a copy of the
//! device's bytes under a key (its collective number on that device and the participants)
//! and returns; finishing waits until the participants it needs have left their bytes (all
//! of them, or a permute's one source) and computes this device's result from them. A
//! blocking large all-reduce lends the device's own bytes instead of a copy
//! ([`collective_fold`](crate::collective_fold)). A device that fails marks the hub
//! failed, so no other device waits for it forever; a wait longer than the timeout is an
//! error too.
//!
//! Two things keep a large collective from costing more than its bytes: the buffers the
//! devices leave are reused (a spare whose last reader is gone takes the next message, so
//! a 1 MB message does not touch fresh pages on every step), and a large all-reduce is
//! folded once, by its participants together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hlo::ir::reducer::Reducer;
use plan::{CommError, CommOp, Communicator, Request, Ticket};

use codegen::kir::ScalarType;

use crate::collective_fold::reduce_shared;
use crate::collective_hub::{error, Hub, Key, Lent, Reduction, Sent, Slot, Wanted, PEER_FAILED};

/// How long a device waits at a collective for the others by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// An all-reduce of at least this many bytes is folded once, in shared chunks; a smaller
/// one by every participant alone (no second wait for a few microseconds of work).
const SHARED_REDUCE_MIN: usize = 64 << 10;

/// One device of an in-process run (see the module docs).
pub struct InProcess {
    replica: i64,
    partition: i64,
    partitions: i64,
    hub: Arc<Hub>,
    /// The number of collectives this device has started.
    seq: AtomicU64,
    /// The devices of the run (all in this process).
    devices: usize,
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

impl Op {
    /// What a participant needs before it can compute its result: a permute waits for its
    /// source alone (or for nobody), not for the whole scope.
    fn wanted(&self) -> Option<Wanted> {
        match self {
            Op::Permute(Some(s)) => Some(Wanted::From(*s)),
            Op::Permute(None) => None,
            _ => Some(Wanted::All),
        }
    }
}

impl InProcess {
    /// The devices of a run on `replicas` x `partitions` devices, in device-id order
    /// (device `r * partitions + p`), sharing one hub whose waits end after `timeout`.
    pub fn devices(replicas: i64, partitions: i64, timeout: Duration) -> Vec<Arc<InProcess>> {
        let devices = replicas.max(1) * partitions.max(1);
        let hub = Arc::new(Hub::new(devices as usize, timeout));
        (0..devices)
            .map(|id| {
                Arc::new(InProcess {
                    replica: id / partitions.max(1),
                    partition: id % partitions.max(1),
                    partitions: partitions.max(1),
                    hub: Arc::clone(&hub),
                    seq: AtomicU64::new(0),
                    devices: devices as usize,
                })
            })
            .collect()
    }

    /// Whether `message` is the consequence of another device's failure.
    pub fn is_peer_failure(message: &str) -> bool {
        message.contains(PEER_FAILED)
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
        self.post(request, false)
            .map(|pending| Ticket(Box::new(pending)))
    }

    fn finish(&self, ticket: Ticket, recv: &mut [u8]) -> Result<bool, CommError> {
        let pending = ticket
            .0
            .downcast::<Pending>()
            .map_err(|_| error("a ticket of another communicator".into()))?;
        self.complete(&pending, recv)
    }

    fn devices_in_process(&self) -> usize {
        self.devices
    }

    fn fail(&self, message: &str) {
        self.hub
            .fail(format!("device {}: {message}", self.device_id()));
    }

    /// A large all-reduce lends this device's bytes to the shared fold (no copy into the
    /// hub): `send` outlives the call, and the call returns only once no fold reads it.
    fn blocking(
        &self,
        op: CommOp<'_>,
        group: &[i64],
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<bool, CommError> {
        let request = Request { op, group, send };
        let lend = matches!(op, CommOp::AllReduce { .. })
            && send.len() >= SHARED_REDUCE_MIN
            && recv.len() == send.len();
        let pending = self.post(&request, lend)?;
        let done = self.complete(&pending, recv);
        if lend {
            if let Err(e) = &done {
                self.unlend(&pending.key, e);
            }
        }
        done
    }
}

impl InProcess {
    /// Leaves this device's bytes of `request` at the hub: a copy, or with `lend` the
    /// bytes themselves (see [`Communicator::blocking`]).
    fn post(&self, request: &Request<'_>, lend: bool) -> Result<Pending, CommError> {
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
        let sent = match lend {
            true => Sent::Lent(Lent::new(request.send)),
            false => {
                // The copy is made outside the lock, into a reused buffer.
                let mut bytes = self.hub.lock().take(request.send.len());
                bytes.extend_from_slice(request.send);
                Sent::Held(Arc::new(bytes))
            }
        };
        let mut s = self.hub.lock();
        Hub::failure(&s)?;
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
        slot.values[me] = Some(sent);
        // Only the sleepers this arrival releases are woken: a permute's targets of this
        // source, and everyone once the slot is complete.
        let complete = slot.values.iter().all(Option::is_some);
        self.hub.wake(&s, &key, |w| {
            w == Wanted::From(me) || (complete && w == Wanted::All)
        });
        Ok(Pending { key, me, op })
    }

    /// Waits for what `pending` needs and writes this device's result into `recv`.
    fn complete(&self, pending: &Pending, recv: &mut [u8]) -> Result<bool, CommError> {
        let shared = matches!(pending.op, Op::AllReduce(..)) && recv.len() >= SHARED_REDUCE_MIN;
        let Some(wanted) = pending.op.wanted() else {
            // A permute target nobody sends to: nothing to wait for.
            self.hub.lock().read_one(&pending.key);
            return Ok(false);
        };
        let (values, reduction) = self.wait(&pending.key, wanted, shared)?;
        match (&pending.op, reduction) {
            (Op::AllReduce(r, ty), Some(red)) => {
                let values: Vec<Sent> = values.into_iter().flatten().collect();
                reduce_shared(
                    &self.hub,
                    (&pending.key, self.device_id()),
                    &red,
                    (*r, *ty),
                    &values,
                    recv,
                )
            }
            _ => result(pending, &values, recv).map_err(error),
        }
    }

    /// The participants' bytes of collective `key` once `wanted` has arrived (the ones not
    /// wanted may be missing, as `None`), and with `shared` the collective's shared
    /// [`Reduction`] (made by the first reader).
    fn wait(&self, key: &Key, wanted: Wanted, shared: bool) -> Result<Values, CommError> {
        let hub = &self.hub;
        let mut s = hub.lock();
        let begin = Instant::now();
        loop {
            Hub::failure(&s)?;
            let slot = s
                .slots
                .get_mut(key)
                .ok_or_else(|| error("the collective's values vanished".into()))?;
            let ready = match wanted {
                Wanted::From(j) => slot.values.get(j).is_some_and(Option::is_some),
                _ => slot.values.iter().all(Option::is_some),
            };
            if ready {
                let out: Vec<Option<Sent>> = match wanted {
                    Wanted::From(j) => (0..slot.values.len())
                        .map(|k| match k == j {
                            true => slot.values[k].clone(),
                            false => None,
                        })
                        .collect(),
                    _ => slot.values.clone(),
                };
                let reduction = match shared {
                    true => Some(Arc::clone(slot.reduction.get_or_insert_with(|| {
                        Arc::new(Reduction::new(
                            out[0].as_ref().map_or(0, |v| v.bytes().len()),
                            out.len(),
                        ))
                    }))),
                    false => None,
                };
                s.read_one(key);
                return Ok((out, reduction));
            }
            s = hub.sleep(s, self.device_id(), (key, wanted), begin, |s| {
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

    /// After an error of a blocking all-reduce that lent this device's bytes: the run is
    /// marked failed (no participant starts reading them from now on) and the shared fold,
    /// if any participant reached it, is closed (none is still reading them).
    fn unlend(&self, key: &Key, e: &CommError) {
        if !e.peer_failed {
            self.hub
                .fail(format!("device {}: {}", self.device_id(), e.message));
        }
        let red = self
            .hub
            .lock()
            .slots
            .get(key)
            .and_then(|slot| slot.reduction.clone());
        if let Some(red) = red {
            red.close();
        }
    }
}

/// The bytes a participant waited for (the ones it does not need may be missing) and the
/// collective's shared reduction, if any.
type Values = (Vec<Option<Sent>>, Option<Arc<Reduction>>);

/// This participant's result from the participants' bytes it waited for.
fn result(p: &Pending, values: &[Option<Sent>], recv: &mut [u8]) -> Result<bool, String> {
    let expect = |want: usize, recv: &[u8]| match recv.len() == want {
        true => Ok(()),
        false => Err(format!(
            "a result of {} bytes for {want} bytes received",
            recv.len()
        )),
    };
    if let Op::Permute(source) = p.op {
        let Some(v) = source.and_then(|s| values.get(s)).and_then(Option::as_ref) else {
            return Ok(false);
        };
        expect(v.bytes().len(), recv)?;
        recv.copy_from_slice(v.bytes());
        return Ok(true);
    }
    let values: Vec<&[u8]> = values
        .iter()
        .map(|v| v.as_ref().map(Sent::bytes))
        .collect::<Option<_>>()
        .ok_or("a participant's bytes are missing")?;
    let n = values.len();
    let len = values[0].len();
    if values.iter().any(|v| v.len() != len) {
        return Err("participants sent buffers of different sizes".into());
    }
    let piece = |k: usize| -> Result<std::ops::Range<usize>, String> {
        match len % n {
            0 => Ok(k * (len / n)..(k + 1) * (len / n)),
            _ => Err(format!("{len} bytes do not split into {n} pieces")),
        }
    };
    match p.op {
        Op::AllReduce(r, ty) => {
            expect(len, recv)?;
            recv.copy_from_slice(values[0]);
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
        Op::Permute(_) | Op::Barrier => {}
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
                    let bytes = f32s(&v);
                    // Round 2: the odd devices post a copy and the even ones lend theirs.
                    match round == 2 && me % 2 == 1 {
                        true => {
                            let op = CommOp::AllReduce {
                                reducer: red,
                                ty: ScalarType::F32,
                            };
                            let request = Request {
                                op,
                                group: &group,
                                send: &bytes,
                            };
                            let t = d.start(&request).unwrap();
                            d.finish(t, &mut r).unwrap();
                        }
                        false => d
                            .all_reduce(&group, red, ScalarType::F32, &bytes, &mut r)
                            .unwrap(),
                    }
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

    /// A permute's target waits for its source alone: device 1 gets device 0's bytes
    /// while device 2 has not reached the permute (it waits for device 1 to finish first),
    /// and device 0, which nobody sends to, does not wait at all.
    #[test]
    fn a_permute_waits_for_its_source_alone() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = std::sync::Mutex::new(rx);
        let out = on_devices(3, |d| {
            let me = d.device_id();
            if me == 2 {
                rx.lock().unwrap().recv().unwrap();
            }
            let mut r = vec![0u8; 4];
            let got = d
                .collective_permute(&[0, 1, 2], &[(0, 1), (1, 2)], &f32s(&[me as f32]), &mut r)
                .unwrap();
            if me == 1 {
                tx.send(()).unwrap();
            }
            got.then_some(r)
        });
        assert_eq!(out, [None, Some(f32s(&[0.0])), Some(f32s(&[1.0]))]);
    }

    /// A device that fails while the others lend their bytes to a large all-reduce ends
    /// their waits with an error (their fold closed before they return).
    #[test]
    fn a_failure_during_a_lent_all_reduce_ends_the_others() {
        let len = SHARED_REDUCE_MIN;
        let out = on_devices(4, |d| {
            if d.device_id() == 3 {
                d.fail("boom");
                return Err(error("boom".into()));
            }
            let mut r = vec![0u8; len];
            d.all_reduce(
                &[0, 1, 2, 3],
                Reducer::Add,
                ScalarType::F32,
                &vec![0u8; len],
                &mut r,
            )
        });
        for e in &out[..3] {
            let e = e.clone().unwrap_err();
            assert!(e.peer_failed && e.message.contains("device 3: boom"), "{e}");
        }
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
