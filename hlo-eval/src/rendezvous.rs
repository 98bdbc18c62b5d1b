//! Where the devices of an N-device evaluation meet: each participant of a collective
//! leaves its value under a key (its collective's number on that device and the list of
//! participants) and waits until every participant has left one; each then reads all of
//! them, in participant order. A device that fails marks the rendezvous failed, so no
//! other device waits for it forever; a wait longer than the timeout is an error too.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use hlo::Literal;

/// The prefix of the message a device gets when another device failed first.
pub(crate) const PEER_FAILED: &str = "another device failed:";

/// Values left by the participants of one collective.
struct Slot {
    values: Vec<Option<Literal>>,
    readers_left: usize,
}

#[derive(Default)]
struct State {
    slots: HashMap<(u64, Vec<i64>), Slot>,
    failed: Option<String>,
}

/// The meeting point of all devices of one evaluation.
pub(crate) struct Rendezvous {
    state: Mutex<State>,
    arrived: Condvar,
    timeout: Duration,
}

impl Rendezvous {
    /// A rendezvous whose waits end in an error after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Rendezvous {
        Rendezvous {
            state: Mutex::new(State::default()),
            arrived: Condvar::new(),
            timeout,
        }
    }

    /// Marks the evaluation failed (device `who` gave `message`): every waiting and later
    /// exchange returns an error.
    pub(crate) fn fail(&self, who: i64, message: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.failed.is_none() {
            s.failed = Some(format!("device {who}: {message}"));
        }
        self.arrived.notify_all();
    }

    /// Leaves `value` as participant `me` (an index into `participants`) of collective
    /// number `seq`, and returns every participant's value in participant order.
    pub(crate) fn exchange(
        &self,
        seq: u64,
        participants: &[i64],
        me: usize,
        value: Literal,
    ) -> Result<Vec<Literal>, String> {
        let key = (seq, participants.to_vec());
        let n = participants.len();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = &s.failed {
            return Err(format!("{PEER_FAILED} {f}"));
        }
        let slot = s.slots.entry(key.clone()).or_insert_with(|| Slot {
            values: (0..n).map(|_| None).collect(),
            readers_left: n,
        });
        if slot.values.len() != n || slot.values[me].is_some() {
            return Err("two collectives met under one key (devices out of step)".to_string());
        }
        slot.values[me] = Some(value);
        self.arrived.notify_all();
        let start = Instant::now();
        loop {
            if let Some(f) = &s.failed {
                return Err(format!("{PEER_FAILED} {f}"));
            }
            let slot = s
                .slots
                .get_mut(&key)
                .ok_or("the collective's values vanished")?;
            if slot.values.iter().all(Option::is_some) {
                let out = slot.values.iter().flatten().cloned().collect();
                slot.readers_left -= 1;
                if slot.readers_left == 0 {
                    s.slots.remove(&key);
                }
                return Ok(out);
            }
            let left = self.timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                let missing: Vec<i64> = participants
                    .iter()
                    .zip(&slot.values)
                    .filter(|(_, v)| v.is_none())
                    .map(|(&d, _)| d)
                    .collect();
                let m = format!(
                    "waited {:?} for devices {missing:?} to reach the collective",
                    self.timeout
                );
                s.failed = Some(m.clone());
                self.arrived.notify_all();
                return Err(m);
            }
            s = self
                .arrived
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
