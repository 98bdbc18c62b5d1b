//! GEMMs streamed inside nested sequences (issue 32 item 2): random NHWC convolutions in a
//! `fori_loop` body, some inside a conditional's branch there, compiled with the streaming
//! threshold lowered to zero. Their im2col patches then stream into the GEMM inside the
//! loop body (`plan::stream` fuses the pair there too), and every output matches the
//! reference evaluator's for several scratch-slot counts (threads), slot counts that do
//! not divide the blocks included. Deterministic: a failure prints the module and its
//! thunks.

use std::path::Path;

use runtime::CompileOptions;

use crate::gen::{list, Rng};

/// A random module: the loop state `(i, x, w, acc)` over `n` iterations, the body
/// `acc += conv(x, w)` and `x = sine(x)`; with `branch`, the convolution is computed in
/// branch 0 of a conditional on `i < 1` (branch 1 negates the convolution of `x` with
/// `-w`, a second streamed pair). Returns the text, or `None` when the window leaves no
/// output or the patches are one block.
fn module(seed: u64) -> Option<String> {
    let mut rng = Rng::new(seed);
    let ty = ["f32", "f64"][rng.below(4) / 3];
    let (b, h, w) = (rng.range(1, 4), rng.range(10, 21), rng.range(10, 21));
    let (ci, co) = (rng.range(4, 11), rng.range(2, 10));
    let (kh, kw) = (rng.range(2, 4), rng.range(2, 4));
    // A stride equal to the window takes conv-to-gemm's reshape route (no patches).
    let (sh, sw) = (rng.range(1, kh), rng.range(1, kw));
    let (ph, pw) = (
        (rng.range(0, 2), rng.range(0, 2)),
        (rng.range(0, 2), rng.range(0, 2)),
    );
    let out = |n: i64, k: i64, s: i64, p: (i64, i64)| {
        let padded = n + p.0 + p.1;
        (padded >= k).then(|| (padded - k) / s + 1)
    };
    let (oh, ow) = (out(h, kh, sh, ph)?, out(w, kw, sw, pw)?);
    // Patches of one block (a kernel of at most `small_kernel_elements`, 16384, has
    // one) cannot stream: there is nothing to interleave.
    if b * oh * ow * kh * kw * ci <= 16384 {
        return None;
    }
    let iterations = rng.range(1, 4);
    let branch = rng.below(2) == 0;
    let x = format!("{ty}[{}]", list(&[b, h, w, ci]));
    let k = format!("{ty}[{}]", list(&[kh, kw, ci, co]));
    let o = format!("{ty}[{}]", list(&[b, oh, ow, co]));
    let conv = |lhs: &str, rhs: &str| {
        format!(
            "{o} convolution({lhs}, {rhs}), window={{size={kh}x{kw} stride={sh}x{sw} \
             pad={}_{}x{}_{}}}, dim_labels=b01f_01io->b01f",
            ph.0, ph.1, pw.0, pw.1
        )
    };
    let state = format!("(s32[], {x}, {k}, {o})");
    let pair = format!("({x}, {k})");
    let (branches, product) = if branch {
        (
            format!(
                "conv_branch {{\n  p = {pair} parameter(0)\n  a = {x} get-tuple-element(p), index=0\n  \
                 f = {k} get-tuple-element(p), index=1\n  ROOT c = {}\n}}\n\
                 negated_branch {{\n  p = {pair} parameter(0)\n  a = {x} get-tuple-element(p), index=0\n  \
                 f = {k} get-tuple-element(p), index=1\n  g = {k} negate(f)\n  c = {}\n  \
                 ROOT n = {o} negate(c)\n}}\n",
                conv("a", "f"),
                conv("a", "g")
            ),
            format!(
                "  one0 = s32[] constant(1)\n  first = pred[] compare(i, one0), direction=LT\n  \
                 xw = {pair} tuple(x, f)\n  \
                 c = {o} conditional(first, xw, xw), true_computation=conv_branch, \
                 false_computation=negated_branch"
            ),
        )
    } else {
        (String::new(), format!("  c = {}", conv("x", "f")))
    };
    Some(format!(
        "HloModule streamed_loop_{seed}\n{branches}\
         cond {{\n  s = {state} parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  \
         n = s32[] constant({iterations})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\
         body {{\n  s = {state} parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  \
         x = {x} get-tuple-element(s), index=1\n  f = {k} get-tuple-element(s), index=2\n  \
         acc = {o} get-tuple-element(s), index=3\n{product}\n  sum = {o} add(acc, c)\n  \
         y = {x} sine(x)\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  \
         ROOT r = {state} tuple(j, y, f, sum)\n}}\n\
         ENTRY e {{\n  x = {x} parameter(0)\n  f = {k} parameter(1)\n  acc = {o} parameter(2)\n  \
         zero = s32[] constant(0)\n  t = {state} tuple(zero, x, f, acc)\n  \
         l = {state} while(t), condition=cond, body=body\n  \
         rx = {x} get-tuple-element(l), index=1\n  racc = {o} get-tuple-element(l), index=3\n  \
         ROOT out = ({x}, {o}) tuple(rx, racc)\n}}\n"
    ))
}

fn options(threads: usize, stream_min_bytes: u64) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("streamed-loops")),
        threads: Some(threads),
        stream_min_bytes: Some(stream_min_bytes),
        ..CompileOptions::default()
    }
}

/// Compiles `text` with `options`, checks two random inputs against the evaluator and
/// returns the thunks, or the mismatch with the module and its thunks.
fn run(seed: u64, text: &str, options: &CompileOptions) -> Result<String, String> {
    let m = hlo::parse_module(text).map_err(|e| format!("seed {seed}: {e}\n{text}"))?;
    let exe = runtime::compile(&m, options).map_err(|e| format!("seed {seed}: {e}\n{text}"))?;
    let thunks = plan::thunks_text(&exe.plan().program);
    for k in 0..2 {
        let args = crate::gen::random_args(&m, seed * 7 + k);
        exe.run(&args)
            .map_err(|e| e.to_string())
            .and_then(|outs| runtime::check_reference(&m, &args, &outs))
            .map_err(|e| format!("seed {seed}: {e}\n{text}\n{thunks}"))?;
    }
    Ok(thunks)
}

/// Whether `thunks` (a `thunks_text`) holds a streamed GEMM nested in a loop (indented).
fn streams_nested(thunks: &str) -> bool {
    thunks
        .lines()
        .any(|l| l.starts_with(' ') && l.contains("streamed gemm"))
}

#[test]
fn convolutions_streamed_in_loop_bodies_match_the_evaluator() {
    let mut failures = Vec::new();
    let (mut ran, mut streamed, mut in_branches) = (0, 0, 0);
    for seed in crate::gen::seeds(0..96) {
        let Some(text) = module(seed) else { continue };
        let threads = [1, 2, 3, 5][seed as usize % 4];
        ran += 1;
        match run(seed, &text, &options(threads, 0)) {
            Ok(thunks) if streams_nested(&thunks) => {
                streamed += 1;
                in_branches += usize::from(text.contains("conditional("));
            }
            Ok(_) => {}
            Err(e) => failures.push(e),
        }
    }
    crate::gen::assert_none(&failures);
    assert!(ran >= 16, "only {ran} modules drawn");
    // Most must stream, in loop bodies and in branches (a window wider than its output,
    // cut by output position, may take another form).
    assert!(streamed * 3 >= ran * 2, "{streamed} of {ran} streamed");
    assert!(
        in_branches >= 3,
        "{in_branches} streamed in conditional branches"
    );
}

#[test]
fn loop_bodies_keep_small_patches_whole_under_the_default_threshold() {
    let (seed, text) = (0..)
        .find_map(|seed| module(seed).map(|t| (seed, t)))
        .expect("a module");
    let thunks = run(seed, &text, &options(2, plan::stream::STREAM_MIN_BYTES)).expect("run");
    assert!(!streams_nested(&thunks), "{thunks}");
}
