//! Differential tests of the LAPACK custom calls JAX emits for Cholesky, triangular
//! solves and LU (`lapack_?potrf_ffi`, `lapack_?trsm_ffi`, `lapack_?getrf_ffi`): random
//! orders (1 to 300), batches, layouts of every operand and result, f32 and f64, both
//! triangles, both sides, transposed or not, unit diagonal or not, an `alpha` operand,
//! rectangular LU, and the result written over its operand (`output_to_operand_aliasing`,
//! the in-place path) or not; some Cholesky batches hold a matrix that is not positive
//! definite (`info` and the partly factored matrix, as LAPACK's `potf2` leaves it).
//! Compiled for the CPU and compared with the reference evaluator.
//!
//! The matrices are well conditioned by construction (diagonally dominant; LU's rows
//! permuted so that partial pivoting has clear choices), so f32 results agree with the
//! evaluator's f64 ones at f32's tolerance, and pivots agree exactly.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};

use crate::gen::{self, list, Rng};

/// A uniform value of `[-1, 1)`.
fn unit(rng: &mut Rng) -> f64 {
    rng.below(1 << 20) as f64 / (1 << 19) as f64 - 1.0
}

/// A literal of `ty` (f32 or f64) with `dims` and row-major `values`.
fn literal(ty: &str, dims: &[usize], values: Vec<f64>) -> Literal {
    let (et, data) = if ty == "f32" {
        let v = values.iter().map(|&x| x as f32).collect();
        (ElementType::F32, ArrayData::F32(v))
    } else {
        (ElementType::F64, ArrayData::F64(values))
    };
    let dims = dims.iter().map(|&d| d as i64).collect();
    Literal::Array(ArrayLiteral::new(Shape::array(et, dims), data).expect("literal"))
}

/// The order of a matrix: mostly small, sometimes up to 300.
fn order(rng: &mut Rng) -> usize {
    if rng.below(4) == 0 {
        rng.range(25, 300) as usize
    } else {
        rng.range(1, 24) as usize
    }
}

/// A random layout of `dims` as HLO shape text.
fn shape(rng: &mut Rng, ty: &str, dims: &[usize]) -> String {
    gen::shape(rng, ty, &dims.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// `count` matrices `rows x cols` (row-major, one after the other), halved: the module
/// doubles its parameters, so that the operands are computed buffers the plan may
/// share with the result. Diagonal `diag + |u|` (for `i < min`), elsewhere `u / size`.
fn dominant(rng: &mut Rng, count: usize, rows: usize, cols: usize, diag: f64) -> Vec<f64> {
    let size = rows.max(cols) as f64;
    let mut v = Vec::with_capacity(count * rows * cols);
    for _ in 0..count {
        for i in 0..rows {
            for j in 0..cols {
                let u = unit(rng);
                v.push(0.5 * if i == j { diag + u.abs() } else { u / size });
            }
        }
    }
    v
}

/// One random module and its arguments: `potrf`, `trsm` or `getrf` by the seed.
fn case(seed: u64) -> (String, Vec<Literal>) {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64"]);
    let p = if ty == "f32" { 's' } else { 'd' };
    let batch: Vec<usize> = (0..rng.below(3))
        .map(|_| rng.range(1, 3) as usize)
        .collect();
    let count: usize = batch.iter().product();
    let with = |m: &[usize]| -> Vec<usize> { batch.iter().chain(m).copied().collect() };
    let alias = rng.below(3) != 0;
    let mut args = Vec::new();
    let mut body = Vec::new();
    match seed % 3 {
        0 => {
            let n = order(&mut rng);
            let dims = with(&[n, n]);
            let mut v = dominant(&mut rng, count, n, n, 2.0);
            // Sometimes one matrix is not positive definite at a random column.
            if count * n > 0 && rng.below(3) == 0 {
                let (b, k) = (rng.below(count), rng.below(n));
                v[b * n * n + k * n + k] = -0.5;
            }
            let a = shape(&mut rng, ty, &dims);
            let out = if alias {
                a.clone()
            } else {
                shape(&mut rng, ty, &dims)
            };
            let info = format!("s32[{}]", list(&batch));
            let uplo = *rng.pick(&[76, 85]);
            let aliasing = if alias {
                ", output_to_operand_aliasing={{0}: (0, {})}"
            } else {
                ""
            };
            args.push(literal(ty, &dims, v));
            body.push(format!("  a = {a} parameter(0)"));
            body.push(format!("  a2 = {a} add(a, a)"));
            body.push(format!(
                "  r = ({out}, {info}) custom-call(a2), custom_call_target=\"lapack_{p}potrf_ffi\"{aliasing}, backend_config={{uplo = {uplo} : ui8}}"
            ));
            body.push(format!("  f = {out} get-tuple-element(r), index=0"));
            body.push(format!("  i = {info} get-tuple-element(r), index=1"));
            body.push(format!("  ROOT t = ({out}, {info}) tuple(f, i)"));
        }
        1 => {
            let left = rng.below(2) == 0;
            let k = order(&mut rng);
            let other = rng.range(1, 40) as usize;
            let (rows, cols) = if left { (k, other) } else { (other, k) };
            let adims = with(&[k, k]);
            let bdims = with(&[rows, cols]);
            let a = shape(&mut rng, ty, &adims);
            let b = shape(&mut rng, ty, &bdims);
            let out = if alias {
                b.clone()
            } else {
                shape(&mut rng, ty, &bdims)
            };
            let side = if left { 76 } else { 82 };
            let uplo = *rng.pick(&[76, 85]);
            let trans = *rng.pick(&[78, 84, 67]);
            let diag = *rng.pick(&[78, 85]);
            let alpha = rng.below(4) == 0;
            let aliasing = if alias {
                ", output_to_operand_aliasing={{}: (1, {})}"
            } else {
                ""
            };
            let bv: Vec<f64> = (0..count * rows * cols).map(|_| unit(&mut rng)).collect();
            args.push(literal(ty, &adims, dominant(&mut rng, count, k, k, 2.0)));
            args.push(literal(ty, &bdims, bv));
            body.push(format!("  a = {a} parameter(0)"));
            body.push(format!("  b = {b} parameter(1)"));
            body.push(format!("  a2 = {a} add(a, a)"));
            body.push(format!("  b2 = {b} add(b, b)"));
            let operands = if alpha {
                body.push(format!("  s = {ty}[] constant(-0.75)"));
                "a2, b2, s"
            } else {
                "a2, b2"
            };
            body.push(format!(
                "  ROOT x = {out} custom-call({operands}), custom_call_target=\"lapack_{p}trsm_ffi\"{aliasing}, backend_config={{diag = {diag} : ui8, side = {side} : ui8, trans_x = {trans} : ui8, uplo = {uplo} : ui8}}"
            ));
        }
        _ => {
            let m = order(&mut rng);
            let n = if rng.below(3) == 0 {
                rng.range(1, m as i64 + 8) as usize
            } else {
                m
            };
            let kmin = m.min(n);
            let dims = with(&[m, n]);
            // Rows permuted per matrix: each column's pivot is the row its large entry
            // went to.
            let d = dominant(&mut rng, count, m, n, 4.0);
            let mut v = Vec::with_capacity(d.len());
            for b in 0..count {
                let mut perm: Vec<usize> = (0..m).collect();
                rng.shuffle(&mut perm);
                for &r in &perm {
                    v.extend_from_slice(&d[(b * m + r) * n..(b * m + r + 1) * n]);
                }
            }
            let a = shape(&mut rng, ty, &dims);
            let out = if alias {
                a.clone()
            } else {
                shape(&mut rng, ty, &dims)
            };
            let piv = format!("s32[{}]", list(&with(&[kmin])));
            let info = format!("s32[{}]", list(&batch));
            let aliasing = if alias {
                ", output_to_operand_aliasing={{0}: (0, {})}"
            } else {
                ""
            };
            args.push(literal(ty, &dims, v));
            body.push(format!("  a = {a} parameter(0)"));
            body.push(format!("  a2 = {a} add(a, a)"));
            body.push(format!(
                "  ROOT r = ({out}, {piv}, {info}) custom-call(a2), custom_call_target=\"lapack_{p}getrf_ffi\"{aliasing}"
            ));
        }
    }
    let text = format!("HloModule linalg\nENTRY e {{\n{}\n}}\n", body.join("\n"));
    (text, args)
}

#[test]
fn lapack_potrf_trsm_getrf_match_the_evaluator() {
    let options = gen::options("hloc-cache-linalg");
    let mut failures = Vec::new();
    for seed in gen::seeds(0..30) {
        let (text, args) = case(seed);
        let m = gen::parse(seed, &text);
        let calls = gen::check(seed, (&m, &text), &args, &options, &mut failures);
        assert!(
            calls > 0 || !failures.is_empty(),
            "seed {seed}: no library call\n{text}"
        );
    }
    gen::assert_none(&failures);
}
