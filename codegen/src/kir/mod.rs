//! The kernel IR: one kernel's buffers, launch domain (blocks of threads), loops over
//! affine index expressions (serial, vectorized, over the block's threads), local arrays
//! per thread or per block, barriers, scalar bindings, loads, stores and the scalar
//! operations of every element type; its verifier and its text form, which parses back.

mod as_threads;
mod hoist;
mod hoist_summary;
mod kernel;
mod parse;
mod peel;
mod print;
mod subst;
mod types;
mod value;
mod verify;

pub use as_threads::blocks_as_threads;
pub use hoist::hoist_invariants;
pub use kernel::{
    atomic_binary, has_barrier, Access, BufferParam, Grid, Kernel, Local, LoopKind, MemorySpace,
    ShuffleKind, Stmt, ROW_LANES, WARP_LANES,
};
pub use parse::{parse_kernel, parse_kernels, KirParseError};
pub use peel::peel_guarded_points;
pub use print::{binop_name, cmp_name, guard_text, kernel_text, unop_name, value_text};
pub use subst::{for_each_load, rewrite_exprs, substitute_stmts};
pub use types::ScalarType;
pub use value::{BinOp, CmpOp, Const, Guard, UnOp, Value, VarId};
pub use verify::{verify, VerifyError};
