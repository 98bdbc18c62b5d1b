//! Deterministic random arguments, for running a module without recorded inputs.
//!
//! Distribution per element type (a SplitMix64 stream per argument, from
//! `rand_xoshiro`, seeded by the seed and the parameter number, so adding a parameter
//! does not change the others):
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
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::SplitMix64;

/// The generator behind every deterministic value of the evaluator (random arguments
/// here, `rng` instructions in [`crate::numeric`]): SplitMix64, a tiny, well-mixed
/// generator whose stream for a seed never changes, so recorded outputs stay valid.
pub(crate) fn generator(seed: u64) -> SplitMix64 {
    SplitMix64::seed_from_u64(seed)
}

/// Uniform in `[0, 1)` with 53 random bits.
pub(crate) fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Uniform in `[-1, 1)`.
fn signed_unit(rng: &mut impl Rng) -> f64 {
    unit(rng) * 2.0 - 1.0
}

/// Uniform integer in `[lo, hi]` (`lo <= hi`, a span below 2^63).
fn int(rng: &mut impl Rng, lo: i64, hi: i64) -> i64 {
    lo + (rng.next_u64() % (hi - lo + 1) as u64) as i64
}

/// A random literal of `shape` (tuples element by element) for parameter `param` under
/// `seed`; refuses shapes over `limit` bytes before allocating.
pub fn random_literal(
    shape: &Shape,
    seed: u64,
    param: u64,
    limit: u64,
) -> Result<Literal, EvalError> {
    let mut rng = generator(seed ^ param.wrapping_mul(0xd1b5_4a32_d192_ed03));
    random_with(shape, &mut rng, limit)
}

fn random_with(shape: &Shape, rng: &mut SplitMix64, limit: u64) -> Result<Literal, EvalError> {
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
    let mut ints = |lo: i64, hi: i64| -> Vec<i64> { (0..n).map(|_| int(rng, lo, hi)).collect() };
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
        ArrayData::F32(_) => ArrayData::F32((0..n).map(|_| signed_unit(rng) as f32).collect()),
        ArrayData::F64(_) => ArrayData::F64((0..n).map(|_| signed_unit(rng)).collect()),
        ArrayData::C64(_) => ArrayData::C64(
            (0..n)
                .map(|_| [signed_unit(rng) as f32, signed_unit(rng) as f32])
                .collect(),
        ),
        ArrayData::C128(_) => ArrayData::C128(
            (0..n)
                .map(|_| [signed_unit(rng), signed_unit(rng)])
                .collect(),
        ),
        ArrayData::Bits16(_) => {
            let c = small(ty)?;
            ArrayData::Bits16((0..n).map(|_| c.encode(signed_unit(rng)) as u16).collect())
        }
        ArrayData::Bits8(_) if ty == ElementType::F8E8M0FNU => {
            // Powers of two only, no sign and no zero: a block scale.
            let c = small(ty)?;
            ArrayData::Bits8(
                (0..n)
                    .map(|_| c.encode(2f64.powi(int(rng, -2, 2) as i32)) as u8)
                    .collect(),
            )
        }
        ArrayData::Bits8(_) => {
            let c = small(ty)?;
            ArrayData::Bits8((0..n).map(|_| c.encode(signed_unit(rng)) as u8).collect())
        }
    };
    make(shape, data, what)
}

fn small(ty: ElementType) -> Result<SmallFloat, EvalError> {
    SmallFloat::of(ty)
        .ok_or_else(|| EvalError::invalid("random input", format!("no codec for {ty}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream must never change: recorded outputs of `hloc run --seed N` and of `rng`
    /// instructions depend on it. These are SplitMix64's published first outputs.
    #[test]
    fn generator_stream_is_splitmix64() {
        let mut g = generator(0);
        let first: Vec<u64> = (0..3).map(|_| g.next_u64()).collect();
        assert_eq!(
            first,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f
            ]
        );
    }

    #[test]
    fn units_stay_in_range() {
        let mut g = generator(42);
        for _ in 0..1000 {
            let u = unit(&mut g);
            assert!((0.0..1.0).contains(&u));
            let s = signed_unit(&mut g);
            assert!((-1.0..1.0).contains(&s));
            assert!((-3..=4).contains(&int(&mut g, -3, 4)));
        }
    }
}
