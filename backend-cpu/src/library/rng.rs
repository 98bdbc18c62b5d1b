//! `rng-bit-generator`, bit-exact with XLA's `RngBitGeneratorExpander`: the state and
//! the bits come from the evaluator's generator ([`hlo_eval::numeric::rng_bits`], which
//! holds which counter each element takes and how the state advances); this routine reads
//! the state from its buffer and writes the results in logical row-major order.

use codegen::kir::ScalarType;
use hlo_eval::numeric::{rng_bits, RngAlgorithm};

use super::arrays::{for_each_index, Arr};
use crate::error::BackendError;

/// Runs the generator: input the state; outputs the new state and the bits.
pub(crate) fn run(philox: bool, ins: &[Arr], outs: &mut [Arr]) -> Result<(), BackendError> {
    let bad = |w: &str| BackendError::Internal(format!("rng-bit-generator: {w}"));
    let [state_in] = ins else {
        return Err(bad("operand count"));
    };
    let [state_out, data] = outs else {
        return Err(bad("result count"));
    };
    if !matches!(state_in.ty, ScalarType::U64 | ScalarType::S64) || state_in.dims.len() != 1 {
        return Err(bad("state must be a u64 or s64 vector"));
    }
    let state: Vec<u64> = (0..state_in.count())
        .map(|e| state_in.int(e) as u64)
        .collect();
    if state.len() < 2 || state_out.count() != state.len() {
        return Err(bad("state needs at least 2 elements"));
    }
    let dims = data.dims.clone();
    if data.ty == ScalarType::Pred {
        return Err(bad("pred output"));
    }
    let algorithm = if philox {
        RngAlgorithm::Philox
    } else {
        RngAlgorithm::ThreeFry
    };
    let (new_state, words) =
        rng_bits(algorithm, &state, &dims, data.ty.bits()).map_err(|e| bad(&e.to_string()))?;
    for (e, &v) in new_state.iter().enumerate() {
        let o = state_out.offset(&[e]);
        state_out.set_int(o, v as i64);
    }
    let mut i = 0;
    for_each_index(&dims, |idx| {
        let o = data.offset(idx);
        data.set_int(o, words[i] as i64);
        i += 1;
        Ok(())
    })
}
