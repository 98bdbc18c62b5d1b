//! The C printer: kernels as portable C functions over a block range, one translation
//! unit per module with a small prelude.

mod prelude;
mod printer;

pub use prelude::PRELUDE;
pub use printer::{c_type, expr_c, kernel_c, translation_unit, value_c};
