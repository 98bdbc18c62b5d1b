//! Scalar functions: a called computation over scalar parameters (a sort comparator, a
//! scatter combiner, select-and-scatter's select and scatter) as a one-block kernel over
//! rank-0 buffers. The runtime's library routines call it once per element pair with the
//! buffer pointers aimed at the elements themselves, so the comparator or combiner is
//! compiled code, not an interpreted computation.

use hlo::{CompId, Module, Shape};

use super::builder::{BufferSource, Builder, Leaf};
use crate::error::CodegenError;
use crate::kir::{self, Access, Grid, Kernel, Stmt};

/// Emits computation `comp` as kernel `name`: buffers are its parameters (in order,
/// each a scalar read at offset 0), then its root's leaves (each a scalar written at
/// offset 0). `what` names the instruction calling it (for messages).
pub fn emit_scalar_function(
    module: &Module,
    target: &crate::EmitTarget,
    comp: CompId,
    name: &str,
    what: &str,
) -> Result<Kernel, CodegenError> {
    let c = module.computation(comp);
    let mut b = Builder::new(module, target, what);
    for p in 0..c.parameters().len() {
        let pid = c
            .parameter(p)
            .ok_or_else(|| CodegenError::Internal(format!("`{}` lacks parameter {p}", c.name())))?;
        let shape = c.instr(pid).shape();
        if !shape.dims().is_empty() || shape.is_tuple() {
            return Err(b.unsupported("computation", "a called computation over non-scalars"));
        }
        let buf = b.add_buffer(
            c.instr(pid).name(),
            shape,
            Access::In,
            BufferSource::Operand(p),
        )?;
        b.leaves.insert((comp, pid), Leaf::Buffer(buf));
    }
    let root = c.root_instr();
    let outs: Vec<Shape> = if root.shape().is_tuple() {
        root.shape().tuple_shapes().to_vec()
    } else {
        vec![root.shape().clone()]
    };
    let mut out_bufs = Vec::with_capacity(outs.len());
    for (k, s) in outs.iter().enumerate() {
        if !s.dims().is_empty() || s.is_tuple() {
            return Err(b.unsupported(
                "computation",
                "a called computation with non-scalar results",
            ));
        }
        out_bufs.push(b.add_buffer(
            &format!("{}.{k}", root.name()),
            s,
            Access::Out,
            BufferSource::Output(k),
        )?);
    }
    let mut body = Vec::new();
    let vals = b.values(comp, c.root(), &[], false, &mut body)?;
    if vals.len() != out_bufs.len() {
        return Err(CodegenError::Internal(format!(
            "`{}` gives {} values for {} results",
            c.name(),
            vals.len(),
            out_bufs.len()
        )));
    }
    for (&o, v) in out_bufs.iter().zip(vals) {
        if v.ty() != b.buffers[o].ty {
            return Err(CodegenError::Internal(format!(
                "`{}` computes {} for a {} result",
                c.name(),
                v.ty(),
                b.buffers[o].ty
            )));
        }
        body.push(Stmt::Store {
            buf: o,
            offset: affine::Expr::constant(0),
            value: v,
        });
    }
    body.insert(
        0,
        Stmt::Comment(format!(
            "scalar function {} (called by {what}): every buffer is one element",
            c.name()
        )),
    );
    let kernel = Kernel {
        name: name.to_string(),
        buffers: b.buffers,
        grid: Grid::blocks(1, None),
        dims: b.dims,
        ranges: b.ranges,
        runtimes: b.runtimes,
        vars: b.vars,
        locals: b.locals,
        body,
    };
    kir::verify(&kernel)?;
    Ok(kernel)
}
