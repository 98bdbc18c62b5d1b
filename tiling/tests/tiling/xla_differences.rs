//! The propagation cases where hloc's tile differs from XLA's expectation in its
//! `tile_propagation_test.cc` (issue 37): a bitcast that transposes, propagated to its
//! operand and to its output, and a dynamic slice whose offsets are a constant and runtime
//! values. Each of hloc's tiles is checked against the reference evaluator, not against the
//! indexing maps it was derived from: the operand holds its own row-major linear indices, so
//! the evaluator's output says which operand element every output element reads. For every
//! tile-size vector and every tile id (and, for the dynamic slice, offsets inside, at and
//! outside the valid starts), the tile holds exactly the elements read, none twice.

use std::collections::BTreeSet;

use affine::enumerate::for_each_in_box;
use affine::Interval;
use hlo::literal::{ArrayData, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, to_outputs, TilingSpace};

use crate::support::tile_elements::{distinct_elements, for_each_tiling, s32};

/// Row-major linear index of `idx` in an array of dimensions `dims`.
fn linear(idx: &[i64], dims: &[i64]) -> i64 {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// Every index of an array of dimensions `dims`, row-major.
fn indices(dims: &[i64]) -> Vec<Vec<i64>> {
    let b: Vec<Interval> = dims.iter().map(|&d| Interval::new(0, d - 1)).collect();
    let mut out = Vec::new();
    for_each_in_box(&b, |p| {
        out.push(p.to_vec());
        true
    });
    out
}

/// The evaluator's output of `module` on `args`, as row-major s32 values.
fn run(module: &Module, args: &[Literal]) -> Vec<i64> {
    let out = hlo_eval::evaluate(module, args).expect("the evaluator runs the module");
    match out.as_array().map(|a| a.data().clone()) {
        Some(ArrayData::S32(v)) => v.into_iter().map(i64::from).collect(),
        other => panic!("an s32 output, got {other:?}"),
    }
}

const BITCAST: &str = "HloModule m
ENTRY e {
  p0 = s32[2,5,3,4] parameter(0)
  ROOT b = s32[2,3,4,5]{2,1,3,0} bitcast(p0)
}";
const BITCAST_IN: [i64; 4] = [2, 5, 3, 4];
const BITCAST_OUT: [i64; 4] = [2, 3, 4, 5];

/// The operand linear index each output element of the bitcast reads, row-major over the
/// output.
fn bitcast_reads(module: &Module) -> Vec<i64> {
    let n: i64 = BITCAST_IN.iter().product();
    run(module, &[s32(&BITCAST_IN, (0..n as i32).collect())])
}

#[test]
fn bitcast_transpose_to_operand_reads_what_the_evaluator_reads() {
    // XLA's expectation (upper bounds [3, 128, 12288, 6] for the same layout change at full
    // size) tiles the operand by the inverse of this permutation.
    let module = hlo::parse_module(BITCAST).expect("parses");
    let reads = bitcast_reads(&module);
    let b = module.instr("b").expect("b");
    let mut space = TilingSpace::for_op(&b, 0).expect("a space");
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &b, 0, &root).expect("propagates");
    let t = tiles[0].as_ref().expect("an operand tile");
    let checked = for_each_tiling(&BITCAST_OUT, |sizes, tids| {
        let want: BTreeSet<i64> = distinct_elements(&root, tids, sizes, &[])
            .iter()
            .map(|o| reads[linear(o, &BITCAST_OUT) as usize])
            .collect();
        let got: BTreeSet<i64> = distinct_elements(t, tids, sizes, &[])
            .iter()
            .map(|i| linear(i, &BITCAST_IN))
            .collect();
        assert_eq!(got, want, "sizes {sizes:?}, tile ids {tids:?}: {t}");
    });
    assert!(checked > 1000, "{checked} tilings");
}

#[test]
fn bitcast_transpose_to_output_writes_what_the_evaluator_reads() {
    // XLA's expectation feeds a tile of the output's dimensions as the operand's tile; here
    // a tile of the operand gives the output elements that read its elements.
    let module = hlo::parse_module(BITCAST).expect("parses");
    let reads = bitcast_reads(&module);
    let b = module.instr("b").expect("b");
    let mut space = TilingSpace::parallel(&BITCAST_IN);
    let source = space.root_tile();
    let tiles = to_outputs(&mut space, &b, 0, &source).expect("propagates");
    let t = tiles[0].as_ref().expect("an output tile");
    let outs = indices(&BITCAST_OUT);
    let checked = for_each_tiling(&BITCAST_IN, |sizes, tids| {
        let src: BTreeSet<i64> = distinct_elements(&source, tids, sizes, &[])
            .iter()
            .map(|i| linear(i, &BITCAST_IN))
            .collect();
        let want: BTreeSet<Vec<i64>> = outs
            .iter()
            .filter(|o| src.contains(&reads[linear(o, &BITCAST_OUT) as usize]))
            .cloned()
            .collect();
        let got = distinct_elements(t, tids, sizes, &[]);
        assert_eq!(got, want, "sizes {sizes:?}, tile ids {tids:?}: {t}");
    });
    assert!(checked > 1000, "{checked} tilings");
}

#[test]
fn dynamic_slice_with_a_constant_offset_reads_what_the_evaluator_reads() {
    // XLA numbers one runtime value per offset operand, the constant's included, each
    // bounded by its valid starts; hloc folds the clamped constant (7 -> 4) and clamps the
    // runtime offsets in the tile, so any offset value gives the elements read.
    let text = "HloModule m
ENTRY e {
  p0 = s32[5,2,9] parameter(0)
  c = s32[] constant(7)
  p1 = s32[] parameter(1)
  p2 = s32[] parameter(2)
  ROOT ds = s32[1,2,3] dynamic-slice(p0, c, p1, p2), dynamic_slice_sizes={1,2,3}
}";
    let (src_dims, out_dims) = ([5i64, 2, 9], [1i64, 2, 3]);
    let module = hlo::parse_module(text).expect("parses");
    let ds = module.instr("ds").expect("ds");
    let mut space = TilingSpace::for_op(&ds, 0).expect("a space");
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &ds, 0, &root).expect("propagates");
    let t = tiles[0].as_ref().expect("an operand tile");
    // Which parameter each runtime value of the space reads.
    let params: Vec<usize> = space
        .rt
        .iter()
        .map(|r| {
            let (id, _) = r.source.as_ref().expect("a runtime value with a producer");
            let name = module.entry().instr(*id).name().to_string();
            match name.as_str() {
                "p1" => 1,
                "p2" => 2,
                other => panic!("a runtime value read from {other}"),
            }
        })
        .collect();
    let n: i64 = src_dims.iter().product();
    let mut checked = 0;
    for p1 in [-3, 0, 1, 4] {
        for p2 in [-2, 0, 3, 6, 7, 40] {
            let args = [
                s32(&src_dims, (0..n as i32).collect()),
                s32(&[], vec![p1]),
                s32(&[], vec![p2]),
            ];
            let reads = run(&module, &args);
            let rt: Vec<i64> = params
                .iter()
                .map(|&k| i64::from(if k == 1 { p1 } else { p2 }))
                .collect();
            checked += for_each_tiling(&out_dims, |sizes, tids| {
                let want: BTreeSet<i64> = distinct_elements(&root, tids, sizes, &[])
                    .iter()
                    .map(|o| reads[linear(o, &out_dims) as usize])
                    .collect();
                let got: BTreeSet<i64> = distinct_elements(t, tids, sizes, &rt)
                    .iter()
                    .map(|i| linear(i, &src_dims))
                    .collect();
                assert_eq!(
                    got, want,
                    "offsets ({p1}, {p2}), sizes {sizes:?}, tile ids {tids:?}: {t}"
                );
            });
        }
    }
    assert!(checked > 100, "{checked} tilings");
}
