//! Integration tests of the reference evaluator, in one binary: corpus programs against
//! XLA's recorded outputs, .npy/.npz I/O (compressed, big-endian, hostile input), size
//! limits, and each numeric routine on hand-made cases.

mod async_chains;
mod devices;
mod devices_corpus;
mod eval_corpus;
mod eval_limits;
mod eval_npy;
mod eval_scan;
mod interp;
mod kernels_batchnorm;
mod kernels_conv;
mod kernels_corpus;
mod kernels_dot;
mod kernels_errors;
mod kernels_fft;
mod kernels_gather_scatter;
mod kernels_linalg;
mod kernels_rng;
mod kernels_sort;
mod kernels_window;
mod npy_formats;
mod npy_limits;
mod support;
mod tuple_operands;
mod xla_reduce_order;
