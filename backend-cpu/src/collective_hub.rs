//! The hub where the devices of an in-process run meet ([`InProcess`]): the bytes each
//! participant of a collective left, kept under the collective's key until every
//! participant has read what it needs, the spare buffers reused for the next messages, and
//! the waits.
//!
//! A device that must wait sleeps on its own condition variable, saying what it waits for
//! (every participant's bytes, one source's, or a shared reduction's end); an arrival wakes
//! only the devices it can release. With one condition variable for the hub, every arrival
//! or finished reduction woke every sleeping device, which then queued on the hub's lock
//! to find it had nothing to do: on 2 cores with 8 device threads a collective cost a
//! storm of futex wake-ups and context switches.
//!
//! [`InProcess`]: crate::inprocess::InProcess
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use plan::CommError;

/// The prefix of the message a device gets when another device failed first.
pub(crate) const PEER_FAILED: &str = "another device failed:";

/// How many retired message buffers the hub keeps for reuse.
pub(crate) const SPARE_MAX: usize = 64;

/// A collective's key: its number on each participant and the participants.
pub(crate) type Key = (u64, Vec<i64>);

pub(crate) fn error(message: String) -> CommError {
    CommError {
        peer_failed: message.contains(PEER_FAILED),
        message,
    }
}

/// The bytes one participant left at a collective.
#[derive(Clone)]
pub(crate) enum Sent {
    /// A copy the hub holds (its buffer reused once no reader holds it).
    Held(Arc<Vec<u8>>),
    /// The sender's own memory, lent for a blocking all-reduce: read only by the shared
    /// fold, which the sender outwaits before it returns (see [`Lent`]).
    Lent(Lent),
}

/// Bytes a blocked sender lends the other participants of its collective.
#[derive(Clone, Copy)]
pub(crate) struct Lent {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a `Lent` is only read through [`Sent::bytes`] while its sender is blocked in the
// collective that lent it and cannot write or free the memory: the sender returns only once
// every fold of that collective's chunks is done, or, on an error, once it has closed the
// fold to new claims and no participant is inside one (`Reduction::close`).
unsafe impl Send for Lent {}
// SAFETY: as for `Send`: shared reads of memory nobody writes meanwhile.
unsafe impl Sync for Lent {}

impl Lent {
    /// Lends `bytes`; the caller keeps them alive and untouched while any other participant
    /// may read them (see the type's safety note).
    pub(crate) fn new(bytes: &[u8]) -> Lent {
        Lent {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }
}

impl Sent {
    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Sent::Held(b) => b,
            // SAFETY: the lender is blocked until no one reads them (see `Lent`).
            Sent::Lent(l) => unsafe { std::slice::from_raw_parts(l.ptr, l.len) },
        }
    }
}

/// The bytes the participants of one collective left.
pub(crate) struct Slot {
    pub values: Vec<Option<Sent>>,
    /// Participants that have not yet read what they need; the last one removes the slot.
    pub readers_left: usize,
    /// The shared fold of a large all-reduce, made by its first reader.
    pub reduction: Option<Arc<Reduction>>,
}

/// What a sleeping device waits for at collective `key`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Wanted {
    /// Every participant's bytes.
    All,
    /// The bytes of the participant at this index of the group (a permute's source).
    From(usize),
    /// The end of the collective's shared reduction.
    Reduced,
}

#[derive(Default)]
pub(crate) struct HubState {
    pub slots: HashMap<Key, Slot>,
    pub failed: Option<String>,
    /// Retired buffers (messages and result chunks), reused once their last reader is gone.
    pub spare: Vec<Arc<Vec<u8>>>,
    /// What each sleeping device (by global id) waits for.
    asleep: Vec<Option<(Key, Wanted)>>,
}

impl HubState {
    /// A buffer of at least `len` bytes' capacity nobody else holds, emptied, if a spare one
    /// is; else a new one.
    pub(crate) fn take(&mut self, len: usize) -> Vec<u8> {
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
    pub(crate) fn retire(&mut self, buffers: impl IntoIterator<Item = Arc<Vec<u8>>>) {
        self.spare.extend(buffers);
        if self.spare.len() > SPARE_MAX {
            let extra = self.spare.len() - SPARE_MAX;
            self.spare.drain(..extra);
        }
    }

    /// Removes collective `key`'s slot once its last reader is done, its held buffers kept.
    pub(crate) fn read_one(&mut self, key: &Key) {
        let Some(slot) = self.slots.get_mut(key) else {
            return;
        };
        slot.readers_left -= 1;
        if slot.readers_left == 0 {
            if let Some(done) = self.slots.remove(key) {
                self.retire(done.values.into_iter().flatten().filter_map(|v| match v {
                    Sent::Held(b) => Some(b),
                    Sent::Lent(_) => None,
                }));
            }
        }
    }
}

/// Where the devices of one run meet.
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// One per device: a device asleep at a collective waits on its own.
    wake: Vec<Condvar>,
    timeout: Duration,
}

impl Hub {
    /// The hub of `devices` devices whose waits end after `timeout`.
    pub(crate) fn new(devices: usize, timeout: Duration) -> Hub {
        Hub {
            state: Mutex::new(HubState {
                asleep: vec![None; devices],
                ..HubState::default()
            }),
            wake: (0..devices).map(|_| Condvar::new()).collect(),
            timeout,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the participants of `key` asleep for what `released` says is now there.
    pub(crate) fn wake(&self, s: &HubState, key: &Key, released: impl Fn(Wanted) -> bool) {
        for &d in &key.1 {
            if let Some(Some((k, w))) = s.asleep.get(d as usize) {
                if k == key && released(*w) {
                    self.wake[d as usize].notify_one();
                }
            }
        }
    }

    /// Records that a device failed (unless one did before) and wakes every device.
    pub(crate) fn fail(&self, message: String) {
        let mut s = self.lock();
        if s.failed.is_none() {
            s.failed = Some(message);
        }
        for w in &self.wake {
            w.notify_one();
        }
    }

    /// Sleeps device `me` until woken for `wanted` at `key`, for what is left of the
    /// timeout since `begin`; once it has passed, records the failure (`what` says what
    /// was waited for) so that the other devices stop too, and returns it.
    pub(crate) fn sleep<'a>(
        &self,
        s: MutexGuard<'a, HubState>,
        me: i64,
        (key, wanted): (&Key, Wanted),
        begin: Instant,
        what: impl FnOnce(&HubState) -> String,
    ) -> Result<MutexGuard<'a, HubState>, CommError> {
        let mut s = s;
        let left = self.timeout.saturating_sub(begin.elapsed());
        if left.is_zero() {
            let m = format!("waited {:?} for {}", self.timeout, what(&s));
            s.failed = Some(m.clone());
            for w in &self.wake {
                w.notify_one();
            }
            return Err(error(m));
        }
        let me = me as usize;
        if me >= s.asleep.len() {
            return Err(error(format!("device {me} is not one of the run's")));
        }
        s.asleep[me] = Some((key.clone(), wanted));
        let mut s = self.wake[me]
            .wait_timeout(s, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        s.asleep[me] = None;
        Ok(s)
    }

    /// The error a device gets once another failed, if one did.
    pub(crate) fn failure(s: &HubState) -> Result<(), CommError> {
        match &s.failed {
            Some(f) => Err(error(format!("{PEER_FAILED} {f}"))),
            None => Ok(()),
        }
    }
}

/// The smallest chunk of a shared reduction, in bytes (a multiple of every element width).
const REDUCE_CHUNK_MIN: usize = 32 << 10;

/// A claim number past every chunk: a closed fold hands out no more.
const CLOSED: usize = usize::MAX / 2;

/// A large all-reduce's result, folded once in chunks its participants claim
/// ([`collective_fold`](crate::collective_fold)).
pub(crate) struct Reduction {
    pub chunk: usize,
    pub parts: Vec<OnceLock<Arc<Vec<u8>>>>,
    pub next: AtomicUsize,
    pub done: AtomicUsize,
    /// Participants between their claim and the end of that chunk's fold (the readers of
    /// the participants' bytes).
    pub folding: AtomicUsize,
    /// Participants that have copied the result; the last one retires the parts.
    pub copied: AtomicUsize,
}

impl Reduction {
    /// The chunks of a `len`-byte result folded by up to `members` participants: about one
    /// chunk each, none under [`REDUCE_CHUNK_MIN`] bytes but the last.
    pub(crate) fn new(len: usize, members: usize) -> Reduction {
        let even = len.div_ceil(members.max(1)).div_ceil(64) * 64;
        let chunk = even.max(REDUCE_CHUNK_MIN);
        Reduction {
            chunk,
            parts: (0..len.div_ceil(chunk).max(1))
                .map(|_| OnceLock::new())
                .collect(),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            folding: AtomicUsize::new(0),
            copied: AtomicUsize::new(0),
        }
    }

    /// Hands out no more chunks and waits until no participant is folding one: after this,
    /// nobody reads the participants' bytes through this fold.
    pub(crate) fn close(&self) {
        self.next.store(CLOSED, Ordering::SeqCst);
        while self.folding.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
    }

    pub(crate) fn all_done(&self) -> bool {
        self.done.load(Ordering::Acquire) == self.parts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The last reader removes a slot; held values become spares, lent ones do not.
    #[test]
    fn the_last_reader_retires_held_values_only() {
        let mut s = HubState::default();
        let lent = [1u8, 2, 3];
        let key: Key = (0, vec![0, 1]);
        s.slots.insert(
            key.clone(),
            Slot {
                values: vec![
                    Some(Sent::Held(Arc::new(vec![9u8; 3]))),
                    Some(Sent::Lent(Lent::new(&lent))),
                ],
                readers_left: 2,
                reduction: None,
            },
        );
        s.read_one(&key);
        assert!(s.slots.contains_key(&key) && s.spare.is_empty());
        s.read_one(&key);
        assert!(!s.slots.contains_key(&key));
        assert_eq!(s.spare.len(), 1);
        assert_eq!(&s.spare[0][..], &[9u8; 3]);
    }
}
