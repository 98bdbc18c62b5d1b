//! A ragged dot's contracting form tiled with its group sizes as runtime values (issue 37
//! item 5): for every tile-size vector, tile id and several group-size vectors (empty
//! groups, a group running past the contracting dimension), the lhs and rhs tiles over all
//! steps of the contracting dimension hold exactly the elements the output tile reads, none
//! twice. What an output element reads comes from the reference evaluator: with one operand
//! one at a single element and zero elsewhere and the other all ones, the output is nonzero
//! exactly where that element is read.

use std::collections::{BTreeMap, BTreeSet};

use affine::enumerate::for_each_in_box;
use affine::Interval;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, TilingSpace, PREFIX_SUM};

use crate::support::tile_elements::tile_elements;

const MODULE: &str = "HloModule m
ENTRY e {
  a = s32[3,7] parameter(0)
  b = s32[7,2] parameter(1)
  g = s32[3] parameter(2)
  ROOT r = s32[3,3,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
}";
const LHS: [i64; 2] = [3, 7];
const RHS: [i64; 2] = [7, 2];
const OUT: [i64; 3] = [3, 3, 2];
const K: i64 = 7;

fn s32(dims: &[i64], values: Vec<i32>) -> Literal {
    let shape = hlo::Shape::array(hlo::ElementType::S32, dims.to_vec());
    Literal::Array(ArrayLiteral::new(shape, ArrayData::S32(values)).expect("an s32 literal"))
}

fn linear(idx: &[i64], dims: &[i64]) -> i64 {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// For every output element (row-major), the linear indices of the elements of operand
/// `which` (0: lhs, 1: rhs) it reads at group sizes `sizes`, by the evaluator.
fn reads(module: &Module, which: usize, sizes: &[i32]) -> Vec<BTreeSet<i64>> {
    let dims = [LHS, RHS][which];
    let n = dims.iter().product::<i64>() as usize;
    let n_out = OUT.iter().product::<i64>() as usize;
    let mut out = vec![BTreeSet::new(); n_out];
    for e in 0..n {
        let probe: Vec<i32> = (0..n).map(|i| i32::from(i == e)).collect();
        let other = [RHS, LHS][which];
        let ones = vec![1; other.iter().product::<i64>() as usize];
        let (a, b) = if which == 0 {
            (s32(&LHS, probe), s32(&RHS, ones))
        } else {
            (s32(&LHS, ones), s32(&RHS, probe))
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

#[test]
fn contracting_form_steps_read_exactly_the_groups_of_the_tile() {
    let module = hlo::parse_module(MODULE).expect("parses");
    let r = module.instr("r").expect("r");
    let mut space = TilingSpace::for_op(&r, 0).expect("a space");
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &r, 0, &root).expect("propagates");
    let (lhs, rhs) = (
        tiles[0].as_ref().expect("an lhs tile"),
        tiles[1].as_ref().expect("an rhs tile"),
    );
    // The two runtime values: the sum of the group sizes before the tile's first group,
    // then before its end.
    assert_eq!(space.rt.len(), 2, "{:?}", space.rt);
    for rt in &space.rt {
        let text = &rt.source.as_ref().expect("held by the group sizes").1;
        assert!(text.starts_with(PREFIX_SUM), "{text}");
        assert_eq!(rt.bounds, Interval::new(0, K));
    }
    // Space: output dimensions (group, lhs rows, rhs columns), then the contracting one.
    let extents: Vec<i64> = space
        .dims
        .iter()
        .map(|d| d.extent.expect("extent"))
        .collect();
    assert_eq!(extents, vec![3, 3, 2, K]);
    let mut checked = 0;
    for sizes_g in [[2, 0, 5], [3, 3, 1], [0, 7, 0], [1, 2, 9], [0, 0, 0]] {
        let want_lhs = reads(&module, 0, &sizes_g);
        let want_rhs = reads(&module, 1, &sizes_g);
        // start(g): the sum of the group sizes before g, clamped to K.
        let start = |g: i64| -> i64 {
            sizes_g[..g.clamp(0, 3) as usize]
                .iter()
                .map(|&s| i64::from(s))
                .sum::<i64>()
                .min(K)
        };
        let size_box: Vec<Interval> = extents.iter().map(|&e| Interval::new(1, e)).collect();
        for_each_in_box(&size_box, |sizes| {
            let grid: Vec<Interval> = extents[..3]
                .iter()
                .zip(sizes)
                .map(|(&e, &s)| Interval::new(0, (e - 1) / s))
                .collect();
            for_each_in_box(&grid, |tids| {
                let first = tids[0] * sizes[0];
                let end = (first + sizes[0]).min(3);
                let rt = [start(first), start(end)];
                let out_tile: BTreeSet<usize> =
                    tile_elements(&root, &[tids, &[0]].concat(), sizes, &rt)
                        .iter()
                        .map(|o| linear(o, &OUT) as usize)
                        .collect();
                for (t, want, dims) in [(lhs, &want_lhs, LHS), (rhs, &want_rhs, RHS)] {
                    let want: BTreeSet<i64> = out_tile
                        .iter()
                        .flat_map(|&o| want[o].iter().copied())
                        .collect();
                    let mut got = BTreeMap::new();
                    for step in 0..=(K - 1) / sizes[3] {
                        let all = [tids, &[step]].concat();
                        for e in tile_elements(t, &all, sizes, &rt) {
                            *got.entry(linear(&e, &dims)).or_insert(0) += 1;
                        }
                    }
                    assert!(
                        got.values().all(|&n| n == 1),
                        "group sizes {sizes_g:?}, sizes {sizes:?}, tile ids {tids:?}: an element read twice by {t}"
                    );
                    let got: BTreeSet<i64> = got.into_keys().collect();
                    assert_eq!(
                        got, want,
                        "group sizes {sizes_g:?}, sizes {sizes:?}, tile ids {tids:?}: {t}"
                    );
                }
                checked += 1;
                true
            });
            true
        });
    }
    assert!(checked > 500, "{checked} tilings");
}
