//! Selects whose two arms are both computed (the C backend blends them with a bit mask
//! instead of branching, so loops with a transcendental arm vectorize) against the
//! reference evaluator: arms that are NaN, infinite or a transcendental outside its domain
//! where the other arm is chosen, integer division, remainder and shifts by zero, by
//! `-1` and past the width in the arm not chosen, and every element width, at sizes
//! printed with vector math and with libm.

use std::path::Path;

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::CompileOptions;

fn options() -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-select-arms")),
        ..CompileOptions::default()
    }
}

fn lit(ty: ElementType, data: ArrayData) -> Literal {
    let n = data.len() as i64;
    Literal::Array(ArrayLiteral::new(Shape::array(ty, vec![n]), data).expect("literal"))
}

/// Each element's bits (floats as their bit patterns, NaN as one value).
pub fn element_bits(d: &ArrayData) -> Vec<Option<u64>> {
    let f32b = |x: f32| (!x.is_nan()).then_some(u64::from(x.to_bits()));
    let f64b = |x: f64| (!x.is_nan()).then_some(x.to_bits());
    match d {
        ArrayData::Pred(v) => v.iter().map(|&x| Some(u64::from(x))).collect(),
        ArrayData::S8(v) => v.iter().map(|&x| Some(x as u64)).collect(),
        ArrayData::S16(v) => v.iter().map(|&x| Some(x as u64)).collect(),
        ArrayData::S32(v) => v.iter().map(|&x| Some(x as u64)).collect(),
        ArrayData::S64(v) => v.iter().map(|&x| Some(x as u64)).collect(),
        ArrayData::U8(v) => v.iter().map(|&x| Some(u64::from(x))).collect(),
        ArrayData::U16(v) => v.iter().map(|&x| Some(u64::from(x))).collect(),
        ArrayData::U32(v) => v.iter().map(|&x| Some(u64::from(x))).collect(),
        ArrayData::U64(v) => v.iter().map(|&x| Some(x)).collect(),
        // f16, bf16 and f8 as their patterns (NaN told apart by `half_is_nan`).
        ArrayData::Bits16(v) => v.iter().map(|&x| Some(u64::from(x))).collect(),
        ArrayData::Bits8(v) => v.iter().map(|&x| Some(u64::from(x))).collect(),
        ArrayData::F32(v) => v.iter().map(|&x| f32b(x)).collect(),
        ArrayData::F64(v) => v.iter().map(|&x| f64b(x)).collect(),
        ArrayData::C64(_) | ArrayData::C128(_) => {
            panic!("complex outputs are not compared bit for bit here")
        }
    }
}

/// Whether 16-bit pattern `b` of float type `ty` is a NaN.
pub fn half_is_nan(ty: ElementType, b: u64) -> bool {
    match ty {
        ElementType::F16 => b & 0x7c00 == 0x7c00 && b & 0x03ff != 0,
        ElementType::BF16 => b & 0x7f80 == 0x7f80 && b & 0x007f != 0,
        _ => false,
    }
}

/// Compiles `text`, runs it on `args`; every output must match the evaluator within its
/// tolerance, and outputs `exact` bit for bit (any NaN equal to any NaN). Returns the
/// compiled outputs.
pub fn check(text: &str, args: &[Literal], exact: &[usize], cache: CompileOptions) -> Vec<Literal> {
    let m = hlo::parse_module(text).expect("parse");
    let exe = runtime::compile(&m, &cache).expect("compile");
    let outs = exe.run(args).expect("run");
    if let Err(e) = runtime::check_reference(&m, args, &outs) {
        panic!("{e}\n{text}\n{}", exe.plan().source);
    }
    let want = hlo_eval::evaluate(&m, args).expect("evaluate");
    let want: Vec<Literal> = match want {
        Literal::Tuple(t) => t,
        one => vec![one],
    };
    for &i in exact {
        let (g, w) = (
            outs[i].as_array().expect("array"),
            want[i].as_array().expect("array"),
        );
        let ty = g.element_type();
        let nan = |b: Option<u64>| b.is_none_or(|b| half_is_nan(ty, b));
        let (gb, wb) = (element_bits(g.data()), element_bits(w.data()));
        for (k, (x, y)) in gb.iter().zip(&wb).enumerate() {
            assert!(
                x == y || (nan(*x) && nan(*y)),
                "out{i} element {k}: got {x:x?}, evaluator {y:x?}\n{text}\n{}",
                exe.plan().source
            );
        }
    }
    outs
}

/// A deterministic stream of 64-bit values (SplitMix64).
pub struct Stream(u64);

impl Stream {
    pub fn new(seed: u64) -> Stream {
        Stream(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A float in [-r, r].
    pub fn f64_in(&mut self, r: f64) -> f64 {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * r
    }
}

/// `n` floats in [-8, 8] with edge values (NaN with a payload, ±inf, ±0, -1, subnormals)
/// at fixed positions.
fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut s = Stream::new(seed);
    let edges = [
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffa0_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        -1.0,
        -2.0,
        1e-40,
        -1e-40,
    ];
    (0..n)
        .map(|k| {
            if k % 7 == 3 {
                edges[(k / 7) % edges.len()]
            } else {
                s.f64_in(8.0) as f32
            }
        })
        .collect()
}

/// `jnp.where(b > 0, log1p(|b|), a)`, `where(x >= 0, sqrt(x), 0)`, `where(x > 0, log(x),
/// x)` and `where(isfinite(x), expm1(x), y)`: where the plain arm is chosen it comes
/// back bit for bit (NaN payloads included), whatever the other arm computed.
#[test]
fn float_selects_with_transcendental_and_nan_arms() {
    let text = |n: usize| {
        format!(
            r#"HloModule m
ENTRY e {{
  a = f32[{n}] parameter(0)
  b = f32[{n}] parameter(1)
  z = f32[] constant(0)
  zb = f32[{n}] broadcast(z), dimensions={{}}
  gt = pred[{n}] compare(b, zb), direction=GT
  ab = f32[{n}] abs(b)
  l1 = f32[{n}] log-plus-one(ab)
  w1 = f32[{n}] select(gt, l1, a)
  ge = pred[{n}] compare(b, zb), direction=GE
  sq = f32[{n}] sqrt(b)
  w2 = f32[{n}] select(ge, sq, zb)
  lg = f32[{n}] log(b)
  w3 = f32[{n}] select(gt, lg, b)
  fin = pred[{n}] is-finite(b)
  em = f32[{n}] exponential-minus-one(b)
  w4 = f32[{n}] select(fin, em, a)
  ROOT t = (f32[{n}], f32[{n}], f32[{n}], f32[{n}]) tuple(w1, w2, w3, w4)
}}"#
        )
    };
    for n in [40, 1 << 16] {
        let (a, b) = (floats(n, 1), floats(n, 2));
        let args = [
            lit(ElementType::F32, ArrayData::F32(a.clone())),
            lit(ElementType::F32, ArrayData::F32(b.clone())),
        ];
        let outs = check(&text(n), &args, &[], options());
        let out = |i: usize| match outs[i].as_array().expect("array").data() {
            ArrayData::F32(v) => v.clone(),
            d => panic!("{d:?}"),
        };
        let (w1, w2, w3, w4) = (out(0), out(1), out(2), out(3));
        for k in 0..n {
            let bits = |x: f32| x.to_bits();
            let (positive, non_negative) = (b[k] > 0.0, b[k] >= 0.0);
            if !positive {
                assert_eq!(bits(w1[k]), bits(a[k]), "w1[{k}] b={}", b[k]);
                assert_eq!(bits(w3[k]), bits(b[k]), "w3[{k}] b={}", b[k]);
            }
            if !non_negative {
                assert_eq!(bits(w2[k]), 0, "w2[{k}] b={}", b[k]);
            }
            if !b[k].is_finite() {
                assert_eq!(bits(w4[k]), bits(a[k]), "w4[{k}] b={}", b[k]);
            }
        }
    }
}

/// Integer arms that divide by zero, overflow `MIN / -1` or shift past the width where
/// the other arm is chosen: HLO defines them (x/0 = -1, x%0 = x, MIN/-1 = MIN), so
/// computing both arms neither traps nor changes the chosen one; bit for bit.
#[test]
fn integer_selects_with_division_and_shift_arms() {
    for (ty, n) in [
        ("s32", 24usize),
        ("s32", 1 << 15),
        ("s64", 1 << 15),
        ("s8", 1 << 15),
        ("u16", 1 << 15),
    ] {
        let text = format!(
            r#"HloModule m
ENTRY e {{
  a = {ty}[{n}] parameter(0)
  b = {ty}[{n}] parameter(1)
  z = {ty}[] constant(0)
  zb = {ty}[{n}] broadcast(z), dimensions={{}}
  nz = pred[{n}] compare(b, zb), direction=NE
  d = {ty}[{n}] divide(a, b)
  w1 = {ty}[{n}] select(nz, d, a)
  r = {ty}[{n}] remainder(a, b)
  w2 = {ty}[{n}] select(nz, r, b)
  sh = {ty}[{n}] shift-left(a, b)
  lt = pred[{n}] compare(a, b), direction=LT
  w3 = {ty}[{n}] select(lt, sh, d)
  ROOT t = ({ty}[{n}], {ty}[{n}], {ty}[{n}]) tuple(w1, w2, w3)
}}"#
        );
        let mut s = Stream::new(n as u64);
        let ety = match ty {
            "s32" => ElementType::S32,
            "s64" => ElementType::S64,
            "s8" => ElementType::S8,
            _ => ElementType::U16,
        };
        let min = match ty {
            "s32" => i64::from(i32::MIN),
            "s8" => i64::from(i8::MIN),
            "s64" => i64::MIN,
            _ => 0,
        };
        let a: Vec<i64> = (0..n)
            .map(|k| match k % 5 {
                0 => min,
                _ => (s.next() % 2001) as i64 - 1000,
            })
            .collect();
        let b: Vec<i64> = (0..n)
            .map(|k| match k % 4 {
                0 => 0,
                1 => -1,
                2 => 70,
                _ => (s.next() % 41) as i64 - 20,
            })
            .collect();
        let args = [lit(ety, int_data(ety, a)), lit(ety, int_data(ety, b))];
        check(&text, &args, &[0, 1, 2], options());
    }
}

/// `v` as the data of integer type `ty` (wrapping).
fn int_data(ty: ElementType, v: Vec<i64>) -> ArrayData {
    match ty {
        ElementType::S8 => ArrayData::S8(v.into_iter().map(|x| x as i8).collect()),
        ElementType::S32 => ArrayData::S32(v.into_iter().map(|x| x as i32).collect()),
        ElementType::U16 => ArrayData::U16(v.into_iter().map(|x| x as u16).collect()),
        _ => ArrayData::S64(v),
    }
}

/// Selects of every other element width (pred, f16, bf16, f64, u8, u64) with NaN
/// payloads, ±0 and infinities in both arms: bit for bit.
#[test]
fn selects_of_every_width_keep_the_chosen_bits() {
    let n = 1usize << 15;
    let text = format!(
        r#"HloModule m
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  p = pred[{n}] compare(x, y), direction=LT
  q = pred[{n}] compare(y, x), direction=GE
  wp = pred[{n}] select(p, q, p)
  hx = f16[{n}] convert(x)
  hy = f16[{n}] convert(y)
  hn = f16[{n}] negate(hx)
  wh = f16[{n}] select(p, hn, hy)
  bx = bf16[{n}] convert(x)
  by = bf16[{n}] convert(y)
  be = bf16[{n}] exponential(bx)
  wb = bf16[{n}] select(q, by, be)
  dx = f64[{n}] convert(x)
  dy = f64[{n}] convert(y)
  dl = f64[{n}] log(dx)
  wd = f64[{n}] select(p, dl, dy)
  ux = u8[{n}] convert(x)
  uy = u8[{n}] convert(y)
  wu = u8[{n}] select(p, ux, uy)
  lx = u64[{n}] convert(x)
  ly = u64[{n}] convert(y)
  wl = u64[{n}] select(q, lx, ly)
  ROOT t = (pred[{n}], f16[{n}], bf16[{n}], f64[{n}], u8[{n}], u64[{n}]) tuple(wp, wh, wb, wd, wu, wl)
}}"#
    );
    let args = [
        lit(ElementType::F32, ArrayData::F32(floats(n, 3))),
        lit(ElementType::F32, ArrayData::F32(floats(n, 4))),
    ];
    check(&text, &args, &[0, 1, 4, 5], options());
}
