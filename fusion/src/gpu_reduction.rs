//! Which reduction emitter a GPU kernel gets: one decision, asked by the code generator
//! and by `hloc indexing --coalescing`, so the code and the analysis cannot disagree. The
//! hero is a single-input reduce (alone, or a fusion's root, or read by an elementwise
//! epilogue at the output index); its reducer must be one the lanes may reassociate; the
//! launch is the row emitter's or the column emitter's, by which physical dimensions are
//! reduced.

use device::Device;
use hlo::{InstrId, Opcode};

use crate::gpu_column_reduction::column_reduction_launch;
use crate::gpu_hero::hero_under_epilogue;
use crate::gpu_launch::Launch;
use crate::gpu_row_reduction::row_reduction_launch;

/// The reduction emitter's choice for the kernel rooted at `root` of `comp` (`fused`:
/// `comp` is a fusion's computation; otherwise the kernel is `root` alone, its operands
/// other kernels' results): its hero (a single-input reduce, the root itself or, in a
/// fusion, read by elementwise ops at their own index, see [`hero_under_epilogue`]) and the
/// launch — the row emitter's over the input's minor-most physical dimensions, the column
/// emitter's over dimensions with kept ones minor to them — when the reducer is one associative and commutative op the lanes may reassociate
/// (`hlo::ir::reducer`) on a type of 32 bits or more, or a max or min of narrower floats
/// (exact in any order; a 16-bit float sum keeps its in-order loop). The code generator
/// and `hloc indexing --coalescing` both ask this, so they cannot disagree.
pub fn reduction_of(
    module: &hlo::Module,
    comp: &hlo::Computation,
    root: InstrId,
    fused: bool,
    device: &Device,
) -> Option<(InstrId, Launch)> {
    use hlo::ir::reducer::{classify, Reducer};
    let hero = if fused {
        hero_under_epilogue(comp, root, |i| i.opcode() == Opcode::Reduce)?
    } else {
        root
    };
    let instr = comp.instr(hero);
    if instr.opcode() != Opcode::Reduce || instr.operands().len() != 2 {
        return None;
    }
    let kind = classify(module, instr.to_apply()?)?;
    let ty = instr.shape().element_type()?;
    let exact_in_any_order = matches!(kind, Reducer::Max | Reducer::Min);
    let narrow = ty.byte_width().is_some_and(|w| w < 4);
    if ty.is_complex() || (ty.is_float() && narrow && !exact_in_any_order) {
        return None;
    }
    let input = comp.instr(instr.operands()[0]).shape().as_array()?;
    let m2m = input
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_default();
    let reduced = instr.dimensions()?;
    let launch = match row_reduction_launch(input.dims(), &m2m, reduced, device).ok()? {
        Some(l) => l,
        None => column_reduction_launch(input.dims(), &m2m, reduced, device).ok()??,
    };
    Some((hero, launch))
}
