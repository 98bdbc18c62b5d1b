//! A decoding loop's stacked KV cache (`[l, b, t, d]`, one loop state element): each step
//! slices every layer out, writes the step's row at the loop counter (past `t` once the
//! loop runs longer than the cache: clamped), reads the updated layer (its sum feeds the
//! next layer's row, as attention feeds the next layer's keys) and concatenates the layers
//! back. The pipeline makes the concatenate a chain of updates of the cache
//! (`hlo_transforms::ConcatOfUpdatedSlices`) and the plan runs the chain in place on the
//! loop state: the body's cache result is the state's own buffer (no end-of-step copy, no
//! concatenate). Against the evaluator; a plan that copies the cache fails the count.

use crate::gen::{self, Rng};

const SUM: &str =
    "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";

/// The loop module of `seed`: state `(counter, cache, x, acc)`, `steps` iterations.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (l, b, t, d) = (
        2 + rng.below(3) as i64,
        1 + rng.below(3) as i64,
        2 + rng.below(5) as i64,
        1 + rng.below(4) as i64,
    );
    // At least two steps: a loop of one is inlined.
    let steps = 2 + rng.below(t as usize + 1);
    let cache = format!("f32[{l},{b},{t},{d}]");
    let xs = format!("f32[{l},{b},1,{d}]");
    let state = format!("(s32[], {cache}, {xs}, f32[])");
    let mut body = vec![
        format!("  st = {state} parameter(0)"),
        "  n = s32[] get-tuple-element(st), index=0".to_string(),
        format!("  cs = {cache} get-tuple-element(st), index=1"),
        format!("  x = {xs} get-tuple-element(st), index=2"),
        "  acc = f32[] get-tuple-element(st), index=3".to_string(),
        "  one = s32[] constant(1)".to_string(),
        "  n1 = s32[] add(n, one)".to_string(),
        "  zero = f32[] constant(0)".to_string(),
        "  z = s32[] constant(0)".to_string(),
    ];
    let (mut stacked, mut acc, mut prev) = (Vec::new(), "acc".to_string(), None::<String>);
    for k in 0..l {
        body.push(format!(
            "  sl{k} = f32[1,{b},{t},{d}] slice(cs), slice={{[{k}:{}], [0:{b}], [0:{t}], [0:{d}]}}",
            k + 1
        ));
        body.push(format!("  r{k} = f32[{b},{t},{d}] reshape(sl{k})"));
        body.push(format!(
            "  xs{k} = f32[1,{b},1,{d}] slice(x), slice={{[{k}:{}], [0:{b}], [0:1], [0:{d}]}}",
            k + 1
        ));
        body.push(format!("  xr{k} = f32[{b},1,{d}] reshape(xs{k})"));
        let row = match &prev {
            // The previous layer's reading feeds this layer's row.
            Some(p) => {
                body.push(format!(
                    "  pb{k} = f32[{b},1,{d}] broadcast({p}), dimensions={{}}"
                ));
                body.push(format!("  e{k} = f32[{b},1,{d}] add(xr{k}, pb{k})"));
                format!("e{k}")
            }
            None => format!("xr{k}"),
        };
        body.push(format!("  h{k} = f32[{b},1,{d}] sine({row})"));
        body.push(format!(
            "  up{k} = f32[{b},{t},{d}] dynamic-update-slice(r{k}, h{k}, z, n, z)"
        ));
        body.push(format!(
            "  m{k} = f32[] reduce(up{k}, zero), dimensions={{0,1,2}}, to_apply=sum"
        ));
        body.push(format!("  a{k} = f32[] add({acc}, m{k})"));
        acc = format!("a{k}");
        prev = Some(format!("m{k}"));
        body.push(format!("  st{k} = f32[1,{b},{t},{d}] reshape(up{k})"));
        stacked.push(format!("st{k}"));
    }
    body.push(format!(
        "  c = {cache} concatenate({}), dimensions={{0}}",
        stacked.join(", ")
    ));
    body.push(format!("  ROOT next = {state} tuple(n1, c, x, {acc})"));
    format!(
        "HloModule stacked_cache\n\n{SUM}\ncond {{\n  st = {state} parameter(0)\n  n = s32[] get-tuple-element(st), index=0\n  m = s32[] constant({steps})\n  ROOT lt = pred[] compare(n, m), direction=LT\n}}\n\nbody {{\n{}\n}}\n\nENTRY e {{\n  p = {cache} parameter(0)\n  x = {xs} parameter(1)\n  z = s32[] constant(0)\n  f = f32[] constant(0)\n  t0 = {state} tuple(z, p, x, f)\n  w = {state} while(t0), condition=cond, body=body\n  c = {cache} get-tuple-element(w), index=1\n  s = f32[] get-tuple-element(w), index=3\n  ROOT out = ({cache}, f32[]) tuple(c, s)\n}}\n",
        body.join("\n")
    )
}

#[test]
fn stacked_caches_update_in_place_and_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-stacked-caches");
    let mut failures = Vec::new();
    let mut copied = Vec::new();
    for seed in gen::seeds(0..10) {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            if !gen::loops_keep_element_in_place(&exe.plan().program, 1) {
                copied.push(format!("seed {seed}:\n{text}"));
            }
        });
    }
    gen::assert_none(&failures);
    assert!(
        copied.is_empty(),
        "{} modules copy their cache, the first:\n{}",
        copied.len(),
        copied[0]
    );
}
