//! Property test of the buffer assignment (issue 32, "Done when"): on random modules
//! (DAGs whose values have several readers, tuple roots, loops), no two buffers that are
//! live at one step of the program share a byte of memory. Liveness is recomputed here
//! from the thunk sequence alone (each buffer from the first step that touches it to the
//! last, every thunk a step, a loop its start, its condition's and body's steps and its
//! end, a conditional its start, each branch's steps and its end: loop state, condition
//! results and conditional results through the whole loop or conditional, a body's or
//! branch's results to its end; outputs to the end; parameters and constants
//! throughout), independent of the planner's own ranges; a
//! temporary held in an output allocation shares that allocation's bytes; a loop
//! body result may share its state element's bytes where that element dies at the
//! result's kernel (carried in place). The
//! runtime's random-module tests check the outputs against the evaluator through the same
//! assignment.

use std::collections::HashMap;

use plan::{Program, Thunk};
use testkit::rng::XorShift;

/// A random module: `n` f32 values of random lengths (each one of a few sizes), each an
/// elementwise op of earlier values of its length or a slice or pad of one; the root a
/// tuple of some of them; sometimes a loop over one of them. Beside them a short chain of
/// elementwise ops over a second parameter `f32[8,8]{1,0}`, each in a random layout, the
/// last one an output donated from that parameter; the flag says whether that output
/// was declared in another layout than its parameter's.
fn random_module(seed: u64) -> (String, bool) {
    let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let sizes = [16i64, 64, 256, 1024];
    let mut lines = vec!["  p0 = f32[1024] parameter(0)".to_string()];
    let mut vals: Vec<(String, i64)> = vec![("p0".into(), 1024)];
    let n = 6 + rng.below(14);
    let mut head = String::new();
    for k in 0..n {
        let name = format!("v{k}");
        let (src, len) = vals[rng.below(vals.len())].clone();
        let line = match rng.below(5) {
            0 | 1 => {
                let op = ["exponential", "negate", "sqrt", "abs"][rng.below(4)];
                format!("  {name} = f32[{len}] {op}({src})")
            }
            2 => {
                let same: Vec<&(String, i64)> = vals.iter().filter(|v| v.1 == len).collect();
                let other = same[rng.below(same.len())].0.clone();
                format!("  {name} = f32[{len}] add({src}, {other})")
            }
            3 => {
                let to = sizes[rng.below(sizes.len())];
                if to <= len {
                    format!("  {name} = f32[{to}] slice({src}), slice={{[0:{to}]}}")
                } else {
                    lines.push(format!("  z{k} = f32[] constant(0)"));
                    format!(
                        "  {name} = f32[{to}] pad({src}, z{k}), padding=0_{}",
                        to - len
                    )
                }
            }
            _ if head.is_empty() => {
                head = format!(
                    "cond{k} {{\n  s = (s32[], f32[{len}]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  c = s32[] constant(3)\n  ROOT lt = pred[] compare(i, c), direction=LT\n}}\n\
body{k} {{\n  s = (s32[], f32[{len}]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  x = f32[{len}] get-tuple-element(s), index=1\n  y = f32[{len}] negate(x)\n  y1 = f32[{len}] exponential(y)\n  y3 = f32[{len}] abs(y1)\n  y2 = f32[{len}] add(x, y3)\n  ROOT r = (s32[], f32[{len}]) tuple(j, y2)\n}}\n"
                );
                lines.push(format!("  i{k} = s32[] constant(0)"));
                lines.push(format!("  t{k} = (s32[], f32[{len}]) tuple(i{k}, {src})"));
                lines.push(format!(
                    "  w{k} = (s32[], f32[{len}]) while(t{k}), condition=cond{k}, body=body{k}"
                ));
                format!("  {name} = f32[{len}] get-tuple-element(w{k}), index=1")
            }
            _ => format!("  {name} = f32[{len}] cosine({src})"),
        };
        let len = line
            .split("f32[")
            .nth(1)
            .and_then(|r| r.split(']').next())
            .and_then(|d| d.parse().ok())
            .unwrap_or(len);
        lines.push(line);
        vals.push((name, len));
    }
    let outs: Vec<&(String, i64)> = vals[1..]
        .iter()
        .filter(|_| rng.below(3) == 0)
        .chain(vals.last())
        .collect();
    let shapes: Vec<String> = outs.iter().map(|(_, l)| format!("f32[{l}]")).collect();
    let names: Vec<&str> = outs.iter().map(|(n, _)| n.as_str()).collect();
    // Often the parameter is donated to an output of its size (`input_output_alias`).
    let donated = outs.iter().position(|(n, l)| *l == 1024 && n != "p0");
    let mut aliases: Vec<String> = donated
        .filter(|_| rng.below(3) != 0)
        .map(|k| format!("{{{k}}}: (0, {{}}, may-alias)"))
        .into_iter()
        .collect();
    // The matrix chain: p1, then elementwise ops of earlier matrices in random layouts.
    let mut shapes = shapes;
    let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    lines.push("  p1 = f32[8,8]{1,0} parameter(1)".to_string());
    let layouts = ["{1,0}", "{0,1}"];
    let mut mats = vec!["p1".to_string()];
    let mut layout = "{1,0}";
    for k in 0..1 + rng.below(3) {
        layout = layouts[rng.below(2)];
        let x = mats[rng.below(mats.len())].clone();
        let rhs = match rng.below(3) {
            0 => format!("negate({x})"),
            1 => format!("add({x}, {})", mats[rng.below(mats.len())]),
            _ => format!("multiply({x}, {x})"),
        };
        lines.push(format!("  m{k} = f32[8,8]{layout} {rhs}"));
        mats.push(format!("m{k}"));
    }
    aliases.push(format!("{{{}}}: (1, {{}}, may-alias)", names.len()));
    shapes.push(format!("f32[8,8]{layout}"));
    names.extend(mats.last().cloned());
    let alias = format!(", input_output_alias={{ {} }}", aliases.join(", "));
    let text = format!(
        "HloModule r{seed}{alias}\n{head}ENTRY e {{\n{}\n  ROOT root = ({}) tuple({})\n}}\n",
        lines.join("\n"),
        shapes.join(", "),
        names.join(", ")
    );
    (text, layout != "{1,0}")
}

/// Widens buffer `b`'s range to hold steps `lo..=hi`.
fn widen(range: &mut HashMap<usize, (usize, usize)>, b: usize, lo: usize, hi: usize) {
    let r = range.entry(b).or_insert((lo, hi));
    *r = (r.0.min(lo), r.1.max(hi));
}

/// Adds the steps of `t` (starting at `*step`) to the range of every buffer it touches
/// (see the module docs) and `t` and each nested thunk to `at` at its first step (a
/// streamed GEMM's parts share its step: the GEMM stays there); returns `t`'s first step.
fn steps<'p>(
    t: &'p Thunk,
    step: &mut usize,
    range: &mut HashMap<usize, (usize, usize)>,
    at: &mut HashMap<usize, &'p Thunk>,
    seen: &mut Seen,
) -> usize {
    let here = *step;
    at.entry(here).or_insert(t);
    *step += 1;
    let leaf: Vec<usize> = match t {
        Thunk::Kernel { args, .. } => args.clone(),
        Thunk::Gemm {
            lhs, rhs, out: o, ..
        } => vec![*lhs, *rhs, *o],
        Thunk::Copy { src, dst, .. } => vec![*src, *dst],
        Thunk::Collective {
            inputs, outputs, ..
        }
        | Thunk::Library {
            inputs, outputs, ..
        } => inputs.iter().chain(outputs).map(|s| s.buffer).collect(),
        Thunk::StreamedGemm { producer, gemm, .. } => {
            // Both parts at this one step.
            for part in [&**producer, &**gemm] {
                steps(part, &mut here.clone(), range, at, seen);
            }
            Vec::new()
        }
        Thunk::While {
            cond,
            cond_result,
            body,
            body_results,
            state,
            init,
            ..
        } => {
            for t in cond.iter().chain(body) {
                steps(t, step, range, at, seen);
            }
            let end = *step;
            *step += 1;
            seen.loops
                .push((here, end, body_results.clone(), state.clone()));
            body_results.iter().for_each(|&b| widen(range, b, end, end));
            state.iter().for_each(|&b| widen(range, b, here, end));
            widen(range, *cond_result, here, end);
            init.clone()
        }
        Thunk::Conditional {
            selector,
            branches,
            results,
            ..
        } => {
            for t in branches.iter().flat_map(|(ts, _)| ts) {
                steps(t, step, range, at, seen);
            }
            let end = *step;
            *step += 1;
            for &b in branches.iter().flat_map(|(_, rs)| rs) {
                widen(range, b, end, end);
            }
            results.iter().for_each(|&b| widen(range, b, here, end));
            vec![*selector]
        }
    };
    for b in leaf {
        widen(range, b, here, here);
        seen.touched.entry(b).or_default().push(here);
    }
    here
}

/// What [`steps`] saw besides the ranges: the steps at which a thunk names each buffer
/// itself (a loop's state and results only where a thunk of it names them), and every
/// loop as (first step, last step, body results, state).
#[derive(Default)]
struct Seen {
    touched: HashMap<usize, Vec<usize>>,
    loops: Vec<(usize, usize, Vec<usize>, Vec<usize>)>,
}

/// Whether buffers `x` and `y` (with their places) are a loop's carried pair: body
/// result `k` and state element `k` of one loop, at the same place, the state not another
/// result, and the state named inside the loop at the result's first step at the latest,
/// by a kernel that writes the result there and marks the state `inout`.
fn carried(
    p: &Program,
    thunk_at: &HashMap<usize, &Thunk>,
    seen: &Seen,
    x: Placed,
    y: Placed,
) -> bool {
    let inside = |b: usize, lo: usize, hi: usize| -> Vec<usize> {
        seen.touched
            .get(&b)
            .map(|v| v.iter().copied().filter(|&t| lo < t && t < hi).collect())
            .unwrap_or_default()
    };
    seen.loops.iter().any(|(here, end, results, state)| {
        results.iter().zip(state).any(|(&r, &s)| {
            let is_pair = (x.0, y.0) == (r, s) || (x.0, y.0) == (s, r);
            let Some(&w) = inside(r, *here, *end).iter().min() else {
                return false;
            };
            let state_dies = inside(s, *here, *end).iter().all(|&t| t <= w);
            let Some(Thunk::Kernel { kernel, args, .. }) = thunk_at.get(&w) else {
                return false;
            };
            let marked = args
                .iter()
                .zip(&p.kernels[*kernel].buffers)
                .any(|(&a, bp)| a == s && bp.access == codegen::kir::Access::InOut);
            is_pair
                && x.2 == y.2
                && !results.contains(&s)
                && state_dies
                && args.contains(&r)
                && marked
        })
    })
}

/// Where a buffer lies: (memory region, first byte, end). Region `None` is the temp
/// block; `Some(a)` allocation `a` of its own, or the output allocation `a` holding it.
fn place(p: &Program, b: usize) -> (Option<usize>, u64, u64) {
    let buf = &p.buffers[b];
    let a = &p.allocations[buf.allocation];
    match (a.offset, a.parent) {
        (Some(o), Some(host)) => {
            let room = |b: u64| b.div_ceil(16) * 16;
            assert!(
                o + room(buf.bytes) <= room(p.allocations[host].bytes),
                "%{} past its host",
                buf.name
            );
            (Some(host), o, o + buf.bytes.max(1))
        }
        (Some(o), None) => (None, o, o + buf.bytes.max(1)),
        (None, _) => (Some(buf.allocation), 0, buf.bytes.max(1)),
    }
}

/// A buffer with its live range (first and last step) and its place ([`place`]).
type Placed = (usize, (usize, usize), (Option<usize>, u64, u64));

/// Whether buffers `x` and `y` (with their ranges and places) are an in-place pair: they
/// meet at one step only, a kernel (`thunk_at`: the thunk starting at a step, of the
/// entry sequence or nested in a loop or conditional) that reads the one ending there (its
/// parameter marked `inout`: its memory is written) and writes the one starting there, at
/// the same place.
fn in_place(p: &Program, thunk_at: &HashMap<usize, &Thunk>, x: Placed, y: Placed) -> bool {
    let (before, after) = if x.1 .1 == y.1 .0 { (x, y) } else { (y, x) };
    let s = before.1 .1;
    let Some(&thunk) = thunk_at.get(&s) else {
        return false;
    };
    let taken_over = match thunk {
        // A donated parameter copied onto itself, or starting a loop's state in place.
        Thunk::Copy { src, dst, .. } => *src == before.0 && *dst == after.0,
        Thunk::While { init, state, .. } => init
            .iter()
            .zip(state)
            .any(|(&i, &s)| i == before.0 && s == after.0),
        _ => false,
    };
    if taken_over {
        return after.1 .0 == s && before.2 == after.2;
    }
    let Thunk::Kernel { kernel, args, .. } = thunk else {
        return false;
    };
    let params = &p.kernels[*kernel].buffers;
    let marked = args
        .iter()
        .zip(params)
        .any(|(&a, bp)| a == before.0 && bp.access == codegen::kir::Access::InOut);
    after.1 .0 == s && before.2 == after.2 && args.contains(&after.0) && marked
}

/// The first pair of distinct buffers live at one step whose memory overlaps (in-place
/// pairs apart).
fn overlap(p: &Program) -> Option<String> {
    let mut range: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut step = 0;
    // The thunk starting at each step.
    let mut thunk_at: HashMap<usize, &Thunk> = HashMap::new();
    let mut seen = Seen::default();
    for t in &p.thunks {
        steps(t, &mut step, &mut range, &mut thunk_at, &mut seen);
    }
    let last = step;
    for spec in &p.outputs {
        if let Some(r) = range.get_mut(&spec.buffer) {
            r.1 = last;
        }
    }
    let donated = plan::memory::donate::donated_allocations(p);
    for (b, buf) in p.buffers.iter().enumerate() {
        if buf.defined_at.is_none() {
            // A donated parameter lives from the start to its last reader; any other
            // parameter or constant throughout.
            let end = match donated[buf.allocation] {
                true => range.get(&b).map_or(0, |r| r.1),
                false => last,
            };
            range.insert(b, (0, end));
        }
    }
    let live: Vec<(usize, (usize, usize))> = range.into_iter().collect();
    for (i, &(a, ra)) in live.iter().enumerate() {
        for &(b, rb) in &live[i + 1..] {
            let together = ra.0 <= rb.1 && rb.0 <= ra.1;
            let (pa, pb) = (place(p, a), place(p, b));
            if together
                && pa.0 == pb.0
                && pa.1 < pb.2
                && pb.1 < pa.2
                && !in_place(p, &thunk_at, (a, ra, pa), (b, rb, pb))
                && !carried(p, &thunk_at, &seen, (a, ra, pa), (b, rb, pb))
            {
                return Some(format!(
                    "%{} {:?} and %{} {:?} overlap at {pa:?} / {pb:?}",
                    p.buffers[a].name, ra, p.buffers[b].name, rb
                ));
            }
        }
    }
    None
}

/// Modules of the 300 with an in-place kernel inside a loop body, at least.
const BODY_IN_PLACE_MIN: usize = 100;

#[test]
fn no_two_live_buffers_overlap_on_random_modules() {
    let (mut shared, mut hosted, mut in_place_kernels, mut donated) = (0, 0, 0, 0);
    let (mut body_shared, mut body_in_place, mut carried_in_place) = (0, 0, 0);
    let mut relaid = 0;
    for seed in 0..300 {
        let (text, other_layout) = random_module(seed);
        let mut m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // As the compiler does: donated outputs take their parameters' layouts first.
        hlo::pass::Pass::run(&mut plan::MatchBoundaryLayouts, &mut m)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let p = plan::build_program(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if let Some(why) = overlap(&p) {
            panic!(
                "seed {seed}: {why}\n{text}\n{}",
                plan::buffer_assignment_text(&p)
            );
        }
        // The temp block is smaller than its values together when any are reused.
        let temps: u64 = p
            .allocations
            .iter()
            .filter(|a| a.offset.is_some() && a.parent.is_none())
            .map(|a| a.bytes.div_ceil(16) * 16)
            .sum();
        shared += usize::from(p.temp_block_bytes < temps);
        hosted += usize::from(p.allocations.iter().any(|a| a.parent.is_some()));
        in_place_kernels += usize::from(p.kernels.iter().any(|k| {
            k.buffers
                .iter()
                .any(|b| b.access == codegen::kir::Access::InOut)
        }));
        // Two values of one loop body in the same bytes (their steps apart).
        body_shared += usize::from(p.thunks.iter().enumerate().any(|(k, t)| {
            let nested: Vec<_> = (0..p.buffers.len())
                .filter(|&b| {
                    let buf = &p.buffers[b];
                    matches!(t, Thunk::While { .. })
                        && (buf.defined_at, buf.last_use) == (Some(k), Some(k))
                })
                .map(|b| place(&p, b))
                .collect();
            (0..nested.len()).any(|i| nested[i + 1..].contains(&nested[i]))
        }));
        // A kernel of a loop body writing over its dying operand.
        body_in_place += usize::from(plan::memory::steps::nested_leaves(&p.thunks).iter().any(
            |(_, t)| {
                matches!(t, Thunk::Kernel { kernel, .. } if p.kernels[*kernel]
                    .buffers
                    .iter()
                    .any(|b| b.access == codegen::kir::Access::InOut))
            },
        ));
        // A body result in its loop state's own allocation (the copy into it skipped).
        carried_in_place += usize::from(p.thunks.iter().any(|t| {
            matches!(t, Thunk::While { body_results, state, .. } if body_results
                .iter()
                .zip(state)
                .any(|(&r, &s)| r != s && p.buffers[r].allocation == p.buffers[s].allocation))
        }));
        let taken = plan::memory::donate::donated_allocations(&p);
        donated += usize::from(taken.contains(&true));
        // The matrix output, declared in another layout, now in its parameter's bytes.
        let matrix = p.outputs.last().map(|o| p.buffers[o.buffer].allocation);
        let p1 = p
            .allocations
            .iter()
            .position(|a| a.kind == plan::AllocationKind::Parameter(1));
        relaid += usize::from(other_layout && matrix.is_some() && matrix == p1);
        assert!(p.temp_block_bytes <= temps.max(16), "seed {seed}");
        assert!(p.peak_bytes <= p.buffer_bytes(), "seed {seed}");
    }
    // Not vacuous: most modules reuse memory, many keep temporaries in an output, many
    // have a kernel writing over its dying operand.
    assert!(shared > 100, "only {shared} modules reused temp memory");
    assert!(
        hosted > 50,
        "only {hosted} modules kept a temporary in an output"
    );
    assert!(
        in_place_kernels > 50,
        "only {in_place_kernels} modules had an in-place kernel"
    );
    assert!(
        donated > 30,
        "only {donated} modules wrote an output over its donated parameter"
    );
    assert!(
        body_shared > 20,
        "only {body_shared} modules kept two values of a loop body in the same bytes"
    );
    assert!(
        body_in_place > BODY_IN_PLACE_MIN,
        "only {body_in_place} modules had an in-place kernel in a loop body"
    );
    assert!(
        carried_in_place > BODY_IN_PLACE_MIN,
        "only {carried_in_place} modules updated a loop's state in place"
    );
    assert!(
        relaid > 30,
        "only {relaid} modules wrote an output declared in another layout over its parameter"
    );
}
