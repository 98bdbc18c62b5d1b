//! sin, cos and tan on arrays mixing ordinary arguments with arguments of 2^30 and more
//! (which need Payne-Hanek reduction), infinities and NaN, against the reference
//! evaluator element by element. The compiled vector entries reduce a vector by
//! Cody-Waite alone unless one of its lanes is huge, so a huge lane in a vector of small
//! ones, a vector of huge lanes only, the remainder lanes past the last full vector and
//! the operations fused before and after the call must all come out right. Sizes printed
//! with the vector functions (2^16 + 7 elements: a remainder) and with libm (40).

use std::path::Path;

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::CompileOptions;

use crate::select_arms::Stream;

fn options() -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-trig-huge")),
        ..CompileOptions::default()
    }
}

/// `sin(x c)`, `cos(x) c` and `tan(x)` for x and c of type `ty` (c powers of two, so
/// that the products are exact and the evaluator sees the same arguments).
fn module(ty: &str, n: usize) -> String {
    format!(
        r#"HloModule trig_huge
ENTRY e {{
  x = {ty}[{n}] parameter(0)
  c = {ty}[{n}] parameter(1)
  xc = {ty}[{n}] multiply(x, c)
  s = {ty}[{n}] sine(xc)
  k = {ty}[{n}] cosine(x)
  kc = {ty}[{n}] multiply(k, c)
  t = {ty}[{n}] tan(x)
  ROOT r = ({ty}[{n}], {ty}[{n}], {ty}[{n}]) tuple(s, kc, t)
}}"#
    )
}

/// `n` arguments: every 37th huge (2^30 to 2^max_exp, random sign), a run of 64 huge ones
/// (whole vectors), edge values at fixed places (2^30 and the largest value below it,
/// the largest finite value, +-inf, NaN), the rest uniform in [-20, 20] or, every 11th,
/// in [-2^29, 2^29].
fn arguments(n: usize, max_exp: i32, below_2_30: f64, largest: f64, seed: u64) -> Vec<f64> {
    let mut s = Stream::new(seed);
    let edges = [
        2f64.powi(30),
        below_2_30,
        -2f64.powi(30),
        largest,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e22,
    ];
    (0..n)
        .map(|k| {
            if k % 101 == 50 {
                edges[(k / 101) % edges.len()]
            } else if k % 37 == 5 || (1000..1064).contains(&k) {
                let e = 30 + (s.next() % (max_exp - 30) as u64) as i32;
                let m = 1.0 + s.f64_in(1.0).abs();
                let sign = if s.next() & 1 == 0 { 1.0 } else { -1.0 };
                sign * m * 2f64.powi(e)
            } else if k % 11 == 3 {
                s.f64_in(2f64.powi(29))
            } else {
                s.f64_in(20.0)
            }
        })
        .collect()
}

/// |got - want| in units in the last place of `want` (`mantissa` bits, smallest normal
/// exponent `min_exp`); NaN against NaN is 0, infinities must be equal.
fn ulps(got: f64, want: f64, mantissa: i32, min_exp: i32) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got == want {
        return 0.0;
    }
    if want.is_infinite() || got.is_infinite() {
        return f64::INFINITY;
    }
    let e = if want == 0.0 {
        min_exp
    } else {
        (want.abs().log2().floor() as i32).max(min_exp)
    };
    (got - want).abs() / 2f64.powi(e - mantissa)
}

fn values(l: &Literal) -> Vec<f64> {
    match l.as_array().expect("array").data() {
        ArrayData::F64(v) => v.clone(),
        ArrayData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        d => panic!("unexpected output {d:?}"),
    }
}

/// Compiles and runs `sin`/`cos`/`tan` of type `ty` on [`arguments`], every output element
/// within `bound` ulps of the evaluator's.
fn check(ty: ElementType, n: usize, bound: f64) {
    let (name, max_exp, below, largest, mantissa, min_exp) = if ty == ElementType::F64 {
        (
            "f64",
            1023,
            2f64.powi(30) - 2f64.powi(-23),
            f64::MAX,
            52,
            -1022,
        )
    } else {
        let below = f64::from(f32::from_bits(2f32.powi(30).to_bits() - 1));
        ("f32", 127, below, f64::from(f32::MAX), 23, -126)
    };
    let x = arguments(n, max_exp, below, largest, 7);
    let c: Vec<f64> = (0..n).map(|k| 2f64.powi((k % 5) as i32 - 2)).collect();
    let lit = |v: &[f64]| {
        let data = if ty == ElementType::F64 {
            ArrayData::F64(v.to_vec())
        } else {
            ArrayData::F32(v.iter().map(|&a| a as f32).collect())
        };
        Literal::Array(ArrayLiteral::new(Shape::array(ty, vec![n as i64]), data).expect("literal"))
    };
    let args = [lit(&x), lit(&c)];
    let text = module(name, n);
    let m = hlo::parse_module(&text).expect("parse");
    let exe = runtime::compile(&m, &options()).expect("compile");
    let got = exe.run(&args).expect("run");
    let want = match hlo_eval::evaluate(&m, &args).expect("evaluate") {
        Literal::Tuple(t) => t,
        one => vec![one],
    };
    let xs = values(&args[0]);
    for (i, what) in ["sin(x c)", "cos(x) c", "tan(x)"].iter().enumerate() {
        let (g, w) = (values(&got[i]), values(&want[i]));
        let mut worst = (0.0, 0);
        for k in 0..n {
            let u = ulps(g[k], w[k], mantissa, min_exp);
            if u > worst.0 {
                worst = (u, k);
            }
        }
        let k = worst.1;
        assert!(
            worst.0 <= bound,
            "{name}[{n}] {what}: {} ulps at element {k} (x = {:e}, c = {}): got {:e}, \
             evaluator {:e}\n{}",
            worst.0,
            xs[k],
            c[k],
            g[k],
            w[k],
            exe.plan().source
        );
    }
}

/// f64: the functions' documented bounds are 1.5 ulps (sin, cos) and 2 (tan) from the
/// correctly rounded result; the evaluator's libm adds under one.
#[test]
fn f64_sin_cos_tan_of_mixed_huge_arguments_match_the_evaluator() {
    for n in [40, (1 << 16) + 7] {
        check(ElementType::F64, n, 3.0);
    }
}

/// f32: bounds of 1 ulp, the evaluator's under one.
#[test]
fn f32_sin_cos_tan_of_mixed_huge_arguments_match_the_evaluator() {
    for n in [40, (1 << 16) + 7] {
        check(ElementType::F32, n, 2.0);
    }
}
