//! `rng-bit-generator`, bit-exact with XLA's expansion (`RngBitGeneratorExpander` over
//! the ThreeFry-2x32 and Philox-4x32 generators of XLA's `prng` library).
//!
//! State `u64[n]`: element 0 is the key. ThreeFry counts from element 1; Philox counts a
//! 128-bit counter from elements 1 and 2 (for `n = 2`, low word element 1 and high word
//! element 0, as XLA's reversal of the state does). `rng_default` is Philox, the
//! algorithm XLA:CPU (and GPU) expand the default to.

use super::prng::{halves, philox4x32, threefry2x32};
use super::util::{dims_of, make_array, operand, result_part};
use super::KernelError;
use hlo::attrs::{AttrName, AttrValue};
use hlo::literal::ArrayData;
use hlo::shape::ElementType;
use hlo::{Instruction, Literal};

/// ThreeFry 32-bit values for `dims`: XLA splits the shape in two halves along the
/// first even dimension (else the largest) and interleaves the two output words there.
/// Returns the values and how far the counter advanced.
fn threefry_u32(key: u64, counter: u64, dims: &[usize]) -> (Vec<u32>, u64) {
    let n: usize = dims.iter().product();
    if dims.is_empty() {
        let o = threefry2x32(halves(counter), halves(key));
        return (vec![o[0]], 1);
    }
    let split = dims.iter().position(|d| d % 2 == 0).unwrap_or_else(|| {
        let mut best = 0;
        for (i, &d) in dims.iter().enumerate() {
            if d > dims[best] {
                best = i;
            }
        }
        best
    });
    let mut half = dims.to_vec();
    half[split] = dims[split].div_ceil(2);
    let half_count: usize = half.iter().product();
    let st = super::util::strides(&half);
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        let mut lin = 0usize;
        for d in 0..dims.len() {
            let i = if d == split { idx[d] / 2 } else { idx[d] };
            lin += i * st[d];
        }
        let o = threefry2x32(halves(counter.wrapping_add(lin as u64)), halves(key));
        out.push(o[idx[split] % 2]);
        super::util::next_index(&mut idx, dims);
    }
    (out, half_count as u64)
}

/// ThreeFry 64-bit values: one generator call per element.
fn threefry_u64(key: u64, counter: u64, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let o = threefry2x32(halves(counter.wrapping_add(i as u64)), halves(key));
            u64::from(o[0]) | (u64::from(o[1]) << 32)
        })
        .collect()
}

/// Philox blocks for counters `counter + 0 .. counter + blocks` (128-bit, low word
/// first); returns the blocks and the advanced counter.
fn philox_blocks(key: u64, counter: (u64, u64), blocks: usize) -> (Vec<[u32; 4]>, (u64, u64)) {
    let add = |c: (u64, u64), i: u64| {
        let low = c.0.wrapping_add(i);
        let high = if low < c.0 { c.1.wrapping_add(1) } else { c.1 };
        (low, high)
    };
    let out = (0..blocks)
        .map(|i| {
            let (lo, hi) = add(counter, i as u64);
            let [a, b] = halves(lo);
            let [c, d] = halves(hi);
            philox4x32([a, b, c, d], halves(key))
        })
        .collect();
    (out, add(counter, blocks as u64))
}

/// Evaluates `rng-bit-generator`: `(new state, random bits)`.
pub(crate) fn rng_bit_generator(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    const W: &str = "rng-bit-generator";
    let state_lit = operand(operands, 0, W)?;
    let state: Vec<u64> = match state_lit.data() {
        ArrayData::U64(v) => v.clone(),
        ArrayData::S64(v) => v.iter().map(|&x| x as u64).collect(),
        _ => {
            return Err(KernelError::Invalid(format!(
                "{W}: state must be u64 or s64"
            )))
        }
    };
    if state.len() < 2 {
        return Err(KernelError::Invalid(format!(
            "{W}: state needs at least 2 elements"
        )));
    }
    let algorithm = match instr.attr(&AttrName::Algorithm) {
        Some(AttrValue::Ident(s) | AttrValue::String(s)) => s.as_str(),
        None => "rng_default",
        Some(_) => {
            return Err(KernelError::Invalid(format!(
                "{W}: bad algorithm attribute"
            )))
        }
    };
    let state_shape = result_part(instr.shape(), 0, W)?;
    let data_shape = result_part(instr.shape(), 1, W)?;
    let ty = super::util::elem_type(data_shape, W)?;
    let dims = dims_of(data_shape, W)?;
    let n: usize = dims.iter().product();
    let bits = ty
        .bit_width()
        .filter(|_| !ty.is_complex() && ty != ElementType::Pred)
        .ok_or_else(|| KernelError::Unsupported(format!("{W}: output type {ty}")))?;
    let key = state[0];
    let mut new_state = state.clone();
    // Values as u64 words (32-bit and narrower outputs use the low bits).
    let words: Vec<u64> = match algorithm {
        "rng_three_fry" => {
            if bits == 64 {
                new_state[1] = state[1].wrapping_add(n as u64);
                threefry_u64(key, state[1], n)
            } else {
                let (v, advance) = threefry_u32(key, state[1], &dims);
                new_state[1] = state[1].wrapping_add(advance);
                v.into_iter().map(u64::from).collect()
            }
        }
        "rng_philox" | "rng_default" => {
            let counter = if state.len() >= 3 {
                (state[1], state[2])
            } else {
                (state[1], state[0])
            };
            let (words, next) = if bits == 64 {
                let (blocks, next) = philox_blocks(key, counter, n.div_ceil(2));
                let w = (0..n)
                    .map(|e| {
                        let b = blocks[e / 2];
                        let (lo, hi) = if e % 2 == 0 {
                            (b[0], b[1])
                        } else {
                            (b[2], b[3])
                        };
                        u64::from(lo) | (u64::from(hi) << 32)
                    })
                    .collect();
                (w, next)
            } else {
                let (blocks, next) = philox_blocks(key, counter, n.div_ceil(4));
                (
                    (0..n).map(|e| u64::from(blocks[e / 4][e % 4])).collect(),
                    next,
                )
            };
            new_state[1] = next.0;
            if state.len() >= 3 {
                new_state[2] = next.1;
            }
            words
        }
        other => return Err(KernelError::Unsupported(format!("{W}: algorithm {other}"))),
    };
    let data = match ty {
        ElementType::U64 => ArrayData::U64(words),
        ElementType::S64 => ArrayData::S64(words.into_iter().map(|w| w as i64).collect()),
        ElementType::F64 => ArrayData::F64(words.into_iter().map(f64::from_bits).collect()),
        ElementType::U32 => ArrayData::U32(words.into_iter().map(|w| w as u32).collect()),
        ElementType::S32 => ArrayData::S32(words.into_iter().map(|w| w as i32).collect()),
        ElementType::F32 => ArrayData::F32(
            words
                .into_iter()
                .map(|w| f32::from_bits(w as u32))
                .collect(),
        ),
        ElementType::U16 => ArrayData::U16(words.into_iter().map(|w| w as u16).collect()),
        ElementType::S16 => ArrayData::S16(words.into_iter().map(|w| w as i16).collect()),
        ElementType::F16 | ElementType::BF16 => {
            ArrayData::Bits16(words.into_iter().map(|w| w as u16).collect())
        }
        ElementType::U8 => ArrayData::U8(words.into_iter().map(|w| w as u8).collect()),
        ElementType::S8 => ArrayData::S8(words.into_iter().map(|w| w as i8).collect()),
        other => {
            return Err(KernelError::Unsupported(format!(
                "{W}: output type {other}"
            )))
        }
    };
    let state_data = match state_lit.data() {
        ArrayData::S64(_) => ArrayData::S64(new_state.into_iter().map(|x| x as i64).collect()),
        _ => ArrayData::U64(new_state),
    };
    Ok(Literal::Tuple(vec![
        make_array(state_shape, state_data, W)?,
        make_array(data_shape, data, W)?,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of Random123 (threefry2x32_20, philox4x32_10).
    #[test]
    fn random123_known_answers() {
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
        assert_eq!(
            threefry2x32([0x243f_6a88, 0x85a3_08d3], [0x1319_8a2e, 0x0370_7344]),
            [0xc492_3a9c, 0x483d_f7a0]
        );
        assert_eq!(
            philox4x32([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}
