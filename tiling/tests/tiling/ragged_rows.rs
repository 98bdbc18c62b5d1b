//! A ragged dot's non-contracting form tiled with its group sizes as runtime values (issue
//! 37 item 5), checked against the reference evaluator for every tile-size vector, tile id
//! and several group-size vectors (empty groups at the start, inside and at the end, a group
//! running past the rows, rows past every group, no rows at all), with and without a batch
//! dimension:
//! - the lhs tiles over all contracting steps hold exactly the elements the output tile
//!   reads, none twice;
//! - the rhs tiles hold every element the output tile reads, none twice, and otherwise only
//!   elements of empty groups (a tile is one progression over the groups);
//! - changing a group size outside the group-size tile leaves the output tile unchanged.
//!
//! What an output element reads: with one operand one at a single element and zero
//! elsewhere and the other all ones, the output is nonzero exactly where that element is
//! read.

use std::collections::{BTreeMap, BTreeSet};

use affine::enumerate::for_each_in_box;
use affine::Interval;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, TilingSpace, GROUPS_BEFORE, GROUP_OF_ROW, PREFIX_SUM};

use crate::support::tile_elements::tile_elements;

/// One ragged dot of the non-contracting form and its shapes.
struct Case {
    text: &'static str,
    lhs: &'static [i64],
    rhs: &'static [i64],
    out: &'static [i64],
    /// The output dimension that is the lhs ragged one, the rhs group dimension and the
    /// contracting extent.
    out_rows: usize,
    rhs_group: usize,
    k: i64,
}

const PLAIN: Case = Case {
    text: "HloModule m
ENTRY e {
  a = s32[7,2] parameter(0)
  b = s32[3,2,2] parameter(1)
  g = s32[3] parameter(2)
  ROOT r = s32[7,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
}",
    lhs: &[7, 2],
    rhs: &[3, 2, 2],
    out: &[7, 2],
    out_rows: 0,
    rhs_group: 0,
    k: 2,
};

const BATCHED: Case = Case {
    text: "HloModule m
ENTRY e {
  a = s32[2,5,2] parameter(0)
  b = s32[2,3,2,2] parameter(1)
  g = s32[3] parameter(2)
  ROOT r = s32[2,5,2] ragged-dot(a, b, g), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}, lhs_ragged_dims={1}, rhs_group_dims={1}
}",
    lhs: &[2, 5, 2],
    rhs: &[2, 3, 2, 2],
    out: &[2, 5, 2],
    out_rows: 1,
    rhs_group: 1,
    k: 2,
};

const GROUPS: i64 = 3;

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

fn run(module: &Module, a: Literal, b: Literal, sizes: &[i32]) -> Vec<i32> {
    let args = [a, b, s32(&[GROUPS], sizes.to_vec())];
    let got = hlo_eval::evaluate(module, &args).expect("the evaluator runs");
    match got.as_array().map(|a| a.data().clone()) {
        Some(ArrayData::S32(v)) => v,
        _ => panic!("an s32 output"),
    }
}

/// For every output element (row-major), the linear indices of the elements of operand
/// `which` (0: lhs, 1: rhs) it reads at group sizes `sizes`, by the evaluator.
fn reads(case: &Case, module: &Module, which: usize, sizes: &[i32]) -> Vec<BTreeSet<i64>> {
    let (dims, other) = if which == 0 {
        (case.lhs, case.rhs)
    } else {
        (case.rhs, case.lhs)
    };
    let mut out = vec![BTreeSet::new(); count(case.out)];
    for e in 0..count(dims) {
        let probe = s32(dims, (0..count(dims)).map(|i| i32::from(i == e)).collect());
        let ones = s32(other, vec![1; count(other)]);
        let (a, b) = if which == 0 {
            (probe, ones)
        } else {
            (ones, probe)
        };
        for (o, &x) in run(module, a, b, sizes).iter().enumerate() {
            if x != 0 {
                out[o].insert(e as i64);
            }
        }
    }
    out
}

/// The output at group sizes `sizes` for fixed operands whose products differ.
fn output(case: &Case, module: &Module, sizes: &[i32]) -> Vec<i32> {
    let a = s32(
        case.lhs,
        (0..count(case.lhs)).map(|i| i as i32 + 1).collect(),
    );
    let b = s32(
        case.rhs,
        (0..count(case.rhs))
            .map(|i| (i as i32 * 7) % 11 + 1)
            .collect(),
    );
    run(module, a, b, sizes)
}

fn check(case: &Case) {
    let module = hlo::parse_module(case.text).expect("parses");
    let r = module.instr("r").expect("r");
    let mut space = TilingSpace::for_op(&r, 0).expect("a space");
    let root = space.root_tile();
    let tiles = to_operands(&mut space, &r, 0, &root).expect("propagates");
    let [lhs, rhs, gs] = [0, 1, 2].map(|j| tiles[j].as_ref().expect("a tile"));
    // The runtime values: every group's rows, then the group of the tile's first row and
    // the number of groups starting before its end.
    let texts: Vec<&str> = space
        .rt
        .iter()
        .map(|rt| {
            rt.source
                .as_ref()
                .expect("held by the group sizes")
                .1
                .as_str()
        })
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts[0], format!("{PREFIX_SUM} {GROUPS}"));
    assert!(texts[1].starts_with(GROUP_OF_ROW), "{}", texts[1]);
    assert!(texts[2].starts_with(GROUPS_BEFORE), "{}", texts[2]);
    let rows = case.out[case.out_rows];
    assert_eq!(space.rt[0].bounds, Interval::new(0, rows));
    for rt in &space.rt[1..] {
        assert_eq!(
            rt.bounds,
            Interval::new(0, GROUPS),
            "bounded by the group count"
        );
    }
    let extents: Vec<i64> = space
        .dims
        .iter()
        .map(|d| d.extent.expect("extent"))
        .collect();
    assert_eq!(extents, [case.out, &[case.k]].concat());
    let n_out = case.out.len();
    let (mut checked, mut exact_rhs, mut empty_rhs) = (0, 0, 0);
    let vectors: [[i32; 3]; 9] = [
        [2, 0, 3],
        [3, 2, 1],
        [0, 3, 0],
        [1, 2, 9],
        [0, 0, 0],
        [2, 1, 0],
        [0, 0, 4],
        [5, 0, 0],
        [1, 0, 1],
    ];
    for sizes_g in vectors {
        let want_lhs = reads(case, &module, 0, &sizes_g);
        let want_rhs = reads(case, &module, 1, &sizes_g);
        // start(g): the sum of the group sizes before g, clamped to the rows.
        let start = |g: i64| -> i64 {
            sizes_g[..g as usize]
                .iter()
                .map(|&s| i64::from(s.max(0)))
                .sum::<i64>()
                .min(rows)
        };
        let empty: Vec<bool> = (0..GROUPS).map(|g| start(g) == start(g + 1)).collect();
        let base = output(case, &module, &sizes_g);
        // Each group size changed, with the output it gives.
        let changed: Vec<(usize, Vec<i32>)> = (0..GROUPS as usize)
            .flat_map(|g| [0, 1, 4].map(|s| (g, s)))
            .filter(|&(g, s)| sizes_g[g] != s)
            .map(|(g, s)| {
                let mut v = sizes_g;
                v[g] = s;
                (g, output(case, &module, &v))
            })
            .collect();
        let size_box: Vec<Interval> = extents.iter().map(|&e| Interval::new(1, e)).collect();
        for_each_in_box(&size_box, |sizes| {
            let grid: Vec<Interval> = extents[..n_out]
                .iter()
                .zip(sizes)
                .map(|(&e, &s)| Interval::new(0, (e - 1) / s))
                .collect();
            for_each_in_box(&grid, |tids| {
                let a = tids[case.out_rows] * sizes[case.out_rows];
                let b = (a + sizes[case.out_rows]).min(rows);
                let rt = [
                    start(GROUPS),
                    (0..GROUPS).filter(|&g| start(g + 1) <= a).count() as i64,
                    (0..GROUPS).filter(|&g| start(g) < b).count() as i64,
                ];
                let all = [tids, &[0]].concat();
                let out_tile: BTreeSet<usize> = tile_elements(&root, &all, sizes, &rt)
                    .iter()
                    .map(|o| linear(o, case.out) as usize)
                    .collect();
                let at = |t, dims| {
                    let mut got = BTreeMap::new();
                    for step in 0..=(case.k - 1) / sizes[n_out] {
                        let all = [tids, &[step]].concat();
                        for e in tile_elements(t, &all, sizes, &rt) {
                            *got.entry(linear(&e, dims)).or_insert(0) += 1;
                        }
                    }
                    got
                };
                let want = |w: &[BTreeSet<i64>]| -> BTreeSet<i64> {
                    out_tile
                        .iter()
                        .flat_map(|&o| w[o].iter().copied())
                        .collect()
                };
                let what = format!("group sizes {sizes_g:?}, sizes {sizes:?}, tile ids {tids:?}");
                for (t, got, want) in [
                    (lhs, at(lhs, case.lhs), want(&want_lhs)),
                    (rhs, at(rhs, case.rhs), want(&want_rhs)),
                ] {
                    assert!(got.values().all(|&n| n == 1), "{what}: read twice by {t}");
                    let got: BTreeSet<i64> = got.into_keys().collect();
                    if std::ptr::eq(t, lhs) {
                        assert_eq!(got, want, "{what}: {t}");
                        continue;
                    }
                    assert!(got.is_superset(&want), "{what}: {t} misses reads");
                    // Whatever else the rhs tile holds lies in empty groups.
                    let group_of = |e: i64| {
                        let mut idx = Vec::new();
                        let mut rest = e;
                        for &d in case.rhs.iter().rev() {
                            idx.push(rest % d);
                            rest /= d;
                        }
                        idx.reverse();
                        idx[case.rhs_group]
                    };
                    for &e in got.difference(&want) {
                        assert!(empty[group_of(e) as usize], "{what}: {t} reads {e}");
                    }
                    if got == want {
                        exact_rhs += 1;
                    }
                    if want.is_empty() {
                        empty_rhs += 1;
                    }
                }
                // The group sizes outside the tile do not change the output tile.
                let held: BTreeSet<i64> = tile_elements(gs, &all, sizes, &rt)
                    .iter()
                    .map(|e| e[0])
                    .collect();
                for (g, out) in &changed {
                    if !held.contains(&(*g as i64)) {
                        for &o in &out_tile {
                            assert_eq!(out[o], base[o], "{what}: group size {g} matters");
                        }
                    }
                }
                checked += 1;
                true
            });
            true
        });
    }
    assert!(checked > 500, "{checked} tilings");
    assert!(exact_rhs > 100 && empty_rhs > 10, "{exact_rhs} {empty_rhs}");
}

#[test]
fn non_contracting_form_reads_the_groups_of_the_tiles_rows() {
    check(&PLAIN);
}

#[test]
fn non_contracting_form_with_a_batch_dimension() {
    check(&BATCHED);
}
