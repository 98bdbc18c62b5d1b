//! `reduce-window` and `select-and-scatter`: pooling with strides, padding, dilations,
//! variadic reductions, and max-pool gradients.

use crate::support;

use support::*;

const ADD: &str = "add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}";

#[test]
fn max_pool_2x2_stride_2() {
    let text = "HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[4,4] parameter(0)
  i = f32[] parameter(1)
  ROOT r = f32[2,2] reduce-window(x, i), window={size=2x2 stride=2x2}, to_apply=max
}";
    let x: Vec<f32> = (0..16).map(|v| v as f32).collect();
    let r = eval_root(
        text,
        &[f32s("f32[4,4]", &x), f32s("f32[]", &[f32::NEG_INFINITY])],
    )
    .unwrap();
    assert_eq!(get_f32(&r), vec![5., 7., 13., 15.]);
}

#[test]
fn padded_sum_with_base_and_window_dilation() {
    // 1-D: x = [1,2,3], base dilation 2 -> [1,_,2,_,3]; pad 1 low, 1 high;
    // window size 2 dilation 2 stride 1: taps at p and p+2 of the padded, dilated row
    // [_,1,_,2,_,3,_] (7 positions) -> 5 outputs.
    let text = format!("HloModule m
{ADD}
ENTRY e {{
  x = f32[3] parameter(0)
  i = f32[] parameter(1)
  ROOT r = f32[5] reduce-window(x, i), window={{size=2 pad=1_1 lhs_dilate=2 rhs_dilate=2}}, to_apply=add
}}");
    let r = eval_root(
        &text,
        &[f32s("f32[3]", &[1., 2., 3.]), f32s("f32[]", &[10.])],
    )
    .unwrap();
    // positions: (0,2): _,_ ; (1,3): 1,2 ; (2,4): _,_ ; (3,5): 2,3 ; (4,6): _,_
    assert_eq!(get_f32(&r), vec![10., 13., 10., 15., 10.]);
}

#[test]
fn variadic_reduce_window_argmax_through_calls() {
    let text = "HloModule m
argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  ge = pred[] compare(a, b), direction=GE
  v = f32[] select(ge, a, b)
  i = s32[] select(ge, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[5] parameter(0)
  xi = s32[5] parameter(1)
  i = f32[] parameter(2)
  ii = s32[] parameter(3)
  ROOT r = (f32[2], s32[2]) reduce-window(x, xi, i, ii), window={size=3 stride=2}, to_apply=argmax
}";
    let r = eval_root(
        text,
        &[
            f32s("f32[5]", &[1., 4., 2., 8., 3.]),
            s32s("s32[5]", &[0, 1, 2, 3, 4]),
            f32s("f32[]", &[f32::NEG_INFINITY]),
            s32s("s32[]", &[-1]),
        ],
    )
    .unwrap();
    assert_eq!(get_f32(part(&r, 0)), vec![4., 8.]);
    assert_eq!(get_s32(part(&r, 1)), vec![1, 3]);
}

#[test]
fn select_and_scatter_routes_gradients_to_window_maxima() {
    let text = format!(
        "HloModule m
{ADD}
ge {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}}
ENTRY e {{
  x = f32[4] parameter(0)
  s = f32[3] parameter(1)
  i = f32[] parameter(2)
  ROOT r = f32[4] select-and-scatter(x, s, i), window={{size=2 stride=1}}, select=ge, scatter=add
}}"
    );
    // windows: [1,3] -> 3 (idx 1); [3,3] -> first 3 (idx 1, GE keeps current); [3,2] -> idx 2
    let r = eval_root(
        &text,
        &[
            f32s("f32[4]", &[1., 3., 3., 2.]),
            f32s("f32[3]", &[10., 20., 30.]),
            f32s("f32[]", &[0.]),
        ],
    )
    .unwrap();
    assert_eq!(get_f32(&r), vec![0., 30., 30., 0.]);
}

#[test]
fn select_and_scatter_skips_padding() {
    let text = format!("HloModule m
{ADD}
ge {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}}
ENTRY e {{
  x = f32[3] parameter(0)
  s = f32[2] parameter(1)
  i = f32[] parameter(2)
  ROOT r = f32[3] select-and-scatter(x, s, i), window={{size=2 stride=2 pad=1_0}}, select=ge, scatter=add
}}");
    // windows: [pad, -5] -> idx 0 (padding never selected); [7, 1] -> idx 1
    let r = eval_root(
        &text,
        &[
            f32s("f32[3]", &[-5., 7., 1.]),
            f32s("f32[2]", &[1., 2.]),
            f32s("f32[]", &[0.]),
        ],
    )
    .unwrap();
    assert_eq!(get_f32(&r), vec![1., 2., 0.]);
}

#[test]
fn select_and_scatter_through_a_general_select() {
    // A total-order select is not applied natively: it goes through the computation.
    let text = format!(
        "HloModule m
{ADD}
le {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LE, type=TOTALORDER
}}
ENTRY e {{
  x = f32[4] parameter(0)
  s = f32[2] parameter(1)
  i = f32[] parameter(2)
  ROOT r = f32[4] select-and-scatter(x, s, i), window={{size=2 stride=2}}, select=le, scatter=add
}}"
    );
    // Minimum of each window: [5, 2] -> idx 1, [-0, 0] -> -0 (idx 2) in total order.
    let r = eval_root(
        &text,
        &[
            f32s("f32[4]", &[5., 2., -0.0, 0.0]),
            f32s("f32[2]", &[1., 2.]),
            f32s("f32[]", &[0.]),
        ],
    )
    .unwrap();
    assert_eq!(get_f32(&r), vec![0., 1., 2., 0.]);
}

/// One window dimension: size, stride, pad low, pad high, base and window dilation.
type WinDim = (usize, usize, i64, i64, usize, usize);

/// A deterministic stream of small numbers.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Random 2-D sum windows (size, stride, padding, base and window dilation) match a
/// naive loop over the padded, dilated input.
fn reduce_window_matches_naive(seed: u64) -> bool {
    let mut g = Lcg(seed);
    let mut fields: Vec<WinDim> = Vec::new();
    let (mut in_dims, mut out_dims) = (vec![], vec![]);
    for _ in 0..2 {
        let n = 1 + g.next(5);
        let (size, stride, bd, wd) = (1 + g.next(3), 1 + g.next(3), 1 + g.next(2), 1 + g.next(2));
        let (lo, hi) = (g.next(4) as i64 - 1, g.next(4) as i64 - 1);
        let padded = ((n - 1) * bd + 1) as i64 + lo + hi;
        let eff = ((size - 1) * wd + 1) as i64;
        let out = if padded >= eff {
            ((padded - eff) / stride as i64 + 1) as usize
        } else {
            0
        };
        in_dims.push(n);
        out_dims.push(out);
        fields.push((size, stride, lo, hi, bd, wd));
    }
    let join = |f: &dyn Fn(&WinDim) -> String| fields.iter().map(f).collect::<Vec<_>>().join("x");
    let window = format!(
        "size={} stride={} pad={} lhs_dilate={} rhs_dilate={}",
        join(&|w| w.0.to_string()),
        join(&|w| w.1.to_string()),
        join(&|w| format!("{}_{}", w.2, w.3)),
        join(&|w| w.4.to_string()),
        join(&|w| w.5.to_string()),
    );
    let text = format!(
        "HloModule m
add {{
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}}
ENTRY e {{
  x = s32[{},{}] parameter(0)
  i = s32[] parameter(1)
  ROOT r = s32[{},{}] reduce-window(x, i), window={{{window}}}, to_apply=add
}}",
        in_dims[0], in_dims[1], out_dims[0], out_dims[1]
    );
    let x: Vec<i32> = (0..in_dims[0] * in_dims[1])
        .map(|_| g.next(9) as i32 - 4)
        .collect();
    let got = eval_root(
        &text,
        &[
            s32s(&format!("s32[{},{}]", in_dims[0], in_dims[1]), &x),
            s32s("s32[]", &[100]),
        ],
    )
    .unwrap();
    // Naive: the dilated, padded input as a function of padded coordinates.
    let at = |d: usize, p: i64| -> Option<usize> {
        let (_, _, lo, _, bd, _) = fields[d];
        let q = p - lo;
        (q >= 0 && q % bd as i64 == 0 && ((q / bd as i64) as usize) < in_dims[d])
            .then(|| (q / bd as i64) as usize)
    };
    let mut want = Vec::new();
    for o0 in 0..out_dims[0] {
        for o1 in 0..out_dims[1] {
            let mut s = 100;
            for k0 in 0..fields[0].0 {
                for k1 in 0..fields[1].0 {
                    let p0 = (o0 * fields[0].1 + k0 * fields[0].5) as i64;
                    let p1 = (o1 * fields[1].1 + k1 * fields[1].5) as i64;
                    if let (Some(i0), Some(i1)) = (at(0, p0), at(1, p1)) {
                        s += x[i0 * in_dims[1] + i1];
                    }
                }
            }
            want.push(s);
        }
    }
    get_s32(&got) == want
}

#[test]
fn random_windows_match_naive_loops() {
    quickcheck::QuickCheck::new()
        .tests(300)
        .quickcheck(reduce_window_matches_naive as fn(u64) -> bool);
}
