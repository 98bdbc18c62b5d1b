//! Deterministic random arguments, for running a module without recorded inputs.
//!
//! Distribution per element type (a SplitMix64 stream per argument, seeded by the seed
//! and the parameter number, so adding a parameter does not change the others):
//!
//! - floating point (`f64`, `f32`, `f16`, `bf16`, `f8*`): uniform in `[-1, 1)`, rounded
//!   to the type; `f8e8m0fnu` (powers of two only, the block-scale type): `2^k` with `k`
//!   uniform in `[-2, 2]`;
//! - complex: real and imaginary parts each uniform in `[-1, 1)`;
//! - signed integers: uniform in `[-10, 10]` (clamped to the type's range for `s1`..`s4`);
//! - unsigned integers: uniform in `[0, 20]` (clamped for `u1`..`u4`);
//! - `pred`: a fair coin.
//!
//! Small integer ranges keep indices, shifts and loop counts meaningful.

use super::data::make;
use super::scalar::SmallFloat;
use super::EvalError;
use hlo::literal::ArrayData;
use hlo::shape::{ElementType, Shape};
use hlo::Literal;

/// SplitMix64: a tiny, well-mixed deterministic generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// Uniform integer in `[lo, hi]`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

/// A random literal of `shape` (tuples element by element) for parameter `param` under
/// `seed`; refuses shapes over `limit` bytes before allocating.
pub fn random_literal(
    shape: &Shape,
    seed: u64,
    param: u64,
    limit: u64,
) -> Result<Literal, EvalError> {
    let mut rng = SplitMix(seed ^ param.wrapping_mul(0xd1b5_4a32_d192_ed03));
    random_with(shape, &mut rng, limit)
}

fn random_with(shape: &Shape, rng: &mut SplitMix, limit: u64) -> Result<Literal, EvalError> {
    let what = "random input";
    let bytes = shape.byte_size().map(|b| b as u64).unwrap_or(u64::MAX);
    if bytes > limit {
        return Err(EvalError::TooLarge {
            instr: format!("parameter of shape {}", shape.to_string_without_layout()),
            bytes,
            limit,
        });
    }
    let ty = match shape {
        Shape::Tuple(t) => {
            return Ok(Literal::Tuple(
                t.iter()
                    .map(|s| random_with(s, rng, limit))
                    .collect::<Result<_, _>>()?,
            ))
        }
        Shape::Array(a) => a.element_type(),
    };
    if !ty.is_array_type() {
        return Ok(Literal::Elided(shape.clone()));
    }
    let n = shape
        .element_count()
        .map_err(|e| EvalError::invalid(what, e.to_string()))? as usize;
    let bits = ty.bit_width().unwrap_or(8);
    let (slo, shi) = (
        -10i64.min(1 << (bits.min(62) - 1)),
        10i64.min((1 << (bits.min(62) - 1)) - 1),
    );
    let uhi = 20i64.min((1i64 << bits.min(62)) - 1);
    let mut ints =
        |lo: i64, hi: i64| -> Vec<i64> { (0..n).map(|_| rng_int(rng, lo, hi)).collect() };
    let data = match ArrayData::new(ty).ok_or_else(|| EvalError::invalid(what, "no data type"))? {
        ArrayData::Pred(_) => ArrayData::Pred(ints(0, 1).into_iter().map(|x| x == 1).collect()),
        ArrayData::S8(_) => ArrayData::S8(ints(slo, shi).into_iter().map(|x| x as i8).collect()),
        ArrayData::S16(_) => ArrayData::S16(ints(slo, shi).into_iter().map(|x| x as i16).collect()),
        ArrayData::S32(_) => ArrayData::S32(ints(slo, shi).into_iter().map(|x| x as i32).collect()),
        ArrayData::S64(_) => ArrayData::S64(ints(slo, shi)),
        ArrayData::U8(_) => ArrayData::U8(ints(0, uhi).into_iter().map(|x| x as u8).collect()),
        ArrayData::U16(_) => ArrayData::U16(ints(0, uhi).into_iter().map(|x| x as u16).collect()),
        ArrayData::U32(_) => ArrayData::U32(ints(0, uhi).into_iter().map(|x| x as u32).collect()),
        ArrayData::U64(_) => ArrayData::U64(ints(0, uhi).into_iter().map(|x| x as u64).collect()),
        ArrayData::F32(_) => ArrayData::F32((0..n).map(|_| rng.unit() as f32).collect()),
        ArrayData::F64(_) => ArrayData::F64((0..n).map(|_| rng.unit()).collect()),
        ArrayData::C64(_) => ArrayData::C64(
            (0..n)
                .map(|_| [rng.unit() as f32, rng.unit() as f32])
                .collect(),
        ),
        ArrayData::C128(_) => ArrayData::C128((0..n).map(|_| [rng.unit(), rng.unit()]).collect()),
        ArrayData::Bits16(_) => {
            let c = small(ty)?;
            ArrayData::Bits16((0..n).map(|_| c.encode(rng.unit()) as u16).collect())
        }
        ArrayData::Bits8(_) if ty == ElementType::F8E8M0FNU => {
            // Powers of two only, no sign and no zero: a block scale.
            let c = small(ty)?;
            ArrayData::Bits8(
                (0..n)
                    .map(|_| c.encode(2f64.powi(rng_int(rng, -2, 2) as i32)) as u8)
                    .collect(),
            )
        }
        ArrayData::Bits8(_) => {
            let c = small(ty)?;
            ArrayData::Bits8((0..n).map(|_| c.encode(rng.unit()) as u8).collect())
        }
    };
    make(shape, data, what)
}

fn rng_int(rng: &mut SplitMix, lo: i64, hi: i64) -> i64 {
    rng.int(lo, hi)
}

fn small(ty: ElementType) -> Result<SmallFloat, EvalError> {
    SmallFloat::of(ty)
        .ok_or_else(|| EvalError::invalid("random input", format!("no codec for {ty}")))
}
