//! Random small fusions for the property tests.

use affine::gen::Rng;

/// A random chain of shape ops over a parameter (transpose, reshape, slice, reverse,
/// broadcast, negate); with `extended`, also concatenates of a value with itself, pads with
/// edge padding (negative too) and reductions of the last dimension.
pub fn random_fusion(rng: &mut Rng, extended: bool) -> String {
    let mut dims: Vec<i64> = (0..rng.range_i64(1, 3))
        .map(|_| rng.range_i64(1, 6))
        .collect();
    let shape = |d: &[i64]| {
        format!(
            "f32[{}]",
            d.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let p_shape = shape(&dims);
    let mut body = vec![format!("  v0 = {p_shape} parameter(0)")];
    let steps = rng.range_i64(1, 4);
    for i in 1..=steps {
        let prev = format!("v{}", i - 1);
        if extended && rng.chance(2, 5) {
            body.push(extended_step(rng, i, &prev, &mut dims));
            continue;
        }
        let line = match rng.below(6) {
            0 if dims.len() > 1 => {
                let mut perm: Vec<usize> = (0..dims.len()).collect();
                rng.shuffle(&mut perm);
                let nd: Vec<i64> = perm.iter().map(|&p| dims[p]).collect();
                let l = format!(
                    "  v{i} = {} transpose({prev}), dimensions={{{}}}",
                    shape(&nd),
                    perm.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                );
                dims = nd;
                l
            }
            1 => {
                // Collapse everything or split the first dimension.
                let total: i64 = dims.iter().product();
                let nd = if dims.len() > 1 || total < 4 {
                    vec![total]
                } else if total % 2 == 0 {
                    vec![2, total / 2]
                } else {
                    vec![total]
                };
                let l = format!("  v{i} = {} reshape({prev})", shape(&nd));
                dims = nd;
                l
            }
            2 if dims[0] > 2 => {
                let mut nd = dims.clone();
                let start = rng.range_i64(0, 1);
                let stride = rng.range_i64(1, 2);
                nd[0] = (dims[0] - start + stride - 1) / stride;
                let rest: Vec<String> = dims[1..].iter().map(|d| format!("[0:{d}]")).collect();
                let l = format!(
                    "  v{i} = {} slice({prev}), slice={{[{start}:{}:{stride}]{}}}",
                    shape(&nd),
                    dims[0],
                    rest.iter().map(|r| format!(", {r}")).collect::<String>()
                );
                dims = nd;
                l
            }
            3 => format!(
                "  v{i} = {} reverse({prev}), dimensions={{0}}",
                shape(&dims)
            ),
            4 if dims.len() < 3 => {
                let mut nd = vec![rng.range_i64(1, 3)];
                nd.extend(&dims);
                let kept: Vec<String> = (1..nd.len()).map(|x| x.to_string()).collect();
                let l = format!(
                    "  v{i} = {} broadcast({prev}), dimensions={{{}}}",
                    shape(&nd),
                    kept.join(",")
                );
                dims = nd;
                l
            }
            _ => format!("  v{i} = {} negate({prev})", shape(&dims)),
        };
        body.push(line);
    }
    let last = body.len() - 1;
    if let Some(l) = body.last_mut() {
        *l = l.replacen(&format!("  v{last} ="), &format!("  ROOT v{last} ="), 1);
    }
    let reducer = if !extended {
        ""
    } else {
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
    };
    format!(
        "HloModule m\n{reducer}fused {{\n{}\n}}\nENTRY e {{\n  x = {p_shape} parameter(0)\n  ROOT f = {} fusion(x), kind=kLoop, calls=fused\n}}\n",
        body.join("\n"),
        shape(&dims)
    )
}

fn shape(d: &[i64]) -> String {
    let ds: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("f32[{}]", ds.join(","))
}

/// One of the extended steps: concatenate, pad or reduce (`dims` updated).
fn extended_step(rng: &mut Rng, i: i64, prev: &str, dims: &mut Vec<i64>) -> String {
    match rng.below(3) {
        0 => {
            let mut nd = dims.clone();
            nd[0] *= 2;
            let l = format!(
                "  v{i} = {} concatenate({prev}, {prev}), dimensions={{0}}",
                shape(&nd)
            );
            *dims = nd;
            l
        }
        1 => {
            let lo = rng.range_i64(-1, 2);
            let hi = rng.range_i64(-1, 2);
            let (lo, hi) = if dims[0] + lo + hi < 1 {
                (0, 1)
            } else {
                (lo, hi)
            };
            let mut nd = dims.clone();
            nd[0] += lo + hi;
            let rest: String = dims[1..].iter().map(|_| "x0_0").collect();
            let l = format!(
                "  z{i} = f32[] constant(0)\n  v{i} = {} pad({prev}, z{i}), padding={lo}_{hi}{rest}",
                shape(&nd)
            );
            *dims = nd;
            l
        }
        _ if dims.len() > 1 => {
            let last = dims.len() - 1;
            let nd = dims[..last].to_vec();
            let l = format!(
                "  z{i} = f32[] constant(0)\n  v{i} = {} reduce({prev}, z{i}), dimensions={{{last}}}, to_apply=add",
                shape(&nd)
            );
            *dims = nd;
            l
        }
        _ => format!("  v{i} = {} negate({prev})", shape(dims)),
    }
}
