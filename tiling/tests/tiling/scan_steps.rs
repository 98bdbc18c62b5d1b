//! A scan tiled in steps along its scanned dimension (`TilingSpace::scan_steps`, XLA's tile
//! propagation model; issue 37 item 6) against the evaluator. The programs along the
//! scanned dimension run in order, each handed the carry of the steps before it. For every
//! tile-size vector and tile id of a row-wise scan along dimension 1 (forward and reverse; a
//! running sum, and an exclusive one whose output at a column is the carry before it):
//! - the step's operand tiles hold exactly the tile's rows and columns of the input and the
//!   tile's rows of the init;
//! - those elements suffice: the evaluator's scan of only the input tile, from the carry the
//!   full scan holds before the step, gives the full scan's outputs at the output tile;
//! - none is extra: raising any one of them by one changes an output of the step or the
//!   carry it hands on;
//! - from an input tile, the outputs are its own positions and the carry's rows (every
//!   output the step's elements change lies inside them; the running sum changes them all).
//!
//! A carry output and an init have no tile in steps; without steps the same module keeps
//! its dependence tiles (`scan_tiles.rs`).

use std::collections::BTreeSet;

use hlo::literal::{ArrayData, Literal};
use hlo::Module;
use tiling::propagate::{to_operands, to_outputs, Tile, TilingSpace};

use crate::support::tile_elements::{distinct_elements, for_each_tiling, s32};

const ROWS: i64 = 3;
const COLS: i64 = 4;

/// The scan's body: a running sum, or an exclusive running sum (the output is the carry
/// before the column).
#[derive(Clone, Copy, Debug)]
enum Body {
    Inclusive,
    Exclusive,
}

fn module(rows: i64, cols: i64, body: Body, reverse: bool) -> Module {
    let out = match body {
        Body::Inclusive => "a",
        Body::Exclusive => "c",
    };
    let text = format!(
        "HloModule m
body {{
  x = s32[{rows}] parameter(0)
  c = s32[{rows}] parameter(1)
  a = s32[{rows}] add(x, c)
  ROOT t = (s32[{rows}], s32[{rows}]) tuple({out}, a)
}}
ENTRY e {{
  xs = s32[{rows},{cols}] parameter(0)
  init = s32[{rows}] parameter(1)
  ROOT scan = (s32[{rows},{cols}], s32[{rows}]) scan(xs, init), dimensions={{1}}, num_carries=1{}, to_apply=body
}}",
        if reverse { ", is_reverse=true" } else { "" }
    );
    hlo::parse_module(&text).expect("parses")
}

/// The evaluator's outputs of `m` on `xs` (`rows` x `cols`, row-major) and `init`: the
/// stacked output row-major, then the final carry.
fn run(m: &Module, rows: i64, cols: i64, xs: Vec<i32>, init: Vec<i32>) -> (Vec<i32>, Vec<i32>) {
    let args = [s32(&[rows, cols], xs), s32(&[rows], init)];
    let out = hlo_eval::evaluate(m, &args).expect("the evaluator runs the scan");
    let Literal::Tuple(parts) = out else {
        panic!("a tuple result")
    };
    let mut v = parts
        .iter()
        .map(|p| match p.as_array().map(|a| a.data().clone()) {
            Some(ArrayData::S32(v)) => v,
            other => panic!("an s32 output, got {other:?}"),
        });
    (v.next().expect("stacked"), v.next().expect("carry"))
}

/// One problem: the module, its input values, and the full run.
struct Case {
    body: Body,
    reverse: bool,
    xs: Vec<i32>,
    init: Vec<i32>,
    full: (Vec<i32>, Vec<i32>),
}

impl Case {
    fn new(body: Body, reverse: bool) -> Case {
        let xs: Vec<i32> = (0..(ROWS * COLS) as i32).map(|v| v * 7 % 11 - 5).collect();
        let init: Vec<i32> = (0..ROWS as i32).map(|v| 3 - 2 * v).collect();
        let full = run(
            &module(ROWS, COLS, body, reverse),
            ROWS,
            COLS,
            xs.clone(),
            init.clone(),
        );
        Case {
            body,
            reverse,
            xs,
            init,
            full,
        }
    }

    /// The scan of rows `rows` and columns `cols` (both increasing) of the input alone,
    /// from `init` (one value per row).
    fn sub_scan(
        &self,
        xs: &[i32],
        rows: &[i64],
        cols: &[i64],
        init: Vec<i32>,
    ) -> (Vec<i32>, Vec<i32>) {
        let (r, c) = (rows.len() as i64, cols.len() as i64);
        let vals = rows
            .iter()
            .flat_map(|&i| cols.iter().map(move |&j| xs[(i * COLS + j) as usize]))
            .collect();
        run(&module(r, c, self.body, self.reverse), r, c, vals, init)
    }

    /// The carry the full scan hands the step over columns `cols` (rows `rows`): the carry
    /// after the columns before it (forward) or after it (reverse).
    fn carry_before(&self, rows: &[i64], cols: &[i64]) -> Vec<i32> {
        let earlier: Vec<i64> = if self.reverse {
            (cols[cols.len() - 1] + 1..COLS).collect()
        } else {
            (0..cols[0]).collect()
        };
        let init: Vec<i32> = rows.iter().map(|&i| self.init[i as usize]).collect();
        if earlier.is_empty() {
            return init;
        }
        self.sub_scan(&self.xs, rows, &earlier, init).1
    }
}

fn steps_space(dims: &[i64]) -> TilingSpace {
    let mut space = TilingSpace::parallel(dims);
    space.scan_steps = true;
    space
}

/// The rows and columns of a two-dimensional element set, each increasing.
fn rows_cols(set: &BTreeSet<Vec<i64>>) -> (Vec<i64>, Vec<i64>) {
    let rows: BTreeSet<i64> = set.iter().map(|e| e[0]).collect();
    let cols: BTreeSet<i64> = set.iter().map(|e| e[1]).collect();
    (rows.into_iter().collect(), cols.into_iter().collect())
}

fn tile_of(t: &Result<Tile, String>, what: &str) -> Tile {
    t.clone().unwrap_or_else(|e| panic!("{what}: no tile: {e}"))
}

#[test]
fn a_step_reads_its_own_rows_and_the_carry_handed_to_it() {
    for body in [Body::Inclusive, Body::Exclusive] {
        for reverse in [false, true] {
            let case = Case::new(body, reverse);
            let m = module(ROWS, COLS, body, reverse);
            let scan = m.instr("scan").expect("scan");
            let mut space = steps_space(&[ROWS, COLS]);
            let root = space.root_tile();
            let tiles = to_operands(&mut space, &scan, 0, &root).expect("propagates");
            let what = format!("{body:?}, reverse {reverse}");
            let (xs_tile, init_tile) = (tile_of(&tiles[0], &what), tile_of(&tiles[1], &what));
            let checked = for_each_tiling(&[ROWS, COLS], |sizes, tids| {
                let outs = distinct_elements(&root, tids, sizes, &[]);
                let (rows, cols) = rows_cols(&outs);
                let at = format!("{what}, sizes {sizes:?}, tile ids {tids:?}");
                assert_eq!(
                    distinct_elements(&xs_tile, tids, sizes, &[]),
                    outs,
                    "{at}: input tile"
                );
                let init_rows: BTreeSet<Vec<i64>> = rows.iter().map(|&r| vec![r]).collect();
                assert_eq!(
                    distinct_elements(&init_tile, tids, sizes, &[]),
                    init_rows,
                    "{at}: init tile"
                );
                // Sufficient: the tile's elements from the carry handed over give the outputs.
                let carry = case.carry_before(&rows, &cols);
                let (step, handed) = case.sub_scan(&case.xs, &rows, &cols, carry.clone());
                let want: Vec<i32> = rows
                    .iter()
                    .flat_map(|&i| cols.iter().map(move |&j| (i * COLS + j) as usize))
                    .map(|k| case.full.0[k])
                    .collect();
                assert_eq!(step, want, "{at}: the step's outputs");
                // Necessary: each element changes the step's outputs or the carry it hands on.
                for &i in &rows {
                    for &j in &cols {
                        let mut xs = case.xs.clone();
                        xs[(i * COLS + j) as usize] += 1;
                        let again = case.sub_scan(&xs, &rows, &cols, carry.clone());
                        assert_ne!(
                            again,
                            (step.clone(), handed.clone()),
                            "{at}: element ({i}, {j}) is read for nothing"
                        );
                    }
                }
            });
            assert!(checked >= 30, "{checked} tilings");
        }
    }
}

#[test]
fn an_input_tile_reaches_its_own_positions_and_the_carry_rows_in_steps() {
    for body in [Body::Inclusive, Body::Exclusive] {
        for reverse in [false, true] {
            let case = Case::new(body, reverse);
            let m = module(ROWS, COLS, body, reverse);
            let scan = m.instr("scan").expect("scan");
            let mut space = steps_space(&[ROWS, COLS]);
            let source = space.root_tile();
            let tiles = to_outputs(&mut space, &scan, 0, &source).expect("propagates");
            let what = format!("{body:?}, reverse {reverse}");
            let (out_tile, carry_tile) = (tile_of(&tiles[0], &what), tile_of(&tiles[1], &what));
            for_each_tiling(&[ROWS, COLS], |sizes, tids| {
                let src = distinct_elements(&source, tids, sizes, &[]);
                let (rows, cols) = rows_cols(&src);
                let at = format!("{what}, sizes {sizes:?}, tile ids {tids:?}");
                let outs = distinct_elements(&out_tile, tids, sizes, &[]);
                assert_eq!(outs, src, "{at}: output tile");
                let carry_rows: BTreeSet<Vec<i64>> = rows.iter().map(|&r| vec![r]).collect();
                assert_eq!(
                    distinct_elements(&carry_tile, tids, sizes, &[]),
                    carry_rows,
                    "{at}: carry tile"
                );
                // Every output the step's elements change lies in those tiles.
                let carry = case.carry_before(&rows, &cols);
                let (step, handed) = case.sub_scan(&case.xs, &rows, &cols, carry.clone());
                let mut changed = BTreeSet::new();
                let mut changed_carry = BTreeSet::new();
                for &i in &rows {
                    for &j in &cols {
                        let mut xs = case.xs.clone();
                        xs[(i * COLS + j) as usize] += 1;
                        let (s, h) = case.sub_scan(&xs, &rows, &cols, carry.clone());
                        for (k, (a, b)) in s.iter().zip(&step).enumerate() {
                            if a != b {
                                let k = k as i64;
                                changed.insert(vec![
                                    rows[(k / cols.len() as i64) as usize],
                                    cols[(k % cols.len() as i64) as usize],
                                ]);
                            }
                        }
                        for (k, (a, b)) in h.iter().zip(&handed).enumerate() {
                            if a != b {
                                changed_carry.insert(vec![rows[k]]);
                            }
                        }
                    }
                }
                assert!(
                    changed.is_subset(&outs),
                    "{at}: {changed:?} outside the output tile"
                );
                assert_eq!(changed_carry, carry_rows, "{at}: the carry rows changed");
                if matches!(body, Body::Inclusive) {
                    assert_eq!(
                        changed, outs,
                        "{at}: a running sum changes every output of the tile"
                    );
                }
            });
        }
    }
}

#[test]
fn a_carry_has_no_tile_in_steps() {
    let m = module(ROWS, COLS, Body::Inclusive, false);
    let scan = m.instr("scan").expect("scan");
    let mut space = steps_space(&[ROWS]);
    let carry = space.root_tile();
    let from_carry = to_operands(&mut space, &scan, 1, &carry).expect("answers");
    assert_eq!(from_carry.len(), 2);
    for t in &from_carry {
        let why = t.as_ref().expect_err("a carry output has no tile in steps");
        assert!(why.contains("carry"), "{why}");
    }
    let mut space = steps_space(&[ROWS]);
    let init = space.root_tile();
    let from_init = to_outputs(&mut space, &scan, 1, &init).expect("answers");
    assert_eq!(from_init.len(), 2);
    for t in &from_init {
        let why = t.as_ref().expect_err("an init has no tile in steps");
        assert!(why.contains("init"), "{why}");
    }
    // Without steps both keep their dependence tiles.
    let mut space = TilingSpace::parallel(&[ROWS]);
    let carry = space.root_tile();
    let tiles = to_operands(&mut space, &scan, 1, &carry).expect("propagates");
    assert!(tiles.iter().all(Result::is_ok), "{tiles:?}");
}
