//! The in-process [`Communicator`]: N devices are N executors on N threads of one
//! process (as XLA:CPU runs forced host devices), meeting at a shared hub. Starting a
//! collective leaves a copy of the device's bytes under a key (its collective number on
//! that device and the participants) and returns; finishing waits until every participant
//! has left its bytes and computes this device's result from them. A device that fails
//! marks the hub failed, so no other device waits for it forever; a wait longer than the
//! timeout is an error too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hlo::ir::reducer::Reducer;
use plan::{CommError, CommOp, Communicator, Request, Ticket};

use codegen::kir::ScalarType;

/// How long a device waits at a collective for the others by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The prefix of the message a device gets when another device failed first.
const PEER_FAILED: &str = "another device failed:";

type Key = (u64, Vec<i64>);

/// The bytes the participants of one collective left.
struct Slot {
    values: Vec<Option<Arc<Vec<u8>>>>,
    readers_left: usize,
}

#[derive(Default)]
struct HubState {
    slots: HashMap<Key, Slot>,
    failed: Option<String>,
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
        let mut s = self.hub.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = &s.failed {
            return Err(error(format!("{PEER_FAILED} {f}")));
        }
        let slot = s.slots.entry(key.clone()).or_insert_with(|| Slot {
            values: (0..n).map(|_| None).collect(),
            readers_left: n,
        });
        if slot.values.len() != n || slot.values[me].is_some() {
            return Err(error(
                "two collectives met under one key (devices out of step)".into(),
            ));
        }
        slot.values[me] = Some(Arc::new(request.send.to_vec()));
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
        let values = self.wait(&pending.key)?;
        result(&pending, &values, recv).map_err(error)
    }

    fn fail(&self, message: &str) {
        let mut s = self.hub.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.failed.is_none() {
            s.failed = Some(format!("device {}: {message}", self.device_id()));
        }
        self.hub.arrived.notify_all();
    }
}

impl InProcess {
    /// Every participant's bytes of collective `key`, once all have left them.
    fn wait(&self, key: &Key) -> Result<Vec<Arc<Vec<u8>>>, CommError> {
        let hub = &self.hub;
        let mut s = hub.state.lock().unwrap_or_else(|e| e.into_inner());
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
                slot.readers_left -= 1;
                if slot.readers_left == 0 {
                    s.slots.remove(key);
                }
                return Ok(out);
            }
            let left = hub.timeout.saturating_sub(begin.elapsed());
            if left.is_zero() {
                let missing: Vec<i64> = key
                    .1
                    .iter()
                    .zip(&slot.values)
                    .filter(|(_, v)| v.is_none())
                    .map(|(&d, _)| d)
                    .collect();
                let m = format!(
                    "waited {:?} for devices {missing:?} to reach the collective",
                    hub.timeout
                );
                s.failed = Some(m.clone());
                hub.arrived.notify_all();
                return Err(error(m));
            }
            s = hub
                .arrived
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
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
