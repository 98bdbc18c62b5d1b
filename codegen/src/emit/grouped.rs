//! Multi-output fusions whose outputs differ in shape (a horizontal fusion of independent
//! loops, a reduction beside the elementwise values it was computed from): the outputs
//! are grouped by shape and each group gets a loop nest of its own in one kernel. The
//! grid's blocks are dealt out to the groups in turn: in a large kernel a group gets one
//! block per index of its most-major dimension and each block runs the nest of the group
//! it belongs to (a guard on the block variable), so values two groups share are computed
//! once per group. A small kernel is one block running the nests one after the other,
//! and a later nest reads the values an earlier one stored.

use affine::{Expr, Interval, Var};
use hlo::{CompId, InstrId, Opcode};

use super::assemble::{finish_grid, loop_nest, store_output, EmittedKernel};
use super::builder::{Builder, Leaf};
use crate::error::CodegenError;
use crate::kir::{Access, Guard, Stmt};

/// Outputs of one shape: their dimensions, physical order (most major first) and the
/// output buffers (with their root operand).
struct Group {
    dims: Vec<i64>,
    order: Vec<usize>,
    outputs: Vec<(usize, InstrId)>,
}

/// The kernel of a fusion whose tuple root `(comp, root)` stores into `out_bufs`
/// (one per root operand) of several shapes.
pub(super) fn grouped_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    (comp, root): (CompId, InstrId),
    out_bufs: &[usize],
) -> Result<EmittedKernel, CodegenError> {
    let c = b.module.computation(comp);
    let root_instr = c.instr(root);
    if root_instr.opcode() != Opcode::Tuple || root_instr.operands().len() != out_bufs.len() {
        return Err(b.unsupported(
            root_instr.opcode().as_str(),
            "outputs of different shapes from a root other than a tuple",
        ));
    }
    let mut groups: Vec<Group> = Vec::new();
    for (&o, &value) in out_bufs.iter().zip(root_instr.operands()) {
        let buf = &b.buffers[o];
        if buf.dims.iter().any(|&d| d <= 0) {
            return Err(CodegenError::Internal(format!(
                "kernel for `{}` has an output without elements",
                b.instr_name
            )));
        }
        let order: Vec<usize> = buf
            .minor_to_major
            .iter()
            .rev()
            .map(|&d| d as usize)
            .collect();
        match groups
            .iter_mut()
            .find(|g| g.dims == buf.dims && g.order == order)
        {
            Some(g) => g.outputs.push((o, value)),
            None => groups.push(Group {
                dims: buf.dims.clone(),
                order,
                outputs: vec![(o, value)],
            }),
        }
    }
    // In a large kernel (by its largest buffer: a small output may be a large reduction)
    // each group gets one block per index of its most-major dimension, so the groups run
    // in parallel and each computes what it needs. A small kernel is one block running
    // the nests in turn, in the order their roots are defined, and a later nest reads a
    // value an earlier one stored instead of computing it again.
    let large = b
        .buffers
        .iter()
        .any(|buf| buf.dims.iter().product::<i64>() >= b.target.small_kernel_elements);
    if !large {
        let position: std::collections::HashMap<InstrId, usize> = c
            .def_before_use_order()
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i))
            .collect();
        let last_root = |g: &Group| {
            g.outputs
                .iter()
                .map(|&(_, v)| position.get(&v).copied().unwrap_or(0))
                .max()
                .unwrap_or(0)
        };
        groups.sort_by_key(last_root);
    }
    let blocks: Vec<i64> = groups
        .iter()
        .map(|g| match g.order.first() {
            Some(&major) if large => g.dims[major],
            _ => 1,
        })
        .collect();
    // A large kernel's block variable (none in a small one: it is one block).
    let total: i64 = blocks.iter().sum();
    let pid = large.then(|| b.new_range(Interval::new(0, total - 1)));
    let mut nests = Vec::with_capacity(groups.len());
    let mut first = 0;
    let mut notes = Vec::new();
    for (i, (g, &n)) in groups.iter().zip(&blocks).enumerate() {
        let guard = pid.map(|p| Guard {
            conds: vec![(Expr::var(p), first, first + n - 1)],
        });
        b.guards.extend(guard.clone());
        b.memo.push(Default::default());
        let body = group_nest(&mut b, comp, g, pid.filter(|_| n > 1).map(|p| (p, first)));
        b.memo.pop();
        if guard.is_some() {
            b.guards.pop();
        }
        notes.push(format!(
            "outputs of shape {:?}: {}",
            g.dims,
            match (pid, n) {
                (None, _) => "in turn".to_string(),
                (Some(_), 1) => format!("block {first}"),
                (Some(_), _) => format!("blocks {first}..{}", first + n - 1),
            }
        ));
        nests.push((guard, body?));
        first += n;
        if pid.is_none() && i + 1 < groups.len() {
            // Later nests read these values from their outputs.
            for &(o, value) in &g.outputs {
                b.leaves.insert((comp, value), Leaf::Buffer(o));
                b.buffers[o].access = Access::InOut;
            }
        }
    }
    // In turn, or: if (block in group 0) { nest 0 } else if (block in group 1) { ... } else
    // { last }.
    let mut body = Vec::new();
    for (guard, nest) in nests.into_iter().rev() {
        body = match guard {
            Some(guard) if !body.is_empty() => vec![Stmt::If {
                guard,
                body: nest,
                else_body: body,
            }],
            Some(_) => nest,
            None => nest.into_iter().chain(body).collect(),
        };
    }
    let title = format!(
        "{title}\nmulti-output fusion of {} output shapes, one loop nest each: {}",
        groups.len(),
        notes.join("; ")
    );
    finish_grid(b, name, title, body, pid.map(|p| (p, total)))
}

/// Group `g`'s loop nest; with `split` = `(block variable, first block)` the group's
/// blocks are its most-major dimension: block `pid` is index `pid - first` of it.
fn group_nest(
    b: &mut Builder<'_>,
    comp: CompId,
    g: &Group,
    split: Option<(Var, i64)>,
) -> Result<Vec<Stmt>, CodegenError> {
    let mut index = vec![Expr::constant(0); g.dims.len()];
    let mut loops: Vec<(Var, i64)> = Vec::new();
    for (i, &d) in g.order.iter().enumerate() {
        match split {
            Some((pid, first)) if i == 0 => {
                index[d] = b.simplify(Expr::var(pid) - Expr::constant(first));
            }
            _ if g.dims[d] == 1 => index[d] = Expr::constant(0),
            _ => {
                let v = b.new_range(Interval::new(0, g.dims[d] - 1));
                index[d] = Expr::var(v);
                loops.push((v, g.dims[d]));
            }
        }
    }
    let mut body = Vec::new();
    for &(o, value) in &g.outputs {
        let v = b
            .values(comp, value, &index, false, &mut body)?
            .into_iter()
            .next()
            .ok_or_else(|| CodegenError::Internal(format!("`{}`: no value", b.instr_name)))?;
        store_output(b, o, &index, v, &mut body)?;
    }
    Ok(loop_nest(&loops, body))
}
