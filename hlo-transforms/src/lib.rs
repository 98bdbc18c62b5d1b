//! Target-independent HLO passes, one module per pass, and the registry that names them
//! (for `hloc opt --passes`) and builds the default pipeline.

pub mod algsimp;
pub mod async_lowering;
mod async_tuples;
pub mod batchnorm_expander;
pub mod blocked_scan;
pub mod call_inliner;
pub mod choose_layouts;
pub mod concat_of_updates;
pub mod conditional_simplifier;
pub mod constant_folding;
pub mod conv_to_gemm;
pub mod copy_insertion;
pub mod cse;
pub mod dce;
pub mod dot_before_gather;
pub mod dot_decomposer;
pub mod dot_merger;
mod extendable_loop;
pub mod flatten_call_graph;
pub mod hoist_loop_invariant_dots;
pub mod layout;
pub mod ragged_dot_expander;
pub mod reshape_mover;
pub mod scan_lowering;
mod scatter_batching;
pub mod scatter_expander;
pub mod sharding_remover;
pub mod sort_simplifier;
pub mod transpose_folding;
pub mod tree_reduction;
pub mod tuple_simplifier;
pub mod while_loop_constant_sinking;
pub mod while_loop_invariant_code_motion;
pub mod while_loop_simplifier;
pub mod zero_sized;

pub use algsimp::AlgebraicSimplifier;
pub use async_lowering::AsyncLowering;
pub use batchnorm_expander::BatchNormExpander;
pub use blocked_scan::BlockedScans;
pub use call_inliner::CallInliner;
pub use choose_layouts::ChooseLayouts;
pub use concat_of_updates::ConcatOfUpdatedSlices;
pub use conditional_simplifier::ConditionalSimplifier;
pub use constant_folding::ConstantFolding;
pub use conv_to_gemm::ConvToGemm;
pub use copy_insertion::CopyInsertion;
pub use cse::Cse;
pub use dce::Dce;
pub use dot_before_gather::DotBeforeGather;
pub use dot_decomposer::DotDecomposer;
pub use dot_merger::DotMerger;
pub use flatten_call_graph::FlattenCallGraph;
pub use hoist_loop_invariant_dots::HoistLoopInvariantDots;
pub use layout::{LayoutAssignment, LayoutNormalization};
pub use ragged_dot_expander::RaggedDotExpander;
pub use reshape_mover::ReshapeMover;
pub use scan_lowering::ScanLowering;
pub use scatter_expander::ScatterExpander;
pub use sharding_remover::ShardingRemover;
pub use sort_simplifier::SortSimplifier;
pub use transpose_folding::TransposeFolding;
pub use tree_reduction::TreeReductionRewriter;
pub use tuple_simplifier::TupleSimplifier;
pub use while_loop_constant_sinking::WhileLoopConstantSinking;
pub use while_loop_invariant_code_motion::WhileLoopInvariantCodeMotion;
pub use while_loop_simplifier::WhileLoopSimplifier;
pub use zero_sized::ZeroSizedHloElimination;

use hlo::pass::{FixedPoint, Pass, Pipeline};

/// One new instance of every registered pass, in the order `--list-passes` shows them.
/// Names and descriptions come from the passes themselves.
pub fn all_passes() -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(Dce),
        Box::new(Cse),
        Box::new(TupleSimplifier),
        Box::new(AsyncLowering),
        Box::new(ShardingRemover),
        Box::new(CallInliner),
        Box::new(FlattenCallGraph),
        Box::new(AlgebraicSimplifier),
        Box::new(ConstantFolding::default()),
        Box::new(ZeroSizedHloElimination),
        Box::new(SortSimplifier),
        Box::new(ConditionalSimplifier),
        Box::new(WhileLoopSimplifier),
        Box::new(WhileLoopConstantSinking),
        Box::new(WhileLoopInvariantCodeMotion),
        Box::new(TransposeFolding),
        Box::new(DotDecomposer),
        Box::new(ConvToGemm::default()),
        Box::new(BatchNormExpander),
        Box::new(RaggedDotExpander),
        Box::new(TreeReductionRewriter::default()),
        Box::new(BlockedScans),
        Box::new(ScanLowering),
        Box::new(ReshapeMover),
        Box::new(DotMerger::default()),
        Box::new(DotBeforeGather),
        Box::new(HoistLoopInvariantDots),
        Box::new(ConcatOfUpdatedSlices),
        Box::new(ScatterExpander::default()),
        Box::new(ChooseLayouts),
        Box::new(LayoutAssignment),
        Box::new(LayoutNormalization),
        Box::new(CopyInsertion),
    ]
}

/// A new instance of the registered pass named `name`.
pub fn pass_by_name(name: &str) -> Option<Box<dyn Pass>> {
    all_passes().into_iter().find(|p| p.name() == name)
}

/// A pipeline named `name` of the comma-separated passes in `list` (`default` stands for
/// the default pipeline). Errors name the unknown pass.
pub fn pipeline_from_list(name: &str, list: &str) -> Result<Pipeline, String> {
    let mut p = Pipeline::new(name);
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "default" {
            p.add(Box::new(default_pipeline()));
            continue;
        }
        let pass = pass_by_name(item)
            .ok_or_else(|| format!("unknown pass `{item}` (see `hloc opt --list-passes`)"))?;
        p.add(pass);
    }
    Ok(p)
}

/// The default target-independent pipeline: SPMD annotations of a one-device module
/// removed, calls inlined, async chains lowered to their computations, then a
/// simplification fixed
/// point (the passes feed each other), then a final cleanup.
pub fn default_pipeline() -> Pipeline {
    let simplify = Pipeline::new("simplification")
        .with(AlgebraicSimplifier)
        .with(ConstantFolding::default())
        .with(SortSimplifier)
        .with(ConditionalSimplifier)
        .with(WhileLoopConstantSinking)
        .with(WhileLoopSimplifier)
        .with(WhileLoopInvariantCodeMotion)
        .with(TransposeFolding)
        .with(ReshapeMover)
        .with(TupleSimplifier)
        .with(Cse)
        .with(Dce);
    Pipeline::new("optimization")
        .with(ShardingRemover)
        .with(CallInliner)
        .with(AsyncLowering)
        .with(FlattenCallGraph)
        .with(BatchNormExpander)
        .with(ZeroSizedHloElimination)
        .with(FixedPoint::new(simplify))
}
