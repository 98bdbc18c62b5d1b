//! `reduce-window` and `select-and-scatter`: pooling with strides, padding, dilations,
//! variadic reductions, and max-pool gradients.

#[path = "kernels/support.rs"]
mod support;

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
