//! Property test: random modules of one op that reads along some dimensions — a
//! reduce-window or a 1-D convolution with random window, stride, padding and dilation
//! (halos on a split window dimension), a slice, pad, concatenate, reverse, sort,
//! dynamic-slice, dynamic-update-slice, gather or scatter (split dimensions they leave
//! alone kept, the others gathered) — on random shardings over 2, 4 or
//! 8 devices (uneven and empty shards, partial replication, shuffled devices), partitioned
//! and evaluated on their devices, equal the global evaluation.

use rand_core::Rng as _;
use rand_xoshiro::SplitMix64;

use crate::check::check_random_modules;

pub(crate) fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// A random sharding of an array of `dims` over `devices` devices, in XLA's text.
pub(crate) fn sharding(rng: &mut SplitMix64, dims: &[i64], devices: i64) -> String {
    // Dimensions take their tiles in a random order, so that each is split as often.
    let mut tiles = vec![1; dims.len()];
    let mut left = devices;
    let mut order: Vec<usize> = (0..dims.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, pick(rng, i + 1));
    }
    for d in order {
        let options: Vec<i64> = (1..=left)
            .filter(|t| left % t == 0 && *t <= 2 * dims[d])
            .collect();
        let t = options[pick(rng, options.len())];
        tiles[d] = t;
        left /= t;
    }
    if tiles.iter().all(|&t| t == 1) {
        return "{replicated}".into();
    }
    let mut order: Vec<i64> = (0..devices).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, pick(rng, i + 1));
    }
    let list: Vec<String> = order.iter().map(i64::to_string).collect();
    let mut t: Vec<String> = tiles.iter().map(i64::to_string).collect();
    if left > 1 {
        t.push(left.to_string());
        return format!(
            "{{devices=[{}]{} last_tile_dim_replicate}}",
            t.join(","),
            list.join(",")
        );
    }
    format!("{{devices=[{}]{}}}", t.join(","), list.join(","))
}

pub(crate) fn dims_text(d: &[i64]) -> String {
    d.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A random window along one dimension of `n` elements: (size, stride, low, high,
/// dilation, outputs), with at least one output.
fn window(rng: &mut SplitMix64, n: i64) -> (i64, i64, i64, i64, i64, i64) {
    loop {
        let size = 1 + pick(rng, 4) as i64;
        let stride = 1 + pick(rng, 2) as i64;
        let dil = 1 + pick(rng, 2) as i64;
        let lo = pick(rng, size as usize + 1) as i64;
        let hi = pick(rng, size as usize + 1) as i64;
        let span = (size - 1) * dil + 1;
        if n + lo + hi >= span {
            return (size, stride, lo, hi, dil, (n + lo + hi - span) / stride + 1);
        }
    }
}

/// A random module over `devices` devices.
fn module_text(rng: &mut SplitMix64, devices: i64) -> String {
    let (b, n, c) = (
        [1i64, 2, 3, 4][pick(rng, 4)],
        [3i64, 5, 8, 9, 12, 16, 24, 31][pick(rng, 8)],
        [2i64, 3][pick(rng, 2)],
    );
    let x = [b, n, c];
    let sx = sharding(rng, &x, devices);
    let mut params = vec![format!(
        "  x = f32[{}] parameter(0), sharding={sx}",
        dims_text(&x)
    )];
    let mut comps = String::new();
    let (body, out): (Vec<String>, Vec<i64>) = match pick(rng, 11) {
        0 | 1 => {
            let (size, stride, lo, hi, dil, o) = window(rng, n);
            let (reducer, init) = [("add", "0"), ("max", "-inf")][pick(rng, 2)];
            (
                vec![
                    format!("  init = f32[] constant({init})"),
                    format!(
                        "  y = f32[{b},{o},{c}] reduce-window(x, init), window={{size=1x{size}x1 stride=1x{stride}x1 pad=0_0x{lo}_{hi}x0_0 rhs_dilate=1x{dil}x1}}, to_apply={reducer}"
                    ),
                ],
                vec![b, o, c],
            )
        }
        2 | 3 => {
            let (size, stride, lo, hi, dil, o) = window(rng, n);
            let co = [1i64, 2, 4][pick(rng, 3)];
            let k = [size, c, co];
            let sk = sharding(rng, &k, devices);
            params.push(format!(
                "  k = f32[{}] parameter(1), sharding={sk}",
                dims_text(&k)
            ));
            (
                vec![format!(
                    "  y = f32[{b},{o},{co}] convolution(x, k), window={{size={size} stride={stride} pad={lo}_{hi} rhs_dilate={dil}}}, dim_labels=b0f_0io->b0f"
                )],
                vec![b, o, co],
            )
        }
        4 => {
            let start = pick(rng, n as usize) as i64;
            let limit = start + 1 + pick(rng, (n - start) as usize) as i64;
            let stride = 1 + pick(rng, 2) as i64;
            let o = (limit - start + stride - 1) / stride;
            (
                vec![format!(
                    "  y = f32[{b},{o},{c}] slice(x), slice={{[0:{b}], [{start}:{limit}:{stride}], [0:{c}]}}"
                )],
                vec![b, o, c],
            )
        }
        5 => {
            let (lo, hi, int) = (
                pick(rng, 3) as i64,
                pick(rng, 3) as i64,
                pick(rng, 2) as i64,
            );
            let o = n + lo + hi + (n - 1) * int;
            (
                vec![
                    "  z = f32[] constant(0.5)".to_string(),
                    format!("  y = f32[{b},{o},{c}] pad(x, z), padding=0_0x{lo}_{hi}_{int}x0_0"),
                ],
                vec![b, o, c],
            )
        }
        6 => {
            let along = pick(rng, 3);
            let mut other = x;
            other[along] = 1 + pick(rng, 4) as i64;
            let so = sharding(rng, &other, devices);
            params.push(format!(
                "  w = f32[{}] parameter(1), sharding={so}",
                dims_text(&other)
            ));
            let mut o = x;
            o[along] += other[along];
            (
                vec![format!(
                    "  y = f32[{}] concatenate(x, w), dimensions={{{along}}}",
                    dims_text(&o)
                )],
                o.to_vec(),
            )
        }
        7 => {
            let along = pick(rng, 3);
            comps = "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=LT\n}\n\n".into();
            (
                vec![
                    format!(
                        "  r = f32[{}] reverse(x), dimensions={{{}}}",
                        dims_text(&x),
                        pick(rng, 3)
                    ),
                    format!(
                        "  y = f32[{}] sort(r), dimensions={{{along}}}, to_apply=lt",
                        dims_text(&x)
                    ),
                ],
                x.to_vec(),
            )
        }
        8 => {
            params.push("  i = s32[] parameter(1)".into());
            let size = 1 + pick(rng, n as usize) as i64;
            let u = [b, size, c];
            let su = sharding(rng, &u, devices);
            params.push(format!(
                "  u = f32[{}] parameter(2), sharding={su}",
                dims_text(&u)
            ));
            (
                vec![
                    "  zero = s32[] constant(0)".into(),
                    "  m = s32[] constant(-3)".into(),
                    "  j = s32[] add(i, m)".into(),
                    format!(
                        "  ds = f32[{}] dynamic-slice(x, zero, j, zero), dynamic_slice_sizes={{{}}}",
                        dims_text(&u),
                        dims_text(&u)
                    ),
                    "  v = f32[".to_string() + &dims_text(&u) + "] add(ds, u)",
                    format!(
                        "  y = f32[{}] dynamic-update-slice(x, v, zero, j, zero)",
                        dims_text(&x)
                    ),
                ],
                x.to_vec(),
            )
        }
        9 => {
            params.push("  i = s32[4,1] parameter(1), sharding={replicated}".into());
            let u = [b, 4, c];
            let su = sharding(rng, &u, devices);
            params.push(format!(
                "  u = f32[{}] parameter(2), sharding={su}",
                dims_text(&u)
            ));
            (
                vec![
                    "  lo = s32[] constant(0)".into(),
                    format!("  hi = s32[] constant({})", n - 1),
                    "  ci = s32[4,1] clamp(lo, i, hi)".into(),
                    format!(
                        "  y = f32[{}] scatter(x, ci, u), update_window_dims={{0,2}}, inserted_window_dims={{1}}, scatter_dims_to_operand_dims={{1}}, index_vector_dim=1, to_apply=add",
                        dims_text(&x)
                    ),
                ],
                x.to_vec(),
            )
        }
        _ => {
            params.push("  i = s32[4,1] parameter(1), sharding={replicated}".into());
            (
                vec![
                    "  lo = s32[] constant(0)".into(),
                    format!("  hi = s32[] constant({})", n - 1),
                    "  ci = s32[4,1] clamp(lo, i, hi)".into(),
                    format!(
                        "  y = f32[{b},4,{c}] gather(x, ci), offset_dims={{0,2}}, collapsed_slice_dims={{1}}, start_index_map={{1}}, index_vector_dim=1, slice_sizes={{{b},1,{c}}}"
                    ),
                ],
                vec![b, 4, c],
            )
        }
    };
    let root = match pick(rng, 2) {
        0 => format!(", sharding={{{}}}", sharding(rng, &out, devices)),
        _ => String::new(),
    };
    let o = dims_text(&out);
    format!(
        "HloModule random_window\n\nadd {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}}\n\n\
         max {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] maximum(x, y)\n}}\n\n{comps}\
         ENTRY e {{\n{}\n{}\n  t = f32[{o}] tanh(y)\n  ROOT out = (f32[{o}]) tuple(t){root}\n}}\n",
        params.join("\n"),
        body.join("\n")
    )
}

#[test]
fn partitioned_windowed_modules_equal_the_global_evaluation() {
    check_random_modules(3535, 300, "modules", module_text);
}
