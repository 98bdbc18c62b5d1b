//! Batch normalisation: a hand-computed training step, inference with the batch
//! statistics reproducing it, and `batch-norm-grad` against finite differences of the
//! training op.

use crate::support;

use hlo::literal::ArrayData;
use hlo::Literal;
use support::*;

fn f64s(shape: &str, v: &[f64]) -> Literal {
    arr(shape, ArrayData::F64(v.to_vec()))
}

fn get_f64(l: &Literal) -> Vec<f64> {
    match l.as_array().unwrap().data() {
        ArrayData::F64(v) => v.clone(),
        d => panic!("{d:?}"),
    }
}

const TRAIN: &str = "HloModule m
ENTRY e {
  x = f64[2,3] parameter(0)
  s = f64[2] parameter(1)
  o = f64[2] parameter(2)
  ROOT t = (f64[2,3], f64[2], f64[2]) batch-norm-training(x, s, o), epsilon=0.5, feature_index=0
}";

#[test]
fn training_normalises_each_feature() {
    // Feature 0: [1, 2, 3] (mean 2, var 2/3); feature 1: [4, 4, 4] (mean 4, var 0).
    let x = f64s("f64[2,3]", &[1., 2., 3., 4., 4., 4.]);
    let r = eval_root(
        TRAIN,
        &[x, f64s("f64[2]", &[2., 1.]), f64s("f64[2]", &[0., 10.])],
    )
    .unwrap();
    let y = get_f64(part(&r, 0));
    let d = (2.0f64 / 3.0 + 0.5).sqrt();
    let want = [-2.0 / d, 0.0, 2.0 / d, 10., 10., 10.];
    assert!(
        y.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12),
        "{y:?}"
    );
    assert_eq!(get_f64(part(&r, 1)), vec![2., 4.]);
    let var = get_f64(part(&r, 2));
    assert!((var[0] - 2.0 / 3.0).abs() < 1e-15 && var[1] == 0.0);
    // Inference with the batch statistics gives the same output.
    let inf = "HloModule m
ENTRY e {
  x = f64[2,3] parameter(0)
  s = f64[2] parameter(1)
  o = f64[2] parameter(2)
  m = f64[2] parameter(3)
  v = f64[2] parameter(4)
  ROOT y = f64[2,3] batch-norm-inference(x, s, o, m, v), epsilon=0.5, feature_index=0
}";
    let y2 = eval_root(
        inf,
        &[
            f64s("f64[2,3]", &[1., 2., 3., 4., 4., 4.]),
            f64s("f64[2]", &[2., 1.]),
            f64s("f64[2]", &[0., 10.]),
            part(&r, 1).clone(),
            part(&r, 2).clone(),
        ],
    )
    .unwrap();
    assert_eq!(get_f64(&y2), y);
}

#[test]
fn grad_matches_finite_differences() {
    let x: Vec<f64> = vec![0.3, -1.2, 2.5, 0.7, 1.1, -0.4];
    let (scale, offset) = ([1.5, -0.5], [0.2, 0.1]);
    let w: Vec<f64> = vec![0.9, -0.3, 0.4, 1.2, -0.8, 0.5]; // loss = sum(w * y)
    let train = |x: &[f64]| {
        eval_root(
            TRAIN,
            &[
                f64s("f64[2,3]", x),
                f64s("f64[2]", &scale),
                f64s("f64[2]", &offset),
            ],
        )
        .unwrap()
    };
    let loss = |x: &[f64]| {
        get_f64(part(&train(x), 0))
            .iter()
            .zip(&w)
            .map(|(a, b)| a * b)
            .sum::<f64>()
    };
    let t = train(&x);
    let grad = "HloModule m
ENTRY e {
  x = f64[2,3] parameter(0)
  s = f64[2] parameter(1)
  m = f64[2] parameter(2)
  v = f64[2] parameter(3)
  g = f64[2,3] parameter(4)
  ROOT t = (f64[2,3], f64[2], f64[2]) batch-norm-grad(x, s, m, v, g), epsilon=0.5, feature_index=0
}";
    let r = eval_root(
        grad,
        &[
            f64s("f64[2,3]", &x),
            f64s("f64[2]", &scale),
            part(&t, 1).clone(),
            part(&t, 2).clone(),
            f64s("f64[2,3]", &w),
        ],
    )
    .unwrap();
    let gx = get_f64(part(&r, 0));
    let h = 1e-6;
    for i in 0..6 {
        let (mut up, mut down) = (x.clone(), x.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (loss(&up) - loss(&down)) / (2.0 * h);
        assert!((fd - gx[i]).abs() < 1e-6, "element {i}: {fd} vs {}", gx[i]);
    }
    // d loss / d offset = sum of w per feature; d loss / d scale = sum(w * x_hat).
    let go = get_f64(part(&r, 2));
    assert!(
        (go[0] - 1.0).abs() < 1e-12 && (go[1] - 0.9).abs() < 1e-12,
        "{go:?}"
    );
    let y = get_f64(part(&t, 0));
    for c in 0..2 {
        let want: f64 = (0..3)
            .map(|j| w[c * 3 + j] * (y[c * 3 + j] - offset[c]) / scale[c])
            .sum();
        assert!((get_f64(part(&r, 1))[c] - want).abs() < 1e-9);
    }
}
