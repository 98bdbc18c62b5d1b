//! Dots as library calls: a dot whose operands and result are `f32` or `f64`, with one
//! contracting dimension and at most one free dimension per operand (any batch
//! dimensions), becomes a [`GemmCall`]: strided matrices (element strides from the
//! layouts) and a batch loop, for a GEMM library. Other dots stay generated loop kernels.

use hlo::{CompId, InstrId, Module, Opcode};

use crate::kir::ScalarType;

/// One GEMM (per batch element): `out[m, n] = sum_k lhs[m, k] * rhs[k, n]` with element
/// strides for every matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmShape {
    /// Element type (`f32` or `f64`).
    pub ty: ScalarType,
    /// Rows of the result.
    pub m: usize,
    /// Columns of the result.
    pub n: usize,
    /// The contracted extent.
    pub k: usize,
    /// Strides (rows, columns) of the lhs `[m, k]`.
    pub lhs: (isize, isize),
    /// Strides (rows, columns) of the rhs `[k, n]`.
    pub rhs: (isize, isize),
    /// Strides (rows, columns) of the result `[m, n]`.
    pub out: (isize, isize),
    /// Batch dimensions: extent and the element stride of lhs, rhs and result.
    pub batch: Vec<(usize, isize, isize, isize)>,
}

/// Element strides of every logical dimension of an array shape.
fn strides(shape: &hlo::Shape) -> Option<Vec<isize>> {
    let dims = shape.dims();
    let rank = dims.len();
    let m2m = shape
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_else(|| (0..rank as i64).rev().collect());
    let mut st = vec![0isize; rank];
    let mut s: isize = 1;
    for &d in &m2m {
        let d = usize::try_from(d).ok().filter(|&d| d < rank)?;
        st[d] = s;
        s = s.checked_mul(isize::try_from(dims[d]).ok()?)?;
    }
    Some(st)
}

/// Free dimensions `free` of an operand (extents `dims`, strides `st`) and their result
/// dimensions `out` (result extents `od`, strides `os`) as one matrix dimension:
/// `(extent, operand stride, result stride)`. Several free dimensions merge when each
/// steps over the next one whole in both the operand and the result (row-major among
/// themselves, as JAX's `x @ w` on a batch of rows gives).
fn merged(
    free: &[usize],
    dims: &[i64],
    st: &[isize],
    out: &[usize],
    od: &[i64],
    os: &[isize],
) -> Option<(usize, isize, isize)> {
    let (Some(&last), Some(&last_out)) = (free.last(), out.last()) else {
        return Some((1, 0, 0));
    };
    let mut extent = 1usize;
    for (i, (&d, &o)) in free.iter().zip(out).enumerate() {
        extent = extent.checked_mul(usize::try_from(dims[d]).ok()?)?;
        if let (Some(&next), Some(&next_out)) = (free.get(i + 1), out.get(i + 1)) {
            let whole = |s: &[isize], x: usize, n: i64, y: usize| {
                isize::try_from(n).ok().and_then(|n| n.checked_mul(s[y])) == Some(s[x])
            };
            if !whole(st, d, dims[next], next) || !whole(os, o, od[next_out], next_out) {
                return None;
            }
        }
    }
    Some((extent, st[last], os[last_out]))
}

/// The GEMM form of dot `id`, if it has one.
pub fn gemm_shape(module: &Module, comp: CompId, id: InstrId) -> Option<GemmShape> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Dot || instr.operands().len() != 2 {
        return None;
    }
    let (l, r) = (c.instr(instr.operands()[0]), c.instr(instr.operands()[1]));
    let ty = ScalarType::from_element(instr.shape().element_type()?)?;
    if !matches!(ty, ScalarType::F32 | ScalarType::F64)
        || l.shape().element_type() != instr.shape().element_type()
        || r.shape().element_type() != instr.shape().element_type()
    {
        return None;
    }
    let dn = instr.dot_dimension_numbers();
    if dn.lhs_contracting_dims.len() != 1 || dn.rhs_contracting_dims.len() != 1 {
        return None;
    }
    let (lr, rr) = (l.shape().dims().len(), r.shape().dims().len());
    let free = |rank: usize, batch: &[i64], contracting: i64| -> Vec<usize> {
        (0..rank)
            .filter(|&d| !batch.contains(&(d as i64)) && d as i64 != contracting)
            .collect()
    };
    let lfree = free(lr, &dn.lhs_batch_dims, dn.lhs_contracting_dims[0]);
    let rfree = free(rr, &dn.rhs_batch_dims, dn.rhs_contracting_dims[0]);
    if dn.lhs_batch_dims.len() != dn.rhs_batch_dims.len() {
        return None;
    }
    let (ls, rs, os) = (
        strides(l.shape())?,
        strides(r.shape())?,
        strides(instr.shape())?,
    );
    let (ld, rd, od) = (l.shape().dims(), r.shape().dims(), instr.shape().dims());
    let nb = dn.lhs_batch_dims.len();
    if od.len() != nb + lfree.len() + rfree.len() {
        return None;
    }
    let idx = |d: i64| usize::try_from(d).ok();
    let mut batch = Vec::with_capacity(nb);
    for (i, (&lb, &rb)) in dn.lhs_batch_dims.iter().zip(&dn.rhs_batch_dims).enumerate() {
        let (lb, rb) = (idx(lb)?, idx(rb)?);
        batch.push((usize::try_from(od[i]).ok()?, ls[lb], rs[rb], os[i]));
    }
    let (lk, rk) = (
        idx(dn.lhs_contracting_dims[0])?,
        idx(dn.rhs_contracting_dims[0])?,
    );
    let k = usize::try_from(ld[lk]).ok()?;
    let lout: Vec<usize> = (nb..nb + lfree.len()).collect();
    let rout: Vec<usize> = (nb + lfree.len()..od.len()).collect();
    let (m, lm, om) = merged(&lfree, ld, &ls, &lout, od, &os)?;
    let (n, rn, on) = merged(&rfree, rd, &rs, &rout, od, &os)?;
    Some(GemmShape {
        ty,
        m,
        n,
        k,
        lhs: (lm, ls[lk]),
        rhs: (rs[rk], rn),
        out: (om, on),
        batch,
    })
}
