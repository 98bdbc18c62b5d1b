//! The C printer: kernels as portable C functions over a block range, one translation
//! unit per module with a small prelude.

mod headers;
mod prelude;
mod printer;
mod scalars;
mod shared_bodies;
mod unit_balance;
mod units;
mod vecmath;

pub use prelude::{parts, prelude_for, PreludePart, BASE_PRELUDE, PRELUDE};
pub use printer::{
    kernel_c, kernel_c_called, math_style, math_style_called, stmts_c, value_c, value_in, CDialect,
    CpuDialect, MathStyle, SMALL_KERNEL_ELEMENTS,
};
pub use scalars::{c_type, expr_c};
pub use units::{
    translation_unit, translation_unit_called, translation_units, translation_units_called,
};
pub use vecmath::shared::units_sharing_math;
pub use vecmath::VECMATH;
