//! `rng-bit-generator`, bit-exact with XLA's `RngBitGeneratorExpander` (ThreeFry-2x32
//! with 20 rounds, Philox-4x32 with 10). State `u64[n]`: element 0 is the key; ThreeFry
//! counts from element 1; Philox's 128-bit counter is elements 1 (low) and 2 (high), or
//! for `n = 2` elements 1 and 0 (XLA reverses the state). Results are written in logical
//! row-major order of the output.

use codegen::kir::ScalarType;
use hlo_eval::numeric::prng::{halves, philox4x32, threefry2x32};

use super::arrays::{for_each_index, Arr};
use crate::error::BackendError;

/// ThreeFry 32-bit words: the shape is split in two halves along the first even
/// dimension (else the largest), the generator's two output words interleaved there.
fn threefry_u32(key: u64, counter: u64, dims: &[usize]) -> Result<(Vec<u64>, u64), BackendError> {
    if dims.is_empty() {
        let o = threefry2x32(halves(counter), halves(key));
        return Ok((vec![u64::from(o[0])], 1));
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
    let mut st = vec![1usize; half.len()];
    for d in (0..half.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * half[d + 1];
    }
    let mut out = Vec::with_capacity(dims.iter().product());
    for_each_index(dims, |idx| {
        let lin: usize = (0..dims.len())
            .map(|d| if d == split { idx[d] / 2 } else { idx[d] } * st[d])
            .sum();
        let o = threefry2x32(halves(counter.wrapping_add(lin as u64)), halves(key));
        out.push(u64::from(o[idx[split] % 2]));
        Ok(())
    })?;
    Ok((out, half_count as u64))
}

fn philox_add(c: (u64, u64), i: u64) -> (u64, u64) {
    let low = c.0.wrapping_add(i);
    let high = if low < c.0 { c.1.wrapping_add(1) } else { c.1 };
    (low, high)
}

fn philox_block(key: u64, counter: (u64, u64), i: usize) -> [u32; 4] {
    let (lo, hi) = philox_add(counter, i as u64);
    let [a, b] = halves(lo);
    let [c, d] = halves(hi);
    philox4x32([a, b, c, d], halves(key))
}

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
    let n: usize = dims.iter().product();
    let bits = data.ty.bits();
    if data.ty == ScalarType::Pred {
        return Err(bad("pred output"));
    }
    let key = state[0];
    let mut new_state = state.clone();
    let words: Vec<u64> = if !philox {
        if bits == 64 {
            new_state[1] = state[1].wrapping_add(n as u64);
            (0..n)
                .map(|i| {
                    let o = threefry2x32(halves(state[1].wrapping_add(i as u64)), halves(key));
                    u64::from(o[0]) | (u64::from(o[1]) << 32)
                })
                .collect()
        } else {
            let (v, advance) = threefry_u32(key, state[1], &dims)?;
            new_state[1] = state[1].wrapping_add(advance);
            v
        }
    } else {
        let counter = if state.len() >= 3 {
            (state[1], state[2])
        } else {
            (state[1], state[0])
        };
        let (words, blocks) = if bits == 64 {
            let w = (0..n)
                .map(|e| {
                    let b = philox_block(key, counter, e / 2);
                    let (lo, hi) = if e % 2 == 0 {
                        (b[0], b[1])
                    } else {
                        (b[2], b[3])
                    };
                    u64::from(lo) | (u64::from(hi) << 32)
                })
                .collect();
            (w, n.div_ceil(2))
        } else {
            let w = (0..n)
                .map(|e| u64::from(philox_block(key, counter, e / 4)[e % 4]))
                .collect();
            (w, n.div_ceil(4))
        };
        let next = philox_add(counter, blocks as u64);
        new_state[1] = next.0;
        if state.len() >= 3 {
            new_state[2] = next.1;
        }
        words
    };
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
