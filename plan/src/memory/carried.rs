//! Carried loop values in place (issue 32 item 4, "while bodies run in place on their
//! carry"). A loop's state lives through the whole loop in buffers of its own, and each
//! body result lives from its kernel to the loop's end, then is copied into the state.
//! Where body result `k` is written by a kernel that may write it over state element `k`
//! (an in-place candidate, [`super::in_place`]: the indexing maps or the statement order
//! prove every element is read before it is written) and state element `k` dies there
//! (no later thunk of the body names it, no body result is it), the result takes the
//! state's allocation itself: the kernel updates the carry, the end-of-iteration copy is
//! a buffer onto itself (the executors skip it) and the result needs no bytes of its own.
//!
//! This is exact for every iteration: the body runs after the condition, so the kernel
//! reads the state of this iteration; nothing after it reads that state; the copies at
//! the loop's end read the results (this one already in place) before writing the state.

use codegen::kir::Kernel;

use super::in_place::Candidate;
use crate::thunk_names::each_named;
use crate::{Buffer, BufferId, Thunk};

/// A body result written over its loop's state element by the kernel `kernel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carried {
    /// The kernel writing the result (index into the program's kernels).
    pub kernel: usize,
    /// The body result.
    pub result: BufferId,
    /// The state element it replaces.
    pub state: BufferId,
}

impl Carried {
    /// The same pair as an in-place candidate (the result over the state's bytes).
    pub fn candidate(&self) -> Candidate {
        Candidate {
            kernel: self.kernel,
            output: self.result,
            operand: self.state,
        }
    }
}

/// What a buffer's allocation holds while it waits for the allocation of the value whose
/// bytes it takes (a carried result its state's, a read-only state element its initial
/// value's): the assignment counts it as placed (no bytes of its own).
pub const PENDING: usize = usize::MAX - 1;

/// Every carried pair of every loop, at any depth (see the module docs), from the
/// builder's in-place `candidates`.
pub fn carried(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    candidates: &[Candidate],
) -> Vec<Carried> {
    let mut out = Vec::new();
    for t in thunks {
        walk(t, buffers, kernels, candidates, &mut out);
    }
    out
}

/// The pairs of `t` and of the loops nested in it.
fn walk(
    t: &Thunk,
    buffers: &[Buffer],
    kernels: &[Kernel],
    candidates: &[Candidate],
    out: &mut Vec<Carried>,
) {
    match t {
        Thunk::While {
            cond,
            body,
            body_results,
            state,
            ..
        } => {
            for inner in cond.iter().chain(body) {
                walk(inner, buffers, kernels, candidates, out);
            }
            for (k, (&r, &s)) in body_results.iter().zip(state).enumerate() {
                if let Some(c) = pair(body, body_results, state, k, kernels, candidates) {
                    let same_bytes =
                        buffers.get(r).map(|b| b.bytes) == buffers.get(s).map(|b| b.bytes);
                    if same_bytes && !out.iter().any(|o| o.result == r || o.state == s) {
                        out.push(c);
                    }
                }
            }
        }
        Thunk::Conditional { branches, .. } => {
            for inner in branches.iter().flat_map(|(ts, _)| ts) {
                walk(inner, buffers, kernels, candidates, out);
            }
        }
        _ => {}
    }
}

/// Body result `k` over state element `k`, when a kernel of the body (not nested) writes
/// the result as an in-place candidate over the state element, every parameter of it
/// bound to the state reads only, the result is returned once, and neither a later thunk
/// of the body nor the results name the state element.
fn pair(
    body: &[Thunk],
    results: &[BufferId],
    state: &[BufferId],
    k: usize,
    kernels: &[Kernel],
    candidates: &[Candidate],
) -> Option<Carried> {
    let (r, s) = (*results.get(k)?, *state.get(k)?);
    if r == s || results.contains(&s) || results.iter().filter(|&&x| x == r).count() != 1 {
        return None;
    }
    // The last body thunk naming the result or the state: it must be the one kernel
    // writing the result (a result is written once; the state may be read before it).
    let mut writer = None;
    for (i, t) in body.iter().enumerate() {
        let (mut names_state, mut writes_result) = (false, false);
        each_named(t, kernels, &mut |b, w| {
            names_state |= b == s;
            writes_result |= b == r && w;
        });
        if writes_result {
            if writer.is_some() {
                return None;
            }
            writer = Some(i);
        } else if names_state && writer.is_some() {
            return None;
        }
    }
    let Thunk::Kernel { kernel, args, .. } = body.get(writer?)? else {
        return None;
    };
    let c = Candidate {
        kernel: *kernel,
        output: r,
        operand: s,
    };
    let params = &kernels.get(*kernel)?.buffers;
    let reads_only = args.len() == params.len()
        && args
            .iter()
            .zip(params)
            .all(|(&a, p)| a != s || p.access == codegen::kir::Access::In);
    (candidates.contains(&c) && args.contains(&s) && reads_only).then_some(Carried {
        kernel: *kernel,
        result: r,
        state: s,
    })
}

/// Entry loops' state elements that the loop never changes (the body returns the element
/// as it is, no thunk of the condition or body writes it) started from a value that is
/// never written either: a parameter or constant (not in `keep_apart`: the donated
/// parameters, whose bytes an output takes, and the program's outputs), or a temporary
/// of the entry defined before the loop (`kmeans_while`'s 4 MB of points, scaled before
/// the loop and read again after it, were a second 4 MB of state): as `(state, init)`.
/// Such an element may live in its initial value's allocation (a model's weights carried
/// through a decoding loop): nothing writes either while both are live, and the copy into
/// the state becomes a copy onto itself. In-place kernels must not write over the state
/// element or the initial value afterwards (the caller drops such in-place pairs), and a
/// temporary initial value must live as long as its state ([`hold_read_only`]).
pub fn read_only_state(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    keep_apart: &[BufferId],
) -> Vec<(BufferId, BufferId)> {
    let mut out = Vec::new();
    for (at, t) in thunks.iter().enumerate() {
        let Thunk::While {
            cond,
            body,
            body_results,
            state,
            init,
            ..
        } = t
        else {
            continue;
        };
        let mut written = std::collections::HashSet::new();
        for inner in cond.iter().chain(body) {
            each_named(inner, kernels, &mut |b, w| {
                if w {
                    written.insert(b);
                }
            });
        }
        for ((&r, &s), &i) in body_results.iter().zip(state).zip(init) {
            let (Some(sb), Some(ib)) = (buffers.get(s), buffers.get(i)) else {
                continue;
            };
            // A parameter or constant, or an entry temporary made before the loop (not
            // an output, nor bound to bytes of something else already).
            let fixed = ib.defined_at.is_none() && ib.allocation != usize::MAX;
            let temp = ib.defined_at.is_some_and(|d| d < at)
                && ib.allocation == usize::MAX
                && ib.last_use != Some(usize::MAX);
            let fits = r == s
                && (fixed || temp)
                && !written.contains(&s)
                && sb.allocation == usize::MAX
                && sb.bytes == ib.bytes
                && !keep_apart.contains(&s)
                && !keep_apart.contains(&i)
                && state.iter().filter(|&&x| x == s).count() == 1;
            if fits {
                out.push((s, i));
            }
        }
    }
    out
}

/// Loops' state elements started from a temporary that dies at the loop (made before
/// it, read by nothing after it, not an output nor in `keep_apart`): as `(state, init)`;
/// entry loops by the builder's indices, loops in bodies and branches by their steps. A temporary starting several elements goes to the first of them
/// only; the others are copied from it at the loop's start, before any iteration writes
/// the first (`gpt2_greedy_decode_loop`'s two 3 MB key and value caches both start from
/// one broadcast of zeros, which stayed a third 3 MB beside them). The state may take
/// the temporary's bytes, as XLA's while loops run on their operand's buffer: the copy
/// into the state becomes a copy onto itself, and the first iteration reads the initial
/// value where it was made (`gru_scan`'s 4 MB of stacked outputs, zeros from a
/// broadcast, were a second 4 MB of state). The caller assigns each pair as one group
/// (one offset, from the temporary's definition to the state's last use) and binds the
/// state to the temporary's allocation if the assignment kept the groups. Elements in
/// `taken` (the read-only ones, [`read_only_state`]) are left out.
pub fn dying_init_state(
    thunks: &[Thunk],
    buffers: &[Buffer],
    keep_apart: &[BufferId],
    taken: &[(BufferId, BufferId)],
) -> Vec<(BufferId, BufferId)> {
    let mut out = Vec::new();
    let entry_steps = |i: BufferId| {
        let ib = buffers.get(i)?;
        Some((ib.defined_at?, ib.last_use?))
    };
    for (at, t) in thunks.iter().enumerate() {
        dying_pairs(t, at, entry_steps, (buffers, keep_apart, taken), &mut out);
    }
    // Loops in loop bodies and branches, by their own steps: the temporary is first
    // named before the loop's start and last at it (a value of the enclosing body made
    // for this loop alone; the enclosing loop's state lives to its end, so never
    // qualifies). `neural_odeint_adjoint_grad`'s inner solver loops started their state
    // from a fresh 1.2 MB and 0.8 MB copy each.
    let steps = super::steps::live_steps(thunks, buffers);
    let nested_steps = |i: BufferId| match steps.get(i) {
        Some(&(Some(d), Some(l))) => Some((d, l)),
        _ => None,
    };
    for (at, t) in super::steps::nested_loops(thunks) {
        dying_pairs(t, at, nested_steps, (buffers, keep_apart, taken), &mut out);
    }
    out
}

/// [`dying_init_state`]'s pairs of one loop starting at step `at`, where `steps` gives a
/// buffer's (first, last) step in the numbering the loop's `at` belongs to.
fn dying_pairs(
    t: &Thunk,
    at: usize,
    steps: impl Fn(BufferId) -> Option<(usize, usize)>,
    (buffers, keep_apart, taken): (&[Buffer], &[BufferId], &[(BufferId, BufferId)]),
    out: &mut Vec<(BufferId, BufferId)>,
) {
    let Thunk::While { state, init, .. } = t else {
        return;
    };
    let mut given = std::collections::HashSet::new();
    for (&s, &i) in state.iter().zip(init) {
        let (Some(sb), Some(ib), Some((d, l))) = (buffers.get(s), buffers.get(i), steps(i)) else {
            continue;
        };
        let fits = d < at
            && l == at
            && ib.allocation == usize::MAX
            && sb.allocation == usize::MAX
            && sb.bytes == ib.bytes
            && s != i
            && !keep_apart.contains(&s)
            && !keep_apart.contains(&i)
            && state.iter().filter(|&&x| x == s).count() == 1
            && !given.contains(&i)
            && !taken.iter().any(|&(x, y)| x == s || y == i);
        if fits {
            given.insert(i);
            out.push((s, i));
        }
    }
}

/// Places the read-only state elements (`(state, init)`, [`read_only_state`]): one
/// started from a parameter or constant is marked placed (the assignment gives it no
/// bytes; the caller binds it to its initial value's allocation afterwards); one started
/// from a temporary is returned, to be assigned as one group with it (as an in-place
/// pair: one offset, live from the initial value's definition to the state's last use,
/// the whole loop included), and bound to its allocation if the assignment kept the
/// groups.
pub fn hold_read_only(
    buffers: &mut [Buffer],
    read_only: &[(BufferId, BufferId)],
) -> Vec<(BufferId, BufferId)> {
    let mut grouped = Vec::new();
    for &(s, i) in read_only {
        if buffers[i].defined_at.is_some() {
            grouped.push((s, i));
        } else {
            buffers[s].allocation = PENDING;
        }
    }
    grouped
}

/// Marks every carried result as placed, so that the assignment gives it no bytes of its
/// own (its state's range covers the result's: the whole loop); [`place`] then binds it.
pub fn hold(buffers: &mut [Buffer], carried: &[Carried]) {
    for c in carried {
        if let Some(b) = buffers.get_mut(c.result) {
            b.allocation = PENDING;
        }
    }
}

/// Binds every carried result to its state element's allocation (after the assignment):
/// one allocation, so the executors' end-of-iteration copy of it is skipped.
pub fn place(buffers: &mut [Buffer], carried: &[Carried]) {
    for c in carried {
        let a = buffers[c.state].allocation;
        buffers[c.result].allocation = a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(args: Vec<BufferId>) -> Thunk {
        let kernel = args[0];
        Thunk::Kernel {
            kernel,
            args,
            blocks: 1,
            elements: 1,
        }
    }

    fn buffers(n: usize) -> Vec<Buffer> {
        (0..n)
            .map(|i| Buffer {
                name: format!("b{i}"),
                bytes: 64,
                allocation: usize::MAX,
                defined_at: Some(0),
                last_use: Some(0),
            })
            .collect()
    }

    /// Kernel `i` reads its first argument and writes its second (the kernels are
    /// indexed by the first argument's number, so each reader has one of its own).
    fn kernels(n: usize) -> Vec<Kernel> {
        let text =
            "kernel k blocks=1 (d0 = block)\n  b0 in x: f32[16]{0}\n  b1 out y: f32[16]{0}\n";
        (0..n)
            .map(|_| codegen::kir::parse_kernel(text).unwrap())
            .collect()
    }

    fn lp(body: Vec<Thunk>, results: Vec<BufferId>, state: Vec<BufferId>) -> Thunk {
        Thunk::While {
            name: "w".into(),
            cond: vec![],
            cond_result: 9,
            body,
            body_results: results,
            state,
            init: vec![8],
            trips: None,
        }
    }

    fn cand(kernel: usize, output: BufferId, operand: BufferId) -> Candidate {
        Candidate {
            kernel,
            output,
            operand,
        }
    }

    #[test]
    fn a_result_over_its_dying_state_element() {
        // State b0 read by kernel 0 into b1 (the result); a later kernel reads b1 only.
        let (bufs, ks) = (buffers(10), kernels(10));
        let t = lp(
            vec![kernel(vec![0, 1]), kernel(vec![1, 2])],
            vec![1],
            vec![0],
        );
        let found = carried(&[t], &bufs, &ks, &[cand(0, 1, 0)]);
        assert_eq!(
            found,
            [Carried {
                kernel: 0,
                result: 1,
                state: 0
            }]
        );
    }

    #[test]
    fn not_when_the_state_is_read_later_or_returned_or_unproven() {
        let (bufs, ks) = (buffers(10), kernels(10));
        // A later kernel reads the state after the result's kernel wrote over it.
        let later = lp(
            vec![kernel(vec![0, 1]), kernel(vec![0, 2])],
            vec![1],
            vec![0],
        );
        assert_eq!(carried(&[later], &bufs, &ks, &[cand(0, 1, 0)]), []);
        // The state is another result (rotated into element 1).
        let rotated = lp(vec![kernel(vec![0, 1])], vec![1, 0], vec![0, 3]);
        assert_eq!(carried(&[rotated], &bufs, &ks, &[cand(0, 1, 0)]), []);
        // No candidate: the maps did not prove the pair.
        let unproven = lp(vec![kernel(vec![0, 1])], vec![1], vec![0]);
        assert_eq!(carried(&[unproven], &bufs, &ks, &[]), []);
        // The result is another element's state position: results and state differ.
        let other = lp(vec![kernel(vec![0, 1])], vec![4, 1], vec![0, 3]);
        assert_eq!(carried(&[other], &bufs, &ks, &[cand(0, 1, 0)]), []);
        // Another size.
        let mut small = buffers(10);
        small[1].bytes = 32;
        let t = lp(vec![kernel(vec![0, 1])], vec![1], vec![0]);
        assert_eq!(carried(&[t], &small, &ks, &[cand(0, 1, 0)]), []);
    }

    #[test]
    fn loops_nested_in_bodies_too() {
        let (bufs, ks) = (buffers(10), kernels(10));
        let inner = lp(vec![kernel(vec![3, 4])], vec![4], vec![3]);
        let outer = lp(vec![inner, kernel(vec![0, 1])], vec![1], vec![0]);
        let found = carried(&[outer], &bufs, &ks, &[cand(3, 4, 3), cand(0, 1, 0)]);
        assert_eq!(found.len(), 2);
        let mut bufs = bufs;
        hold(&mut bufs, &found);
        assert_eq!(bufs[4].allocation, PENDING);
        bufs[0].allocation = 7;
        bufs[3].allocation = 5;
        place(&mut bufs, &found);
        assert_eq!((bufs[1].allocation, bufs[4].allocation), (7, 5));
    }

    #[test]
    fn unchanged_state_takes_its_initial_values_bytes() {
        // State b0 (from parameter b8) returned as is; b3 (from b8 too) written by a body
        // kernel; b5 from the temporary b6 (made by the kernel before the loop); b7
        // returned as is but an output.
        let (mut bufs, ks) = (buffers(10), kernels(10));
        bufs[8].defined_at = None;
        bufs[8].allocation = 2;
        let t = Thunk::While {
            name: "w".into(),
            cond: vec![],
            cond_result: 9,
            body: vec![kernel(vec![0, 4]), kernel(vec![4, 3])],
            body_results: vec![0, 3, 5, 7],
            state: vec![0, 3, 5, 7],
            init: vec![8, 8, 6, 8],
            trips: None,
        };
        let thunks = [kernel(vec![1, 6]), t.clone()];
        let found = read_only_state(&thunks, &bufs, &ks, &[7]);
        assert_eq!(found, [(0, 8), (5, 6)]);
        // The parameter's state is bound afterwards; the temporary's is assigned with it.
        let grouped = hold_read_only(&mut bufs, &found);
        assert_eq!(grouped, [(5, 6)]);
        assert_eq!(
            (bufs[0].allocation, bufs[5].allocation),
            (PENDING, usize::MAX)
        );
        // A donated parameter stays apart; a temporary made at the loop itself (no thunk
        // before it) or an output is no initial value to share.
        let mut bufs = buffers(10);
        bufs[8].defined_at = None;
        bufs[8].allocation = 2;
        assert_eq!(read_only_state(&thunks, &bufs, &ks, &[7, 8]), [(5, 6)]);
        assert_eq!(
            read_only_state(std::slice::from_ref(&t), &bufs, &ks, &[7]),
            [(0, 8)]
        );
        bufs[6].last_use = Some(usize::MAX);
        assert_eq!(read_only_state(&thunks, &bufs, &ks, &[7]), [(0, 8)]);
    }

    #[test]
    fn state_takes_the_bytes_of_an_initial_temporary_dying_at_the_loop() {
        // Thunk 0 writes b6 and b2; the loop (thunk 1) starts b5 from b6 (dying there),
        // b7 from b2 (read again by thunk 2), b0 from b8 (a parameter), b3 from b6's
        // twin b4 (an output); b9 from b1, already read-only.
        let mut bufs = buffers(12);
        for b in [6, 2, 4, 1] {
            bufs[b].defined_at = Some(0);
            bufs[b].last_use = Some(1);
        }
        bufs[2].last_use = Some(2);
        bufs[4].last_use = Some(usize::MAX);
        bufs[8].defined_at = None;
        bufs[8].allocation = 2;
        let t = Thunk::While {
            name: "w".into(),
            cond: vec![],
            cond_result: 10,
            body: vec![kernel(vec![5, 11])],
            body_results: vec![11, 7, 0, 3, 9],
            state: vec![5, 7, 0, 3, 9],
            init: vec![6, 2, 8, 4, 1],
            trips: None,
        };
        let thunks = [kernel(vec![0, 6]), t, kernel(vec![2, 10])];
        let found = dying_init_state(&thunks, &bufs, &[4], &[(9, 1)]);
        assert_eq!(found, [(5, 6)]);
        // A temporary starting two elements: the first takes its bytes, the second is
        // copied from it.
        let mut twice = thunks.clone();
        if let Thunk::While { init, .. } = &mut twice[1] {
            init[1] = 6;
        }
        assert_eq!(dying_init_state(&twice, &bufs, &[4], &[(9, 1)]), [(5, 6)]);
        // Not when it has another size.
        bufs[5].bytes = 32;
        assert_eq!(dying_init_state(&thunks, &bufs, &[4], &[(9, 1)]), []);
    }
}
