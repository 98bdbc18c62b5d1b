//! A large all-reduce of an in-process run folded once, by its participants together: each
//! claims chunks of the result (as a reduce-scatter would) until none are left, folds each
//! from every participant's bytes into a chunk buffer of the hub, then waits until every
//! chunk is done and copies the whole result. Each device folding every value itself did
//! the reduction N times over, on a machine with fewer cores than devices.
//!
//! The participants' bytes may be their own memory, lent for a blocking all-reduce
//! ([`Sent::Lent`]): the fold is then their only reader, and a lender returns only once no
//! fold reads them (the chunks all done, or, on an error, the fold closed to new claims and
//! no participant inside one). That spares every device its copy of the message into the
//! hub: half of a 1 MB all-reduce's samples were those copies and the copies back out.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use codegen::kir::ScalarType;
use hlo::ir::reducer::Reducer;
use plan::CommError;

use crate::collective_hub::{error, Hub, Key, Reduction, Sent, Wanted};

/// Leaves the folding count however a fold ends.
struct Folding<'a>(&'a AtomicUsize);

impl Drop for Folding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One participant (global id `me`) of collective `key`'s shared all-reduce: folds the
/// chunks it claims, waits for the others' and copies the whole result into `recv`. On
/// an error, the fold is closed first (see [`Reduction::close`]).
pub(crate) fn reduce_shared(
    hub: &Hub,
    (key, me): (&Key, i64),
    red: &Reduction,
    (r, ty): (Reducer, ScalarType),
    values: &[Sent],
    recv: &mut [u8],
) -> Result<bool, CommError> {
    let done = fold_and_copy(hub, (key, me), red, (r, ty), values, recv);
    if done.is_err() {
        red.close();
    }
    done
}

fn fold_and_copy(
    hub: &Hub,
    (key, me): (&Key, i64),
    red: &Reduction,
    (r, ty): (Reducer, ScalarType),
    values: &[Sent],
    recv: &mut [u8],
) -> Result<bool, CommError> {
    let len = recv.len();
    if values.iter().any(|v| v.bytes().len() != len) {
        return Err(error("participants sent buffers of different sizes".into()));
    }
    let count = red.parts.len();
    loop {
        red.folding.fetch_add(1, Ordering::SeqCst);
        let _folding = Folding(&red.folding);
        let c = red.next.fetch_add(1, Ordering::SeqCst);
        if c >= count {
            break;
        }
        let range = c * red.chunk..((c + 1) * red.chunk).min(len);
        let mut part = hub.lock().take(range.len());
        part.extend_from_slice(&values[0].bytes()[range.clone()]);
        for v in &values[1..] {
            crate::reduce_bytes::combine(r, ty, &mut part, &v.bytes()[range.clone()])
                .map_err(error)?;
        }
        // Each chunk is claimed once, so it is set once.
        let _ = red.parts[c].set(Arc::new(part));
        if red.done.fetch_add(1, Ordering::AcqRel) + 1 == count {
            // Under the lock, so a waiter between its check and its sleep is not missed.
            let s = hub.lock();
            hub.wake(&s, key, |w| w == Wanted::Reduced);
        }
    }
    let begin = Instant::now();
    let mut s = hub.lock();
    while !red.all_done() {
        Hub::failure(&s)?;
        s = hub.sleep(s, me, (key, Wanted::Reduced), begin, |_| {
            "the devices' shared reduction".into()
        })?;
    }
    drop(s);
    for (c, part) in red.parts.iter().enumerate() {
        let part = part
            .get()
            .ok_or_else(|| error("a chunk of the reduction is missing".into()))?;
        recv[c * red.chunk..c * red.chunk + part.len()].copy_from_slice(part);
    }
    if red.copied.fetch_add(1, Ordering::AcqRel) + 1 == values.len() {
        let parts: Vec<Arc<Vec<u8>>> = red.parts.iter().filter_map(|p| p.get().cloned()).collect();
        hub.lock().retire(parts);
    }
    Ok(true)
}
