//! The pass framework: a [`Pass`] rewrites a [`Module`] and says whether it changed it;
//! [`Pipeline`]s run passes in order and nest; [`FixedPoint`] repeats a pass until nothing
//! changes (with an iteration cap). A [`PassContext`] carries what a run is instrumented
//! with: passes disabled by name, the verifier hook run after every pass, per-pass timing
//! and change counts ([`PassStats`]), and XLA-style dumps ([`DumpConfig`]).
//!
//! ```
//! use hlo::pass::{Pass, PassContext, Pipeline};
//! let mut module = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n").unwrap();
//! let mut pipeline = Pipeline::new("empty");
//! let mut ctx = PassContext::default();
//! assert_eq!(pipeline.run_in(&mut module, &mut ctx).unwrap(), false);
//! ```

mod context;
mod dump;
mod error;
mod pipeline;
mod stats;
pub mod verify;

pub use context::{Pass, PassContext, VerifyHook};
pub use dump::{dump_file_name, module_dump_prefix, DumpConfig, PassFilter};
pub use error::PassError;
pub use pipeline::{FixedPoint, Pipeline};
pub use stats::{PassStat, PassStats};
