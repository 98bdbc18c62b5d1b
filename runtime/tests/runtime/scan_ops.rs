//! Differential test of the `scan` op (lowered to a while loop by
//! `hlo_transforms::ScanLowering`): random scans of one to three inputs of rank 1 to 4
//! along any dimension, forward and reverse, lengths 0, 1 and several, zero to two
//! carries (accumulating through every reducer kind, or fresh: the previous step's
//! input), zero to two stacked outputs, and bodies returning one bare value, compiled for
//! the CPU and compared with the reference evaluator. Deterministic: a failure prints the
//! module.

use crate::gen::{self, list, Rng};

/// A random scan module.
fn module(seed: u64) -> Option<String> {
    let mut rng = Rng::new(seed);
    let (ty, ops): (&str, &[&str]) = *rng.pick(&[
        ("f32", &["add", "multiply", "maximum", "minimum"][..]),
        ("f64", &["add", "multiply", "maximum", "minimum"][..]),
        ("s32", &["add", "maximum", "minimum", "subtract"][..]),
    ]);
    let rank = rng.range(1, 4) as usize;
    let d = rng.below(rank);
    let length = *rng.pick(&[0, 1, 2, 5, 7]);
    let dims: Vec<i64> = (0..rank)
        .map(|k| if k == d { length } else { rng.range(1, 5) })
        .collect();
    let mut slice = dims.clone();
    slice.remove(d);
    let full = format!("{ty}[{}]", list(&dims));
    let one = format!("{ty}[{}]", list(&slice));
    let n_in = rng.range(1, 3) as usize;
    let c = rng.below(3);
    let n_out = if c == 0 {
        rng.range(1, 3) as usize
    } else {
        rng.below(3)
    };
    let reverse = rng.below(2) == 1;
    let mut body = String::from("body {\n");
    for k in 0..n_in {
        body += &format!("  x{k} = {one} parameter({k})\n");
    }
    for j in 0..c {
        body += &format!("  c{j} = {one} parameter({})\n", n_in + j);
    }
    // Carry 0 accumulates through a reducer; carry 1 is fresh (the input's slice) or
    // accumulates through another reducer.
    let mut news = Vec::new();
    for j in 0..c {
        let x = format!("x{}", j % n_in);
        if j == 1 && rng.below(2) == 1 {
            body += &format!("  n{j} = {one} negate({x})\n");
        } else {
            let op = rng.pick(ops);
            body += &format!("  n{j} = {one} {op}(c{j}, {x})\n");
        }
        news.push(format!("n{j}"));
    }
    let mut outs = Vec::new();
    for k in 0..n_out {
        let op = rng.pick(ops);
        let a = if c > 0 {
            format!("c{}", k % c)
        } else {
            format!("x{}", (k + 1) % n_in)
        };
        body += &format!("  o{k} = {one} {op}({a}, x{})\n", k % n_in);
        outs.push(format!("o{k}"));
    }
    let returned: Vec<String> = outs.iter().chain(&news).cloned().collect();
    let bare = returned.len() == 1 && rng.below(2) == 1;
    let mut result_parts: Vec<String> = (0..n_out).map(|_| full.clone()).collect();
    result_parts.extend((0..c).map(|_| one.clone()));
    if bare {
        body += &format!("  ROOT r = {one} copy({})\n}}\n", returned[0]);
    } else {
        let types: Vec<String> = (0..returned.len()).map(|_| one.clone()).collect();
        body += &format!(
            "  ROOT r = ({}) tuple({})\n}}\n",
            types.join(", "),
            returned.join(", ")
        );
    }
    let result = if bare {
        result_parts[0].clone()
    } else {
        format!("({})", result_parts.join(", "))
    };
    let mut entry = String::from("ENTRY e {\n");
    let mut operands = Vec::new();
    for k in 0..n_in {
        entry += &format!("  xs{k} = {full} parameter({k})\n");
        operands.push(format!("xs{k}"));
    }
    for j in 0..c {
        entry += &format!("  i{j} = {one} parameter({})\n", n_in + j);
        operands.push(format!("i{j}"));
    }
    entry += &format!(
        "  ROOT s = {result} scan({}), dimensions={{{d}}}, num_carries={c}{}, to_apply=body\n}}\n",
        operands.join(", "),
        if reverse { ", is_reverse=true" } else { "" }
    );
    Some(format!("HloModule scan_ops\n{body}{entry}"))
}

#[test]
fn scans_lowered_to_loops_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-scan-ops", gen::seeds(0..12), module);
    assert!(ran > 0);
}
