//! Streaming a kernel's output into the GEMM that consumes it: when a kernel writes a
//! GEMM's left-hand side (im2col patches, say) block by block, in whole rows, and nothing
//! else reads it, the pair becomes one [`Thunk::StreamedGemm`]. Each block's rows are then
//! written into a small scratch slot and multiplied at once, while they are in cache; the
//! lhs never goes to memory whole (for a ResNet 3x3 convolution at batch 8 that is 58 MB
//! written and read back).

use affine::linear::Linear;
use affine::{Expr, Var};

use super::thunk_names::each_named;
use super::{Buffer, Thunk};
use codegen::kir::{Access, Kernel, Stmt};

/// Left-hand sides smaller than this stay whole: they fit in the last-level cache, so
/// writing them costs no memory traffic to speak of.
pub const STREAM_MIN_BYTES: u64 = 8 << 20;

/// Left-hand sides built inside a nested sequence (a loop body, a conditional branch) of
/// at least this many bytes stream, below [`STREAM_MIN_BYTES`] too (the smaller of this
/// and [`StreamOptions::min_bytes`] applies there): the builder keeps every temporary of a
/// nested sequence live through its whole loop or conditional, so a patch matrix built
/// whole there costs its bytes beside every other value of the body.
pub const NESTED_STREAM_MIN_BYTES: u64 = 1 << 20;

/// Where and how wide GEMMs stream: the program builder's options, as the stream needs them.
#[derive(Clone, Copy, Debug)]
pub struct StreamOptions {
    /// Worker threads of the runtime's pool (one scratch slot each).
    pub workers: usize,
    /// Smallest GEMM lhs streamed from its producer.
    pub min_bytes: u64,
}

/// Fuses every kernel whose output, of at least `options.min_bytes` (in nested sequences
/// [`NESTED_STREAM_MIN_BYTES`] when that is less), is only the next thunk's GEMM lhs (see
/// the module docs) with that GEMM, with one scratch slot per worker (at most the
/// kernel's blocks), in the entry sequence and in every nested one (loop conditions and
/// bodies, conditional branches). `buffers`' `defined_at` and `last_use` are thunk
/// indices of the entry sequence; they are renumbered for the removed thunks, and the lhs
/// buffer shrinks to the scratch slots.
///
/// A nested sequence's buffers all live through the entry thunk holding it (the builder
/// tracks liveness at that level), so there the lhs qualifies when no thunk of the whole
/// program but the producer and the GEMM names it (see [`named_only_by_the_pair`]): then
/// nothing else ever reads or writes it, in any iteration.
pub fn stream_gemms(
    thunks: &mut Vec<Thunk>,
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    options: StreamOptions,
) {
    let mut names = vec![0usize; buffers.len()];
    for t in thunks.iter() {
        each_named(t, &[], &mut |b, _| {
            if let Some(n) = names.get_mut(b) {
                *n += 1;
            }
        });
    }
    let nested = StreamOptions {
        min_bytes: options.min_bytes.min(NESTED_STREAM_MIN_BYTES),
        ..options
    };
    for t in thunks.iter_mut() {
        stream_nested(t, buffers, kernels, nested, &names);
    }
    let mut i = 0;
    while i + 1 < thunks.len() {
        if let Some((lhs_arg, block_elements, lhs, slots)) =
            streamable(&thunks[i], &thunks[i + 1], i, buffers, kernels, options)
        {
            fuse(thunks, i, buffers, (lhs_arg, block_elements, lhs, slots));
            for b in buffers.iter_mut() {
                for at in [&mut b.defined_at, &mut b.last_use] {
                    if let Some(t) = at.as_mut().filter(|t| **t > i && **t != usize::MAX) {
                        *t -= 1;
                    }
                }
            }
        }
        i += 1;
    }
}

/// Streams the pairs of the sequences nested in `t` (innermost first); `names` counts
/// how many times the whole program names each buffer (every mention, nested sequences
/// included).
fn stream_nested(
    t: &mut Thunk,
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    options: StreamOptions,
    names: &[usize],
) {
    let sequences: Vec<&mut Vec<Thunk>> = match t {
        Thunk::While { cond, body, .. } => vec![cond, body],
        Thunk::Conditional { branches, .. } => branches.iter_mut().map(|(b, _)| b).collect(),
        _ => return,
    };
    for seq in sequences {
        for t in seq.iter_mut() {
            stream_nested(t, buffers, kernels, options, names);
        }
        let mut i = 0;
        while i + 1 < seq.len() {
            let pair = named_only_by_the_pair(&seq[i], &seq[i + 1], buffers, names)
                .then(|| pair_streams(&seq[i], &seq[i + 1], buffers, kernels, options))
                .flatten();
            if let Some(s) = pair {
                fuse(seq, i, buffers, s);
            }
            i += 1;
        }
    }
}

/// Whether `consumer` is a GEMM whose lhs no thunk of the program but `producer` (once)
/// and `consumer` (as its lhs only) names, and which is a temporary written inside the
/// sequence, not an output (outputs live to the end).
fn named_only_by_the_pair(
    producer: &Thunk,
    consumer: &Thunk,
    buffers: &[Buffer],
    names: &[usize],
) -> bool {
    let (Thunk::Kernel { args, .. }, Thunk::Gemm { lhs, .. }) = (producer, consumer) else {
        return false;
    };
    let Some(b) = buffers.get(*lhs) else {
        return false;
    };
    names.get(*lhs) == Some(&2)
        && args.iter().filter(|&a| a == lhs).count() == 1
        && b.defined_at.is_some()
        && b.last_use != Some(usize::MAX)
}

/// What a streamable pair needs: `(lhs argument, lhs elements per block, lhs buffer,
/// slots)`.
type Streaming = (usize, i64, usize, usize);

/// Replaces `seq[i]` and `seq[i + 1]` by their [`Thunk::StreamedGemm`]; the lhs buffer
/// shrinks to the scratch slots.
fn fuse(seq: &mut Vec<Thunk>, i: usize, buffers: &mut [Buffer], s: Streaming) {
    let (lhs_arg, block_elements, lhs, slots) = s;
    let gemm = seq.remove(i + 1);
    let producer = seq.remove(i);
    let element_bytes = match &gemm {
        Thunk::Gemm { shape, .. } => buffers[lhs].bytes / (shape.m * shape.k) as u64,
        _ => 0,
    };
    seq.insert(
        i,
        Thunk::StreamedGemm {
            producer: Box::new(producer),
            lhs_arg,
            block_elements,
            slots,
            gemm: Box::new(gemm),
        },
    );
    buffers[lhs].bytes = slots as u64 * block_elements as u64 * element_bytes;
}

/// `(lhs argument, lhs elements per block, lhs buffer, slots)` when `producer` (thunk
/// `i` of the entry sequence) and `consumer` can stream.
fn streamable(
    producer: &Thunk,
    consumer: &Thunk,
    i: usize,
    buffers: &[Buffer],
    kernels: &[Kernel],
    options: StreamOptions,
) -> Option<Streaming> {
    let Thunk::Gemm { lhs, .. } = consumer else {
        return None;
    };
    let dies_here = buffers[*lhs].defined_at == Some(i) && buffers[*lhs].last_use == Some(i + 1);
    dies_here
        .then(|| pair_streams(producer, consumer, buffers, kernels, options))
        .flatten()
}

/// The [`Streaming`] of `producer` and `consumer` when the producer writes the GEMM's lhs
/// (at least `options.min_bytes`, as its one output argument naming it) in whole rows,
/// block by block, the GEMM reads it as its lhs only, and neither the rhs nor the result
/// is that buffer; whether the lhs dies there is the caller's to check.
fn pair_streams(
    producer: &Thunk,
    consumer: &Thunk,
    buffers: &[Buffer],
    kernels: &[Kernel],
    options: StreamOptions,
) -> Option<Streaming> {
    let slots = options.workers;
    let (
        Thunk::Kernel {
            kernel,
            args,
            blocks,
            ..
        },
        Thunk::Gemm {
            shape,
            lhs,
            rhs,
            out,
        },
    ) = (producer, consumer)
    else {
        return None;
    };
    let (m, k) = (shape.m as i64, shape.k as i64);
    let whole_rows = shape.batch.is_empty()
        && shape.uniform()
        && m > 0
        && k > 0
        && shape.n > 0
        && shape.lhs == (shape.k as isize, 1);
    if !whole_rows
        || buffers[*lhs].bytes < options.min_bytes
        || *blocks < 2
        || rhs == lhs
        || out == lhs
        || args.iter().filter(|&a| a == lhs).count() != 1
    {
        return None;
    }
    let lhs_arg = args.iter().position(|a| a == lhs)?;
    let k_ir = kernels.get(*kernel)?;
    if k_ir.buffers.get(lhs_arg)?.access != Access::Out {
        return None;
    }
    let c = block_elements(k_ir, lhs_arg)?;
    (c % k == 0 && c.checked_mul(*blocks)? == m.checked_mul(k)?).then_some((
        lhs_arg,
        c,
        *lhs,
        slots.min(*blocks as usize),
    ))
}

/// The elements `C` of buffer `buf` each block of `k` writes, when block `b` writes
/// only elements `[b C, (b + 1) C)`: every store's offset is `b C + rest` with `rest`
/// in `[0, C)` over the bounds of the loops around it (affine, no runtime variable).
pub fn block_elements(k: &Kernel, buf: usize) -> Option<i64> {
    let block = Expr::var(k.grid.block_var?);
    let mut c = None;
    let mut loops = Vec::new();
    stores_in_blocks(&k.body, buf, block, &mut loops, &mut c)?;
    c.filter(|&c| c > 0)
}

/// Checks the stores to `buf` in `body` (see [`block_elements`]), agreeing on one
/// per-block extent `c`; `None` when one does not fit.
fn stores_in_blocks(
    body: &[Stmt],
    buf: usize,
    block: Expr,
    loops: &mut Vec<(Var, i64, i64)>,
    c: &mut Option<i64>,
) -> Option<()> {
    for s in body {
        match s {
            Stmt::Loop {
                var, lo, hi, body, ..
            } => {
                loops.push((*var, *lo, *hi));
                let r = stores_in_blocks(body, buf, block, loops, c);
                loops.pop();
                r?;
            }
            Stmt::If {
                body, else_body, ..
            } => {
                stores_in_blocks(body, buf, block, loops, c)?;
                stores_in_blocks(else_body, buf, block, loops, c)?;
            }
            Stmt::Store { buf: b, offset, .. } if *b == buf => {
                let lin = Linear::of(*offset)?;
                let step = lin.coefficient(block);
                if step <= 0 || c.is_some_and(|c| c != step) {
                    return None;
                }
                *c = Some(step);
                let (mut lo, mut hi) = (lin.constant, lin.constant);
                for &(atom, coef) in lin.terms.iter().filter(|t| t.0 != block) {
                    let v = atom.as_var()?;
                    let &(_, a, b) = loops.iter().rev().find(|l| l.0 == v)?;
                    let (x, y) = (coef.checked_mul(a)?, coef.checked_mul(b)?);
                    lo = lo.checked_add(x.min(y))?;
                    hi = hi.checked_add(x.max(y))?;
                }
                if lo < 0 || hi >= step {
                    return None;
                }
            }
            _ => {}
        }
    }
    Some(())
}
