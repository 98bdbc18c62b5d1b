//! Linear algebra: the `cholesky` and `triangular-solve` opcodes on hand-checked
//! systems, and the LAPACK custom calls against XLA's recorded outputs (corpus
//! `cholesky`, `triangular_solve`, `linalg_solve`).

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

fn max_rel(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1e-300f64, |m, x| m.max(x.abs()));
    got.iter()
        .zip(want)
        .fold(0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

#[test]
fn cholesky_opcode_lower_and_upper() {
    // A = L L^T with L = [[2,0],[1,3]] -> A = [[4,2],[2,10]].
    let a = f64s("f64[2,2]", &[4., 2., 2., 10.]);
    let text = |lower: bool| {
        format!("HloModule m\nENTRY e {{\n  a = f64[2,2] parameter(0)\n  ROOT c = f64[2,2] cholesky(a), lower={lower}\n}}")
    };
    assert_eq!(
        get_f64(&eval_root(&text(true), std::slice::from_ref(&a)).unwrap()),
        vec![2., 0., 1., 3.]
    );
    assert_eq!(
        get_f64(&eval_root(&text(false), &[a]).unwrap()),
        vec![2., 1., 0., 3.]
    );
}

#[test]
fn triangular_solve_opcode_variants() {
    // Lower L = [[2,0],[1,4]] (upper triangle holds garbage that must be ignored).
    let l = f64s("f64[2,2]", &[2., 99., 1., 4.]);
    let solve = |opts: &str, b: &[f64], shape: &str| {
        let text = format!(
            "HloModule m\nENTRY e {{\n  a = f64[2,2] parameter(0)\n  b = {shape} parameter(1)\n  ROOT x = {shape} triangular-solve(a, b), {opts}\n}}"
        );
        get_f64(&eval_root(&text, &[l.clone(), f64s(shape, b)]).unwrap())
    };
    // L x = [2, 9] -> x = [1, 2]
    assert_eq!(
        solve(
            "left_side=true, lower=true, transpose_a=NO_TRANSPOSE",
            &[2., 9.],
            "f64[2,1]"
        ),
        vec![1., 2.]
    );
    // L^T x = [4, 8] -> [[2,1],[0,4]] x: x1 = 2, x0 = (4 - 2)/2 = 1
    assert_eq!(
        solve(
            "left_side=true, lower=true, transpose_a=TRANSPOSE",
            &[4., 8.],
            "f64[2,1]"
        ),
        vec![1., 2.]
    );
    // x L = [4, 8] -> x1 = 2, x0 = (4 - 2)/2 = 1
    assert_eq!(
        solve(
            "left_side=false, lower=true, transpose_a=NO_TRANSPOSE",
            &[4., 8.],
            "f64[1,2]"
        ),
        vec![1., 2.]
    );
    // unit diagonal: [[1,0],[1,1]] x = [1, 3] -> [1, 2]
    assert_eq!(
        solve(
            "left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE",
            &[1., 3.],
            "f64[2,1]"
        ),
        vec![1., 2.]
    );
}

#[test]
fn adjoint_solve_conjugates() {
    // A = [[i, 0], [0, 1]] lower; A^H x = b with b = [1, 1] -> -i x0 = 1 -> x0 = i.
    let text = "HloModule m\nENTRY e {\n  a = c128[2,2] parameter(0)\n  b = c128[2,1] parameter(1)\n  ROOT x = c128[2,1] triangular-solve(a, b), left_side=true, lower=true, transpose_a=ADJOINT\n}";
    let a = arr(
        "c128[2,2]",
        ArrayData::C128(vec![[0., 1.], [0., 0.], [0., 0.], [1., 0.]]),
    );
    let b = arr("c128[2,1]", ArrayData::C128(vec![[1., 0.], [1., 0.]]));
    let r = eval_root(text, &[a, b]).unwrap();
    assert_eq!(
        r.as_array().unwrap().data(),
        &ArrayData::C128(vec![[0., 1.], [1., 0.]])
    );
}

fn potrf(ty: &str, dims: &str, batch_info: &str, a: Literal) -> Literal {
    let text = format!(
        "HloModule m\nENTRY e {{\n  a = {ty}[{dims}] parameter(0)\n  ROOT c = ({ty}[{dims}], s32[{batch_info}]) custom-call(a), custom_call_target=\"lapack_{}potrf_ffi\", backend_config={{uplo = 76 : ui8}}\n}}",
        if ty == "f64" { "d" } else { "s" }
    );
    eval_root(&text, &[a]).unwrap()
}

#[test]
fn potrf_matches_xla() {
    // f64[5,5]: JAX symmetrises, factors, and zeroes the upper triangle.
    let a = corpus_array("cholesky", "inputs.npz", "in0").f64s();
    let n = 5;
    let sym: Vec<f64> = (0..n * n)
        .map(|k| (a[k] + a[(k % n) * n + k / n]) / 2.0)
        .collect();
    let r = potrf("f64", "5,5", "", f64s("f64[5,5]", &sym));
    assert_eq!(get_s32(part(&r, 1)), vec![0]);
    let mut l = get_f64(part(&r, 0));
    for i in 0..n {
        for j in i + 1..n {
            l[i * n + j] = 0.0;
        }
    }
    let want = corpus_array("cholesky", "outputs.npz", "out0").f64s();
    assert!(max_rel(&l, &want) < 1e-13, "{l:?}\n{want:?}");

    // f32[3,4,4] batch.
    let a = corpus_array("cholesky", "inputs.npz", "in1").f32s();
    let sym: Vec<f32> = (0..a.len())
        .map(|k| {
            let (b, i, j) = (k / 16, (k / 4) % 4, k % 4);
            (a[k] + a[b * 16 + j * 4 + i]) / 2.0
        })
        .collect();
    let r = potrf("f32", "3,4,4", "3", f32s("f32[3,4,4]", &sym));
    let info = get_s32(part(&r, 1));
    let mut l: Vec<f64> = get_f32(part(&r, 0)).iter().map(|&x| f64::from(x)).collect();
    for (k, v) in l.iter_mut().enumerate() {
        let (b, i, j) = (k / 16, (k / 4) % 4, k % 4);
        if j > i {
            *v = 0.0;
        }
        if info[b] != 0 {
            *v = if j > i { 0.0 } else { f64::NAN };
        }
    }
    let want: Vec<f64> = corpus_array("cholesky", "outputs.npz", "out1")
        .f32s()
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    for (g, w) in l.iter().zip(&want) {
        assert!(
            (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{l:?}\n{want:?}"
        );
    }
}

fn trsm(config: &str, a: &[f32], b: &[f32], bshape: &str) -> Vec<f32> {
    let text = format!(
        "HloModule m\nENTRY e {{\n  a = f32[5,5] parameter(0)\n  b = {bshape} parameter(1)\n  ROOT x = {bshape} custom-call(a, b), custom_call_target=\"lapack_strsm_ffi\", backend_config={{{config}}}\n}}"
    );
    get_f32(&eval_root(&text, &[f32s("f32[5,5]", a), f32s(bshape, b)]).unwrap())
}

#[test]
fn trsm_matches_xla() {
    let l = corpus_array("triangular_solve", "inputs.npz", "in0").f32s();
    let b = corpus_array("triangular_solve", "inputs.npz", "in1").f32s();
    let lt: Vec<f32> = (0..25).map(|k| l[(k % 5) * 5 + k / 5]).collect();
    let close = |g: &[f32], w: &[f32]| {
        let scale = w.iter().fold(1e-30f32, |m, x| m.max(x.abs()));
        g.iter().zip(w).all(|(a, b)| (a - b).abs() <= 1e-5 * scale)
    };
    let x0 = trsm(
        "diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8",
        &l,
        &b,
        "f32[5,3]",
    );
    assert!(close(
        &x0,
        &corpus_array("triangular_solve", "outputs.npz", "out0").f32s()
    ));
    let x1 = trsm(
        "diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8",
        &lt,
        &b,
        "f32[5,3]",
    );
    assert!(close(
        &x1,
        &corpus_array("triangular_solve", "outputs.npz", "out1").f32s()
    ));
    let col: Vec<f32> = (0..5).map(|i| b[i * 3]).collect();
    let x2 = trsm(
        "diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8",
        &l,
        &col,
        "f32[5,1]",
    );
    assert!(close(
        &x2,
        &corpus_array("triangular_solve", "outputs.npz", "out2").f32s()
    ));
}

#[test]
fn getrf_and_trsm_solve_like_xla() {
    // jnp.linalg.solve: P A = L U, then L y = P b, U x = y.
    let a = corpus_array("linalg_solve", "inputs.npz", "in0").f64s();
    let b = corpus_array("linalg_solve", "inputs.npz", "in1").f64s();
    let text = "HloModule m\nENTRY e {\n  a = f64[4,4] parameter(0)\n  ROOT lu = (f64[4,4], s32[4], s32[]) custom-call(a), custom_call_target=\"lapack_dgetrf_ffi\", backend_config={}\n}";
    let r = eval_root(text, &[f64s("f64[4,4]", &a)]).unwrap();
    let lu = get_f64(part(&r, 0));
    let piv = get_s32(part(&r, 1));
    assert_eq!(get_s32(part(&r, 2)), vec![0]);
    let mut pb = b.clone();
    for (i, &p) in piv.iter().enumerate() {
        let p = (p - 1) as usize;
        for c in 0..2 {
            pb.swap(i * 2 + c, p * 2 + c);
        }
    }
    let solve = |cfg: &str, rhs: &[f64]| {
        let text = format!(
            "HloModule m\nENTRY e {{\n  a = f64[4,4] parameter(0)\n  b = f64[4,2] parameter(1)\n  ROOT x = f64[4,2] custom-call(a, b), custom_call_target=\"lapack_dtrsm_ffi\", backend_config={{{cfg}}}\n}}"
        );
        get_f64(&eval_root(&text, &[f64s("f64[4,4]", &lu), f64s("f64[4,2]", rhs)]).unwrap())
    };
    let y = solve(
        "diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8",
        &pb,
    );
    let x = solve(
        "diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8",
        &y,
    );
    let want = corpus_array("linalg_solve", "outputs.npz", "out0").f64s();
    assert!(max_rel(&x, &want) < 1e-12, "{x:?}\n{want:?}");
}

fn qr(text_ty: &str, m: usize, n: usize, a: Literal) -> (Literal, Literal) {
    let k = m.min(n);
    let (p, q) = match text_ty {
        "f32" => ("s", "sorgqr"),
        "f64" => ("d", "dorgqr"),
        "c128" => ("z", "zungqr"),
        _ => ("c", "cungqr"),
    };
    let geqrf = format!(
        "HloModule m\nENTRY e {{\n  a = {text_ty}[{m},{n}] parameter(0)\n  ROOT q = ({text_ty}[{m},{n}], {text_ty}[{k}]) custom-call(a), custom_call_target=\"lapack_{p}geqrf_ffi\"\n}}"
    );
    let r = eval_root(&geqrf, &[a]).unwrap();
    let orgqr = format!(
        "HloModule m\nENTRY e {{\n  a = {text_ty}[{m},{n}] parameter(0)\n  t = {text_ty}[{k}] parameter(1)\n  ROOT q = {text_ty}[{m},{n}] custom-call(a, t), custom_call_target=\"lapack_{q}_ffi\"\n}}"
    );
    let q = eval_root(&orgqr, &[part(&r, 0).clone(), part(&r, 1).clone()]).unwrap();
    (part(&r, 0).clone(), q)
}

#[test]
fn qr_matches_lapack_known_answer() {
    // jnp.linalg.qr(jnp.arange(9.).reshape(3, 3)) on CPU (LAPACK sgeqrf + sorgqr), from
    // JAX's back-compatibility test data.
    let a: Vec<f32> = (0..9).map(|i| i as f32).collect();
    let (r, q) = qr("f32", 3, 3, f32s("f32[3,3]", &a));
    let want_q = [
        0.,
        0.912_870_76,
        0.408_248_7,
        -0.447_213_56,
        0.365_148_66,
        -0.816_496_5,
        -0.894_427_1,
        -0.182_574_45,
        0.408_248_16,
    ];
    let want_r = [
        -6.708_204_3,
        -8.049_844,
        -9.391_485,
        0.,
        1.095_444_1,
        2.190_889_4,
        0.,
        0.,
        7.152_557_4e-7,
    ];
    let q = get_f32(&q);
    let r = get_f32(&r);
    for i in 0..9 {
        assert!((q[i] - want_q[i]).abs() < 1e-5, "q {q:?}");
        if i % 3 >= i / 3 {
            assert!((r[i] - want_r[i]).abs() < 1e-5, "r {r:?}");
        }
    }
}

/// `Q R = A` and `Q^H Q = I` for random real and complex matrices, tall and wide.
fn qr_reconstructs(vals: Vec<i8>, wide: bool, complex: bool) -> bool {
    let (m, n) = if wide { (3, 4) } else { (4, 3) };
    let k = m.min(n);
    let v = |i: usize| {
        vals.get(i)
            .map_or(((i * 5) % 7) as f64 - 3.0, |&x| f64::from(x) / 16.0)
    };
    let a: Vec<[f64; 2]> = (0..m * n)
        .map(|i| [v(2 * i), if complex { v(2 * i + 1) } else { 0.0 }])
        .collect();
    let lit = arr(&format!("c128[{m},{n}]"), ArrayData::C128(a.clone()));
    let (r, q) = qr("c128", m, n, lit);
    let get = |l: &Literal| match l.as_array().unwrap().data() {
        ArrayData::C128(v) => v.clone(),
        d => panic!("{d:?}"),
    };
    let (r, q) = (get(&r), get(&q));
    // Q is m x n with k meaningful columns; R is the k x n upper trapezoid.
    let mul = |x: [f64; 2], y: [f64; 2]| [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]];
    let mut ok = true;
    for i in 0..m {
        for j in 0..n {
            let mut s = [0.0, 0.0];
            for l in 0..k.min(j + 1) {
                let p = mul(q[i * n + l], r[l * n + j]);
                s = [s[0] + p[0], s[1] + p[1]];
            }
            let d = a[i * n + j];
            ok &= (s[0] - d[0]).abs() < 1e-9 && (s[1] - d[1]).abs() < 1e-9;
        }
    }
    for c1 in 0..k {
        for c2 in 0..k {
            let mut s = [0.0, 0.0];
            for i in 0..m {
                let x = q[i * n + c1];
                let p = mul([x[0], -x[1]], q[i * n + c2]);
                s = [s[0] + p[0], s[1] + p[1]];
            }
            let want = if c1 == c2 { 1.0 } else { 0.0 };
            ok &= (s[0] - want).abs() < 1e-9 && s[1].abs() < 1e-9;
        }
    }
    ok
}

#[test]
fn random_qr_reconstructs_the_matrix() {
    quickcheck::QuickCheck::new()
        .tests(100)
        .quickcheck(qr_reconstructs as fn(Vec<i8>, bool, bool) -> bool);
}
