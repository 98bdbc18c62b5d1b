//! Differential test of dynamic-slice, dynamic-update-slice and select-and-scatter: random
//! shapes and layouts, start indices of several integer types that leave the operand on
//! either side (clamped), updates whose base dies at the update (written in place) or is
//! read again after it (copied first), and select-and-scatter windows with strides and
//! padding, compiled for the CPU and compared with the reference evaluator.
//! Deterministic: a failure prints the module.

use crate::gen::{self, list, shape, Rng};

/// A random module: a dynamic-slice and a dynamic-update-slice (seeds not divisible by 3)
/// or a select-and-scatter, or `None` when the drawn window leaves no output.
pub(crate) fn module(seed: u64) -> Option<String> {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "s32", "f64", "u8"]);
    let rank = 1 + rng.below(3);
    let dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 9)).collect();
    let x = shape(&mut rng, ty, &dims);
    if !seed.is_multiple_of(3) {
        let it = *rng.pick(&["s32", "s64", "u32", "s8"]);
        let sizes: Vec<i64> = dims.iter().map(|&n| rng.range(1, n)).collect();
        let starts: Vec<String> = (0..rank)
            .map(|k| {
                let v = rng.range(-3, 10);
                let v = if it.starts_with('u') { v.abs() } else { v };
                format!("  i{k} = {it}[] constant({v})")
            })
            .collect();
        let names: Vec<String> = (0..rank).map(|k| format!("i{k}")).collect();
        let u = shape(&mut rng, ty, &sizes);
        let ds = shape(&mut rng, ty, &sizes);
        let keep_base = rng.below(2) == 0;
        let root = if keep_base {
            format!(
                "ROOT t = ({ty}[{}], {ty}[{}], {ty}[{}]) tuple(ds, dus, x)",
                list(&sizes),
                list(&dims),
                list(&dims)
            )
        } else {
            format!(
                "ROOT t = ({ty}[{}], {ty}[{}]) tuple(ds, dus)",
                list(&sizes),
                list(&dims)
            )
        };
        return Some(format!(
            "HloModule d\nENTRY e {{\n  x = {x} parameter(0)\n  u = {u} parameter(1)\n{}\n  \
             n = {ty}[{}] negate(x)\n  ds = {ds} dynamic-slice(n, {}), dynamic_slice_sizes={{{}}}\n  \
             dus = {ty}[{}] dynamic-update-slice({}, u, {})\n  {root}\n}}\n",
            starts.join("\n"),
            list(&dims),
            names.join(", "),
            list(&sizes),
            list(&dims),
            if keep_base { "x" } else { "n" },
            names.join(", "),
        ));
    }
    let size: Vec<i64> = (0..rank).map(|_| rng.range(1, 3)).collect();
    let stride: Vec<i64> = (0..rank).map(|_| rng.range(1, 3)).collect();
    let pad: Vec<(i64, i64)> = (0..rank)
        .map(|_| (rng.range(0, 1), rng.range(0, 1)))
        .collect();
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let n = dims[i] + pad[i].0 + pad[i].1;
        if n < size[i] {
            return None;
        }
        out.push((n - size[i]) / stride[i] + 1);
    }
    let dir = *rng.pick(&["GE", "GT", "LE"]);
    let xs = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join("x");
    let pads: Vec<String> = pad.iter().map(|(a, b)| format!("{a}_{b}")).collect();
    let src = shape(&mut rng, ty, &out);
    Some(format!(
        "HloModule s\nsel {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = pred[] compare(a, b), direction={dir}\n}}\nsct {{\n  a = {ty}[] parameter(0)\n  \
         b = {ty}[] parameter(1)\n  ROOT c = {ty}[] add(a, b)\n}}\nENTRY e {{\n  x = {x} parameter(0)\n  \
         s = {src} parameter(1)\n  z = {ty}[] constant(0)\n  ROOT r = {ty}[{}] select-and-scatter(x, s, z), \
         window={{size={} stride={} pad={}}}, select=sel, scatter=sct\n}}\n",
        list(&dims),
        xs(&size),
        xs(&stride),
        pads.join("x"),
    ))
}

#[test]
fn random_dynamic_slices_updates_and_select_and_scatter_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-dynamic", gen::seeds(0..36), module);
}
