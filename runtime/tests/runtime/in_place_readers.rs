//! Dynamic-update-slices written over a base that other instructions also read (a KV cache
//! updated layer by layer, each layer's attention reading the cache between the updates)
//! against the evaluator: in place where every other reader runs before the update and
//! none aliases the base's bytes, else after a copy. Random chains of updates of one
//! `[l, b, t, d]` cache with readers of the new value (a slice of the layer just written),
//! of the old value (a reduction over all of it, an alias of it through a layout-preserving
//! reshape), and old values returned as outputs; at the entry, or in the body of two
//! loops written with one body computation (the pipeline gives each loop its own copy).
//! Not vacuous: a third or more of the entry-level chains copy less often than they have
//! updates whose base has another reader (every such update copied before); a rule that
//! ignores the readers fails both tests.

use crate::gen::{self, Rng};

/// One chain of updates of `c0` (`[l, b, t, d]`, a kernel's result) by rows of `x`
/// (`[l, b, 1, d]`) at time `i`, with random readers.
struct Chain {
    lines: Vec<String>,
    /// The final cache.
    last: String,
    /// `(shape, name)` of every reader's value (scalars, `f32[l]`, `f32[t]`, old caches).
    readers: Vec<(String, String)>,
    /// How many updates have a base that another instruction reads and no output holds.
    shared: usize,
}

fn chain(rng: &mut Rng, dims: [i64; 4], pre: &str) -> Chain {
    let [l, b, t, d] = dims;
    let cache = format!("f32[{l},{b},{t},{d}]");
    let mut lines = Vec::new();
    let mut readers = Vec::new();
    let mut cur = format!("{pre}c0");
    // Per base c0..c{l-1}: (read by another instruction, returned).
    let mut read = vec![(false, false); l as usize + 1];
    for k in 0..l {
        let next = format!("{pre}c{}", k + 1);
        lines.push(format!("  {pre}lc{k} = s32[] constant({k})"));
        lines.push(format!(
            "  {pre}x{k} = f32[1,{b},1,{d}] slice({pre}x), slice={{[{k}:{}], [0:{b}], [0:1], [0:{d}]}}",
            k + 1
        ));
        lines.push(format!(
            "  {pre}upd{k} = f32[1,{b},1,{d}] exponential({pre}x{k})"
        ));
        lines.push(format!(
            "  {next} = {cache} dynamic-update-slice({cur}, {pre}upd{k}, {pre}lc{k}, {pre}z, {pre}i, {pre}z)"
        ));
        for j in 0..rng.below(4) {
            let r = format!("{pre}r{k}_{j}");
            match rng.below(4) {
                // The layer just written, as attention reads it.
                0 => {
                    lines.push(format!(
                        "  {r}s = f32[1,{b},{t},{d}] slice({next}), slice={{[{k}:{}], [0:{b}], [0:{t}], [0:{d}]}}",
                        k + 1
                    ));
                    lines.push(format!(
                        "  {r} = f32[] reduce({r}s, {pre}zero), dimensions={{0,1,2,3}}, to_apply=sum"
                    ));
                    readers.push(("f32[]".to_string(), r));
                    read[k as usize + 1].0 = true;
                }
                // The old value, read whole (written before or after the update).
                1 => {
                    lines.push(format!(
                        "  {r} = f32[{l}] reduce({cur}, {pre}zero), dimensions={{1,2,3}}, to_apply=sum"
                    ));
                    readers.push((format!("f32[{l}]"), r));
                    read[k as usize].0 = true;
                }
                // The old value through an alias of its bytes.
                2 => {
                    lines.push(format!("  {r}a = f32[{},{t},{d}] reshape({cur})", l * b));
                    lines.push(format!(
                        "  {r} = f32[{t}] reduce({r}a, {pre}zero), dimensions={{0,2}}, to_apply=sum"
                    ));
                    readers.push((format!("f32[{t}]"), r));
                    read[k as usize].0 = true;
                }
                // The old value itself, returned.
                _ => {
                    readers.push((cache.clone(), cur.clone()));
                    read[k as usize].1 = true;
                }
            }
        }
        cur = next;
    }
    let shared = read[..l as usize]
        .iter()
        .filter(|&&(r, out)| r && !out)
        .count();
    Chain {
        lines,
        last: cur,
        readers,
        shared,
    }
}

const SUM: &str =
    "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";

/// A chain at the entry; returns the module and how many updates have a base with another
/// reader.
fn entry_module(seed: u64) -> (String, usize) {
    let mut rng = Rng::new(seed);
    let dims = [
        2 + rng.below(3) as i64,
        1 + rng.below(3) as i64,
        3 + rng.below(6) as i64,
        1 + rng.below(5) as i64,
    ];
    let [l, b, t, d] = dims;
    let Chain {
        lines: body,
        last,
        readers,
        shared,
    } = chain(&mut rng, dims, "");
    let mut lines = vec![
        format!("  p = f32[{l},{b},{t},{d}] parameter(0)"),
        format!("  x = f32[{l},{b},1,{d}] parameter(1)"),
        "  i = s32[] parameter(2)".to_string(),
        "  zero = f32[] constant(0)".to_string(),
        "  z = s32[] constant(0)".to_string(),
        format!("  c0 = f32[{l},{b},{t},{d}] negate(p)"),
    ];
    lines.extend(body);
    let mut shapes = vec![format!("f32[{l},{b},{t},{d}]")];
    let mut names = vec![last];
    for (s, r) in readers {
        shapes.push(s);
        names.push(r);
    }
    lines.push(format!(
        "  ROOT out = ({}) tuple({})",
        shapes.join(", "),
        names.join(", ")
    ));
    (
        format!(
            "HloModule in_place_readers\n\n{SUM}\nENTRY e {{\n{}\n}}\n",
            lines.join("\n")
        ),
        shared,
    )
}

/// A chain in a loop body whose state is `(counter, cache, x, i, acc)`; two loops are
/// written with the same body and condition.
fn loop_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let dims = [
        2 + rng.below(3) as i64,
        1 + rng.below(3) as i64,
        3 + rng.below(6) as i64,
        1 + rng.below(5) as i64,
    ];
    let [l, b, t, d] = dims;
    let n = 1 + rng.below(3);
    let cache = format!("f32[{l},{b},{t},{d}]");
    let xs = format!("f32[{l},{b},1,{d}]");
    let state = format!("(s32[], {cache}, {xs}, s32[], f32[])");
    let Chain {
        lines: chain_lines,
        last,
        readers,
        ..
    } = chain(&mut rng, dims, "");
    let mut body = vec![
        format!("  st = {state} parameter(0)"),
        "  n = s32[] get-tuple-element(st), index=0".to_string(),
        format!("  cs = {cache} get-tuple-element(st), index=1"),
        format!("  x = {xs} get-tuple-element(st), index=2"),
        "  i = s32[] get-tuple-element(st), index=3".to_string(),
        "  acc = f32[] get-tuple-element(st), index=4".to_string(),
        "  one = s32[] constant(1)".to_string(),
        "  n1 = s32[] add(n, one)".to_string(),
        "  zero = f32[] constant(0)".to_string(),
        "  z = s32[] constant(0)".to_string(),
        format!("  c0 = {cache} negate(cs)"),
    ];
    body.extend(chain_lines);
    // Every reader summed into the accumulator (old caches too).
    let mut acc = "acc".to_string();
    for (j, (s, r)) in readers.iter().enumerate() {
        let dims_of = s.trim_start_matches("f32[").trim_end_matches(']');
        let rank = if dims_of.is_empty() {
            0
        } else {
            dims_of.split(',').count()
        };
        let all: Vec<String> = (0..rank).map(|q| q.to_string()).collect();
        body.push(format!(
            "  q{j} = f32[] reduce({r}, zero), dimensions={{{}}}, to_apply=sum",
            all.join(",")
        ));
        body.push(format!("  a{j} = f32[] add({acc}, q{j})"));
        acc = format!("a{j}");
    }
    body.push(format!(
        "  ROOT next = {state} tuple(n1, {last}, x, i, {acc})"
    ));
    format!(
        "HloModule in_place_readers_loop\n\n{SUM}\ncond {{\n  st = {state} parameter(0)\n  n = s32[] get-tuple-element(st), index=0\n  m = s32[] constant({n})\n  ROOT lt = pred[] compare(n, m), direction=LT\n}}\n\nbody {{\n{}\n}}\n\nENTRY e {{\n  p = {cache} parameter(0)\n  x = {xs} parameter(1)\n  i = s32[] parameter(2)\n  z = s32[] constant(0)\n  f = f32[] constant(0)\n  t0 = {state} tuple(z, p, x, i, f)\n  w0 = {state} while(t0), condition=cond, body=body\n  c1 = {cache} get-tuple-element(w0), index=1\n  sum1 = f32[] get-tuple-element(w0), index=4\n  t1 = {state} tuple(z, c1, x, i, sum1)\n  w1 = {state} while(t1), condition=cond, body=body\n  c2 = {cache} get-tuple-element(w1), index=1\n  sum2 = f32[] get-tuple-element(w1), index=4\n  ROOT out = ({cache}, f32[], f32[]) tuple(c2, sum1, sum2)\n}}\n",
        body.join("\n")
    )
}

/// The copy thunks at every level of a program.
fn copies(p: &plan::Program) -> usize {
    plan::memory::steps::nested_leaves(&p.thunks)
        .iter()
        .filter(|(_, t)| matches!(t, plan::Thunk::Copy { .. }))
        .count()
}

#[test]
fn updates_over_read_bases_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-in-place-readers");
    let mut failures = Vec::new();
    let (mut fewer, mut with_readers) = (0, 0);
    for seed in gen::seeds(0..24) {
        let (text, shared) = entry_module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            if shared > 0 {
                with_readers += 1;
                fewer += usize::from(copies(&exe.plan().program) < shared);
            }
        });
    }
    gen::assert_none(&failures);
    assert!(
        with_readers < 8 || fewer * 3 >= with_readers,
        "only {fewer} of {with_readers} chains with read bases copied less than once per update"
    );
}

#[test]
fn updates_over_read_bases_in_shared_loop_bodies_match_the_reference_evaluator() {
    gen::check_all(
        "hloc-cache-in-place-readers-loop",
        gen::seeds(0..16),
        |seed| Some(loop_module(seed)),
    );
}
