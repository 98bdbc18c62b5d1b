//! Differential test of reduce-window and pad: random window sizes, strides, padding
//! (negative too), base and window dilation, add/max/min reducers, layouts, and pads with
//! interior and negative edges, compiled for the CPU and compared with the reference
//! evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, list, Rng};

/// `a x b x ...` of a window attribute.
fn xs(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join("x")
}

/// A random reduce-window (even seeds) or pad (odd seeds) module, or `None` when the
/// drawn window leaves no output.
pub(crate) fn module(seed: u64) -> Option<String> {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64", "s32"]);
    let rank = 1 + rng.below(3);
    let dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 12)).collect();
    let mut perm: Vec<usize> = (0..rank).collect();
    rng.shuffle(&mut perm);
    let input = format!("{ty}[{}]{{{}}}", list(&dims), list(&perm));
    if seed % 2 == 1 {
        let cfg: Vec<(i64, i64, i64)> = (0..rank)
            .map(|_| (rng.range(-2, 3), rng.range(-2, 3), rng.range(0, 2)))
            .collect();
        let mut out = Vec::with_capacity(rank);
        for (d, &(lo, hi, interior)) in dims.iter().zip(&cfg) {
            let n = lo + hi + d + (d - 1) * interior;
            if n < 0 {
                return None;
            }
            out.push(n);
        }
        let padding: Vec<String> = cfg
            .iter()
            .map(|(lo, hi, i)| format!("{lo}_{hi}_{i}"))
            .collect();
        return Some(format!(
            "HloModule p\nENTRY e {{\n  x = {input} parameter(0)\n  z = {ty}[] constant(7)\n  \
             ROOT p = {ty}[{}] pad(x, z), padding={}\n}}\n",
            list(&out),
            padding.join("x")
        ));
    }
    let (red, init) = *rng.pick(&[("add", "0"), ("maximum", "-100"), ("minimum", "100")]);
    let size: Vec<i64> = (0..rank).map(|_| rng.range(1, 4)).collect();
    let stride: Vec<i64> = (0..rank).map(|_| rng.range(1, 3)).collect();
    let pad: Vec<(i64, i64)> = (0..rank)
        .map(|_| (rng.range(-1, 2), rng.range(-1, 2)))
        .collect();
    let base: Vec<i64> = (0..rank)
        .map(|_| if rng.below(4) == 0 { 2 } else { 1 })
        .collect();
    let wdil: Vec<i64> = (0..rank)
        .map(|_| if rng.below(4) == 0 { 2 } else { 1 })
        .collect();
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let n = (dims[i] - 1) * base[i] + 1 + pad[i].0 + pad[i].1;
        let w = (size[i] - 1) * wdil[i] + 1;
        if n < w {
            return None;
        }
        out.push((n - w) / stride[i] + 1);
    }
    let pads: Vec<String> = pad.iter().map(|(a, b)| format!("{a}_{b}")).collect();
    Some(format!(
        "HloModule w\nr {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {red}(a, b)\n}}\nENTRY e {{\n  x = {input} parameter(0)\n  \
         i = {ty}[] constant({init})\n  ROOT w = {ty}[{}] reduce-window(x, i), window={{size={} \
         stride={} pad={} lhs_dilate={} rhs_dilate={}}}, to_apply=r\n}}\n",
        list(&out),
        xs(&size),
        xs(&stride),
        pads.join("x"),
        xs(&base),
        xs(&wdil),
    ))
}

#[test]
fn random_windows_and_pads_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-windows", gen::seeds(0..48), module);
    assert!(ran >= 24, "only {ran} modules drawn");
}
