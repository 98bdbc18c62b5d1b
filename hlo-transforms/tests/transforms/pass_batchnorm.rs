//! The batch-norm expander against numbers computed here from the definitions: the
//! expanded module runs on the reference evaluator (which has no batch-norm ops).

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::Pass;
use hlo::{ElementType, Literal, Shape};

fn arr(dims: &[i64], v: &[f32]) -> Literal {
    Literal::Array(
        ArrayLiteral::new(
            Shape::array(ElementType::F32, dims.to_vec()),
            ArrayData::F32(v.to_vec()),
        )
        .unwrap(),
    )
}

fn values(l: &Literal) -> Vec<f32> {
    match l.as_array().unwrap().data() {
        ArrayData::F32(v) => v.clone(),
        other => panic!("not f32: {other:?}"),
    }
}

fn expand_and_run(text: &str, args: &[Literal]) -> Literal {
    let mut m = hlo::parse_module(text).unwrap();
    assert!(hlo_transforms::BatchNormExpander.run(&mut m).unwrap());
    hlo::pass::verify::verify(&m).unwrap();
    assert!(!hlo::print_module(&m).contains("batch-norm"));
    hlo_eval::evaluate(&m, args).unwrap()
}

fn close(a: &[f32], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!(
            (f64::from(*x) - y).abs() <= 1e-4 * (1.0 + y.abs()),
            "{a:?} vs {b:?}"
        );
    }
}

const X: [f32; 12] = [1.0, 2.0, 4.0, -1.0, 0.5, 3.0, 2.0, 2.0, -3.0, 1.5, 0.0, 7.0];
const EPS: f64 = 0.001;

/// (mean, var) per feature of X as [3,4] with features along dimension 0.
fn stats() -> (Vec<f64>, Vec<f64>) {
    let mut mean = vec![0.0; 3];
    let mut var = vec![0.0; 3];
    for c in 0..3 {
        let row: Vec<f64> = (0..4).map(|j| f64::from(X[c * 4 + j])).collect();
        mean[c] = row.iter().sum::<f64>() / 4.0;
        var[c] = row.iter().map(|v| (v - mean[c]).powi(2)).sum::<f64>() / 4.0;
    }
    (mean, var)
}

#[test]
fn training_matches_definition() {
    let text = "HloModule m\nENTRY e {\n  x = f32[3,4] parameter(0)\n  s = f32[3] parameter(1)\n  o = f32[3] parameter(2)\n  ROOT t = (f32[3,4], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=0\n}\n";
    let scale = [2.0f32, 0.5, 1.0];
    let offset = [0.0f32, 1.0, -1.0];
    let out = expand_and_run(
        text,
        &[arr(&[3, 4], &X), arr(&[3], &scale), arr(&[3], &offset)],
    );
    let Literal::Tuple(t) = out else {
        panic!("tuple expected")
    };
    let (mean, var) = stats();
    let mut y = Vec::new();
    for c in 0..3 {
        for j in 0..4 {
            let x = f64::from(X[c * 4 + j]);
            y.push(
                (x - mean[c]) / (var[c] + EPS).sqrt() * f64::from(scale[c]) + f64::from(offset[c]),
            );
        }
    }
    close(&values(&t[0]), &y);
    close(&values(&t[1]), &mean);
    close(&values(&t[2]), &var);
}

#[test]
fn inference_and_grad_match_definition() {
    let (mean, var) = stats();
    let mean32: Vec<f32> = mean.iter().map(|&v| v as f32).collect();
    let var32: Vec<f32> = var.iter().map(|&v| v as f32).collect();
    let scale = [2.0f32, 0.5, 1.0];
    let offset = [0.0f32, 1.0, -1.0];
    let text = "HloModule m\nENTRY e {\n  x = f32[3,4] parameter(0)\n  s = f32[3] parameter(1)\n  o = f32[3] parameter(2)\n  mu = f32[3] parameter(3)\n  v = f32[3] parameter(4)\n  ROOT y = f32[3,4] batch-norm-inference(x, s, o, mu, v), epsilon=0.001, feature_index=0\n}\n";
    let out = expand_and_run(
        text,
        &[
            arr(&[3, 4], &X),
            arr(&[3], &scale),
            arr(&[3], &offset),
            arr(&[3], &mean32),
            arr(&[3], &var32),
        ],
    );
    let mut y = Vec::new();
    for c in 0..3 {
        for j in 0..4 {
            let x = f64::from(X[c * 4 + j]);
            y.push(
                (x - mean[c]) / (var[c] + EPS).sqrt() * f64::from(scale[c]) + f64::from(offset[c]),
            );
        }
    }
    close(&values(&out), &y);

    // Grad: dx = scale * r / N * (N dy - sum dy - xc * r^2 * sum(dy xc)).
    let dy: Vec<f32> = (0..12).map(|i| (i as f32 - 5.0) * 0.25).collect();
    let text = "HloModule m\nENTRY e {\n  x = f32[3,4] parameter(0)\n  s = f32[3] parameter(1)\n  mu = f32[3] parameter(2)\n  v = f32[3] parameter(3)\n  dy = f32[3,4] parameter(4)\n  ROOT t = (f32[3,4], f32[3], f32[3]) batch-norm-grad(x, s, mu, v, dy), epsilon=0.001, feature_index=0\n}\n";
    let out = expand_and_run(
        text,
        &[
            arr(&[3, 4], &X),
            arr(&[3], &scale),
            arr(&[3], &mean32),
            arr(&[3], &var32),
            arr(&[3, 4], &dy),
        ],
    );
    let Literal::Tuple(t) = out else {
        panic!("tuple expected")
    };
    let (mut dx, mut gs, mut go) = (Vec::new(), Vec::new(), Vec::new());
    for c in 0..3 {
        let r = 1.0 / (var[c] + EPS).sqrt();
        let d: Vec<f64> = (0..4).map(|j| f64::from(dy[c * 4 + j])).collect();
        let xc: Vec<f64> = (0..4).map(|j| f64::from(X[c * 4 + j]) - mean[c]).collect();
        let sd: f64 = d.iter().sum();
        let sdx: f64 = d.iter().zip(&xc).map(|(a, b)| a * b).sum();
        go.push(sd);
        gs.push(sdx * r);
        for j in 0..4 {
            dx.push(f64::from(scale[c]) * r / 4.0 * (4.0 * d[j] - sd - xc[j] * r * r * sdx));
        }
    }
    close(&values(&t[0]), &dx);
    close(&values(&t[1]), &gs);
    close(&values(&t[2]), &go);
}
