//! A ragged dot tiled in group steps (issue 37 item 5, `TilingSpace::group_steps`): a
//! program walks the groups one after another and its tiles along the ragged dimension are
//! relative to the step's group, masked by its size. Checked against the reference
//! evaluator for every tile-size vector with one group per step, every tile id, every
//! group step and several group-size vectors (empty groups first, inside and last, a group
//! running past the rows, no rows at all), in both forms:
//! - non-contracting: at step `g` a program writes the output rows `start(g) + r` for the
//!   relative rows `r` of its output tile below `size(g)`; its lhs tiles over all
//!   contracting steps, shifted by `start(g)`, hold exactly what those outputs read, none
//!   twice, and its rhs tiles too (a step that writes no row reads its group for nothing);
//!   over all programs and steps every output row of a group is written once, and no other;
//! - contracting: the program of output group `g` reads, over the steps of the ragged
//!   contracting dimension, shifted by `start(g)`, exactly what its output tile reads, none
//!   twice;
//! - both: the group-size tile is `g` alone.
//!
//! What an output element reads: with one operand one at a single element and zero
//! elsewhere and the other all ones, the output is nonzero exactly where that element is
//! read.

use std::collections::{BTreeMap, BTreeSet};

use affine::enumerate::for_each_in_box;
use affine::Interval;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, Tile, TilingSpace, GROUP_SIZE, PREFIX_SUM};

use crate::support::tile_elements::tile_elements;

const NON_CONTRACTING: &str = "HloModule m
ENTRY e {
  a = s32[7,2] parameter(0)
  b = s32[3,2,2] parameter(1)
  g = s32[3] parameter(2)
  ROOT r = s32[7,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
}";

const CONTRACTING: &str = "HloModule m
ENTRY e {
  a = s32[3,7] parameter(0)
  b = s32[7,2] parameter(1)
  g = s32[3] parameter(2)
  ROOT r = s32[3,3,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
}";

/// Group sizes: empty groups first, inside and last, a group past the rows, none at all.
const GROUP_SIZES: [[i32; 3]; 6] = [
    [2, 0, 5],
    [3, 3, 1],
    [0, 7, 0],
    [1, 2, 9],
    [0, 0, 0],
    [2, 2, 2],
];

fn s32(dims: &[i64], values: Vec<i32>) -> Literal {
    let shape = hlo::Shape::array(hlo::ElementType::S32, dims.to_vec());
    Literal::Array(ArrayLiteral::new(shape, ArrayData::S32(values)).expect("an s32 literal"))
}

fn linear(idx: &[i64], dims: &[i64]) -> i64 {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

fn count(dims: &[i64]) -> usize {
    dims.iter().product::<i64>() as usize
}

/// For every output element (row-major), the linear indices of the elements of operand
/// `which` (0: lhs, 1: rhs) it reads at group sizes `sizes`, by the evaluator.
fn reads(module: &Module, shapes: [&[i64]; 3], which: usize, sizes: &[i32]) -> Vec<BTreeSet<i64>> {
    let [lhs, rhs, out_dims] = shapes;
    let mut out = vec![BTreeSet::new(); count(out_dims)];
    let n = count([lhs, rhs][which]);
    for e in 0..n {
        let probe: Vec<i32> = (0..n).map(|i| i32::from(i == e)).collect();
        let ones = vec![1; count([rhs, lhs][which])];
        let (a, b) = if which == 0 {
            (s32(lhs, probe), s32(rhs, ones))
        } else {
            (s32(lhs, ones), s32(rhs, probe))
        };
        let args = [a, b, s32(&[3], sizes.to_vec())];
        let got = hlo_eval::evaluate(module, &args).expect("the evaluator runs");
        let Some(ArrayData::S32(v)) = got.as_array().map(|a| a.data().clone()) else {
            panic!("an s32 output");
        };
        for (o, &x) in v.iter().enumerate() {
            if x != 0 {
                out[o].insert(e as i64);
            }
        }
    }
    out
}

/// `start(g)`: the sum of the group sizes before `g`, clamped to `extent` (as the
/// evaluator clamps).
fn start(sizes: &[i32], g: i64, extent: i64) -> i64 {
    sizes[..g.clamp(0, 3) as usize]
        .iter()
        .map(|&s| i64::from(s))
        .sum::<i64>()
        .min(extent)
}

/// The elements of `t` over all steps `0..steps` of space dimension `step_dim` (the other
/// tile ids from `tids`), dimension `ragged` shifted by `shift`, as linear indices of
/// `dims`, each with how often it was read.
#[allow(clippy::too_many_arguments)]
fn over_steps(
    t: &Tile,
    tids: &[i64],
    step_dim: usize,
    steps: i64,
    sizes: &[i64],
    rt: &[i64],
    ragged: usize,
    shift: i64,
    dims: &[i64],
) -> BTreeMap<i64, usize> {
    let mut got = BTreeMap::new();
    for step in 0..steps {
        let mut all = tids.to_vec();
        all[step_dim] = step;
        for mut e in tile_elements(t, &all, sizes, rt) {
            e[ragged] += shift;
            *got.entry(linear(&e, dims)).or_insert(0) += 1;
        }
    }
    got
}

fn extents(space: &TilingSpace) -> Vec<i64> {
    space
        .dims
        .iter()
        .map(|d| d.extent.expect("extent"))
        .collect()
}

#[test]
fn non_contracting_steps_read_their_groups_rows_relative_to_its_start() {
    let (lhs, rhs, out): (&[i64], &[i64], &[i64]) = (&[7, 2], &[3, 2, 2], &[7, 2]);
    let module = hlo::parse_module(NON_CONTRACTING).expect("parses");
    let r = module.instr("r").expect("r");
    let mut space = TilingSpace::for_op_in(&r, 0, true).expect("a space");
    // Output rows and columns, then the groups and the contraction, as sequential steps.
    assert_eq!(extents(&space), vec![7, 2, 3, 2]);
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &r, 0, &root).expect("propagates");
    let tiles: Vec<&Tile> = tiles.iter().map(|t| t.as_ref().expect("a tile")).collect();
    assert_eq!(space.rt.len(), 1, "{:?}", space.rt);
    let text = &space.rt[0]
        .source
        .as_ref()
        .expect("held by the group sizes")
        .1;
    assert!(text.starts_with(GROUP_SIZE), "{text}");
    assert_eq!(space.rt[0].bounds, Interval::new(0, 7));
    let mut checked = 0;
    for sizes_g in GROUP_SIZES {
        let want = [0, 1].map(|w| reads(&module, [lhs, rhs, out], w, &sizes_g));
        // One group per step.
        let sizes_box = [7, 2, 1, 2].map(|e| Interval::new(1, e)).to_vec();
        for_each_in_box(&sizes_box, |sizes| {
            let mut written = vec![0; count(out)];
            let grid = [(7 - 1) / sizes[0], (2 - 1) / sizes[1], 2]
                .map(|hi| Interval::new(0, hi))
                .to_vec();
            for_each_in_box(&grid, |p| {
                let (tids, g) = ([p[0], p[1], p[2], 0], p[2]);
                let (s, size) = (start(&sizes_g, g, 7), start(&sizes_g, g + 1, 7));
                let size = size - s;
                let rt = [size];
                // The outputs this program writes at step g: its rows below the group's size.
                let outs: Vec<usize> = tile_elements(&root, &tids, sizes, &rt)
                    .into_iter()
                    .filter(|o| o[0] < size)
                    .map(|o| linear(&[o[0] + s, o[1]], out) as usize)
                    .collect();
                for &o in &outs {
                    written[o] += 1;
                }
                for (k, dims, shift) in [(0, lhs, s), (1, rhs, 0)] {
                    let got = over_steps(
                        tiles[k],
                        &tids,
                        3,
                        (2 - 1) / sizes[3] + 1,
                        sizes,
                        &rt,
                        0,
                        shift,
                        dims,
                    );
                    let ctx = format!(
                        "group sizes {sizes_g:?}, sizes {sizes:?}, program {p:?}: {}",
                        tiles[k]
                    );
                    assert!(got.values().all(|&n| n == 1), "read twice, {ctx}");
                    let got: BTreeSet<i64> = got.into_keys().collect();
                    let want: BTreeSet<i64> = outs
                        .iter()
                        .flat_map(|&o| want[k][o].iter().copied())
                        .collect();
                    if k == 0 || !outs.is_empty() {
                        assert_eq!(got, want, "{ctx}");
                    }
                }
                let gs: Vec<Vec<i64>> = tile_elements(tiles[2], &tids, sizes, &rt);
                assert_eq!(gs, vec![vec![g]], "group sizes read at step {g}");
                checked += 1;
                true
            });
            // Every output row of a group written once, the rows past them never.
            for (o, &n) in written.iter().enumerate() {
                let row = o as i64 / out[1];
                let in_group = row < start(&sizes_g, 3, 7);
                assert_eq!(
                    n,
                    usize::from(in_group),
                    "group sizes {sizes_g:?}, sizes {sizes:?}: output {o} written {n} times"
                );
            }
            true
        });
    }
    assert!(checked > 1000, "{checked} programs and steps");
}

#[test]
fn contracting_steps_read_their_groups_positions_relative_to_its_start() {
    let (lhs, rhs, out): (&[i64], &[i64], &[i64]) = (&[3, 7], &[7, 2], &[3, 3, 2]);
    let module = hlo::parse_module(CONTRACTING).expect("parses");
    let r = module.instr("r").expect("r");
    let mut space = TilingSpace::for_op_in(&r, 0, true).expect("a space");
    // Output groups, lhs rows and rhs columns, then the ragged contracting dimension.
    assert_eq!(extents(&space), vec![3, 3, 2, 7]);
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &r, 0, &root).expect("propagates");
    let tiles: Vec<&Tile> = tiles.iter().map(|t| t.as_ref().expect("a tile")).collect();
    // The group's size (the mask), then its start (the emitter's offset).
    assert_eq!(space.rt.len(), 2, "{:?}", space.rt);
    for (rt, text) in space.rt.iter().zip([GROUP_SIZE, PREFIX_SUM]) {
        let got = &rt.source.as_ref().expect("held by the group sizes").1;
        assert!(got.starts_with(text), "{got}");
        assert_eq!(rt.bounds, Interval::new(0, 7));
    }
    let mut checked = 0;
    for sizes_g in GROUP_SIZES {
        let want = [0, 1].map(|w| reads(&module, [lhs, rhs, out], w, &sizes_g));
        // One group per program.
        let sizes_box = [1, 3, 2, 7].map(|e| Interval::new(1, e)).to_vec();
        for_each_in_box(&sizes_box, |sizes| {
            let grid = [2, (3 - 1) / sizes[1], (2 - 1) / sizes[2]]
                .map(|hi| Interval::new(0, hi))
                .to_vec();
            for_each_in_box(&grid, |p| {
                let (tids, g) = ([p[0], p[1], p[2], 0], p[0]);
                let s = start(&sizes_g, g, 7);
                let rt = [start(&sizes_g, g + 1, 7) - s, s];
                let outs: Vec<usize> = tile_elements(&root, &tids, sizes, &rt)
                    .iter()
                    .map(|o| linear(o, out) as usize)
                    .collect();
                let steps = (7 - 1) / sizes[3] + 1;
                for (k, dims, ragged) in [(0, lhs, 1), (1, rhs, 0)] {
                    let got = over_steps(tiles[k], &tids, 3, steps, sizes, &rt, ragged, s, dims);
                    let ctx = format!(
                        "group sizes {sizes_g:?}, sizes {sizes:?}, program {p:?}: {}",
                        tiles[k]
                    );
                    assert!(got.values().all(|&n| n == 1), "read twice, {ctx}");
                    let got: BTreeSet<i64> = got.into_keys().collect();
                    let want: BTreeSet<i64> = outs
                        .iter()
                        .flat_map(|&o| want[k][o].iter().copied())
                        .collect();
                    assert_eq!(got, want, "{ctx}");
                }
                let gs: Vec<Vec<i64>> = tile_elements(tiles[2], &tids, sizes, &rt);
                assert_eq!(gs, vec![vec![g]], "group sizes read by group {g}");
                checked += 1;
                true
            });
            true
        });
    }
    assert!(checked > 1000, "{checked} programs");
}
