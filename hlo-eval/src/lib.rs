//! # hlo-eval — the reference evaluator of XLA HLO
//!
//! Runs a module on argument [`Literal`]s one instruction at a
//! time with the semantics of XLA's operation semantics document. It is the ground truth
//! every later pass and backend is checked against.
//!
//! ```
//! use hlo_eval::evaluate;
//! use hlo::literal::{ArrayData, ArrayLiteral};
//! use hlo::{ElementType, Literal, Shape};
//! let m = hlo::parse_module(r#"
//! HloModule m
//! ENTRY e {
//!   p = s32[3] parameter(0)
//!   ROOT n = s32[3] negate(p)
//! }"#).unwrap();
//! let arg = ArrayLiteral::new(Shape::array(ElementType::S32, vec![3]), ArrayData::S32(vec![1, -2, i32::MIN])).unwrap();
//! let out = evaluate(&m, &[Literal::Array(arg)]).unwrap();
//! assert_eq!(out.as_array().unwrap().data(), &ArrayData::S32(vec![-1, 2, i32::MIN]));
//! ```
//!
//! ## Semantics worth knowing
//!
//! - **Integers** wrap on overflow; `x / 0` is -1 (all bits set, so `u32::MAX` for
//!   unsigned), `MIN / -1` is `MIN`; `remainder` has the dividend's sign (C `%`), `x % 0`
//!   is `x`; shifts by an amount `>= bits` (as unsigned) give 0, or the sign fill for
//!   `shift-right-arithmetic`; `power` with a negative exponent is 0 unless the base is 1.
//! - **Floats** are computed in `f64` and rounded to the element type (exact for `+ - * /`
//!   and `sqrt`; transcendental functions may differ from XLA's by an ulp or so). `f16`,
//!   `bf16` and `f8` results round through `f32` (ties to even), as XLA:CPU computes them
//!   in `f32`. `maximum`/`minimum` propagate NaN. `compare` is IEEE unless `type=TOTALORDER`
//!   (`-NaN < -inf < -0 < +0 < inf < NaN`).
//! - **convert**: float to integer truncates and saturates, NaN gives 0; integers wrap;
//!   see [`convert`](self) docs in the source for the rest.
//! - **bitcast** reads the operand in its physical (layout) order and writes the result in
//!   its own; without layouts it is a reshape.
//! - **dynamic-slice / dynamic-update-slice** clamp start indices into range.
//! - **conditional** with an index out of range runs the last branch.
//! - **scan** runs its body once per position of the scanned dimension, first to last (or
//!   last to first with `is_reverse=true`), on the inputs' slices there and the carries;
//!   each step's outputs are stored at the position it read, so a reverse scan's outputs
//!   keep the inputs' order. A scan of length 0 returns its initial carries and empty
//!   outputs.
//! - **Constants** written as one scalar for an array shape (`f32[2,3] constant(1)`) are
//!   expanded to every element when evaluated (after the size guard below).
//! - Async wrappers, `copy-start`/`copy-done` and `call`/`fusion` evaluate their called
//!   computations eagerly; tokens are [`Literal::Elided`] of the token shape.
//!
//! Heavy numeric ops (dot, convolution, gather, scatter, sort, top-k, reduce-window,
//! select-and-scatter, rng, fft, cholesky, triangular-solve, LAPACK custom calls) are
//! delegated to [`numeric`]; an operation it does not implement returns
//! [`EvalError::Unsupported`].
//!
//! ## Size guard
//!
//! Everything allocated from a size the evaluator reads is checked against a limit before
//! the allocation: an instruction's result (by its shape), a random argument
//! ([`random::random_literal`]) and every `.npy`/`.npz` array ([`npy`], by the size its
//! header or zip entry declares). The default limit,
//! [`memory::default_size_limit`], is half of the machine's available memory
//! (`MemAvailable` of `/proc/meminfo`, read once per process) or
//! [`memory::FALLBACK_SIZE_LIMIT`] (4 GiB) where that is unknown; set another with
//! [`Evaluator::with_size_limit`] (`hloc run --max-memory SIZE` or the
//! `HLOC_MAX_MEMORY` variable). A bigger result is [`EvalError::TooLarge`], never an
//! allocation attempt.
//!
//! ## Loop guard
//!
//! A `while` whose condition never turns false (a program can loop forever on some inputs,
//! as a Collatz loop on negative numbers does) stops after [`DEFAULT_WHILE_LIMIT`]
//! iterations of one loop (adjustable with [`Evaluator::with_while_limit`]) with
//! [`EvalError::LoopLimit`], so that evaluation always ends.
//!
//! ## N devices
//!
//! [`multi_device::evaluate_on_devices`] runs a module on a grid of replicas x partitions,
//! one thread per device, each with its `replica-id` and `partition-id`; the collectives
//! (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
//! collective-broadcast and their async pairs) meet at a rendezvous with XLA's group
//! modes, and the `Sharding`, `SPMDFullToShardShape` and `SPMDShardToFullShape` custom
//! calls have their global meaning. A single-device run is a 1 x 1 grid.
//!
//! ## Comparing with XLA
//!
//! [`tolerance`] holds the one float tolerance every comparison against XLA's recorded
//! outputs uses; [`report`] compares one output with it at the precision of its last
//! rounding and reports every mismatch (`hloc run --expect`, `--check-reference`).

mod async_chain;
mod collective_groups;
mod collectives;
mod complex;
mod control;
mod convert;
mod data;
pub mod device;
mod elementwise;
mod error;
mod interp;
pub mod memory;
mod movement;
pub mod multi_device;
pub mod multi_device_shards;
pub mod npy;
pub mod numeric;
pub mod random;
mod reduce;
mod rendezvous;
pub mod report;
mod scalar;
mod special;
mod spmd_calls;
mod spmd_sdy_calls;
pub mod tolerance;

#[cfg(test)]
mod tests;

pub use error::EvalError;
pub use interp::{Evaluator, DEFAULT_WHILE_LIMIT};

use hlo::{Literal, Module};

pub use memory::default_size_limit;

/// Element data of type `ty` from little-endian bytes (whole elements only); used by
/// [`crate::npy`].
pub(crate) fn data_from_le_bytes(
    ty: hlo::ElementType,
    b: &[u8],
) -> Option<hlo::literal::ArrayData> {
    convert::from_bytes(ty, b)
}

/// Little-endian bytes of every element; used by [`crate::npy`].
pub(crate) fn data_to_le_bytes(d: &hlo::literal::ArrayData) -> Vec<u8> {
    convert::to_bytes(d)
}

/// Row-major transpose of `data` (dims `in_dims`) by `perm`; used by [`crate::npy`].
pub(crate) fn transpose_for_npy(
    data: &hlo::literal::ArrayData,
    in_dims: &[usize],
    perm: &[usize],
) -> Option<hlo::literal::ArrayData> {
    movement::transpose_data(data, in_dims, perm, "npy").ok()
}

/// Evaluates the entry computation of `module` on `args` (one per parameter, in
/// parameter-number order) with the default size limit.
pub fn evaluate(module: &Module, args: &[Literal]) -> Result<Literal, EvalError> {
    Evaluator::new(module).run(args)
}
