//! Attention run one batch slice at a time (`plan::stream_chain`, issue 32): random
//! `softmax(Q K^T)` against `V` in both forms JAX writes (the probabilities as the second
//! GEMM's rhs, `V^T P^T`, as in `unet_down_groupnorm_attn`, or as its lhs, `P V`), with
//! or without a scale, compiled with the streaming threshold at zero so the small scores
//! slice. The chain's thunks then run once per (batch, head) slice over a scores buffer
//! of one slice (a batch element, or a part of its rows), `Q`, `K`, `V` and the result
//! bound as views, and every output matches the reference evaluator's, for 1 to 3 worker
//! threads (fewer slices where a slice would leave a worker without blocks). With `Q`,
//! `K` and `V` the module's parameters, their views lie in the parameters' own memory,
//! read in place.

use std::path::Path;

use runtime::CompileOptions;

use crate::gen::{list, Rng};

/// A random attention module: `(text, scores elements, batch elements)`; `Q`, `K` and `V`
/// computed from two parameters, or with `over_parameters` parameters 0, 1 and 2.
fn module(seed: u64, over_parameters: bool) -> (String, i64, i64) {
    let mut rng = Rng::new(seed);
    let (b, h) = (rng.range(1, 3), rng.range(1, 4));
    let l = [64, 96, 128][rng.below(3)];
    let d = [4, 8, 16][rng.below(3)];
    let pv = rng.below(2) == 0;
    let scaled = rng.below(2) == 0;
    let x = format!("f32[{}]", list(&[b, l, h, d]));
    let s = format!("f32[{}]", list(&[b, h, l, l]));
    let rows = format!("f32[{}]", list(&[b, h, l]));
    let scale = if scaled {
        format!(
            "  c = f32[] constant(0.25)\n  cb = {s} broadcast(c), dimensions={{}}\n  \
             sc = {s} multiply(s0, cb)\n"
        )
    } else {
        format!("  sc = {s} negate(s0)\n")
    };
    let (o, dot) = if pv {
        (
            format!("f32[{}]", list(&[b, h, l, d])),
            "dot(p, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, \
             rhs_batch_dims={0,2}, rhs_contracting_dims={1}",
        )
    } else {
        (
            format!("f32[{}]", list(&[b, h, d, l])),
            "dot(v, p), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, \
             rhs_batch_dims={0,1}, rhs_contracting_dims={3}",
        )
    };
    let inputs = if over_parameters {
        format!("  q = {x} parameter(0)\n  k = {x} parameter(1)\n  v = {x} parameter(2)\n")
    } else {
        format!(
            "  x = {x} parameter(0)\n  y = {x} parameter(1)\n  \
             q = {x} sine(x)\n  k = {x} cosine(y)\n  v = {x} multiply(x, y)\n"
        )
    };
    let text = format!(
        "HloModule attention\n\
         max_f {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}}\n\
         add_f {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] add(a, b)\n}}\n\
         ENTRY e {{\n{inputs}  \
         s0 = {s} dot(q, k), lhs_batch_dims={{0,2}}, lhs_contracting_dims={{3}}, \
         rhs_batch_dims={{0,2}}, rhs_contracting_dims={{3}}\n{scale}  \
         ninf = f32[] constant(-inf)\n  mx = {rows} reduce(sc, ninf), dimensions={{3}}, to_apply=max_f\n  \
         mb = {s} broadcast(mx), dimensions={{0,1,2}}\n  e0 = {s} subtract(sc, mb)\n  \
         ex = {s} exponential(e0)\n  zero = f32[] constant(0)\n  \
         sm = {rows} reduce(ex, zero), dimensions={{3}}, to_apply=add_f\n  \
         sb = {s} broadcast(sm), dimensions={{0,1,2}}\n  p = {s} divide(ex, sb)\n  \
         o = {o} {dot}\n  ROOT r = {o} tanh(o)\n}}\n"
    );
    (text, b * h * l * l, b * h)
}

/// Compile options with `threads` workers and chains (and GEMM lhs) of at least
/// `min_bytes` streamed.
fn options(threads: usize, min_bytes: u64) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("sliced-attention")),
        threads: Some(threads),
        stream_min_bytes: Some(min_bytes),
        ..CompileOptions::default()
    }
}

#[test]
fn attention_sliced_per_batch_and_head_matches_the_evaluator() {
    sliced_attention_matches_the_evaluator(0..6, false);
}

/// `Q`, `K`, `V` the parameters: every slice reads them through views of the
/// parameters' own memory (`q.slice1`).
#[test]
fn attention_over_parameters_views_them_in_place() {
    sliced_attention_matches_the_evaluator(0..6, true);
}

/// Compiles and runs the attention modules of `seeds` (see [`module`]), against the
/// evaluator; at least half slice, half of those into less temp than run whole, some
/// by rows.
fn sliced_attention_matches_the_evaluator(seeds: std::ops::Range<u64>, over_parameters: bool) {
    let (mut sliced, mut smaller, mut rows, mut modules) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for seed in seeds {
        let (text, scores, elements) = module(seed, over_parameters);
        let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let threads = 1 + seed as usize % 3;
        let exe = runtime::compile(&m, &options(threads, 0))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let program = &exe.plan().program;
        let thunks = plan::thunks_text(program);
        modules += 1;
        if thunks.contains(".slice1 ") {
            sliced += 1;
            // Parameters are viewed where they are, never copied first.
            assert!(
                !over_parameters || (thunks.contains("%q.slice1 ") && !thunks.contains("copy")),
                "seed {seed}: the parameters are not viewed\n{thunks}"
            );
            // No more temp than the same chain run whole (a slice of the scores, though
            // `Q` and `K` now live through the chain), less where the scores are more
            // than those.
            let whole = runtime::compile(&m, &options(threads, u64::MAX))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            let (w, s) = (whole.plan().program.temp_bytes(), program.temp_bytes());
            assert!(
                s <= w,
                "seed {seed}: temp {s} bytes sliced, {w} whole, {scores} scores\n{thunks}"
            );
            smaller += usize::from(s < w);
            // More slices than batch elements: each one's rows split too.
            rows += usize::from(thunks.contains(&format!(".slice{elements} ")));
        }
        let args = crate::gen::random_args(&m, seed);
        let outs = exe.run(&args).expect("run");
        if let Err(e) = runtime::check_reference(&m, &args, &outs) {
            failures.push(format!("seed {seed}: {e}\n{text}\n{thunks}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        2 * sliced >= modules && 2 * smaller >= sliced && rows > 0,
        "only {sliced} of {modules} attention chains sliced, {smaller} into less temp, \
         {rows} by rows"
    );
}
