//! Random fusions of exact ops, checked exactly in several element types.

use super::*;

/// Random fusions of exact, positively-combining ops (transpose, reverse, strided slice,
/// reshape, broadcast, pad, concatenate, add of two paths, sum reduction): the maps' image
/// must equal the perturbation dependencies exactly, in f32 and then in other real and
/// integer element types.
#[test]
fn random_fusions_exact() {
    let mut rng = XorShift(0x1234_5678_9abc_def1);
    let pick = |rng: &mut XorShift, n: u64| (rng.next_u64() % n) as i64;
    for case in 0..80u64 {
        // The first 40 in f32, then other element types (sums wrap for integers).
        let ty = if case < 40 {
            "f32"
        } else {
            ["f64", "bf16", "f16", "s32", "s8", "u16", "s64"][case as usize % 7]
        };
        let rank = 1 + pick(&mut rng, 3) as usize;
        let mut dims: Vec<i64> = (0..rank).map(|_| 2 + pick(&mut rng, 3)).collect();
        let shape = |d: &[i64]| {
            format!(
                "{ty}[{}]",
                d.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        let list = |d: &[i64]| {
            d.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let input = dims.clone();
        let mut body = vec![format!("  v0 = {} parameter(0)", shape(&dims))];
        body.push(format!("  zero = {ty}[] constant(0)"));
        let steps = 3 + pick(&mut rng, 4);
        for cur in 0..steps as usize {
            let r = dims.len();
            let v = format!("v{cur}");
            let next = format!("v{}", cur + 1);
            let mut new = dims.clone();
            let line = match pick(&mut rng, 9) {
                0 => {
                    let mut perm: Vec<i64> = (0..r as i64).collect();
                    for i in (1..r).rev() {
                        perm.swap(i, pick(&mut rng, i as u64 + 1) as usize);
                    }
                    new = perm.iter().map(|&p| dims[p as usize]).collect();
                    format!("transpose({v}), dimensions={{{}}}", list(&perm))
                }
                1 => {
                    let ds: Vec<i64> = (0..r as i64).filter(|_| rng.next_u64() & 1 == 0).collect();
                    format!("reverse({v}), dimensions={{{}}}", list(&ds))
                }
                2 => {
                    let mut parts = Vec::new();
                    for (i, &n) in dims.iter().enumerate() {
                        let start = pick(&mut rng, n as u64);
                        let stride = 1 + pick(&mut rng, 2);
                        new[i] = (n - start + stride - 1) / stride;
                        parts.push(format!("[{start}:{n}:{stride}]"));
                    }
                    format!("slice({v}), slice={{{}}}", parts.join(", "))
                }
                3 => {
                    let total: i64 = dims.iter().product();
                    let a = (2..total).find(|a| total % a == 0 && pick(&mut rng, 3) > 0);
                    new = match (r, a) {
                        (1, Some(a)) => vec![a, total / a],
                        _ if r >= 2 => {
                            let i = pick(&mut rng, r as u64 - 1) as usize;
                            let mut d = dims.clone();
                            let m = d.remove(i + 1);
                            d[i] *= m;
                            d
                        }
                        _ => vec![total],
                    };
                    format!("reshape({v})")
                }
                4 if dims.iter().product::<i64>() <= 60 => {
                    let at = pick(&mut rng, r as u64 + 1) as usize;
                    new.insert(at, 2);
                    let kept: Vec<i64> = (0..=r as i64).filter(|&i| i != at as i64).collect();
                    format!("broadcast({v}), dimensions={{{}}}", list(&kept))
                }
                5 => {
                    let mut parts = Vec::new();
                    for (i, &n) in dims.iter().enumerate() {
                        let (lo, hi, int) = (
                            pick(&mut rng, 4) - 1,
                            pick(&mut rng, 4) - 1,
                            pick(&mut rng, 2),
                        );
                        let size = lo + hi + n + (n - 1) * int;
                        let (lo, hi) = if size < 1 { (0, 0) } else { (lo, hi) };
                        new[i] = lo + hi + n + (n - 1) * int;
                        parts.push(format!("{lo}_{hi}_{int}"));
                    }
                    format!("pad({v}, zero), padding={}", parts.join("x"))
                }
                6 => {
                    let d = pick(&mut rng, r as u64) as usize;
                    new[d] *= 2;
                    format!("concatenate({v}, {v}), dimensions={{{d}}}")
                }
                7 => {
                    let all: Vec<i64> = (0..r as i64).collect();
                    body.push(format!(
                        "  rev{cur} = {} reverse({v}), dimensions={{{}}}",
                        shape(&dims),
                        list(&all)
                    ));
                    format!("add({v}, rev{cur})")
                }
                _ if r >= 2 => {
                    let d = pick(&mut rng, r as u64) as usize;
                    new.remove(d);
                    format!("reduce({v}, zero), dimensions={{{d}}}, to_apply=add_c")
                }
                _ => format!("negate({v})"),
            };
            body.push(format!("  {next} = {} {line}", shape(&new)));
            dims = new;
        }
        let last = body.pop().unwrap().replacen("  v", "  ROOT v", 1);
        body.push(last);
        let text = format!(
            "HloModule r{case}\nadd_c {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  ROOT s = {ty}[] add(x, y)\n}}\nf {{\n{}\n}}\nENTRY e {{\n  p = {} parameter(0)\n  ROOT r = {} fusion(p), kind=kLoop, calls=f\n}}\n",
            body.join("\n"),
            shape(&input),
            shape(&dims)
        );
        let module = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        let mut arg_rng = XorShift(0x5151 + case);
        let args = args_for(&module, NO, &mut arg_rng).unwrap();
        // Negation flips signs but keeps every dependence's coefficient nonzero.
        let name = format!("random fusion {case}:\n{text}");
        check_module(&name, &module, &args, &[Exact], usize::MAX);
    }
}
