//! Scan tiles against the evaluator (issue 37 item 6), in both directions: a row-wise
//! running sum along dimension 1 (XLA's 2-D scan test, an elementwise carry of one element
//! per row), forward and reverse. Which output elements an input element reaches is
//! observed: each input and init element in turn is raised by one (s32, no rounding) and the
//! changed output elements recorded. For every tile-size vector and tile id:
//! - from each output's tile to each operand, the tile holds exactly the operand elements
//!   that change some element of the output tile (the rows of the tile, the columns up to
//!   its last one forward or from its first one reverse; the init's rows);
//! - from each operand's tile to each output, the tile holds exactly the output elements
//!   some element of the operand tile changes (its own rows only, which the per-op supersets
//!   did not give: they reached every row).
//!
//! None twice.

use std::collections::BTreeSet;

use hlo::literal::{ArrayData, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, to_outputs, TilingSpace};

use crate::support::tile_elements::{distinct_elements, for_each_tiling, s32, unlinear};

const ROWS: i64 = 3;
const COLS: i64 = 5;

fn module(reverse: bool) -> Module {
    let text = format!(
        "HloModule m
body {{
  x = s32[{ROWS}] parameter(0)
  c = s32[{ROWS}] parameter(1)
  a = s32[{ROWS}] add(x, c)
  ROOT t = (s32[{ROWS}], s32[{ROWS}]) tuple(a, a)
}}
ENTRY e {{
  xs = s32[{ROWS},{COLS}] parameter(0)
  init = s32[{ROWS}] parameter(1)
  ROOT scan = (s32[{ROWS},{COLS}], s32[{ROWS}]) scan(xs, init), dimensions={{1}}, num_carries=1{}, to_apply=body
}}",
        if reverse { ", is_reverse=true" } else { "" }
    );
    hlo::parse_module(&text).expect("parses")
}

/// The dimensions of operand / output `k`: the stacked array, then the carry.
fn dims(k: usize) -> Vec<i64> {
    if k == 0 {
        vec![ROWS, COLS]
    } else {
        vec![ROWS]
    }
}

/// The evaluator's two outputs, row-major.
fn run(m: &Module, args: &[Literal]) -> Vec<Vec<i32>> {
    let out = hlo_eval::evaluate(m, args).expect("the evaluator runs the scan");
    let Literal::Tuple(parts) = out else {
        panic!("a tuple result")
    };
    parts
        .iter()
        .map(|p| match p.as_array().map(|a| a.data().clone()) {
            Some(ArrayData::S32(v)) => v,
            other => panic!("an s32 output, got {other:?}"),
        })
        .collect()
}

/// `reach[j][e]`: the (output, element) pairs that change when element `e` of operand `j`
/// is raised by one.
type Reach = Vec<Vec<BTreeSet<(usize, Vec<i64>)>>>;

fn reach(m: &Module) -> Reach {
    let base_values = |k: usize| -> Vec<i32> {
        let n: i64 = dims(k).iter().product();
        (0..n as i32).map(|v| v * 7 % 11 - 5).collect()
    };
    let args: Vec<Literal> = (0..2).map(|j| s32(&dims(j), base_values(j))).collect();
    let base = run(m, &args);
    (0..2)
        .map(|j| {
            let n = base_values(j).len();
            (0..n)
                .map(|e| {
                    let mut v = base_values(j);
                    v[e] += 1;
                    let mut a = args.clone();
                    a[j] = s32(&dims(j), v);
                    let r = run(m, &a);
                    let mut changed = BTreeSet::new();
                    for k in 0..2 {
                        for (o, (x, y)) in base[k].iter().zip(&r[k]).enumerate() {
                            if x != y {
                                changed.insert((k, unlinear(o as i64, &dims(k))));
                            }
                        }
                    }
                    changed
                })
                .collect()
        })
        .collect()
}

#[test]
fn scan_output_tiles_read_what_the_evaluator_reads() {
    for reverse in [false, true] {
        let m = module(reverse);
        let reach = reach(&m);
        let scan = m.instr("scan").expect("scan");
        for k in 0..2 {
            let mut space = TilingSpace::for_op(&scan, k).expect("a space");
            let root = space.root_tile();
            let tiles = to_operands(&mut space, &scan, k, &root).expect("propagates");
            for (j, t) in tiles.iter().enumerate() {
                let t = t.as_ref().unwrap_or_else(|e| {
                    panic!("reverse {reverse}: output {k} to operand {j}: no tile: {e}")
                });
                for_each_tiling(&dims(k), |sizes, tids| {
                    let outs = distinct_elements(&root, tids, sizes, &[]);
                    let want: BTreeSet<Vec<i64>> = (0..reach[j].len())
                        .filter(|&e| {
                            reach[j][e]
                                .iter()
                                .any(|(kk, o)| *kk == k && outs.contains(o))
                        })
                        .map(|e| unlinear(e as i64, &dims(j)))
                        .collect();
                    let got = distinct_elements(t, tids, sizes, &[]);
                    assert_eq!(
                        got, want,
                        "reverse {reverse}: output {k} to operand {j}, sizes {sizes:?}, tile ids {tids:?}: {t}"
                    );
                });
            }
        }
    }
}

#[test]
fn scan_operand_tiles_reach_what_the_evaluator_changes() {
    for reverse in [false, true] {
        let m = module(reverse);
        let reach = reach(&m);
        let scan = m.instr("scan").expect("scan");
        for (j, reach_j) in reach.iter().enumerate() {
            let mut space = TilingSpace::parallel(&dims(j));
            let source = space.root_tile();
            let tiles = to_outputs(&mut space, &scan, j, &source).expect("propagates");
            for (k, t) in tiles.iter().enumerate() {
                let t = t.as_ref().unwrap_or_else(|e| {
                    panic!("reverse {reverse}: operand {j} to output {k}: no tile: {e}")
                });
                let checked = for_each_tiling(&dims(j), |sizes, tids| {
                    let src = distinct_elements(&source, tids, sizes, &[]);
                    let want: BTreeSet<Vec<i64>> = src
                        .iter()
                        .flat_map(|i| {
                            let e = i.iter().fold(0, |acc, &x| acc * COLS + x) as usize;
                            let e = if j == 0 { e } else { i[0] as usize };
                            reach_j[e]
                                .iter()
                                .filter(|(kk, _)| *kk == k)
                                .map(|(_, o)| o.clone())
                        })
                        .collect();
                    let got = distinct_elements(t, tids, sizes, &[]);
                    assert_eq!(
                        got, want,
                        "reverse {reverse}: operand {j} to output {k}, sizes {sizes:?}, tile ids {tids:?}: {t}"
                    );
                });
                assert!(checked >= 6, "{checked} tilings");
            }
        }
    }
}
