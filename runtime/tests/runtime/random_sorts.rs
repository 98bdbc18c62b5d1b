//! Differential test of sort and variadic reduce: random ranks, sort dimensions, layouts,
//! one to three operands (keys with many ties: s8, u8; floats; a payload), comparators in
//! both directions with the total order or not, stable or not; and variadic reductions
//! (an argmax-like pair reduced over random dimensions). Compiled for the CPU and compared
//! with the reference evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, list, shape, Rng};

/// A random sort (even seeds) or variadic reduce (odd seeds) module.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let rank = 1 + rng.below(3);
    let dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 17)).collect();
    if seed % 2 == 1 {
        // (value, index) pairs: the larger value wins, ties to the smaller index.
        let kept: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
        let reduced: Vec<usize> = (0..rank).filter(|d| !kept.contains(d)).collect();
        let out: Vec<i64> = kept.iter().map(|&d| dims[d]).collect();
        let ty = *rng.pick(&["f32", "s32", "f64"]);
        let x = shape(&mut rng, ty, &dims);
        let id = shape(&mut rng, "s32", &dims);
        let o1 = shape(&mut rng, ty, &out);
        let o2 = shape(&mut rng, "s32", &out);
        let d = rng.below(rank);
        return format!(
            "HloModule r\nam {{\n  a = {ty}[] parameter(0)\n  i = s32[] parameter(1)\n  \
             b = {ty}[] parameter(2)\n  j = s32[] parameter(3)\n  gt = pred[] compare(a, b), direction=GT\n  \
             eq = pred[] compare(a, b), direction=EQ\n  lt = pred[] compare(i, j), direction=LT\n  \
             tie = pred[] and(eq, lt)\n  w = pred[] or(gt, tie)\n  v = {ty}[] select(w, a, b)\n  \
             k = s32[] select(w, i, j)\n  ROOT t = ({ty}[], s32[]) tuple(v, k)\n}}\nENTRY e {{\n  \
             x = {x} parameter(0)\n  io = {id} iota(), iota_dimension={d}\n  lo = {ty}[] constant(-1000)\n  \
             z = s32[] constant(0)\n  ROOT r = ({o1}, {o2}) reduce(x, io, lo, z), dimensions={{{}}}, to_apply=am\n}}\n",
            list(&reduced),
        );
    }
    let key = *rng.pick(&["s8", "u8", "f32", "f64", "s32"]);
    let n_ops = 1 + rng.below(3);
    let tys: Vec<&str> = std::iter::once(key)
        .chain((1..n_ops).map(|_| *rng.pick(&["f32", "s32", "u8"])))
        .collect();
    let d = rng.below(rank);
    let dir = *rng.pick(&["LT", "GT"]);
    let total = if key.starts_with('f') && rng.below(2) == 0 {
        ", type=TOTALORDER"
    } else {
        ""
    };
    let stable = if rng.below(2) == 0 {
        ", is_stable=true"
    } else {
        ""
    };
    let params: Vec<String> = tys
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            [
                format!("  a{i} = {t}[] parameter({})", 2 * i),
                format!("  b{i} = {t}[] parameter({})", 2 * i + 1),
            ]
        })
        .collect();
    let ins: Vec<String> = tys
        .iter()
        .enumerate()
        .map(|(i, t)| format!("  x{i} = {} parameter({i})", shape(&mut rng, t, &dims)))
        .collect();
    let outs: Vec<String> = tys.iter().map(|t| shape(&mut rng, t, &dims)).collect();
    let names: Vec<String> = (0..n_ops).map(|i| format!("x{i}")).collect();
    let root_shape = if n_ops == 1 {
        outs[0].clone()
    } else {
        format!("({})", outs.join(", "))
    };
    format!(
        "HloModule s\ncmp {{\n{}\n  ROOT c = pred[] compare(a0, b0), direction={dir}{total}\n}}\n\
         ENTRY e {{\n{}\n  ROOT s = {root_shape} sort({}), dimensions={{{d}}}{stable}, to_apply=cmp\n}}\n",
        params.join("\n"),
        ins.join("\n"),
        names.join(", "),
    )
}

#[test]
fn random_sorts_and_variadic_reduces_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-sorts", gen::seeds(0..40), |seed| {
        Some(module(seed))
    });
}
