//! The two-launch GPU select-and-scatter (overlapping windows; the decision and its
//! reason are [`fusion::gpu_select_scatter`]'s): launch 0, a thread per window, stores
//! the window's chosen tap number into a scratch array; launch 1, a thread per operand
//! element, folds the source values of the covering windows whose chosen tap is its own.
//! Launch 1's fold is the one-launch gather's (same windows, same order, same combiner
//! calls; `select_scatter.rs`), with the select read instead of re-run, so both give the
//! same bits as the sequential definition.

use affine::{Expr, Interval};
use hlo::{CompId, ElementType, InstrId};

use super::assemble::EmittedKernel;
use super::builder::BufferSource;
use super::gpu_select_scatter::launch_of;
use super::select_scatter::{Io, Sas};
use crate::error::CodegenError;
use crate::kir::{Access, CmpOp, Guard, ScalarType, Stmt, Value};

/// The kernels select-and-scatter `id` of `comp` launches on `target`: `Some(2)` where
/// its windows overlap and the GPU's two-launch form takes them (the program builder
/// then launches [`emit_select_scatter_pass`] 0 and 1 over a scratch array of chosen
/// taps), else `None` (one kernel of `emit_select_and_scatter`, or the library).
pub fn gpu_select_scatter_passes(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
) -> Option<usize> {
    if !target.gpu_emitters {
        return None;
    }
    let (_, k) = Sas::prepare(module, target, comp, id).ok()?;
    let sl = launch_of(module, comp, id, &k.window)?;
    sl.choose.is_some().then(|| sl.launches().len())
}

/// The scratch array of chosen taps: `s32`, the source's dimensions and layout.
pub fn chosen_taps_shape(module: &hlo::Module, comp: CompId, id: InstrId) -> hlo::Shape {
    let c = module.computation(comp);
    let src = c.instr(c.instr(id).operands()[1]).shape();
    hlo::Shape::array_with(
        ElementType::S32,
        src.dims().to_vec(),
        Vec::new(),
        src.layout()
            .map(|l| hlo::Layout::new(l.minor_to_major.clone())),
    )
}

/// Launch `pass` of the two-launch select-and-scatter `id` of `comp` as kernel `name`.
/// Buffers (the program builder binds them by source):
/// - pass 0 (a thread per window): the operand (`Operand(0)`), then the chosen taps it
///   writes ([`chosen_taps_shape`], `Output(1)`);
/// - pass 1 (a thread per operand element): the chosen taps (`Output(1)`, read), the
///   source (`Operand(1)`), the init unless a constant (`Operand(2)`), then the result
///   (`Output(0)`).
pub fn emit_select_scatter_pass(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    pass: usize,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let (mut b, k) = Sas::prepare(module, target, comp, id)?;
    let instr = module.computation(comp).instr(id);
    let sl = launch_of(module, comp, id, &k.window)
        .filter(|sl| target.gpu_emitters && sl.choose.is_some())
        .ok_or_else(|| {
            b.unsupported(
                "select-and-scatter",
                "two launches (overlapping windows on a GPU)",
            )
        })?;
    let taps_name = format!("{}.chosen_taps", instr.name());
    let taps_shape = chosen_taps_shape(module, comp, id);
    let mut body = Vec::new();
    let (title, launch) = match (pass, &sl.choose) {
        (0, Some(choose)) => {
            let x = k.add_operand(&mut b, 0)?;
            let taps = b.add_buffer(
                &taps_name,
                &taps_shape,
                Access::Out,
                BufferSource::Output(1),
            )?;
            b.dims = k.sdims.iter().map(|&n| Interval::new(0, n - 1)).collect();
            let s: Vec<Expr> = (0..k.sdims.len() as u32).map(Expr::dim).collect();
            let chosen = k.select_window(&mut b, x, &s, &mut body)?;
            b.note(taps, &s, &Guard::default());
            body.push(Stmt::Store {
                buf: taps,
                offset: b.offset(taps, &s),
                value: Value::Convert(Box::new(chosen), ScalarType::S32),
            });
            let title = format!(
                "select-and-scatter {} (choose: each window's chosen tap)\n{}",
                instr.name(),
                sl.pass_text(0)
            );
            (title, choose)
        }
        (1, Some(_)) => {
            let taps =
                b.add_buffer(&taps_name, &taps_shape, Access::In, BufferSource::Output(1))?;
            let src = k.add_operand(&mut b, 1)?;
            k.add_init(&mut b)?;
            let out = k.add_result(&mut b)?;
            b.dims = k.xdims.iter().map(|&n| Interval::new(0, n - 1)).collect();
            let t: Vec<Expr> = (0..k.xdims.len() as u32).map(Expr::dim).collect();
            k.gather(
                &mut b,
                Io { src, out },
                &t,
                &mut body,
                &mut |k, b, s, own, _| {
                    let chosen = k.load(b, taps, s, &Guard::default());
                    Ok(Value::Compare(
                        CmpOp::Eq,
                        false,
                        Box::new(Value::Convert(Box::new(chosen), ScalarType::S64)),
                        Box::new(Value::Index(own)),
                    ))
                },
            )?;
            let title = format!(
                "select-and-scatter {} (gather: one iteration per operand element over its \
                 windows' chosen taps)\n{}",
                instr.name(),
                sl.pass_text(1)
            );
            (title, &sl.launch)
        }
        _ => {
            return Err(CodegenError::Internal(format!(
                "select-and-scatter launch {pass} of 2"
            )))
        }
    };
    super::gpu_loop::launch_kernel(b, name, title, body, launch)
}
