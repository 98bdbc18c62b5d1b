//! Emitters from HLO to kernel IR. Every operand index is an indexing map of the op
//! (`indexing::output_to_input`) composed through the fusion and simplified; each kernel
//! carries those maps as its first comment.

mod assemble;
mod builder;
mod column;
mod elemental;
mod gpu_column_reduce;
mod gpu_coords;
mod gpu_loop;
mod gpu_merge_sort;
mod gpu_reduce;
mod gpu_reduce_kernel;
mod gpu_row_reduce;
mod gpu_scatter;
mod gpu_scatter_sorted;
mod gpu_select_scatter;
mod gpu_select_scatter_two;
mod gpu_sort;
mod gpu_transpose;
mod grouped;
mod in_place;
mod kernel;
mod reach;
mod row_lanes;
mod scalar_fn;
mod scalar_ops;
mod scan;
mod select_scatter;
mod tiles;
mod transpose;
mod transpose_stage;
mod update_element;

pub use assemble::EmittedKernel;
pub use builder::BufferSource;
pub(crate) use column::keeps_columns;
pub use gpu_merge_sort::{emit_gpu_merge_pass, gpu_merge_sort_passes, merge_pass_writes_scratch};
pub use gpu_scatter_sorted::{emit_sorted_scatter_kernel, gpu_sorted_scatter};
pub use gpu_select_scatter_two::{
    chosen_taps_shape, emit_select_scatter_pass, gpu_select_scatter_passes,
};
pub use gpu_sort::{emit_gpu_sort, gpu_sort_applies};
pub use in_place::{emit_dus_in_place, emit_scatter_in_place};
pub use kernel::{check_instruction, emit_instruction};
pub(crate) use reach::unemittable;
pub use scalar_fn::emit_scalar_function;
pub use select_scatter::emit_select_and_scatter;
