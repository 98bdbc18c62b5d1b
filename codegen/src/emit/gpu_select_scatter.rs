//! The GPU select-and-scatter emitter: the select-scatter emitter's per-element body (the
//! tiled form at a window, the gather form at an operand element; see
//! `select_scatter.rs`) run by the threads of the launch
//! [`fusion::gpu_select_scatter::select_scatter_launch`] decides: the thread map's result
//! is the iteration space's index, bound to the kernel's block and thread variables and
//! substituted into the body, its domain guarding it. Each output element is written by
//! one thread, so the kernel needs no atomics and its bits do not depend on the threads'
//! order.
//!
//! Where the windows overlap, the program builder launches two kernels instead
//! (`gpu_select_scatter_two.rs`): a thread per window storing its chosen tap's number
//! into a scratch array, then a thread per operand element folding the source values of
//! the covering windows whose chosen tap is its own. The second kernel's fold is the
//! one-launch gather's (same windows, same order, same combiner calls), only the select
//! is read instead of re-run, so both give the same bits.

use fusion::gpu_select_scatter::{select_scatter_launch, SelectScatterLaunch};
use hlo::attrs::WindowDim;
use hlo::{CompId, InstrId};

use super::assemble::EmittedKernel;
use super::builder::Builder;
use crate::error::CodegenError;
use crate::kir::Stmt;

/// The buffers and window a select-and-scatter kernel is launched over.
pub(super) struct SasBuffers<'w> {
    /// The window.
    pub window: &'w [WindowDim],
    /// The operand's buffer.
    pub operand: usize,
    /// The source's buffer.
    pub source: usize,
    /// The result's buffer.
    pub out: usize,
}

/// Wraps `body` (the select-scatter emitter's statements at the iteration space's index
/// `(d0, ..)`: the source's for the tiled form, the operand's for the gather form) in
/// the GPU launch of its form.
pub(super) fn gpu_kernel(
    b: Builder<'_>,
    name: &str,
    title: String,
    body: Vec<Stmt>,
    k: &SasBuffers<'_>,
) -> Result<EmittedKernel, CodegenError> {
    let (x, s, o) = (
        &b.buffers[k.operand],
        &b.buffers[k.source],
        &b.buffers[k.out],
    );
    let sl = select_scatter_launch(
        k.window,
        (&x.dims, &o.minor_to_major),
        (&s.dims, &s.minor_to_major),
    )
    .map_err(|e| CodegenError::Internal(format!("select-and-scatter launch: {e}")))?
    .ok_or_else(|| {
        CodegenError::Internal(
            "a select-and-scatter window the CPU form takes but no GPU launch".into(),
        )
    })?;
    let title = format!("{title}\n{}", sl.dims_text());
    super::gpu_loop::launch_kernel(b, name, title, body, &sl.launch)
}

/// The GPU launch of select-and-scatter `id` of `comp` from its shapes' layouts (none:
/// row-major), or `None` where no GPU form takes its window.
pub(super) fn launch_of(
    module: &hlo::Module,
    comp: CompId,
    id: InstrId,
    window: &[WindowDim],
) -> Option<SelectScatterLaunch> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let m2m = |s: &hlo::Shape| {
        s.layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_default()
    };
    let (x, src) = (c.instr(instr.operands()[0]), c.instr(instr.operands()[1]));
    select_scatter_launch(
        window,
        (x.shape().dims(), &m2m(instr.shape())),
        (src.shape().dims(), &m2m(src.shape())),
    )
    .ok()
    .flatten()
}
