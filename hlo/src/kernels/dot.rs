//! `dot` with general dimension numbers: operands are transposed to `[batch, M, K]` and
//! `[batch, K, N]` and multiplied with an i-k-j loop (unit stride in the inner loop).

use super::numeric::{load, permuted_offsets, store, with_bufs, Buf, Domain, Num};
use super::util::{dim_list, dims_of, operand, product};
use super::KernelError;
use crate::{Instruction, Literal};

/// `[B, M, K] x [B, K, N] -> [B, M, N]`, row-major, accumulating in order of `k`.
pub(crate) fn batched_matmul<T: Num>(
    a: &[T],
    b: &[T],
    bs: usize,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    let mut c = vec![T::default(); bs * m * n];
    for p in 0..bs {
        let (a, b) = (
            &a[p * m * k..(p + 1) * m * k],
            &b[p * k * n..(p + 1) * k * n],
        );
        let c = &mut c[p * m * n..(p + 1) * m * n];
        for i in 0..m {
            let row = &mut c[i * n..(i + 1) * n];
            for kk in 0..k {
                let x = a[i * k + kk];
                let brow = &b[kk * n..(kk + 1) * n];
                for (o, &y) in row.iter_mut().zip(brow) {
                    *o = o.add(x.mul(y));
                }
            }
        }
    }
    c
}

/// Evaluates a `dot` instruction.
pub(crate) fn dot(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    let lhs = operand(operands, 0, "dot")?;
    let rhs = operand(operands, 1, "dot")?;
    let dn = instr.dot_dimension_numbers();
    let ld = dims_of(lhs.shape(), "dot lhs")?;
    let rd = dims_of(rhs.shape(), "dot rhs")?;
    let lb = dim_list(&dn.lhs_batch_dims, ld.len(), "dot lhs_batch_dims")?;
    let rb = dim_list(&dn.rhs_batch_dims, rd.len(), "dot rhs_batch_dims")?;
    let lc = dim_list(
        &dn.lhs_contracting_dims,
        ld.len(),
        "dot lhs_contracting_dims",
    )?;
    let rc = dim_list(
        &dn.rhs_contracting_dims,
        rd.len(),
        "dot rhs_contracting_dims",
    )?;
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return Err(KernelError::Invalid(
            "dot: batch or contracting dimension counts differ".into(),
        ));
    }
    for (&l, &r) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
        if ld[l] != rd[r] {
            return Err(KernelError::Invalid(format!(
                "dot: lhs dimension {l} (size {}) does not match rhs dimension {r} (size {})",
                ld[l], rd[r]
            )));
        }
    }
    let lf: Vec<usize> = (0..ld.len())
        .filter(|d| !lb.contains(d) && !lc.contains(d))
        .collect();
    let rf: Vec<usize> = (0..rd.len())
        .filter(|d| !rb.contains(d) && !rc.contains(d))
        .collect();
    let size =
        |dims: &[usize], sel: &[usize]| product(&sel.iter().map(|&d| dims[d]).collect::<Vec<_>>());
    let (bs, m, k, n) = (
        size(&ld, &lb),
        size(&ld, &lf),
        size(&ld, &lc),
        size(&rd, &rf),
    );
    let out_shape = instr.shape();
    let out_dims = dims_of(out_shape, "dot result")?;
    let expected: Vec<usize> = lb
        .iter()
        .map(|&d| ld[d])
        .chain(lf.iter().map(|&d| ld[d]))
        .chain(rf.iter().map(|&d| rd[d]))
        .collect();
    if out_dims != expected {
        return Err(KernelError::Invalid(format!(
            "dot: result dimensions {out_dims:?} differ from batch, lhs free, rhs free {expected:?}"
        )));
    }
    let out_ty = super::util::elem_type(out_shape, "dot result")?;
    let domain = Domain::of(&[lhs.element_type(), rhs.element_type(), out_ty]);
    let lperm: Vec<usize> = lb.iter().chain(&lf).chain(&lc).copied().collect();
    let rperm: Vec<usize> = rb.iter().chain(&rc).chain(&rf).copied().collect();
    let a = load(domain, lhs, "dot lhs")?.pick(&permuted_offsets(&ld, &lperm));
    let b = load(domain, rhs, "dot rhs")?.pick(&permuted_offsets(&rd, &rperm));
    let c = with_bufs!((&a => x, &b => y), batched_matmul(x, y, bs, m, k, n), dot);
    store(c, out_shape, "dot")
}
