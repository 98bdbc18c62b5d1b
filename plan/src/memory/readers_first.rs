//! Readers moved before an in-place kernel, so that its operand dies there.
//!
//! [`super::in_place`] lets a kernel write its output over an operand of the same bytes
//! only where the operand dies at that kernel. The schedule may put another reader of the
//! operand after it: in `moco_infonce_queue` the loss reads one logit per row (a
//! `take_along_axis` at a runtime index) after the long GEMM, so the 128 MiB logits stayed
//! live beside the GEMM's 128 MiB lhs, which the kernel before the GEMM writes element for
//! element from them (XLA reads the logit first and writes the lhs over the logits). When
//! every later reader is a kernel that may run just before the in-place kernel (the thunks
//! it moves past neither write a buffer it names nor name one it writes) and what those
//! readers write is small beside the operand, they move there, in their order: the same
//! values are read and written, and the operand dies at the in-place kernel.

use codegen::kir::{Access, Kernel};

use super::in_place::Candidate;
use crate::thunk_names::{each_named, each_touched};
use crate::{Buffer, BufferId, Thunk};

/// Most readers moved for one in-place kernel.
pub const MAX_MOVED: usize = 4;

/// The moved readers write at most the operand's bytes over this: what they write now
/// lives from the in-place kernel on, so that must cost little beside the operand.
pub const MOVED_BYTES_DIVISOR: u64 = 8;

/// For every candidate (see the module docs) whose kernel is a thunk of the entry
/// sequence `thunks` and whose operand, a temporary of the output's bytes, is read after
/// it only by at most [`MAX_MOVED`] kernels that may move before it and write at most
/// `1 / MOVED_BYTES_DIVISOR` of the operand's bytes, moves those readers to just before
/// the kernel. `buffers`' `defined_at` and `last_use` (entry thunk indices) follow the
/// moved thunks. Returns how many candidates' operands now die at their kernels.
pub fn readers_first(
    thunks: &mut Vec<Thunk>,
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    candidates: &[Candidate],
) -> usize {
    let mut freed = 0;
    for c in candidates {
        let Some((t, readers)) = movable_readers(thunks, buffers, kernels, c) else {
            continue;
        };
        move_before(thunks, buffers, kernels, t, &readers, c.operand);
        freed += 1;
    }
    freed
}

/// The candidate's kernel thunk and the thunks after it that read its operand, when they
/// may all move before it (see [`readers_first`]).
fn movable_readers(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    c: &Candidate,
) -> Option<(usize, Vec<usize>)> {
    let (o, x) = (buffers.get(c.output)?, buffers.get(c.operand)?);
    let t = o.defined_at?;
    let Some(Thunk::Kernel { kernel, args, .. }) = thunks.get(t) else {
        return None;
    };
    let last = x.last_use.filter(|&l| l > t && l != usize::MAX)?;
    let params = &kernels.get(*kernel)?.buffers;
    let plain = *kernel == c.kernel
        && c.output != c.operand
        && o.bytes == x.bytes
        && o.allocation == usize::MAX
        && x.allocation == usize::MAX
        && x.defined_at.is_some_and(|d| d < t)
        && args.len() == params.len()
        && args.contains(&c.operand)
        && args
            .iter()
            .zip(params)
            .all(|(&a, p)| a != c.operand || p.access == Access::In);
    if !plain || last >= thunks.len() {
        return None;
    }
    let readers: Vec<usize> = (t + 1..=last)
        .filter(|&u| touches(&thunks[u], kernels, c.operand))
        .collect();
    if readers.is_empty() || readers.len() > MAX_MOVED || readers.last() != Some(&last) {
        return None;
    }
    let mut written = 0u64;
    for &u in &readers {
        if !matches!(thunks[u], Thunk::Kernel { .. }) {
            return None;
        }
        each_named(&thunks[u], kernels, &mut |b, w| {
            if w && buffers.get(b).is_some_and(|x| x.defined_at == Some(u)) {
                written = written.saturating_add(buffers[b].bytes);
            } else if w {
                // Writes a buffer defined elsewhere: not moved.
                written = u64::MAX;
            }
        });
        let between = (t..u).filter(|i| !readers.contains(i));
        if !may_run_before(thunks, kernels, u, between) {
            return None;
        }
    }
    (written <= x.bytes / MOVED_BYTES_DIVISOR).then_some((t, readers))
}

/// Whether thunk `t` touches buffer `b` (reads or writes it; a kernel parameter its
/// kernel never loads is no touch).
fn touches(t: &Thunk, kernels: &[Kernel], b: BufferId) -> bool {
    let mut hit = false;
    each_touched(t, kernels, &mut |x, _| hit |= x == b);
    hit
}

/// Whether thunk `u` may run before the thunks `between`: each is a leaf thunk (a kernel,
/// a GEMM, a streamed GEMM, a copy or a library call) that neither writes a buffer `u`
/// names nor names one `u` writes.
fn may_run_before(
    thunks: &[Thunk],
    kernels: &[Kernel],
    u: usize,
    between: impl Iterator<Item = usize>,
) -> bool {
    let mut named: Vec<(BufferId, bool)> = Vec::new();
    each_named(&thunks[u], kernels, &mut |x, w| named.push((x, w)));
    between.into_iter().all(|i| {
        let t = &thunks[i];
        let leaf = matches!(
            t,
            Thunk::Kernel { .. }
                | Thunk::Gemm { .. }
                | Thunk::StreamedGemm { .. }
                | Thunk::Copy { .. }
                | Thunk::Library { .. }
        );
        let mut apart = true;
        each_named(t, kernels, &mut |x, w| {
            apart &= !named.iter().any(|&(y, wy)| y == x && (w || wy));
        });
        leaf && apart
    })
}

/// Moves thunks `readers` (ascending, all after `t`) to just before thunk `t`, in their
/// order, and renumbers the live ranges: definitions move with their thunks; a buffer a
/// moved thunk names (and `operand`) is last used at the latest thunk that touches it now
/// (or where its old last use moved, if that thunk stayed), any other where its last use
/// moved.
fn move_before(
    thunks: &mut Vec<Thunk>,
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    t: usize,
    readers: &[usize],
    operand: BufferId,
) {
    let n = thunks.len();
    let mut order: Vec<usize> = (0..t).collect();
    order.extend_from_slice(readers);
    order.extend((t..n).filter(|i| !readers.contains(i)));
    let mut new_at = vec![0; n];
    for (new, &old) in order.iter().enumerate() {
        new_at[old] = new;
    }
    let mut named: Vec<BufferId> = vec![operand];
    for &u in readers {
        each_named(&thunks[u], kernels, &mut |b, _| named.push(b));
    }
    let mut old: Vec<Option<Thunk>> = std::mem::take(thunks).into_iter().map(Some).collect();
    *thunks = order.iter().filter_map(|&i| old[i].take()).collect();
    let mut touched_last: std::collections::HashMap<BufferId, usize> = Default::default();
    for (i, th) in thunks.iter().enumerate() {
        each_touched(th, kernels, &mut |b, _| {
            if named.contains(&b) {
                touched_last.insert(b, i);
            }
        });
    }
    let map = |x: usize| new_at.get(x).copied().unwrap_or(x);
    for (b, buf) in buffers.iter_mut().enumerate() {
        let old_last = buf.last_use;
        buf.defined_at = buf.defined_at.map(map);
        buf.last_use = match old_last {
            Some(l) if l != usize::MAX && named.contains(&b) => {
                let kept = (!readers.contains(&l)).then(|| map(l));
                let last = touched_last.get(&b).copied().max(kept).or(buf.defined_at);
                last.or(Some(map(l)))
            }
            Some(l) if l != usize::MAX => Some(map(l)),
            other => other,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(kernel: usize, args: Vec<BufferId>) -> Thunk {
        Thunk::Kernel {
            kernel,
            args,
            blocks: 1,
            elements: 1,
        }
    }

    fn buffer(bytes: u64, defined_at: Option<usize>, last_use: Option<usize>) -> Buffer {
        Buffer {
            name: String::new(),
            bytes,
            allocation: usize::MAX,
            defined_at,
            last_use,
        }
    }

    /// Kernel 0 reads b0 and writes b1; kernel 1 reads b0, b1 and writes b2; kernel 2
    /// names b0 and b1 but loads only b1, and writes b2.
    fn kernels() -> Vec<Kernel> {
        let head = "kernel k blocks=1 (d0 = block)\n";
        let one = format!("{head}  b0 in x: f32[16]{{0}}\n  b1 out y: f32[16]{{0}}\n  for s0 in [0, 15] {{\n    let v0: f32 = b0[s0]\n    b1[s0] = v0\n  }}\n");
        let two = format!("{head}  b0 in x: f32[16]{{0}}\n  b1 in z: f32[16]{{0}}\n  b2 out y: f32[16]{{0}}\n  for s0 in [0, 15] {{\n    let v0: f32 = b0[s0]\n    let v1: f32 = b1[s0]\n    let v2: f32 = add(v0, v1)\n    b2[s0] = v2\n  }}\n");
        let unread = format!("{head}  b0 in x: f32[16]{{0}}\n  b1 in z: f32[16]{{0}}\n  b2 out y: f32[16]{{0}}\n  for s0 in [0, 15] {{\n    let v1: f32 = b1[s0]\n    b2[s0] = v1\n  }}\n");
        [one, two, unread]
            .iter()
            .map(|t| codegen::kir::parse_kernel(t).unwrap_or_else(|e| panic!("{e:?}\n{t}")))
            .collect()
    }

    /// 0: x (b1) from the parameter b0; 1: the in-place candidate y (b2) over x;
    /// 2: z (b3) from y; 3: a small reader r (b4) of x and the parameter; 4: the output
    /// (b5) from z and r.
    fn program(reader_bytes: u64) -> (Vec<Thunk>, Vec<Buffer>) {
        let thunks = vec![
            kernel(0, vec![0, 1]),
            kernel(0, vec![1, 2]),
            kernel(0, vec![2, 3]),
            kernel(1, vec![1, 0, 4]),
            kernel(1, vec![3, 4, 5]),
        ];
        let bufs = vec![
            buffer(64, None, Some(3)),
            buffer(64, Some(0), Some(3)),
            buffer(64, Some(1), Some(2)),
            buffer(64, Some(2), Some(4)),
            buffer(reader_bytes, Some(3), Some(4)),
            buffer(64, Some(4), Some(usize::MAX)),
        ];
        (thunks, bufs)
    }

    const CANDIDATE: Candidate = Candidate {
        kernel: 0,
        output: 2,
        operand: 1,
    };

    #[test]
    fn a_later_small_reader_moves_before_the_in_place_kernel() {
        let (mut thunks, mut bufs) = program(8);
        let freed = readers_first(&mut thunks, &mut bufs, &kernels(), &[CANDIDATE]);
        assert_eq!(freed, 1);
        assert_eq!(thunks[1], kernel(1, vec![1, 0, 4]));
        assert_eq!(thunks[2], kernel(0, vec![1, 2]));
        let ranges: Vec<_> = bufs.iter().map(|b| (b.defined_at, b.last_use)).collect();
        // x now dies at the in-place kernel; r lives from its new place to the output.
        assert_eq!(ranges[1], (Some(0), Some(2)));
        assert_eq!(ranges[4], (Some(1), Some(4)));
        assert_eq!(ranges[2], (Some(2), Some(3)));
        assert_eq!(ranges[3], (Some(3), Some(4)));
        assert_eq!(ranges[5], (Some(4), Some(usize::MAX)));
        assert_eq!(ranges[0], (None, Some(1)));
    }

    #[test]
    fn not_a_reader_that_writes_much_or_reads_what_comes_after() {
        // Its output as large as the operand: keeping it live costs what sharing saves.
        let (mut thunks, mut bufs) = program(64);
        let before = thunks.clone();
        assert_eq!(
            readers_first(&mut thunks, &mut bufs, &kernels(), &[CANDIDATE]),
            0
        );
        assert_eq!(thunks, before);
        // It reads y, which the candidate writes.
        let (mut thunks, mut bufs) = program(8);
        thunks[3] = kernel(1, vec![1, 2, 4]);
        bufs[2].last_use = Some(3);
        let before = thunks.clone();
        assert_eq!(
            readers_first(&mut thunks, &mut bufs, &kernels(), &[CANDIDATE]),
            0
        );
        assert_eq!(thunks, before);
    }

    #[test]
    fn a_parameter_never_loaded_is_no_reader() {
        // Thunk 3 names x but loads only the parameter: x already dies at the candidate
        // once its last use is the candidate, and nothing moves.
        let (mut thunks, mut bufs) = program(8);
        thunks[3] = kernel(2, vec![1, 0, 4]);
        let before = thunks.clone();
        let freed = readers_first(&mut thunks, &mut bufs, &kernels(), &[CANDIDATE]);
        assert_eq!((freed, &thunks), (0, &before));
    }
}
