//! The poison mode (issue 32 item 8): with `HLOC_CHECK_BUFFERS=1` a run fills every
//! temporary and output allocation with a NaN pattern before the first thunk, and after
//! each thunk of the entry sequence (a loop or conditional is one thunk) checks that no
//! value still live changed unless the plan says the thunk writes it, then fills the bytes
//! of the values that died there (those no live value shares) with the pattern again.
//!
//! Why: buffer assignment puts values that are never live together in the same bytes, and
//! in-place kernels write over their dying operands. An offset or live range that is wrong
//! by one thunk usually still gives the right outputs, because the stale bytes happen to be
//! the right ones. Here a value overwritten while live fails the run at the thunk that did
//! it, and a value read after its bytes were handed on reads NaN (the tests compare the
//! outputs with the evaluator's).

use plan::memory::poison::{effects, live_after};
use plan::{BackendError, BufferId, Program};

use crate::launch::Env;
use crate::memory::Memory;

/// The environment variable that turns the mode on (any value but empty or `0`).
pub const VAR: &str = "HLOC_CHECK_BUFFERS";

/// The fill: a quiet NaN read as `f64`, as both `f32` halves and as every 16-bit float
/// (`0x7ff8` is a NaN in `f16` and `bf16`), so a float kernel reading freed bytes
/// produces NaN rather than a plausible number.
const POISON: u64 = 0x7ff8_0001_7ff8_0001;

thread_local! {
    /// Set by [`with_checks`] for the runs its closure makes on this thread.
    static FORCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this run checks its buffers: [`VAR`] is set (read at each run, so a user can
/// turn it on for one process without recompiling), or the run is inside
/// [`with_checks`] on this thread.
pub fn enabled() -> bool {
    FORCED.with(|f| f.get()) || std::env::var_os(VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `f` with the poison mode on for every run it starts on this thread (a test's way
/// to turn it on without setting the environment of the whole test process).
pub fn with_checks<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the flag as it was, also when `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.with(|f| f.set(self.0));
        }
    }
    let _restore = Restore(FORCED.with(|f| f.replace(true)));
    f()
}

/// Where a buffer's bytes lie during this run: start address and length.
fn range(p: &Program, mem: &[Memory<'_>], b: BufferId) -> (usize, usize) {
    let buf = &p.buffers[b];
    let m = &mem[buf.allocation];
    let len = (buf.bytes as usize).min(m.len());
    (m.bytes(len).as_ptr() as usize, len)
}

/// Whether buffer `b` lies in writable memory: read-only memory (arguments, constants)
/// is left out, since nothing can write it.
fn writable(p: &Program, mem: &[Memory<'_>], b: BufferId) -> bool {
    mem.get(p.buffers[b].allocation)
        .is_some_and(|m| !matches!(m, Memory::Borrowed(_)))
}

/// A fast hash of a buffer's bytes (not cryptographic: it only has to notice a kernel
/// writing where it should not).
fn hash(p: &Program, mem: &[Memory<'_>], b: BufferId) -> u64 {
    let buf = &p.buffers[b];
    let m = &mem[buf.allocation];
    let bytes = m.bytes((buf.bytes as usize).min(m.len()));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    for &byte in words.remainder() {
        h = (h.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h
}

/// Fills `[start, end)` (addresses inside allocation `a`'s writable memory) with
/// [`POISON`], byte by byte of the pattern so any alignment works.
fn fill(mem: &mut [Memory<'_>], a: usize, start: usize, end: usize) {
    let Some(bytes) = mem[a].bytes_mut() else {
        return;
    };
    let base = bytes.as_ptr() as usize;
    let (Some(from), Some(to)) = (start.checked_sub(base), end.checked_sub(base)) else {
        return;
    };
    let pattern = POISON.to_ne_bytes();
    let to = to.min(bytes.len());
    for (k, x) in bytes.iter_mut().enumerate().take(to).skip(from) {
        *x = pattern[k % 8];
    }
}

/// Runs `p`'s thunks as [`crate::exec::run_thunks`] does, checking and poisoning around
/// each entry thunk (see the module's comment). The first live value a thunk changes
/// without writing it ends the run with an error naming both.
pub(crate) fn run_checked(
    p: &Program,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let effects = effects(p);
    for (a, alloc) in p.allocations.iter().enumerate() {
        if matches!(
            alloc.kind,
            plan::AllocationKind::Temp | plan::AllocationKind::Output(_)
        ) {
            if let Some(bytes) = mem[a].bytes_mut() {
                let pattern = POISON.to_ne_bytes();
                for (k, x) in bytes.iter_mut().enumerate() {
                    *x = pattern[k % 8];
                }
            }
        }
    }
    // The hash of every value a later thunk reads, as last written (see
    // `Effects::holds_value_after`: a buffer written afresh before its next read is left
    // out until then).
    let mut known: Vec<Option<u64>> = vec![None; p.buffers.len()];
    for (b, buf) in p.buffers.iter().enumerate() {
        if buf.defined_at.is_none() && buf.last_use.is_some() && writable(p, mem, b) {
            known[b] = Some(hash(p, mem, b));
        }
    }
    for (i, t) in p.thunks.iter().enumerate() {
        crate::exec::run_one_entry(p, t, env, mem)?;
        let step = &effects.steps[i];
        for &b in &step.written {
            known[b] = None;
        }
        // A value whose last reader this thunk is may be written over by it (an in-place
        // kernel's dying operand, a loop's state over its dying initial value).
        for (b, k) in known.iter().enumerate() {
            let Some(before) = *k else {
                continue;
            };
            if live_after(p, b, i) && hash(p, mem, b) != before {
                let buf = &p.buffers[b];
                return Err(BackendError::Internal(format!(
                    "{VAR}: thunk {i} ({}) changed %{} (defined at {}, last read at {}), \
                     a live value it does not write",
                    plan::profile_label(p, t),
                    buf.name,
                    buf.defined_at
                        .map_or("the start".to_string(), |d| format!("thunk {d}")),
                    buf.last_use
                        .map_or("-".to_string(), |l| format!("thunk {l}")),
                )));
            }
        }
        for (b, k) in known.iter_mut().enumerate() {
            if k.is_some() && !effects.holds_value_after(p, b, i) {
                *k = None;
            }
        }
        for &b in &step.written {
            if effects.holds_value_after(p, b, i) && writable(p, mem, b) {
                known[b] = Some(hash(p, mem, b));
            }
        }
        // Bytes of a value still live (even one written afresh before its next read)
        // are never poisoned.
        let live: Vec<(usize, usize)> = (0..p.buffers.len())
            .filter(|&b| live_after(p, b, i) && writable(p, mem, b))
            .map(|b| {
                let (s, n) = range(p, mem, b);
                (s, s + n)
            })
            .collect();
        for &b in &step.dying {
            if live_after(p, b, i) || !writable(p, mem, b) {
                continue;
            }
            let (s, n) = range(p, mem, b);
            let a = p.buffers[b].allocation;
            for (from, to) in gaps((s, s + n), &live) {
                fill(mem, a, from, to);
            }
        }
    }
    Ok(())
}

/// The parts of `[start, end)` that none of `taken` covers, in order.
fn gaps((start, end): (usize, usize), taken: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut cut: Vec<(usize, usize)> = taken
        .iter()
        .filter(|&&(s, e)| s < end && e > start && s < e)
        .copied()
        .collect();
    cut.sort_unstable();
    let mut out = Vec::new();
    let mut at = start;
    for (s, e) in cut {
        if s > at {
            out.push((at, s));
        }
        at = at.max(e);
    }
    if at < end {
        out.push((at, end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::gaps;

    #[test]
    fn gaps_leave_out_the_live_ranges() {
        assert_eq!(gaps((0, 100), &[]), vec![(0, 100)]);
        assert_eq!(
            gaps((0, 100), &[(10, 20), (15, 30), (90, 120), (200, 300)]),
            vec![(0, 10), (30, 90)]
        );
        assert_eq!(gaps((10, 20), &[(0, 50)]), Vec::<(usize, usize)>::new());
    }
}
