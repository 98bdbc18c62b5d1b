//! The SPMD partitioner (issue 35 item 3): from a module whose values carry `sharding=`
//! annotations (what `jax.jit(..., in_shardings=...)` lowers before XLA's partitioner),
//! [`propagate`] chooses every instruction's sharding, each with the reason, and
//! [`partition`] writes the one program every device runs: per-device shapes, and the
//! collectives the choices need (an all-reduce of partial sums where a dot contracts or a
//! reduce reduces a sharded dimension, all-gathers and partition-id dynamic-slices where a
//! consumer needs another sharding). An op it does not handle yet is an
//! [`SpmdError::Unsupported`] naming it.

mod error;

pub use error::SpmdError;
