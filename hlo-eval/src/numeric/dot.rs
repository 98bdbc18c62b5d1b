//! `dot` with general dimension numbers: operands are transposed to `[batch, M, K]` and
//! `[batch, K, N]` and multiplied with an i-k-j loop (unit stride in the inner loop).

use super::util::{dim_list, dims_of, operand, product};
use super::widen::{load, permuted_offsets, store, with_bufs, Buf, Domain, Num};
use super::KernelError;
use hlo::attrs::DotDimensionNumbers;
use hlo::literal::ArrayLiteral;
use hlo::{Instruction, Literal};

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

/// Dot dimension numbers resolved against operand dimensions.
pub(crate) struct DotDims {
    lb: Vec<usize>,
    rb: Vec<usize>,
    lc: Vec<usize>,
    rc: Vec<usize>,
    lf: Vec<usize>,
    rf: Vec<usize>,
}

impl DotDims {
    /// Checks `dn` against operand dimensions `ld` and `rd`.
    pub(crate) fn new(
        dn: &DotDimensionNumbers,
        ld: &[usize],
        rd: &[usize],
        what: &str,
    ) -> Result<DotDims, KernelError> {
        let lb = dim_list(&dn.lhs_batch_dims, ld.len(), what)?;
        let rb = dim_list(&dn.rhs_batch_dims, rd.len(), what)?;
        let lc = dim_list(&dn.lhs_contracting_dims, ld.len(), what)?;
        let rc = dim_list(&dn.rhs_contracting_dims, rd.len(), what)?;
        if lb.len() != rb.len() || lc.len() != rc.len() {
            return Err(KernelError::Invalid(format!(
                "{what}: batch or contracting dimension counts differ"
            )));
        }
        for (&l, &r) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
            if ld[l] != rd[r] {
                return Err(KernelError::Invalid(format!(
                    "{what}: lhs dimension {l} (size {}) does not match rhs dimension {r} (size {})",
                    ld[l], rd[r]
                )));
            }
        }
        let lf = (0..ld.len())
            .filter(|d| !lb.contains(d) && !lc.contains(d))
            .collect();
        let rf = (0..rd.len())
            .filter(|d| !rb.contains(d) && !rc.contains(d))
            .collect();
        Ok(DotDims {
            lb,
            rb,
            lc,
            rc,
            lf,
            rf,
        })
    }

    /// Result dimensions: batch, lhs free, rhs free.
    pub(crate) fn out_dims(&self, ld: &[usize], rd: &[usize]) -> Vec<usize> {
        self.lb
            .iter()
            .map(|&d| ld[d])
            .chain(self.lf.iter().map(|&d| ld[d]))
            .chain(self.rf.iter().map(|&d| rd[d]))
            .collect()
    }
}

/// The dot of values already in one domain; the result is row-major over
/// [`DotDims::out_dims`].
pub(crate) fn dot_bufs(
    a: &Buf,
    ld: &[usize],
    b: &Buf,
    rd: &[usize],
    dd: &DotDims,
) -> Result<Buf, KernelError> {
    let size =
        |dims: &[usize], sel: &[usize]| product(&sel.iter().map(|&d| dims[d]).collect::<Vec<_>>());
    let (bs, m, k, n) = (
        size(ld, &dd.lb),
        size(ld, &dd.lf),
        size(ld, &dd.lc),
        size(rd, &dd.rf),
    );
    let lperm: Vec<usize> = dd.lb.iter().chain(&dd.lf).chain(&dd.lc).copied().collect();
    let rperm: Vec<usize> = dd.rb.iter().chain(&dd.rc).chain(&dd.rf).copied().collect();
    let a = a.pick(&permuted_offsets(ld, &lperm));
    let b = b.pick(&permuted_offsets(rd, &rperm));
    Ok(with_bufs!((&a => x, &b => y), batched_matmul(x, y, bs, m, k, n), dot))
}

/// A dot-like instruction checked against its lhs and rhs: their dimensions, the
/// dimension numbers resolved, and the result element type (its dimensions verified to be
/// batch, lhs free, rhs free).
pub(crate) struct Contraction {
    pub(crate) ld: Vec<usize>,
    pub(crate) rd: Vec<usize>,
    pub(crate) dd: DotDims,
    pub(crate) out_ty: hlo::ElementType,
}

impl Contraction {
    /// Resolves `instr` (named `what` in errors) over operands `lhs` and `rhs`.
    pub(crate) fn new(
        instr: &Instruction,
        lhs: &ArrayLiteral,
        rhs: &ArrayLiteral,
        what: &str,
    ) -> Result<Contraction, KernelError> {
        let ld = dims_of(lhs.shape(), &format!("{what} lhs"))?;
        let rd = dims_of(rhs.shape(), &format!("{what} rhs"))?;
        let dd = DotDims::new(&instr.dot_dimension_numbers(), &ld, &rd, what)?;
        let result = format!("{what} result");
        let out_dims = dims_of(instr.shape(), &result)?;
        let expected = dd.out_dims(&ld, &rd);
        if out_dims != expected {
            return Err(KernelError::Invalid(format!(
                "{what}: result dimensions {out_dims:?} differ from batch, lhs free, rhs free {expected:?}"
            )));
        }
        let out_ty = super::util::elem_type(instr.shape(), &result)?;
        Ok(Contraction { ld, rd, dd, out_ty })
    }

    /// `a` (lhs values) times `b` (rhs values), stored in the instruction's result shape.
    pub(crate) fn finish(
        &self,
        instr: &Instruction,
        a: &Buf,
        b: &Buf,
        what: &str,
    ) -> Result<Literal, KernelError> {
        store(
            dot_bufs(a, &self.ld, b, &self.rd, &self.dd)?,
            instr.shape(),
            what,
        )
    }
}

/// Evaluates a `dot` instruction.
pub(crate) fn dot(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    let lhs = operand(operands, 0, "dot")?;
    let rhs = operand(operands, 1, "dot")?;
    let c = Contraction::new(instr, lhs, rhs, "dot")?;
    let domain = Domain::of(&[lhs.element_type(), rhs.element_type(), c.out_ty]);
    let a = load(domain, lhs, "dot lhs")?;
    let b = load(domain, rhs, "dot rhs")?;
    c.finish(instr, &a, &b, "dot")
}
