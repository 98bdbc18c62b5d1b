//! Target-independent HLO passes, one module per pass, and the registry that names them
//! (for `hloc opt --passes`) and builds the default pipeline.

pub mod algsimp;
pub mod call_inliner;
pub mod cse;
pub mod dce;
pub mod flatten_call_graph;
pub mod tuple_simplifier;
pub mod util;

pub use algsimp::AlgebraicSimplifier;
pub use call_inliner::CallInliner;
pub use cse::Cse;
pub use dce::Dce;
pub use flatten_call_graph::FlattenCallGraph;
pub use tuple_simplifier::TupleSimplifier;

use crate::pass::{FixedPoint, Pass, Pipeline};

/// One new instance of every registered pass, in the order `--list-passes` shows them.
/// Names and descriptions come from the passes themselves.
pub fn all_passes() -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(Dce),
        Box::new(Cse),
        Box::new(TupleSimplifier),
        Box::new(CallInliner),
        Box::new(FlattenCallGraph),
        Box::new(AlgebraicSimplifier),
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

/// The default target-independent pipeline: a simplification fixed point (the passes
/// feed each other), then a final cleanup.
pub fn default_pipeline() -> Pipeline {
    let simplify = Pipeline::new("simplification")
        .with(TupleSimplifier)
        .with(Cse)
        .with(Dce);
    Pipeline::new("optimization").with(FixedPoint::new(simplify))
}
