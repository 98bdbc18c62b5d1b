//! Dots as library calls: a dot whose operands and result are all `f64`, or each `f32`,
//! `bf16` or `f16` (computed in `f32`: half operands widened exactly, the sums in `f32`,
//! a half result rounded once, as XLA:CPU runs them), or whose operands are both `s8`
//! and result `s32` (summed in wrapping `s32`, as XLA's integer dots; only on backends
//! that run integer GEMMs: [`super::DotsToGemms`] converts them for the others), becomes
//! a [`GemmShape`] (strided matrices, element strides from the layouts, and a batch
//! loop, for a GEMM library) when its dimensions merge into matrices: the contracting
//! dimensions into one (each stepping over the next one whole in both
//! operands, in one order), each operand's free dimensions into one (likewise in the
//! operand and the result); batch dimensions take any strides. Dimensions of size 1 take
//! no part. [`super::DotsToGemms`] rewrites the other dots (other types, dimensions that
//! do not merge) into ones that do.
//!
//! Free dimensions that do not merge are not looped over here (a GEMM per index of the
//! outer ones, the other operand's stride 0): on the mixture-of-experts einsum
//! `td,edf->etf` (`f32[8,256,512]` weights, 1024 tokens) that measured 10-15% slower
//! than packing the weights into `[d, e, f]` once and running one GEMM.

use hlo::attrs::DotDimensionNumbers;
use hlo::{CompId, InstrId, Module, Opcode, Shape};

use codegen::kir::ScalarType;

/// One GEMM (per batch element): `out[m, n] = sum_k lhs[m, k] * rhs[k, n]` with element
/// strides for every matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmShape {
    /// The type the product is computed in (`f32` or `f64`; `s32` for `s8` operands).
    pub ty: ScalarType,
    /// The lhs's stored type: `ty`, or `bf16`/`f16` where `ty` is `f32` (widened while
    /// the library packs it, so no separate convert writes an `f32` copy).
    pub lhs_ty: ScalarType,
    /// The rhs's stored type (as `lhs_ty`).
    pub rhs_ty: ScalarType,
    /// The result's stored type: `ty`, or `bf16`/`f16` (the `f32` sums rounded once).
    pub out_ty: ScalarType,
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

/// The type a GEMM of these stored types computes in: `f64` when all are `f64`, `f32`
/// when each is `f32`, `bf16` or `f16`, `s32` for `s8` operands and an `s32` result;
/// `None` for any other mix.
fn compute_type(types: [ScalarType; 3]) -> Option<ScalarType> {
    if types.iter().all(|&t| t == ScalarType::F64) {
        return Some(ScalarType::F64);
    }
    if types == [ScalarType::S8, ScalarType::S8, ScalarType::S32] {
        return Some(ScalarType::S32);
    }
    types
        .iter()
        .all(|t| matches!(t, ScalarType::F32 | ScalarType::BF16 | ScalarType::F16))
        .then_some(ScalarType::F32)
}

impl GemmShape {
    /// Element offsets of batch element `i` (mixed radix over the batch dims, the last
    /// fastest) in the lhs, the rhs and the result.
    pub fn batch_offsets(&self, i: usize) -> (isize, isize, isize) {
        let (mut rest, mut lo, mut ro, mut oo) = (i, 0isize, 0isize, 0isize);
        for &(n, ls, rs, os) in self.batch.iter().rev() {
            let j = (rest % n) as isize;
            rest /= n;
            lo += j * ls;
            ro += j * rs;
            oo += j * os;
        }
        (lo, ro, oo)
    }

    /// Whether every operand and the result are stored in the compute type.
    pub fn uniform(&self) -> bool {
        self.lhs_ty == self.ty && self.rhs_ty == self.ty && self.out_ty == self.ty
    }

    /// The profile and thunk-listing name of the product's types: `f32`, or
    /// `bf16xbf16->bf16` where a type is stored in another type than it computes in.
    pub fn type_label(&self) -> String {
        if self.uniform() {
            self.ty.to_string()
        } else {
            format!("{}x{}->{}", self.lhs_ty, self.rhs_ty, self.out_ty)
        }
    }
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

/// Dimensions `(extent, stride in x, stride in y)` as one: `(extent, x stride, y stride)`
/// of the innermost, when, ordered by their `x` strides, each steps over the next inner
/// one whole in both `x` and `y`. Dimensions of size 1 take no part (none left is
/// `(1, 0, 0)`); one of size 0 makes `(0, 0, 0)`.
fn merged(dims: &[(usize, isize, isize)]) -> Option<(usize, isize, isize)> {
    if dims.iter().any(|d| d.0 == 0) {
        return Some((0, 0, 0));
    }
    let mut dims: Vec<(usize, isize, isize)> = dims.iter().copied().filter(|d| d.0 > 1).collect();
    dims.sort_by_key(|d| d.1);
    let Some(&(_, x, y)) = dims.first() else {
        return Some((1, 0, 0));
    };
    let mut extent = 1usize;
    for (i, &(n, xs, ys)) in dims.iter().enumerate() {
        if let Some(&(_, nx, ny)) = dims.get(i + 1) {
            let whole = |s: isize| isize::try_from(n).ok().and_then(|n| n.checked_mul(s));
            if whole(xs) != Some(nx) || whole(ys) != Some(ny) {
                return None;
            }
        }
        extent = extent.checked_mul(n)?;
    }
    Some((extent, x, y))
}

/// The GEMM form of dot `id`, if it has one.
pub fn gemm_shape(module: &Module, comp: CompId, id: InstrId) -> Option<GemmShape> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Dot || instr.operands().len() != 2 {
        return None;
    }
    let (l, r) = (c.instr(instr.operands()[0]), c.instr(instr.operands()[1]));
    gemm_form(
        l.shape(),
        r.shape(),
        instr.shape(),
        &instr.dot_dimension_numbers(),
    )
}

/// The GEMM form of a dot of operands `lhs` and `rhs` with result `out` and dimension
/// numbers `dn`, if it has one (see the module documentation).
pub fn gemm_form(
    lhs: &Shape,
    rhs: &Shape,
    out: &Shape,
    dn: &DotDimensionNumbers,
) -> Option<GemmShape> {
    let stored = |s: &Shape| ScalarType::from_element(s.element_type()?);
    let (lhs_ty, rhs_ty, out_ty) = (stored(lhs)?, stored(rhs)?, stored(out)?);
    let ty = compute_type([lhs_ty, rhs_ty, out_ty])?;
    if lhs.is_dynamic() || rhs.is_dynamic() || out.is_dynamic() {
        return None;
    }
    let idx = |v: &[i64], rank: usize| -> Option<Vec<usize>> {
        v.iter()
            .map(|&d| usize::try_from(d).ok().filter(|&d| d < rank))
            .collect()
    };
    let (ld, rd, od) = (lhs.dims(), rhs.dims(), out.dims());
    let (lb, rb) = (
        idx(&dn.lhs_batch_dims, ld.len())?,
        idx(&dn.rhs_batch_dims, rd.len())?,
    );
    let (lc, rc) = (
        idx(&dn.lhs_contracting_dims, ld.len())?,
        idx(&dn.rhs_contracting_dims, rd.len())?,
    );
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return None;
    }
    let free = |rank: usize, b: &[usize], c: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|d| !b.contains(d) && !c.contains(d))
            .collect()
    };
    let (lfree, rfree) = (free(ld.len(), &lb, &lc), free(rd.len(), &rb, &rc));
    let nb = lb.len();
    if od.len() != nb + lfree.len() + rfree.len() {
        return None;
    }
    let (ls, rs, os) = (strides(lhs)?, strides(rhs)?, strides(out)?);
    let ext = |d: i64| usize::try_from(d).ok();
    let mut batch = Vec::with_capacity(nb);
    for (i, (&lb, &rb)) in lb.iter().zip(&rb).enumerate() {
        batch.push((ext(od[i])?, ls[lb], rs[rb], os[i]));
    }
    let contracting: Vec<(usize, isize, isize)> = lc
        .iter()
        .zip(&rc)
        .map(|(&l, &r)| Some((ext(ld[l])?, ls[l], rs[r])))
        .collect::<Option<_>>()?;
    let lrows: Vec<(usize, isize, isize)> = lfree
        .iter()
        .enumerate()
        .map(|(i, &d)| Some((ext(ld[d])?, ls[d], os[nb + i])))
        .collect::<Option<_>>()?;
    let rcols: Vec<(usize, isize, isize)> = rfree
        .iter()
        .enumerate()
        .map(|(i, &d)| Some((ext(rd[d])?, rs[d], os[nb + lfree.len() + i])))
        .collect::<Option<_>>()?;
    let (k, lk, rk) = merged(&contracting)?;
    let (m, lm, om) = merged(&lrows)?;
    let (n, rn, on) = merged(&rcols)?;
    Some(GemmShape {
        ty,
        lhs_ty,
        rhs_ty,
        out_ty,
        m,
        n,
        k,
        lhs: (lm, lk),
        rhs: (rk, rn),
        out: (om, on),
        batch,
    })
}
