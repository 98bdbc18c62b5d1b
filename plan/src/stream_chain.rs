//! Batched GEMM chains run one batch slice at a time (issue 32: the attention scores).
//!
//! Attention computes `S = Q K^T` as one batched GEMM, a row-wise softmax kernel reads
//! `S` and writes `P`, and a second batched GEMM reads `P` with `V`. Run whole, `S` and
//! `P` hold every (batch, head) score matrix at once: `unet_down_groupnorm_attn`'s
//! 64 MiB. Each batch element of the chain depends on its own slice only, so here the
//! chain `GEMM, kernel..., GEMM` runs once per slice of the GEMMs' leading batch
//! dimensions: the values made and used only inside the chain (the scores, the
//! probabilities, a kernel's intermediates) shrink to one slice's bytes, reused by every
//! slice, while the operands read from outside (`Q`, `K`, `V`) and the result (`O`) are
//! bound as views: buffers whose bytes are the whole value's at a slice's offset
//! (placed after buffer assignment, [`place_views`]). A view is a temporary allocation
//! at an offset like any other, and each thunk is an ordinary GEMM or kernel over fewer
//! batch elements or blocks. An outside operand may also be a parameter or constant that
//! nothing writes during the run (`einsum_odd_orders`' attention over its parameters
//! `Q`, `K`, `V`): its views lie in that allocation, which the executors read through
//! them as through the whole value.
//!
//! A batch element's rows may split further ([`split_rows`]): the first GEMM's result
//! rows, and the last GEMM's dimension of the chain value it does not contract, become
//! one more batch dimension of `parts`, so a slice holds a row block of one element's
//! scores (a row-wise softmax needs nothing else; the probabilities read as the last
//! GEMM's rhs, `V^T P^T`, give it a column block of its result).
//!
//! Exact by construction, checked here: the first GEMM writes every element of the
//! chain's value `S` once, slice `s` at `[s L, (s + 1) L)` (its result's strides); the
//! last reads its chain operand the same way; every kernel's block `b` reads and writes
//! each chain value `X` only in `[b C_X, (b + 1) C_X)` (its affine offsets over the
//! loops' bounds), so the blocks `[s B / n, (s + 1) B / n)` of slice `s` touch slice
//! `s` of every chain value and nothing else; any other kernel argument is read only,
//! never by the block index, and nothing in the chain writes it.

use affine::linear::Linear;
use affine::{Expr, Var};

use super::memory::carried::PENDING;
use super::memory::in_place::Candidate;
use super::stream::StreamOptions;
use super::thunk_names::each_named;
use super::{Allocation, AllocationKind, Buffer, BufferId, GemmShape, Thunk};
use codegen::kir::{Access, Kernel, Stmt, Value};

/// A loop variable and its first and last values.
type Bound = (Var, i64, i64);

/// Most kernels between the two GEMMs of a chain.
const MAX_CHAIN_KERNELS: usize = 4;

/// A buffer bound to the bytes of `base` from byte `delta` on: one slice's operand or
/// result of a GEMM in a sliced chain (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// The view's buffer (allocation [`PENDING`] until [`place_views`]).
    pub view: BufferId,
    /// The whole value.
    pub base: BufferId,
    /// Where the view starts in the base's bytes.
    pub delta: u64,
}

/// What [`slice_chains`] did: the views to place, and the in-place pairs of the sliced
/// kernels.
#[derive(Clone, Debug, Default)]
pub struct Sliced {
    /// The views bound to the GEMMs' outside operands and results.
    pub views: Vec<View>,
    /// Candidates (of `in_place`) of kernels in sliced chains whose operand died at
    /// their kernel before slicing: the operand still dies there in every slice (each
    /// slice writes it again first), which the buffers' live ranges, now over all the
    /// slices, no longer show.
    pub in_place: Vec<Candidate>,
}

/// Runs every chain of the entry sequence (a batched GEMM, one to
/// [`MAX_CHAIN_KERNELS`] kernels, a batched GEMM) whose chain-only values are at least
/// `options.min_bytes` together, slice by slice (see the module docs), with as many
/// slices as keep each kernel at least `options.workers` blocks per slice (or its
/// whole grid). `buffers`' `defined_at` and `last_use`, entry thunk indices, are
/// renumbered for the added thunks; the chain values shrink to one slice. The views
/// bound to the GEMMs' outside operands and results are placed by [`place_views`] once
/// the assignment has placed their bases; `in_place` are the kernels' in-place
/// candidates (see [`Sliced::in_place`]).
///
/// `read_only` are the buffers with memory of their own (parameters, constants) that no
/// thunk writes and no output takes over: a GEMM's outside operand among them is viewed
/// in its own allocation.
pub fn slice_chains(
    thunks: &mut Vec<Thunk>,
    buffers: &mut Vec<Buffer>,
    kernels: &[Kernel],
    (in_place, read_only): (&[Candidate], &[BufferId]),
    options: StreamOptions,
) -> Sliced {
    let mut sliced = Sliced::default();
    let mut named = namers(thunks, buffers.len());
    let mut i = 0;
    while i < thunks.len() {
        let found = chain_at(thunks, i, (buffers, read_only), kernels, &named, options);
        let Some(plan) = found else {
            i += 1;
            continue;
        };
        sliced.in_place.extend(in_place.iter().filter(|c| {
            let (o, b) = (&buffers[c.output], &buffers[c.operand]);
            plan.local.contains(&c.output)
                && plan.local.contains(&c.operand)
                && o.bytes == b.bytes
                && b.defined_at.is_some_and(|d| Some(d) < o.defined_at)
                && b.last_use == o.defined_at
                && reads_only(kernels, c.kernel, c.operand, thunks, o.defined_at)
                && o.defined_at.and_then(|t| thunks.get(t)).is_some_and(
                    |t| matches!(t, Thunk::Kernel { kernel, .. } if *kernel == c.kernel),
                )
        }));
        hoist(thunks, buffers, &plan);
        let from = i + plan.outside.len();
        let added = apply(thunks, buffers, from, &plan, &mut sliced.views);
        i = from + plan.chain.len() + added;
        named = namers(thunks, buffers.len());
    }
    sliced
}

/// Whether kernel `kernel`, at entry thunk `at`, only reads `operand` (every parameter
/// bound to it is input only).
fn reads_only(
    kernels: &[Kernel],
    kernel: usize,
    operand: BufferId,
    thunks: &[Thunk],
    at: Option<usize>,
) -> bool {
    let (Some(k), Some(Thunk::Kernel { args, .. })) =
        (kernels.get(kernel), at.and_then(|t| thunks.get(t)))
    else {
        return false;
    };
    args.len() == k.buffers.len()
        && args
            .iter()
            .zip(&k.buffers)
            .all(|(&a, p)| a != operand || p.access == Access::In)
}

/// Allocations for `views`, each inside its base's: the base's slice of the temp block
/// or of an output's memory at the view's offset, or, for a base with memory of its
/// own (an output, or a read-only parameter or constant), that memory.
pub fn place_views(views: &[View], buffers: &mut [Buffer], allocations: &mut Vec<Allocation>) {
    for v in views {
        let a = &allocations[buffers[v.base].allocation];
        let (offset, parent) = match a.offset {
            Some(o) => (o + v.delta, a.parent),
            None => (v.delta, Some(buffers[v.base].allocation)),
        };
        allocations.push(Allocation {
            kind: AllocationKind::Temp,
            bytes: buffers[v.view].bytes,
            offset: Some(offset),
            parent,
        });
        buffers[v.view].allocation = allocations.len() - 1;
    }
}

/// A chain found at entry thunk `start`: the thunks `chain` (entry indices: the first
/// GEMM, the kernels, the last GEMM), as `own` (perhaps with rows split,
/// [`split_rows`]), run in `slices` slices over the first `prefix` batch dimensions of
/// both GEMMs; `outside` the thunks between them that name no chain
/// value (they run before the chain); `local` the chain-only values.
struct Plan {
    start: usize,
    chain: Vec<usize>,
    own: Vec<Thunk>,
    outside: Vec<usize>,
    slices: usize,
    prefix: usize,
    local: Vec<BufferId>,
}

impl Plan {
    /// The entry thunks the chain spans, its own and those between.
    fn len(&self) -> usize {
        self.chain.len() + self.outside.len()
    }
}

/// The entry thunks naming each buffer (a nested mention counts as its entry thunk).
fn namers(thunks: &[Thunk], n: usize) -> Vec<Vec<usize>> {
    let mut at = vec![Vec::new(); n];
    for (t, thunk) in thunks.iter().enumerate() {
        each_named(thunk, &[], &mut |b, _| {
            if let Some(v) = at.get_mut(b) {
                if v.last() != Some(&t) {
                    v.push(t);
                }
            }
        });
    }
    at
}

/// Most thunks a chain spans, its own and those between.
const MAX_SPAN: usize = 3 * MAX_CHAIN_KERNELS;

/// The chain starting at thunk `i`, if one may run slice by slice: from the GEMM at
/// `i`, every kernel naming a value the chain wrote so far joins it, and the first GEMM
/// naming one ends it; any other leaf thunk between (naming no chain value, so neither
/// reading what the chain writes nor, the chain's values written once, writing what it
/// reads) may run before the chain.
fn chain_at(
    thunks: &[Thunk],
    i: usize,
    (buffers, read_only): (&[Buffer], &[BufferId]),
    kernels: &[Kernel],
    namers: &[Vec<usize>],
    options: StreamOptions,
) -> Option<Plan> {
    let Thunk::Gemm { out, .. } = thunks.get(i)? else {
        return None;
    };
    let (mut chain, mut outside) = (vec![i], Vec::new());
    let mut written = vec![*out];
    let mut end = None;
    for (t, thunk) in thunks.iter().enumerate().take(i + MAX_SPAN).skip(i + 1) {
        let mut names_chain = false;
        each_named(thunk, &[], &mut |b, _| names_chain |= written.contains(&b));
        match thunk {
            Thunk::Gemm { .. } if names_chain => {
                chain.push(t);
                end = Some(t);
                break;
            }
            Thunk::Kernel { .. } if names_chain => {
                if chain.len() > MAX_CHAIN_KERNELS {
                    return None;
                }
                each_named(thunk, kernels, &mut |b, w| {
                    if w && !written.contains(&b) {
                        written.push(b);
                    }
                });
                chain.push(t);
            }
            Thunk::While { .. } | Thunk::Conditional { .. } | Thunk::Collective { .. } => {
                return None
            }
            _ if names_chain => return None,
            _ => outside.push(t),
        }
    }
    end?;
    if chain.len() < 3 {
        return None;
    }
    // Values named only by the chain's thunks: temporaries, not outputs.
    let mut local: Vec<BufferId> = Vec::new();
    for &t in &chain {
        each_named(&thunks[t], &[], &mut |b, _| {
            let only_here = namers[b].iter().all(|t| chain.contains(t));
            let temp = buffers[b].defined_at.is_some() && buffers[b].last_use != Some(usize::MAX);
            if only_here && temp && !local.contains(&b) {
                local.push(b);
            }
        });
    }
    let local_bytes: u64 = local.iter().map(|&b| buffers[b].bytes).sum();
    if local_bytes < options.min_bytes.max(1) {
        return None;
    }
    let own: Vec<Thunk> = chain.iter().map(|&t| thunks[t].clone()).collect();
    let (Thunk::Gemm { shape: first, .. }, Thunk::Gemm { shape: last, .. }) =
        (&own[0], &own[own.len() - 1])
    else {
        return None;
    };
    let most = first.batch.len().min(last.batch.len());
    let whole_batch = first.batch.len() == most && last.batch.len() == most;
    // Row parts of every batch element first (the most slices), then fewer batch
    // dimensions.
    let tries = ROW_PARTS
        .iter()
        .filter(|_| whole_batch)
        .filter_map(|&parts| Some((most + 1, split_rows(&own, &local, parts)?)))
        .chain((1..=most).rev().map(|prefix| (prefix, own.clone())));
    for (prefix, own) in tries {
        let bufs = (buffers, read_only);
        if let Some(slices) = slices_of(&own, prefix, &local, bufs, kernels, options) {
            return Some(Plan {
                start: i,
                chain: chain.clone(),
                own,
                outside: outside.clone(),
                slices,
                prefix,
                local: local.clone(),
            });
        }
    }
    None
}

/// Row parts tried per batch element (the most first).
const ROW_PARTS: [usize; 3] = [8, 4, 2];

/// The chain with its GEMMs' rows of the scores split in `parts` as one more, last
/// batch dimension (the same products): the first GEMM's `m` (its lhs rows and result
/// rows), and of the last GEMM the dimension of the chain operand it does not contract
/// (`m` of an lhs, `n` of an rhs; the other operand read again by every part, stride
/// 0). `None` when `parts` does not divide them.
fn split_rows(own: &[Thunk], local: &[BufferId], parts: usize) -> Option<Vec<Thunk>> {
    let mut own = own.to_vec();
    let last = own.len() - 1;
    for (at, t) in own.iter_mut().enumerate() {
        let Thunk::Gemm { shape, lhs, .. } = t else {
            continue;
        };
        let rows = at == 0 || local.contains(lhs);
        if rows && shape.m % parts == 0 {
            let m = shape.m / parts;
            let step = m as isize;
            shape
                .batch
                .push((parts, step * shape.lhs.0, 0, step * shape.out.0));
            shape.m = m;
        } else if !rows && at == last && shape.n % parts == 0 {
            let n = shape.n / parts;
            let step = n as isize;
            shape
                .batch
                .push((parts, 0, step * shape.rhs.1, step * shape.out.1));
            shape.n = n;
        } else {
            return None;
        }
    }
    Some(own)
}

/// Moves the thunks between the chain's own before it (see [`chain_at`]): the window
/// `plan.start..plan.start + plan.len()` becomes `plan.outside` then `plan.chain`, each
/// in order. A buffer first written in the window is now written where its writer
/// went; one last read there, where the last of its readers there went.
fn hoist(thunks: &mut [Thunk], buffers: &mut [Buffer], plan: &Plan) {
    let (i, n) = (plan.start, plan.len());
    let order: Vec<usize> = plan.outside.iter().chain(&plan.chain).copied().collect();
    let mut at = vec![0; n];
    for (new, &old) in order.iter().enumerate() {
        at[old - i] = i + new;
    }
    let window: Vec<Thunk> = order.iter().map(|&t| thunks[t].clone()).collect();
    let in_window = |t: usize| t != usize::MAX && (i..i + n).contains(&t);
    let mut last_reader: Vec<Option<usize>> = vec![None; buffers.len()];
    for (new, t) in window.iter().enumerate() {
        each_named(t, &[], &mut |b, _| {
            if let Some(r) = last_reader.get_mut(b) {
                *r = Some(r.map_or(i + new, |r| r.max(i + new)));
            }
        });
    }
    for (b, buf) in buffers.iter_mut().enumerate() {
        if let Some(d) = buf.defined_at.as_mut().filter(|d| in_window(**d)) {
            *d = at[*d - i];
        }
        if let Some(u) = buf.last_use.as_mut().filter(|u| in_window(**u)) {
            *u = last_reader[b].unwrap_or(at[*u - i]);
        }
    }
    thunks[i..i + n].clone_from_slice(&window);
}

/// The number of slices over the first `prefix` batch dimensions of the chain's GEMMs,
/// when the chain may run so (see the module docs) and every kernel keeps
/// `min(workers, blocks)` blocks per slice; `None` otherwise.
fn slices_of(
    chain: &[Thunk],
    prefix: usize,
    local: &[BufferId],
    (buffers, read_only): (&[Buffer], &[BufferId]),
    kernels: &[Kernel],
    options: StreamOptions,
) -> Option<usize> {
    let (
        Thunk::Gemm {
            shape: g1,
            lhs: q,
            rhs: k,
            out: s,
        },
        Thunk::Gemm {
            shape: g2,
            lhs: l2,
            rhs: r2,
            out: o,
        },
    ) = (&chain[0], &chain[chain.len() - 1])
    else {
        return None;
    };
    let is_local = |b: &BufferId| local.contains(b);
    if !is_local(s) || is_local(q) || is_local(k) || is_local(o) || is_local(l2) == is_local(r2) {
        return None;
    }
    // Views are placed in their bases' bytes: the result is a temporary (not an output),
    // the outside operands temporaries too, or parameters or constants nothing writes.
    let temp =
        |b: &BufferId| buffers[*b].defined_at.is_some() && buffers[*b].last_use != Some(usize::MAX);
    if !temp(o)
        || ![q, k, l2, r2]
            .into_iter()
            .all(|b| is_local(b) || temp(b) || read_only.contains(b))
    {
        return None;
    }
    let slices: usize = g1.batch[..prefix].iter().map(|d| d.0).product();
    let extents = |g: &GemmShape| g.batch[..prefix].iter().map(|d| d.0).collect::<Vec<_>>();
    if slices < 2 || extents(g1) != extents(g2) {
        return None;
    }
    // The first GEMM writes all of `S`, slice by slice; the last reads its chain
    // operand so.
    let width = |t: codegen::kir::ScalarType| t.byte_width() as u64;
    let out_dims: Vec<(usize, isize)> = g1.batch.iter().map(|d| (d.0, d.3)).collect();
    let s_dims = [(g1.m, g1.out.0), (g1.n, g1.out.1)];
    sliced_densely(
        &out_dims,
        &s_dims,
        prefix,
        buffers[*s].bytes / width(g1.out_ty),
    )?;
    let (p, p_dims, p_ty): (BufferId, Vec<(usize, isize)>, _) = if is_local(l2) {
        let b = g2.batch.iter().map(|d| (d.0, d.1)).collect();
        (*l2, b, g2.lhs_ty)
    } else {
        let b = g2.batch.iter().map(|d| (d.0, d.2)).collect();
        (*r2, b, g2.rhs_ty)
    };
    let p_matrix = if is_local(l2) {
        [(g2.m, g2.lhs.0), (g2.k, g2.lhs.1)]
    } else {
        [(g2.k, g2.rhs.0), (g2.n, g2.rhs.1)]
    };
    sliced_densely(&p_dims, &p_matrix, prefix, buffers[p].bytes / width(p_ty))?;
    // The outside operands' and the result's slices start on 16 bytes, as allocations.
    let g1_views = [(g1.lhs_ty, 1), (g1.rhs_ty, 2)];
    let g2_views = [(g2.lhs_ty, 1), (g2.rhs_ty, 2), (g2.out_ty, 3)];
    for (g, views) in [(g1, &g1_views[..]), (g2, &g2_views[..])] {
        for &(ty, which) in views {
            let stride = |d: &(usize, isize, isize, isize)| [d.1, d.2, d.3][which - 1];
            if g.batch[..prefix]
                .iter()
                .any(|d| stride(d) < 0 || !(stride(d) as u64 * width(ty)).is_multiple_of(16))
            {
                return None;
            }
        }
    }
    // The kernels: chain values block by block, anything else read whole.
    for t in &chain[1..chain.len() - 1] {
        let Thunk::Kernel {
            kernel,
            args,
            blocks,
            ..
        } = t
        else {
            return None;
        };
        let k_ir = kernels.get(*kernel)?;
        if *blocks % slices as i64 != 0 || *blocks != k_ir.grid.blocks {
            return None;
        }
        let per_slice = *blocks / slices as i64;
        if per_slice < (options.workers as i64).min(*blocks) {
            return None;
        }
        let block = Expr::var(k_ir.grid.block_var?);
        for (a, &b) in args.iter().enumerate() {
            if args.iter().filter(|&&x| x == b).count() != 1 {
                return None;
            }
            let param = k_ir.buffers.get(a)?;
            let elements = param.element_count();
            if elements * param.ty.byte_width() as i64 != buffers[b].bytes as i64 {
                return None;
            }
            if is_local(&b) {
                let c = block_extent(&k_ir.body, a, block)?;
                if c.checked_mul(*blocks)? != elements || elements % slices as i64 != 0 {
                    return None;
                }
            } else if param.access != Access::In
                || [q, k, l2, r2].contains(&&b)
                || block_extent(&k_ir.body, a, block) != Some(0)
            {
                return None;
            }
        }
    }
    // Every chain value splits into whole slices (also those only kernels name).
    local
        .iter()
        .all(|&b| buffers[b].bytes.is_multiple_of(slices as u64))
        .then_some(slices)
}

/// Whether the batch dimensions `batch` (extent, element stride) and the matrix
/// dimensions `matrix` cover `[0, elements)` once, with the first `prefix` batch
/// dimensions outermost in order (slice `s` of them at `[s L, (s + 1) L)`).
fn sliced_densely(
    batch: &[(usize, isize)],
    matrix: &[(usize, isize)],
    prefix: usize,
    elements: u64,
) -> Option<()> {
    let mut inner: Vec<(usize, isize)> = batch[prefix..]
        .iter()
        .chain(matrix)
        .copied()
        .filter(|d| d.0 != 1)
        .collect();
    inner.sort_by_key(|d| d.1);
    let mut expected: isize = 1;
    for (extent, stride) in inner {
        if stride != expected {
            return None;
        }
        expected = expected.checked_mul(extent as isize)?;
    }
    for &(extent, stride) in batch[..prefix].iter().rev() {
        if extent != 1 && stride != expected {
            return None;
        }
        expected = expected.checked_mul(extent as isize)?;
    }
    (expected as u64 == elements).then_some(())
}

/// The elements `C` of kernel buffer `buf` block `b` touches, when every load and store
/// of it lies in `[b C, (b + 1) C)` (affine offsets, the other terms bounded by the
/// loops around them); `Some(0)` when no offset names the block index (nor any
/// unbounded term), `None` when an access fits neither.
fn block_extent(body: &[Stmt], buf: usize, block: Expr) -> Option<i64> {
    let mut c: Option<i64> = None;
    let mut ok = true;
    let mut loops: Vec<Bound> = Vec::new();
    walk(
        body,
        &mut loops,
        &mut |offset, loops| {
            if ok {
                ok = fits(offset, loops, block, &mut c).is_some();
            }
        },
        buf,
    );
    ok.then_some(c.unwrap_or(0))
}

/// Calls `f` with every load and store offset of buffer `buf` in `body` and the loops
/// around it.
fn walk(body: &[Stmt], loops: &mut Vec<Bound>, f: &mut dyn FnMut(Expr, &[Bound]), buf: usize) {
    for s in body {
        match s {
            Stmt::Comment(_) | Stmt::Barrier => {}
            Stmt::Loop {
                var, lo, hi, body, ..
            } => {
                loops.push((*var, *lo, *hi));
                walk(body, loops, f, buf);
                loops.pop();
            }
            Stmt::Let { value, .. }
            | Stmt::Decl { value, .. }
            | Stmt::Assign { value, .. }
            | Stmt::BindIndex { value, .. }
            | Stmt::Shuffle { value, .. }
            | Stmt::LocalStore { value, .. } => loads(value, buf, loops, f),
            Stmt::Store {
                buf: b,
                offset,
                value,
            } => {
                loads(value, buf, loops, f);
                if *b == buf {
                    f(*offset, loops);
                }
            }
            Stmt::If {
                body, else_body, ..
            } => {
                walk(body, loops, f, buf);
                walk(else_body, loops, f, buf);
            }
            Stmt::Atomic {
                buf: b,
                offset,
                body,
                value,
                ..
            } => {
                walk(body, loops, f, buf);
                loads(value, buf, loops, f);
                if *b == buf {
                    f(*offset, loops);
                }
            }
        }
    }
}

/// Calls `f` with the offset of every load of `buf` in `v`.
fn loads(v: &Value, buf: usize, loops: &[Bound], f: &mut dyn FnMut(Expr, &[Bound])) {
    match v {
        Value::Load { buf: b, offset, .. } => {
            if *b == buf {
                f(*offset, loops)
            }
        }
        Value::Const(..) | Value::Var(..) | Value::Index(_) | Value::LocalLoad { .. } => {}
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            loads(a, buf, loops, f)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            loads(a, buf, loops, f);
            loads(b, buf, loops, f);
        }
        Value::Select(p, a, b) => {
            loads(p, buf, loops, f);
            loads(a, buf, loops, f);
            loads(b, buf, loops, f);
        }
    }
}

/// Whether `offset` is `b C + rest` with `rest` in `[0, C)` over `loops` (`C` the
/// agreed `c`, set by the first offset naming the block), or names no block index
/// (`C` 0: then any bounded offset fits).
fn fits(offset: Expr, loops: &[Bound], block: Expr, c: &mut Option<i64>) -> Option<()> {
    let lin = Linear::of(offset)?;
    let step = lin.coefficient(block);
    let (mut lo, mut hi) = (lin.constant, lin.constant);
    for &(atom, coef) in lin.terms.iter().filter(|t| t.0 != block) {
        let v = atom.as_var()?;
        let &(_, a, b) = loops.iter().rev().find(|l| l.0 == v)?;
        let (x, y) = (coef.checked_mul(a)?, coef.checked_mul(b)?);
        lo = lo.checked_add(x.min(y))?;
        hi = hi.checked_add(x.max(y))?;
    }
    match (*c, step) {
        (None, s) => *c = Some(s),
        (Some(c), s) if c == s => {}
        _ => return None,
    }
    (step == 0 || (lo >= 0 && hi < step)).then_some(())
}

/// Replaces the chain at `i` by its slices (see [`slice_chains`]), renumbering the
/// buffers' thunk indices; returns the thunks added.
fn apply(
    thunks: &mut Vec<Thunk>,
    buffers: &mut Vec<Buffer>,
    i: usize,
    plan: &Plan,
    views: &mut Vec<View>,
) -> usize {
    let n = plan.chain.len();
    // The chain as sliced (its scores' rows perhaps split, [`split_rows`]).
    thunks.drain(i..i + n);
    let chain = &plan.own;
    let mut sliced = Vec::with_capacity(n * plan.slices);
    for s in 0..plan.slices {
        for t in chain.iter() {
            sliced.push(match t {
                Thunk::Gemm {
                    shape,
                    lhs,
                    rhs,
                    out,
                } => {
                    let index = batch_index(&shape.batch[..plan.prefix], s);
                    let mut bind = |b: BufferId, which: usize, ty: codegen::kir::ScalarType| {
                        if plan.local.contains(&b) {
                            return b;
                        }
                        let elements: isize = shape.batch[..plan.prefix]
                            .iter()
                            .zip(&index)
                            .map(|(d, &x)| x as isize * [d.1, d.2, d.3][which])
                            .sum();
                        let delta = elements as u64 * ty.byte_width() as u64;
                        buffers.push(Buffer {
                            name: format!("{}.slice{s}", buffers[b].name),
                            bytes: buffers[b].bytes - delta,
                            allocation: PENDING,
                            defined_at: None,
                            last_use: None,
                        });
                        let view = buffers.len() - 1;
                        views.push(View {
                            view,
                            base: b,
                            delta,
                        });
                        view
                    };
                    let (lhs, rhs, out) = (
                        bind(*lhs, 0, shape.lhs_ty),
                        bind(*rhs, 1, shape.rhs_ty),
                        bind(*out, 2, shape.out_ty),
                    );
                    Thunk::Gemm {
                        shape: GemmShape {
                            batch: shape.batch[plan.prefix..].to_vec(),
                            ..shape.clone()
                        },
                        lhs,
                        rhs,
                        out,
                    }
                }
                Thunk::Kernel {
                    kernel,
                    args,
                    blocks,
                    elements,
                } => Thunk::Kernel {
                    kernel: *kernel,
                    args: args.clone(),
                    blocks: blocks / plan.slices as i64,
                    elements: (elements / plan.slices as i64).max(1),
                },
                other => other.clone(),
            });
        }
    }
    let added = sliced.len() - n;
    thunks.splice(i..i, sliced);
    // Thunk `i + r` of the chain: its first slice's copy is still at `i + r` (where a
    // value is first written), its last slice's at `i + r + added` (where a value is
    // last read); thunks after the chain move by `added`.
    for b in buffers.iter_mut() {
        if let Some(d) = b
            .defined_at
            .as_mut()
            .filter(|d| **d != usize::MAX && **d >= i + n)
        {
            *d += added;
        }
        if let Some(u) = b
            .last_use
            .as_mut()
            .filter(|u| **u != usize::MAX && **u >= i)
        {
            *u += added;
        }
    }
    for &b in &plan.local {
        buffers[b].bytes /= plan.slices as u64;
    }
    added
}

/// The index of slice `s` over batch dimensions `dims` (row-major: the first outermost).
fn batch_index(dims: &[(usize, isize, isize, isize)], mut s: usize) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (x, d) in index.iter_mut().zip(dims).rev() {
        *x = s % d.0;
        s /= d.0;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_of_the_leading_batch_dimensions_must_be_outermost_and_dense() {
        // Scores [b=4, h=4, q=8, k=8] row-major: slices over b, or over (b, h).
        let batch = [(4, 256), (4, 64)];
        let matrix = [(8, 8), (8, 1)];
        assert_eq!(sliced_densely(&batch, &matrix, 1, 1024), Some(()));
        assert_eq!(sliced_densely(&batch, &matrix, 2, 1024), Some(()));
        // Read transposed (the probabilities as a GEMM's rhs [k, q]): still dense.
        assert_eq!(sliced_densely(&batch, &[(8, 1), (8, 8)], 2, 1024), Some(()));
        // Heads outermost in memory but second in the batch: slice 1 of b is not at L.
        assert_eq!(sliced_densely(&[(4, 64), (4, 256)], &matrix, 1, 1024), None);
        // A gap (a padded row) or a buffer larger than the GEMM covers.
        assert_eq!(sliced_densely(&batch, &[(8, 9), (8, 1)], 1, 1024), None);
        assert_eq!(sliced_densely(&batch, &matrix, 1, 2048), None);
    }

    #[test]
    fn batch_index_is_row_major() {
        let dims = [(2, 0, 0, 0), (3, 0, 0, 0)];
        let all: Vec<Vec<usize>> = (0..6).map(|s| batch_index(&dims, s)).collect();
        assert_eq!(all[0], vec![0, 0]);
        assert_eq!(all[1], vec![0, 1]);
        assert_eq!(all[3], vec![1, 0]);
        assert_eq!(all[5], vec![1, 2]);
    }

    #[test]
    fn block_extents_bound_loads_and_stores() {
        use codegen::kir::ScalarType;
        let (block, col) = (Var::range(0), Var::range(1));
        let at = |c: i64, extra: i64| {
            Expr::var(block)
                .mul(Expr::constant(c))
                .add(Expr::var(col))
                .add(Expr::constant(extra))
        };
        let body = |offset: Expr| {
            vec![Stmt::Loop {
                kind: codegen::kir::LoopKind::Serial,
                var: col,
                lo: 0,
                hi: 7,
                body: vec![Stmt::Store {
                    buf: 1,
                    offset,
                    value: Value::Load {
                        buf: 0,
                        offset,
                        ty: ScalarType::F32,
                    },
                }],
            }]
        };
        let b = Expr::var(block);
        assert_eq!(block_extent(&body(at(8, 0)), 0, b), Some(8));
        assert_eq!(block_extent(&body(at(8, 0)), 1, b), Some(8));
        // One element past the block's range, or an unnamed buffer.
        assert_eq!(block_extent(&body(at(8, 1)), 0, b), None);
        assert_eq!(block_extent(&body(at(8, 0)), 2, b), Some(0));
        // Not naming the block: read whole.
        assert_eq!(block_extent(&body(Expr::var(col)), 0, b), Some(0));
    }
}
