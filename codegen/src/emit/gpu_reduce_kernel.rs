//! The GPU reduction kernels: the launch [`fusion::gpu_reduction::reduction_of`] chose
//! picks the emitter (rows or columns), whose body goes in the launch's grid, with the
//! launch and thread map in the kernel's leading comment.

use fusion::gpu_launch::GpuEmitter;
use hlo::CompId;

use super::assemble::{finish_launch, EmittedKernel};
use super::builder::Builder;
use super::gpu_reduce::ReductionPlan;
use crate::error::CodegenError;
use crate::kir::Grid;

/// The kernel of `plan` for the reduce at `(comp, plan.reduce)`, storing into `out_bufs`.
pub(super) fn reduction_kernel(
    b: Builder<'_>,
    name: &str,
    title: String,
    comp: CompId,
    out_bufs: &[usize],
    plan: ReductionPlan,
) -> Result<EmittedKernel, CodegenError> {
    let title = format!(
        "{title}\n{}\nthread map: {}",
        plan.launch.dims_text(),
        plan.launch.thread_map_text()
    );
    let (blocks, threads) = (plan.launch.blocks, plan.launch.threads);
    let (b, block, body) = match plan.launch.emitter {
        GpuEmitter::RowReduction { lanes } => {
            super::gpu_row_reduce::row_body(b, comp, out_bufs, &plan, lanes)?
        }
        GpuEmitter::ColumnReduction { columns, parts } => {
            super::gpu_column_reduce::column_body(b, comp, out_bufs, &plan, columns, parts)?
        }
        GpuEmitter::Loop | GpuEmitter::Transpose => {
            return Err(CodegenError::Internal(format!(
                "a launch of another emitter in the reduction emitter for `{}`",
                b.instr_name
            )))
        }
    };
    let grid = Grid {
        blocks,
        block_var: Some(block),
        threads,
    };
    finish_launch(b, name, title, body, grid)
}
