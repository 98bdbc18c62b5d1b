//! Patch matrices built again instead of kept (issue 32 items 3 and 6). A training step's
//! weight-gradient convolution reads the same im2col patches as the forward convolution
//! (conv-to-gemm makes both GEMMs over one patch fusion), so the patches, many times
//! their input's size, stay live from the forward pass to the backward one:
//! `cnn_sgd_step_donated` kept its two patch matrices (0.59 and 1.18 MB) live across the
//! whole step beside everything else, 2.6x XLA's bytes. Here an entry kernel whose one
//! output only GEMMs read, at least twice, and is at least [`EXPANSION`] times the
//! bytes of all its inputs together, runs again right before its last reader, into a
//! buffer of its own: the first copy dies at its earlier readers, the inputs (a fraction of
//! its size) live on instead. The kernel is the same (same inputs, unchanged until then:
//! nothing between writes them), so the second copy holds the same bytes.

use codegen::kir::{Access, Kernel};

use super::in_place::Candidate;
use crate::thunk_names::each_named;
use crate::{Buffer, BufferId, Thunk};

/// How many times the bytes of all its inputs together an output must be to be built
/// again rather than kept: recomputing it then costs about one pass over the output,
/// and its inputs, kept longer instead, are at most half its size.
pub const EXPANSION: u64 = 2;

/// What [`plan_one`] found: the kernel thunk, its output's argument position, the
/// output buffer, its last reader and the reader before it.
struct Remat {
    at: usize,
    out_arg: usize,
    out: BufferId,
    last: usize,
    before_last: usize,
}

/// The rematerialization of entry thunk `i`, when it qualifies (see the module docs).
fn plan_one(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    in_place: &[Candidate],
    i: usize,
) -> Option<Remat> {
    let Thunk::Kernel { kernel, args, .. } = &thunks[i] else {
        return None;
    };
    let params = &kernels.get(*kernel)?.buffers;
    if params.len() != args.len() || in_place.iter().any(|c| c.kernel == *kernel) {
        return None;
    }
    let outs: Vec<usize> = (0..args.len())
        .filter(|&a| params[a].access != Access::In)
        .collect();
    let [out_arg] = outs[..] else {
        return None;
    };
    let out = args[out_arg];
    let ob = buffers.get(out)?;
    let inputs: Vec<BufferId> = args.iter().copied().filter(|&a| a != out).collect();
    let input_bytes: u64 = inputs.iter().map(|&a| buffers[a].bytes).sum();
    if ob.defined_at != Some(i)
        || ob.last_use.is_none_or(|u| u == usize::MAX)
        || args.iter().filter(|&&a| a == out).count() != 1
        || ob.bytes < EXPANSION.saturating_mul(input_bytes.max(1))
    {
        return None;
    }
    // Every later thunk naming the output is a GEMM reading it (never nested, never
    // writing it); nothing after the kernel writes an input.
    let mut readers = Vec::new();
    for (r, t) in thunks.iter().enumerate().skip(i + 1) {
        let (mut named, mut written) = (Vec::new(), Vec::new());
        each_named(t, kernels, &mut |b, w| {
            named.push(b);
            if w {
                written.push(b);
            }
        });
        if written.iter().any(|w| inputs.contains(w) || *w == out) {
            // An input written: the output could not be built again after this.
            if readers.is_empty() || written.contains(&out) {
                return None;
            }
            break;
        }
        if !named.contains(&out) {
            continue;
        }
        match t {
            Thunk::Gemm { lhs, rhs, .. } if *lhs == out || *rhs == out => readers.push(r),
            _ => return None,
        }
    }
    let (&last, &before_last) = (readers.last()?, readers.iter().rev().nth(1)?);
    // Built again only where something runs between the two readers, and only if no
    // reader is left out (an input written before the last reader stops the scan).
    (last > before_last + 1 && ob.last_use == Some(last)).then_some(Remat {
        at: i,
        out_arg,
        out,
        last,
        before_last,
    })
}

/// Builds again, right before its last reader, every entry kernel output that
/// qualifies (see the module docs): a new buffer for the second copy, the first dying at
/// its reader before. `buffers`' `defined_at` and `last_use` (entry thunk indices) are
/// renumbered for the inserted thunks. Returns how many kernels run twice.
pub fn rematerialize(
    thunks: &mut Vec<Thunk>,
    buffers: &mut Vec<Buffer>,
    kernels: &[Kernel],
    in_place: &[Candidate],
) -> usize {
    let mut count = 0;
    let mut i = 0;
    while i < thunks.len() {
        let Some(r) = plan_one(thunks, buffers, kernels, in_place, i) else {
            i += 1;
            continue;
        };
        for b in buffers.iter_mut() {
            for at in [&mut b.defined_at, &mut b.last_use] {
                if let Some(t) = at.as_mut().filter(|t| **t >= r.last && **t != usize::MAX) {
                    *t += 1;
                }
            }
        }
        let mut again = thunks[r.at].clone();
        let copy = buffers.len();
        buffers.push(Buffer {
            name: format!("{}.again", buffers[r.out].name),
            bytes: buffers[r.out].bytes,
            allocation: usize::MAX,
            defined_at: Some(r.last),
            last_use: Some(r.last + 1),
        });
        buffers[r.out].last_use = Some(r.before_last);
        if let Thunk::Kernel { args, .. } = &mut again {
            for &a in args.iter() {
                if a != r.out {
                    let u = &mut buffers[a].last_use;
                    if u.is_some_and(|u| u != usize::MAX && u < r.last) {
                        *u = Some(r.last);
                    }
                }
            }
            args[r.out_arg] = copy;
        }
        if let Thunk::Gemm { lhs, rhs, .. } = &mut thunks[r.last] {
            for x in [lhs, rhs] {
                if *x == r.out {
                    *x = copy;
                }
            }
        }
        thunks.insert(r.last, again);
        count += 1;
        i += 1;
    }
    count
}

/// What [`plan_cheap`] found: as [`Remat`], and the kernel that runs again.
struct Cheap {
    remat: Remat,
    kernel: usize,
}

/// Whether thunk `t` reads `b` only (a kernel's read-only parameter, a GEMM operand, a
/// library routine's input), so a copy of `b` may stand in for it there.
fn reads_only(t: &Thunk, kernels: &[Kernel], b: BufferId) -> bool {
    match t {
        Thunk::Kernel { kernel, args, .. } => kernels.get(*kernel).is_some_and(|k| {
            k.buffers.len() == args.len()
                && args
                    .iter()
                    .zip(&k.buffers)
                    .all(|(&a, p)| a != b || p.access == Access::In)
        }),
        Thunk::Gemm { out, .. } => *out != b,
        Thunk::Library { outputs, .. } => outputs.iter().all(|o| o.buffer != b),
        _ => false,
    }
}

/// The recomputation of entry kernel `i` under a memory limit (see [`recompute`]).
fn plan_cheap(thunks: &[Thunk], buffers: &[Buffer], kernels: &[Kernel], i: usize) -> Option<Cheap> {
    let Thunk::Kernel { kernel, args, .. } = &thunks[i] else {
        return None;
    };
    let params = &kernels.get(*kernel)?.buffers;
    let outs: Vec<usize> = (0..args.len())
        .filter(|&a| params.get(a).is_some_and(|p| p.access != Access::In))
        .collect();
    let [out_arg] = outs[..] else {
        return None;
    };
    let out = args[out_arg];
    let ob = buffers.get(out)?;
    let inputs: Vec<BufferId> = args.iter().copied().filter(|&a| a != out).collect();
    if params.len() != args.len()
        || ob.defined_at != Some(i)
        || ob.last_use.is_none_or(|u| u == usize::MAX)
        || args.iter().filter(|&&a| a == out).count() != 1
    {
        return None;
    }
    let mut readers = Vec::new();
    for (r, t) in thunks.iter().enumerate().skip(i + 1) {
        let (mut named, mut written) = (false, Vec::new());
        each_named(t, kernels, &mut |b, w| {
            named |= b == out;
            if w {
                written.push(b);
            }
        });
        if written.iter().any(|w| inputs.contains(w) || *w == out) {
            if readers.is_empty() || written.contains(&out) {
                return None;
            }
            break;
        }
        if named {
            if !reads_only(t, kernels, out) {
                return None;
            }
            readers.push(r);
        }
    }
    let (&last, &before_last) = (readers.last()?, readers.iter().rev().nth(1)?);
    if last <= before_last + 1 || ob.last_use != Some(last) {
        return None;
    }
    // Kept longer instead: the inputs that would die before the last reader (parameters,
    // constants and values live past it cost nothing more). Only a gain when they are
    // fewer bytes than the value.
    let longer: u64 = inputs
        .iter()
        .filter(|&&a| {
            let b = &buffers[a];
            b.defined_at.is_some() && b.last_use.is_some_and(|u| u < last)
        })
        .map(|&a| buffers[a].bytes)
        .sum();
    (longer < ob.bytes).then_some(Cheap {
        remat: Remat {
            at: i,
            out_arg,
            out,
            last,
            before_last,
        },
        kernel: *kernel,
    })
}

/// Recomputation under a memory limit (issue 32 item 6; [`super::limit`] asks for it when
/// no schedule fits): every entry kernel (a loop fusion, an elementwise chain, a
/// broadcast, an iota, a convert or a patch matrix: never a GEMM or library routine, the
/// expensive work) whose one output has two readers or more with other work between the
/// last two runs again right before its last reader, into a buffer of its own, where the
/// inputs it keeps live longer are fewer bytes than the output: the first copy dies at the
/// reader before. Readers are kernels, GEMMs and library routines that only read it;
/// nothing between may write its inputs. The second run is a kernel of its own (a
/// renamed copy: in-place marks of one never reach the other). `buffers`' entry indices
/// are renumbered for the inserted thunks. Returns how many kernels run twice.
pub fn recompute(
    thunks: &mut Vec<Thunk>,
    buffers: &mut Vec<Buffer>,
    kernels: &mut Vec<Kernel>,
) -> usize {
    let mut count = 0;
    let mut i = 0;
    while i < thunks.len() {
        let Some(Cheap { remat: r, kernel }) = plan_cheap(thunks, buffers, kernels, i) else {
            i += 1;
            continue;
        };
        for b in buffers.iter_mut() {
            for at in [&mut b.defined_at, &mut b.last_use] {
                if let Some(t) = at.as_mut().filter(|t| **t >= r.last && **t != usize::MAX) {
                    *t += 1;
                }
            }
        }
        let copy = buffers.len();
        buffers.push(Buffer {
            name: format!("{}.again", buffers[r.out].name),
            bytes: buffers[r.out].bytes,
            allocation: usize::MAX,
            defined_at: Some(r.last),
            last_use: Some(r.last + 1),
        });
        buffers[r.out].last_use = Some(r.before_last);
        let mut again = thunks[r.at].clone();
        let mut k = kernels[kernel].clone();
        k.name = format!("{}_again{}", k.name, kernels.len());
        if let Thunk::Kernel { kernel, args, .. } = &mut again {
            *kernel = kernels.len();
            for &a in args.iter() {
                if a != r.out {
                    let u = &mut buffers[a].last_use;
                    if u.is_some_and(|u| u != usize::MAX && u < r.last) {
                        *u = Some(r.last);
                    }
                }
            }
            args[r.out_arg] = copy;
        }
        kernels.push(k);
        let swap = |x: &mut BufferId| {
            if *x == r.out {
                *x = copy;
            }
        };
        match &mut thunks[r.last] {
            Thunk::Kernel { args, .. } => args.iter_mut().for_each(swap),
            Thunk::Gemm { lhs, rhs, .. } => [lhs, rhs].into_iter().for_each(swap),
            Thunk::Library { inputs, .. } => inputs.iter_mut().for_each(|s| swap(&mut s.buffer)),
            _ => {}
        }
        thunks.insert(r.last, again);
        count += 1;
        i += 1;
    }
    count
}
