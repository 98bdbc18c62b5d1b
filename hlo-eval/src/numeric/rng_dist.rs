//! `rng` with `distribution=rng_uniform` or `rng_normal`.
//!
//! XLA specifies only the distribution: uniform in `[a, b)` (floats and integers), or
//! normal with mean `mu` and standard deviation `sigma` (floats). XLA:CPU draws from a
//! process-wide seed, so no two runs agree and no recorded output can be matched. The
//! reference evaluator is deterministic instead: every `rng` instruction has its own
//! SplitMix64 stream ([`crate::random`]'s generator) seeded by its name, so a module evaluates the same way every time
//! (and one instruction yields the same values on every execution, e.g. in a loop).
//! Floats are drawn in `f64` and rounded once to the element type (for narrow types that
//! rounding may reach `b`). When `b <= a` the result is `a` everywhere (XLA leaves it
//! implementation-defined).

use super::KernelError;
use crate::random::{generator, unit};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{Instruction, Literal};
use rand_core::Rng;

/// FNV-1a of the instruction's name: the seed of its stream.
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The scalar operand `i` as an `f64`.
fn scalar(instr: &Instruction, operands: &[&Literal], i: usize) -> Result<f64, KernelError> {
    operands
        .get(i)
        .and_then(|l| l.as_array())
        .filter(|a| a.data().len() == 1)
        .and_then(|a| a.get_f64(0))
        .ok_or_else(|| {
            KernelError::Invalid(format!(
                "rng `{}`: operand {i} must be a real scalar",
                instr.name()
            ))
        })
}

/// Evaluates `rng`.
pub(crate) fn rng(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    let name = instr.name();
    let invalid = |m: &str| KernelError::Invalid(format!("rng `{name}`: {m}"));
    let shape = instr.shape().clone();
    let ty = shape
        .element_type()
        .ok_or_else(|| invalid("the result must be an array"))?;
    let n = shape
        .element_count()
        .map_err(|e| invalid(&e.to_string()))
        .and_then(|n| usize::try_from(n).map_err(|_| invalid("negative element count")))?;
    let normal = match instr.rng_distribution() {
        Some("rng_uniform") => false,
        Some("rng_normal") => true,
        other => {
            return Err(KernelError::Unsupported(format!(
                "rng distribution {:?}",
                other.unwrap_or("<none>")
            )))
        }
    };
    let (a, b) = (scalar(instr, operands, 0)?, scalar(instr, operands, 1)?);
    let mut data = ArrayData::new(ty).ok_or_else(|| invalid("not a data type"))?;
    let mut gen = generator(seed_of(name));
    let push_error = |e: hlo::literal::ValueError| invalid(&e.to_string());
    if ty.is_float() {
        for _ in 0..n {
            let x = if normal {
                // Box-Muller; 1 - u is in (0, 1], so the logarithm is finite.
                let (u, v) = (unit(&mut gen), unit(&mut gen));
                let z = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                a + b * z
            } else if b > a {
                a + (b - a) * unit(&mut gen)
            } else {
                a
            };
            data.push_float(ty, x, None, "rng value")
                .map_err(push_error)?;
        }
    } else if ty.is_integral() && !normal {
        // Bounds are read through f64 (exact up to 2^53 in magnitude); a draw is
        // `lo + r mod (hi - lo)`, whose modulo bias is below 2^-32 for 32-bit spans.
        let (lo, hi) = (a as i128, b as i128);
        let span = hi - lo;
        for _ in 0..n {
            let x = if span > 0 {
                lo + (u128::from(gen.next_u64()) % span as u128) as i128
            } else {
                lo
            };
            data.push_int(ty, x).map_err(push_error)?;
        }
    } else {
        return Err(KernelError::Unsupported(format!(
            "rng `{name}` of type {ty} with {}",
            if normal { "rng_normal" } else { "rng_uniform" }
        )));
    }
    ArrayLiteral::new(shape, data)
        .map(Literal::Array)
        .ok_or_else(|| invalid("result does not match its shape"))
}
