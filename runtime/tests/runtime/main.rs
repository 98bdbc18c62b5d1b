//! The runtime crate's integration tests, in one binary: every corpus program compiled and
//! compared with the reference evaluator, library calls, random modules, dots, gathers,
//! scatters, sorts, reductions, scans, reduce-windows, pads, convolutions, conversions and loops,
//! and HLO's semantics corner cases run compiled.

mod carried_loops;
mod chosen_layouts;
mod corpus;
mod cuda_executor;
mod cuda_host;
mod differential;
mod donation;
mod dots;
mod fallbacks;
mod full_reduction_broadcast;
mod gen;
mod gpu_emitters;
mod gpu_in_place;
mod gpu_scatters;
mod gpu_select_scatter;
mod gpu_sorts;
mod gpu_split_reductions;
mod half_dots;
mod half_reductions;
mod in_place;
mod in_place_rows;
mod library;
mod long_sums;
mod padding_only_convolutions;
mod ragged_dots;
mod random_boundaries;
mod random_collectives;
mod random_converts;
mod random_convolutions;
mod random_dots;
mod random_dynamic;
mod random_gathers;
mod random_linalg;
mod random_loops;
mod random_modules;
mod random_nested_tuples;
mod random_reductions;
mod random_scans;
mod random_scatters;
mod random_select_scatter;
mod random_sorts;
mod random_windows;
mod recompute_limit;
mod reductions;
mod remat_patches;
mod select_arms;
mod semantics;
mod spmd;
mod streamed;
mod streamed_loops;
mod thin_dots;
mod transposes;
mod xla_reduce_order;
