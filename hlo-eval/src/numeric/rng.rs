//! `rng-bit-generator`, bit-exact with XLA's expansion (`RngBitGeneratorExpander` over
//! the ThreeFry-2x32 and Philox-4x32 generators of XLA's `prng` library).
//!
//! The generation itself (counters, state advance, how outputs are filled) is
//! [`rng_bits`](super::rng_bits::rng_bits); this file reads the state and the algorithm
//! from the instruction and builds the result literals.

use super::rng_bits::{rng_bits, RngAlgorithm};
use super::util::{dims_of, make_array, operand, result_part};
use super::KernelError;
use hlo::attrs::{AttrName, AttrValue};
use hlo::literal::ArrayData;
use hlo::shape::ElementType;
use hlo::{Instruction, Literal};

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
    let bits = ty
        .bit_width()
        .filter(|_| !ty.is_complex() && ty != ElementType::Pred)
        .ok_or_else(|| KernelError::Unsupported(format!("{W}: output type {ty}")))?;
    let algorithm = match algorithm {
        "rng_three_fry" => RngAlgorithm::ThreeFry,
        "rng_philox" | "rng_default" => RngAlgorithm::Philox,
        other => return Err(KernelError::Unsupported(format!("{W}: algorithm {other}"))),
    };
    let (new_state, words) = rng_bits(algorithm, &state, &dims, bits)?;
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
    use super::super::prng::{philox4x32, threefry2x32};

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
