//! Reductions of 16-bit floats against the reference evaluator, bit for bit: a `bf16` or
//! `f16` max or min runs in `f32` partial accumulators (every step of a max returns one of
//! its operands, so rounding once gives HLO's per-step result), a sum accumulates in order
//! rounding every step; rows with NaN, ±0 and infinities, rows shorter and longer than the
//! partial accumulators, a column reduction, and the masked softmax of flax attention in
//! `bf16` (its row max over a select).

use std::path::Path;

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::CompileOptions;

use super::select_arms::{check, Stream};

fn options() -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-half-reductions")),
        ..CompileOptions::default()
    }
}

/// The bit patterns of `f16` or `bf16` special values: (+0, -0, +inf, -inf, NaN, largest
/// finite), and the exponent field's shift and the finite exponents drawn from.
fn layout(ty: ElementType) -> ([u16; 6], u32, std::ops::RangeInclusive<u64>) {
    if ty == ElementType::F16 {
        ([0, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0x7bff], 10, 1..=30)
    } else {
        ([0, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x7f7f], 7, 100..=150)
    }
}

/// A `rows x cols` matrix of half values: random finite ones, with row `r % 8` = 5
/// holding one NaN, = 6 only zeros of both signs, = 7 only -inf, = 4 +inf and the largest
/// finite values.
fn halves(ty: ElementType, rows: usize, cols: usize, seed: u64) -> Vec<u16> {
    let (sp, shift, exps) = layout(ty);
    let mut s = Stream::new(seed);
    let span = exps.end() - exps.start() + 1;
    let mut v = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            let sign = (s.next() & 1) << 15;
            let e = exps.start() + s.next() % span;
            let m = s.next() & ((1 << shift) - 1);
            let x = (sign | e << shift | m) as u16;
            v.push(match r % 8 {
                5 if c == (r * 37) % cols => sp[4],
                6 => sp[c % 2],
                7 => sp[3],
                4 if c % 5 == 0 => sp[2 + (c % 2)],
                4 if c % 5 == 1 => sp[5],
                _ => x,
            });
        }
    }
    v
}

const REDUCERS: &str = r#"
max {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] maximum(a, b)
}
min {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] minimum(a, b)
}
sum {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] add(a, b)
}
"#;

/// Row max (init -inf), min (init +inf) and sum (init 0) of `TY[rows, cols]`, a column max,
/// and a max with a finite init: all bit for bit.
#[test]
fn half_max_min_and_sum_match_the_evaluator_bit_for_bit() {
    for ty in [ElementType::BF16, ElementType::F16] {
        let t = if ty == ElementType::F16 {
            "f16"
        } else {
            "bf16"
        };
        // 256: four chunks of 64 lanes; 300: a tail; 130: two chunks and a tail of two;
        // 100: one chunk (in order).
        for (rows, cols) in [(16usize, 256usize), (9, 300), (8, 130), (8, 100)] {
            let text = format!(
                r#"HloModule m
{}
ENTRY e {{
  p = {t}[{rows},{cols}] parameter(0)
  ninf = {t}[] constant(-inf)
  pinf = {t}[] constant(inf)
  zero = {t}[] constant(0)
  one = {t}[] constant(1.5)
  mx = {t}[{rows}] reduce(p, ninf), dimensions={{1}}, to_apply=max
  mn = {t}[{rows}] reduce(p, pinf), dimensions={{1}}, to_apply=min
  sm = {t}[{rows}] reduce(p, zero), dimensions={{1}}, to_apply=sum
  cm = {t}[{cols}] reduce(p, ninf), dimensions={{0}}, to_apply=max
  m1 = {t}[{rows}] reduce(p, one), dimensions={{1}}, to_apply=max
  ROOT r = ({t}[{rows}], {t}[{rows}], {t}[{rows}], {t}[{cols}], {t}[{rows}]) tuple(mx, mn, sm, cm, m1)
}}"#,
                REDUCERS.replace("TY", t)
            );
            let data = halves(ty, rows, cols, (rows * cols) as u64);
            let arg = Literal::Array(
                ArrayLiteral::new(
                    Shape::array(ty, vec![rows as i64, cols as i64]),
                    ArrayData::Bits16(data),
                )
                .expect("literal"),
            );
            check(&text, &[arg], &[0, 1, 2, 3, 4], options());
        }
    }
}

/// Flax attention's softmax in `bf16` over `[2, 2, 64, 256]` (f32 scores rounded to bf16,
/// a causal-mask select, the row max, exp, an f32 row sum, the division): the masked row
/// max bit for bit, the softmax within the evaluator's tolerance.
#[test]
fn bf16_masked_softmax_matches_the_evaluator() {
    let text = r#"HloModule m
max {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = bf16[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  s = f32[2,2,64,256] parameter(0)
  m = pred[2,64,256] parameter(1)
  mb = pred[2,2,64,256] broadcast(m), dimensions={0,2,3}
  sb = bf16[2,2,64,256] convert(s)
  big = bf16[] constant(-3.39e+38)
  bigb = bf16[2,2,64,256] broadcast(big), dimensions={}
  w = bf16[2,2,64,256] select(mb, sb, bigb)
  ninf = bf16[] constant(-inf)
  mx = bf16[2,2,64] reduce(w, ninf), dimensions={3}, to_apply=max
  mxb = bf16[2,2,64,256] broadcast(mx), dimensions={0,1,2}
  d = bf16[2,2,64,256] subtract(w, mxb)
  x = bf16[2,2,64,256] exponential(d)
  xf = f32[2,2,64,256] convert(x)
  z = f32[] constant(0)
  sum = f32[2,2,64] reduce(xf, z), dimensions={3}, to_apply=add
  sumh = bf16[2,2,64] convert(sum)
  sumb = bf16[2,2,64,256] broadcast(sumh), dimensions={0,1,2}
  y = bf16[2,2,64,256] divide(x, sumb)
  ROOT r = (bf16[2,2,64], bf16[2,2,64,256]) tuple(mx, y)
}"#;
    let mut s = Stream::new(7);
    let scores: Vec<f32> = (0..2 * 2 * 64 * 256)
        .map(|_| s.f64_in(30.0) as f32)
        .collect();
    // Causal mask, and one row masked out entirely.
    let mask: Vec<bool> = (0..2 * 64 * 256)
        .map(|k| {
            let (q, kv) = ((k / 256) % 64, k % 256);
            q != 9 && kv <= q * 4
        })
        .collect();
    let args = [
        Literal::Array(
            ArrayLiteral::new(
                Shape::array(ElementType::F32, vec![2, 2, 64, 256]),
                ArrayData::F32(scores),
            )
            .expect("literal"),
        ),
        Literal::Array(
            ArrayLiteral::new(
                Shape::array(ElementType::Pred, vec![2, 64, 256]),
                ArrayData::Pred(mask),
            )
            .expect("literal"),
        ),
    ];
    check(text, &args, &[0], options());
}
