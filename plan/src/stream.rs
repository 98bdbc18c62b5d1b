//! Streaming a kernel's output into the GEMM that consumes it: when a kernel writes a
//! GEMM's left-hand side (im2col patches, say) block by block, in whole rows, and nothing
//! else reads it, the pair becomes one [`Thunk::StreamedGemm`]. Each block's rows are then
//! written into a small scratch slot and multiplied at once, while they are in cache; the
//! lhs never goes to memory whole (for a ResNet 3x3 convolution at batch 8 that is 58 MB
//! written and read back).
//!
//! On the CPU an operand written in whole rows along the contraction streams too
//! ([`StreamAxis::Contraction`]): a convolution's weight gradient multiplies the output
//! gradient by the input's patches over every batch element and position, the patches
//! as an `[k, n]` rhs; each block's product adds into the small result, so only a block
//! of the patches is live (`cnn_train_step`'s 18.9 MB of them).

use affine::linear::Linear;
use affine::{Expr, Var};

pub use super::stream_axis::StreamAxis;
use super::stream_rhs::rereads_pay;
use super::thunk_names::each_named;
use super::{Buffer, BufferId, Thunk};
use codegen::kir::{Access, Kernel, Stmt};

/// Fewest rows along `k` a block of a contraction stream writes: each block's product
/// is an `m x n x R` GEMM added into the result, which thin blocks would make a series
/// of rank-`R` updates of the whole result.
pub const CONTRACTION_MIN_BLOCK_ROWS: i64 = 32;

/// Left-hand sides smaller than this stay whole, but for row streams on the CPU from
/// `stream_group::ROW_STREAM_MIN_BYTES` up whose GEMM calls take enough rows: they fit
/// in the last-level cache, so writing them costs no memory traffic to speak of, but
/// their bytes add to the temp (issue 32 item 5), and grouped calls cost no time.
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
    /// Whether GEMMs may stream over their contraction ([`StreamAxis::Contraction`]):
    /// the CPU executor runs such steps; the CUDA executor does not.
    pub contraction: bool,
}

/// Fuses every kernel whose output, of at least `options.min_bytes` (in nested sequences
/// [`NESTED_STREAM_MIN_BYTES`] when that is less), is only the next thunk's GEMM operand
/// (its lhs in whole rows, or with `options.contraction` the lhs or rhs in whole rows
/// along `k`, [`StreamAxis`]; see the module docs) with that GEMM, with one scratch slot
/// per worker (at most the kernel's blocks), in the entry sequence and in every nested
/// one (loop conditions and bodies, conditional branches). `buffers`' `defined_at` and
/// `last_use` are thunk indices of the entry sequence; they are renumbered for the
/// removed thunks, and the operand's buffer shrinks to the scratch slots (and a
/// contraction stream's accumulators).
///
/// A nested sequence's buffers all live through the entry thunk holding it (the builder
/// tracks liveness at that level), so there the operand qualifies when no thunk of the
/// whole program but the producer and the GEMM names it (see [`named_only_by_the_pair`]):
/// then nothing else ever reads or writes it, in any iteration.
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
    super::stream_reorder::producers_next_to_gemms(
        thunks,
        buffers,
        kernels,
        &|producer, gemm, bufs, b| {
            pair_streams(producer, gemm, bufs, kernels, options, &|x| x == b).is_some()
        },
    );
    let mut i = 0;
    while i + 1 < thunks.len() {
        let dies_here =
            |b: BufferId| buffers[b].defined_at == Some(i) && buffers[b].last_use == Some(i + 1);
        let pair = pair_streams(
            &thunks[i],
            &thunks[i + 1],
            buffers,
            kernels,
            options,
            &dies_here,
        );
        if let Some(s) = pair {
            fuse_in_entry(thunks, i, buffers, s);
        }
        i += 1;
    }
}

/// [`fuse`] in the entry sequence, renumbering `buffers`' `defined_at` and `last_use`
/// for the removed thunk.
pub(super) fn fuse_in_entry(
    thunks: &mut Vec<Thunk>,
    i: usize,
    buffers: &mut [Buffer],
    s: Streaming,
) {
    fuse(thunks, i, buffers, s);
    for b in buffers.iter_mut() {
        for at in [&mut b.defined_at, &mut b.last_use] {
            if let Some(t) = at.as_mut().filter(|t| **t > i && **t != usize::MAX) {
                *t -= 1;
            }
        }
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
            let only_the_pair =
                |b: BufferId| named_only_by_the_pair(&seq[i], &seq[i + 1], b, buffers, names);
            let pair = pair_streams(
                &seq[i],
                &seq[i + 1],
                buffers,
                kernels,
                options,
                &only_the_pair,
            );
            if let Some(s) = pair {
                fuse(seq, i, buffers, s);
            }
            i += 1;
        }
    }
}

/// Whether `consumer` is a GEMM reading buffer `b` as one operand, and no thunk of the
/// program but `producer` (once) and `consumer` names `b`, a temporary written inside the
/// sequence, not an output (outputs live to the end).
fn named_only_by_the_pair(
    producer: &Thunk,
    consumer: &Thunk,
    b: BufferId,
    buffers: &[Buffer],
    names: &[usize],
) -> bool {
    let (Thunk::Kernel { args, .. }, Thunk::Gemm { lhs, rhs, out, .. }) = (producer, consumer)
    else {
        return false;
    };
    let Some(buf) = buffers.get(b) else {
        return false;
    };
    names.get(b) == Some(&2)
        && [lhs, rhs, out].into_iter().filter(|&&x| x == b).count() == 1
        && *out != b
        && args.iter().filter(|&&a| a == b).count() == 1
        && buf.defined_at.is_some()
        && buf.last_use != Some(usize::MAX)
}

/// What a streamable pair needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Streaming {
    /// The producer's argument that is the streamed operand.
    arg: usize,
    /// Operand elements per block.
    pub(super) block_elements: i64,
    /// The operand's buffer.
    pub(super) buffer: BufferId,
    /// Scratch slots.
    pub(super) slots: usize,
    /// The dimension the blocks split.
    pub(super) axis: StreamAxis,
    /// Producer blocks per GEMM call ([`super::stream_group`]; 1 for a contraction).
    pub(super) group: i64,
}

/// Bytes of a streamed operand's buffer: `slots` blocks of `block_elements` elements of
/// `width` bytes, and for a contraction stream one `result`-element accumulator per slot
/// but the first (which sums into the result itself).
pub fn scratch_bytes(
    axis: StreamAxis,
    slots: usize,
    block_elements: i64,
    width: u64,
    result: u64,
) -> u64 {
    let blocks = slots as u64 * block_elements.max(0) as u64 * width;
    match axis {
        StreamAxis::Rows => blocks,
        StreamAxis::Contraction { .. } => blocks + slots.saturating_sub(1) as u64 * result * width,
    }
}

/// Replaces `seq[i]` and `seq[i + 1]` by their [`Thunk::StreamedGemm`]; the operand's
/// buffer shrinks to the scratch ([`scratch_bytes`]).
fn fuse(seq: &mut Vec<Thunk>, i: usize, buffers: &mut [Buffer], s: Streaming) {
    let gemm = seq.remove(i + 1);
    let producer = seq.remove(i);
    let (width, result) = match &gemm {
        Thunk::Gemm { shape, .. } => (u64::from(shape.ty.byte_width()), (shape.m * shape.n) as u64),
        _ => (0, 0),
    };
    seq.insert(
        i,
        Thunk::StreamedGemm {
            producer: Box::new(producer),
            lhs_arg: s.arg,
            block_elements: s.block_elements,
            slots: s.slots,
            gemm: Box::new(gemm),
            axis: s.axis,
            group: s.group,
        },
    );
    buffers[s.buffer].bytes =
        scratch_bytes(s.axis, s.slots, s.block_elements * s.group, width, result);
}

/// The [`Streaming`] of `producer` and `consumer` when the producer writes one of the
/// GEMM's operands (at least `options.min_bytes`, as its one output argument naming it,
/// accepted by `ok`: the caller's test that it dies at the GEMM) in whole rows block by
/// block, the GEMM reads it as that operand only and does not write it: its lhs by
/// result rows ([`StreamAxis::Rows`]), else, with `options.contraction`, the lhs or rhs
/// by rows along `k` ([`StreamAxis::Contraction`], blocks of at least
/// [`CONTRACTION_MIN_BLOCK_ROWS`] rows whose scratch is at most half the operand).
pub(super) fn pair_streams(
    producer: &Thunk,
    consumer: &Thunk,
    buffers: &[Buffer],
    kernels: &[Kernel],
    options: StreamOptions,
    ok: &dyn Fn(BufferId) -> bool,
) -> Option<Streaming> {
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
    let plain = shape.batch.is_empty()
        && shape.uniform()
        && shape.m > 0
        && shape.k > 0
        && shape.n > 0
        && *blocks >= 2
        && lhs != rhs;
    if !plain {
        return None;
    }
    let (m, n, k) = (shape.m as i64, shape.n as i64, shape.k as i64);
    let width = u64::from(shape.ty.byte_width());
    // (operand, axis, elements of one of its rows, its rows)
    let mut tries = Vec::new();
    if shape.lhs == (shape.k as isize, 1) {
        tries.push((*lhs, StreamAxis::Rows, k, m));
    }
    if options.contraction {
        if shape.lhs == (1, shape.m as isize) {
            tries.push((*lhs, StreamAxis::Contraction { lhs: true }, m, k));
        }
        if shape.rhs == (shape.n as isize, 1) {
            tries.push((*rhs, StreamAxis::Contraction { lhs: false }, n, k));
        }
    }
    let k_ir = kernels.get(*kernel)?;
    tries.into_iter().find_map(|(b, axis, row, rows)| {
        let bytes = buffers.get(b)?.bytes;
        // Row streams of smaller operands (patch matrices of 1-8 MiB) when their calls
        // take enough rows (`stream_group`); on the CPU only, whose executor runs the
        // blocks through the slots (the CUDA executor runs the producer whole anyway).
        let small = bytes < options.min_bytes;
        let small_ok = axis == StreamAxis::Rows && options.contraction;
        if b == *out || (small && !small_ok) || !ok(b) {
            return None;
        }
        if args.iter().filter(|&&a| a == b).count() != 1 {
            return None;
        }
        let arg = args.iter().position(|&a| a == b)?;
        if k_ir.buffers.get(arg)?.access != Access::Out {
            return None;
        }
        let c = block_elements(k_ir, arg)?;
        if c % row != 0 || c.checked_mul(*blocks)? != rows.checked_mul(row)? {
            return None;
        }
        let slots = options.workers.clamp(1, *blocks as usize);
        let group = match axis {
            StreamAxis::Rows => {
                let block_bytes = c.saturating_mul(width as i64);
                super::stream_group::stream_group(*blocks, c / row, block_bytes, slots)
            }
            StreamAxis::Contraction { .. } => 1,
        };
        let shape_of = (*blocks, c / row);
        if small && !super::stream_group::small_rows_stream(bytes, shape_of, group, slots) {
            return None;
        }
        // Every GEMM call of a row stream reads the whole rhs (see `stream_rhs`).
        let rhs_bytes = buffers.get(*rhs)?.bytes;
        let calls = (*blocks + group - 1) / group;
        if axis == StreamAxis::Rows && !rereads_pay(rhs_bytes, buffers[b].bytes, calls) {
            return None;
        }
        if let StreamAxis::Contraction { .. } = axis {
            let scratch = scratch_bytes(axis, slots, c, width, (m * n) as u64);
            if c / row < CONTRACTION_MIN_BLOCK_ROWS || scratch * 2 > buffers[b].bytes {
                return None;
            }
        }
        Some(Streaming {
            arg,
            block_elements: c,
            buffer: b,
            slots,
            axis,
            group,
        })
    })
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
