//! Integration tests of the target-independent passes, in one binary: text cases per pass
//! (`tests/passes/<pass>/*.test`), corpus and random modules evaluated before and after.

mod pass_batchnorm;
mod pass_blocked_scan;
mod pass_concat_updates;
mod pass_conv_to_gemm;
mod pass_conv_to_gemm_grouped;
mod pass_corpus;
mod pass_fixed_point;
mod pass_golden;
mod pass_layout;
mod pass_random;
mod pass_scatter;
mod pass_semantics;
mod pass_splat;
mod pass_transpose_folding;
mod pass_tree_reduction;
