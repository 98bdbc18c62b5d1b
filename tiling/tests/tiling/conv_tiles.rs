//! Convolution input tiles (halo tiles) against the evaluator (issue 37): which input
//! elements each output element reads is observed by raising each input element in turn by
//! one (s32, no rounding; the kernel all ones, so every tap changes its output) and recording
//! the changed outputs. For every tile-size vector and tile id of the output, the input tile
//! propagated from the output tile holds exactly the input elements that change some output
//! element of the tile (none twice). Cases: XLA's 2-D NHWC and NCHW convolutions (smaller
//! features), a 1-D one strided with the stride equal to the window, and a padded one; a
//! stride wider than the window (the tile would hold unread elements) is refused.

use std::collections::BTreeSet;

use hlo::literal::{ArrayData, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, TilingSpace};

use crate::support::tile_elements::{distinct_elements, for_each_tiling, s32, unlinear};

/// A module of one convolution `conv` of `input` (dims `inp`) and `kernel` (dims `ker`).
fn module(inp: &[i64], ker: &[i64], out: &[i64], attrs: &str) -> Module {
    let d = |v: &[i64]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let text = format!(
        "HloModule m
ENTRY e {{
  input = s32[{}] parameter(0)
  kernel = s32[{}] parameter(1)
  ROOT conv = s32[{}] convolution(input, kernel), {attrs}
}}",
        d(inp),
        d(ker),
        d(out)
    );
    hlo::parse_module(&text).expect("parses")
}

fn run(m: &Module, args: &[Literal]) -> Vec<i32> {
    let out = hlo_eval::evaluate(m, args).expect("the evaluator runs the convolution");
    match out.as_array().map(|a| a.data().clone()) {
        Some(ArrayData::S32(v)) => v,
        other => panic!("an s32 output, got {other:?}"),
    }
}

/// `reach[e]`: the output elements that change when input element `e` is raised by one.
fn reach(m: &Module, inp: &[i64], ker: &[i64], out: &[i64]) -> Vec<BTreeSet<Vec<i64>>> {
    let n: i64 = inp.iter().product();
    let base_in: Vec<i32> = (0..n as i32).map(|v| v * 7 % 11 - 5).collect();
    let kernel = s32(ker, vec![1; ker.iter().product::<i64>() as usize]);
    let base = run(m, &[s32(inp, base_in.clone()), kernel.clone()]);
    (0..n as usize)
        .map(|e| {
            let mut v = base_in.clone();
            v[e] += 1;
            let r = run(m, &[s32(inp, v), kernel.clone()]);
            base.iter()
                .zip(&r)
                .enumerate()
                .filter(|(_, (x, y))| x != y)
                .map(|(o, _)| unlinear(o as i64, out))
                .collect()
        })
        .collect()
}

/// Checks the input tile of `conv` against the evaluator at every tiling; returns the
/// number of tilings checked.
fn check(inp: &[i64], ker: &[i64], out: &[i64], attrs: &str) -> usize {
    let m = module(inp, ker, out, attrs);
    let reach = reach(&m, inp, ker, out);
    let conv = m.instr("conv").expect("conv");
    let mut space = TilingSpace::for_op(&conv, 0).expect("a space");
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &conv, 0, &root).expect("propagates");
    let t = tiles[0]
        .as_ref()
        .unwrap_or_else(|e| panic!("{attrs}: no input tile: {e}"));
    for_each_tiling(out, |sizes, tids| {
        let outs = distinct_elements(&root, tids, sizes, &[]);
        let want: BTreeSet<Vec<i64>> = (0..reach.len())
            .filter(|&e| reach[e].iter().any(|o| outs.contains(o)))
            .map(|e| unlinear(e as i64, inp))
            .collect();
        let got = distinct_elements(t, tids, sizes, &[]);
        assert_eq!(
            got, want,
            "{attrs}: sizes {sizes:?}, tile ids {tids:?}: {t}"
        );
    })
}

#[test]
fn conv_nhwc_input_tile_reads_what_the_evaluator_reads() {
    let n = check(
        &[1, 5, 5, 2],
        &[3, 3, 2, 2],
        &[1, 3, 3, 2],
        "window={size=3x3}, dim_labels=b01f_01io->b01f",
    );
    assert!(n >= 36, "{n} tilings");
}

#[test]
fn conv_nchw_input_tile_reads_what_the_evaluator_reads() {
    let n = check(
        &[1, 2, 5, 5],
        &[2, 2, 3, 3],
        &[1, 2, 3, 3],
        "window={size=3x3}, dim_labels=bf01_oi01->bf01",
    );
    assert!(n >= 36, "{n} tilings");
}

#[test]
fn strided_and_padded_conv_input_tiles_read_what_the_evaluator_reads() {
    // Stride 2, window 2: the windows of neighbouring outputs touch.
    check(
        &[1, 8, 1],
        &[2, 1, 1],
        &[1, 4, 1],
        "window={size=2 stride=2}, dim_labels=b0f_0io->b0f",
    );
    // Stride 2, window 3: the windows overlap by one.
    check(
        &[1, 7, 1],
        &[3, 1, 1],
        &[1, 3, 1],
        "window={size=3 stride=2}, dim_labels=b0f_0io->b0f",
    );
    // Padding 1 low, 2 high: the tile masks the positions outside the input.
    check(
        &[1, 6, 1],
        &[3, 1, 1],
        &[1, 7, 1],
        "window={size=3 pad=1_2}, dim_labels=b0f_0io->b0f",
    );
    // Stride 2 and padding 1 on each side, two features.
    check(
        &[1, 7, 2],
        &[3, 2, 1],
        &[1, 4, 1],
        "window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f",
    );
}

#[test]
fn a_stride_wider_than_the_window_has_no_input_tile() {
    let m = module(
        &[1, 8, 1],
        &[2, 1, 1],
        &[1, 3, 1],
        "window={size=2 stride=3}, dim_labels=b0f_0io->b0f",
    );
    let conv = m.instr("conv").expect("conv");
    let mut space = TilingSpace::for_op(&conv, 0).expect("a space");
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &conv, 0, &root).expect("propagates");
    let err = tiles[0].as_ref().expect_err("a tile with gaps is refused");
    assert!(err.contains("with gaps"), "{err}");
    // The kernel's tile is unaffected.
    assert!(tiles[1].is_ok(), "{:?}", tiles[1]);
}
