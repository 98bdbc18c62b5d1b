//! The bits of `rng-bit-generator` on plain state words, bit-exact with XLA's expansion
//! (`RngBitGeneratorExpander` over the ThreeFry-2x32 and Philox-4x32 generators of XLA's
//! `prng` library): which counter each output element takes, how the state advances, and
//! how 32- and 64-bit outputs are filled. Shared by the evaluator's `rng-bit-generator`
//! and the compiled CPU backend's.
//!
//! State `u64[n]`: element 0 is the key. ThreeFry counts from element 1; Philox counts a
//! 128-bit counter from elements 1 and 2 (for `n = 2`, low word element 1 and high word
//! element 0, as XLA's reversal of the state does).

use super::prng::{halves, philox4x32, threefry2x32};
use super::util::{next_index, strides};
use super::KernelError;

/// The generator of an `rng-bit-generator` (`rng_default` is Philox, the algorithm
/// XLA:CPU and GPU expand the default to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RngAlgorithm {
    /// ThreeFry-2x32, 20 rounds.
    ThreeFry,
    /// Philox-4x32, 10 rounds.
    Philox,
}

/// ThreeFry 32-bit values for `dims`: XLA splits the shape in two halves along the
/// first even dimension (else the largest) and interleaves the two output words there.
/// Returns the values and how far the counter advanced.
fn threefry_u32(key: u64, counter: u64, dims: &[usize]) -> (Vec<u64>, u64) {
    let n: usize = dims.iter().product();
    if dims.is_empty() {
        let o = threefry2x32(halves(counter), halves(key));
        return (vec![u64::from(o[0])], 1);
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
    let st = strides(&half);
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        let mut lin = 0usize;
        for d in 0..dims.len() {
            let i = if d == split { idx[d] / 2 } else { idx[d] };
            lin += i * st[d];
        }
        let o = threefry2x32(halves(counter.wrapping_add(lin as u64)), halves(key));
        out.push(u64::from(o[idx[split] % 2]));
        next_index(&mut idx, dims);
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

/// Runs the generator on `state` for an output of dimensions `dims` whose elements are
/// `bits` wide (64, or 32 and narrower, which take the low bits of 32-bit words).
/// Returns the new state and the output's values as `u64` words in row-major order.
pub fn rng_bits(
    algorithm: RngAlgorithm,
    state: &[u64],
    dims: &[usize],
    bits: u32,
) -> Result<(Vec<u64>, Vec<u64>), KernelError> {
    if state.len() < 2 {
        return Err(KernelError::Invalid(
            "rng-bit-generator: state needs at least 2 elements".into(),
        ));
    }
    let n: usize = dims.iter().product();
    let key = state[0];
    let mut new_state = state.to_vec();
    let words: Vec<u64> = match algorithm {
        RngAlgorithm::ThreeFry => {
            if bits == 64 {
                new_state[1] = state[1].wrapping_add(n as u64);
                threefry_u64(key, state[1], n)
            } else {
                let (v, advance) = threefry_u32(key, state[1], dims);
                new_state[1] = state[1].wrapping_add(advance);
                v
            }
        }
        RngAlgorithm::Philox => {
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
    };
    Ok((new_state, words))
}
