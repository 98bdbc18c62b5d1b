//! `ragged-dot`: a dot whose lhs is split into groups along one "ragged" dimension by
//! `group_sizes`, in JAX's three modes:
//!
//! 1. ragged non-contracting lhs dimension, rhs with a group dimension:
//!    `[b, m, k] x [g, b, k, n] -> [b, m, n]`, rows of group `i` use `rhs[i]`;
//! 2. ragged contracting dimension: `[b, m, k] x [b, k, n] -> [g, b, m, n]`, group `i`
//!    contracts over its own range of `k`;
//! 3. ragged batch dimension: `[b, m, k] x [b, k, n] -> [b, m, n]`.
//!
//! Positions after the last group contribute nothing (zeros). Only `group_sizes` of
//! shape `[g]` is supported; negative sizes count as 0.

use super::dot::{dot_bufs, DotDims};
use super::util::{dim, dims_of, elem_type, int_values, operand, product, strides};
use super::widen::{load, store, Buf, Domain, Num};
use super::KernelError;
use hlo::attrs::{AttrName, AttrValue};
use hlo::{Instruction, Literal};

fn list_attr(instr: &Instruction, name: AttrName) -> Vec<i64> {
    match instr.attr(&name) {
        Some(AttrValue::IntList(v)) => v.clone(),
        _ => Vec::new(),
    }
}

/// `buf` with every element whose coordinate along `axis` is outside `lo..hi` zeroed.
fn mask(buf: &Buf, dims: &[usize], axis: usize, lo: usize, hi: usize) -> Buf {
    fn go<T: Num>(v: &[T], st: usize, n: usize, lo: usize, hi: usize) -> Vec<T> {
        v.iter()
            .enumerate()
            .map(|(i, &x)| {
                let c = (i / st) % n;
                if c >= lo && c < hi {
                    x
                } else {
                    T::default()
                }
            })
            .collect()
    }
    let (st, n) = (strides(dims)[axis], dims[axis].max(1));
    match buf {
        Buf::Int(v) => Buf::Int(go(v, st, n, lo, hi)),
        Buf::F32(v) => Buf::F32(go(v, st, n, lo, hi)),
        Buf::F64(v) => Buf::F64(go(v, st, n, lo, hi)),
        Buf::C64(v) => Buf::C64(go(v, st, n, lo, hi)),
        Buf::C128(v) => Buf::C128(go(v, st, n, lo, hi)),
    }
}

/// `acc += x` elementwise.
fn add_into(acc: &mut Buf, x: &Buf) -> Result<(), KernelError> {
    fn go<T: Num>(a: &mut [T], x: &[T]) {
        a.iter_mut().zip(x).for_each(|(a, &x)| *a = a.add(x));
    }
    match (acc, x) {
        (Buf::Int(a), Buf::Int(x)) => go(a, x),
        (Buf::F32(a), Buf::F32(x)) => go(a, x),
        (Buf::F64(a), Buf::F64(x)) => go(a, x),
        (Buf::C64(a), Buf::C64(x)) => go(a, x),
        (Buf::C128(a), Buf::C128(x)) => go(a, x),
        _ => return Err(KernelError::Invalid("ragged-dot: mixed domains".into())),
    }
    Ok(())
}

/// Appends `x` to `acc` (same domain).
fn append(acc: &mut Option<Buf>, x: Buf) -> Result<(), KernelError> {
    match (acc.as_mut(), x) {
        (None, x) => *acc = Some(x),
        (Some(Buf::Int(a)), Buf::Int(x)) => a.extend(x),
        (Some(Buf::F32(a)), Buf::F32(x)) => a.extend(x),
        (Some(Buf::F64(a)), Buf::F64(x)) => a.extend(x),
        (Some(Buf::C64(a)), Buf::C64(x)) => a.extend(x),
        (Some(Buf::C128(a)), Buf::C128(x)) => a.extend(x),
        _ => return Err(KernelError::Invalid("ragged-dot: mixed domains".into())),
    }
    Ok(())
}

/// Evaluates `ragged-dot`.
pub(crate) fn ragged_dot(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    const W: &str = "ragged-dot";
    let lhs = operand(operands, 0, W)?;
    let rhs = operand(operands, 1, W)?;
    let gs = operand(operands, 2, W)?;
    if gs.shape().rank() != 1 {
        return Err(KernelError::Unsupported(format!(
            "{W}: group_sizes with batch dimensions ({})",
            gs.shape()
        )));
    }
    let sizes: Vec<usize> = int_values(gs, W)?
        .iter()
        .map(|&s| s.max(0) as usize)
        .collect();
    let ld = dims_of(lhs.shape(), W)?;
    let rd = dims_of(rhs.shape(), W)?;
    let ragged = match list_attr(instr, AttrName::LhsRaggedDims).as_slice() {
        [r] => dim(*r, ld.len(), W)?,
        _ => {
            return Err(KernelError::Invalid(format!(
                "{W}: needs exactly one lhs_ragged_dims"
            )))
        }
    };
    let group = match list_attr(instr, AttrName::RhsGroupDims).as_slice() {
        [] => None,
        [g] => Some(dim(*g, rd.len(), W)?),
        _ => {
            return Err(KernelError::Invalid(format!(
                "{W}: at most one rhs_group_dims"
            )))
        }
    };
    let dn = instr.dot_dimension_numbers();
    let out_ty = elem_type(instr.shape(), W)?;
    let domain = Domain::of(&[lhs.element_type(), rhs.element_type(), out_ty]);
    let a = load(domain, lhs, W)?;
    let b = load(domain, rhs, W)?;
    let out_dims = dims_of(instr.shape(), W)?;
    // Group i covers lhs coordinates starts[i]..starts[i] + sizes[i] along the ragged dim.
    let mut ranges = Vec::with_capacity(sizes.len());
    let mut start = 0usize;
    for &s in &sizes {
        let end = start.saturating_add(s).min(ld[ragged]);
        ranges.push((start.min(ld[ragged]), end));
        start = end;
    }
    let contracting = dn.lhs_contracting_dims.contains(&(ragged as i64));
    let batch = dn.lhs_batch_dims.contains(&(ragged as i64));
    let (result, expected) = match (group, contracting, batch) {
        (Some(gd), false, false) => {
            // Mode 1: drop the rhs group dimension and renumber the rhs dims after it.
            let g = rd[gd];
            if g != sizes.len() {
                return Err(KernelError::Invalid(format!(
                    "{W}: {} group sizes for {g} rhs groups",
                    sizes.len()
                )));
            }
            let renumber = |v: &[i64]| -> Vec<i64> {
                v.iter().map(|&d| if d > gd as i64 { d - 1 } else { d }).collect()
            };
            if dn.rhs_batch_dims.contains(&(gd as i64)) || dn.rhs_contracting_dims.contains(&(gd as i64)) {
                return Err(KernelError::Invalid(format!("{W}: the rhs group dimension is also batch or contracting")));
            }
            let mut dn1 = dn.clone();
            dn1.rhs_batch_dims = renumber(&dn.rhs_batch_dims);
            dn1.rhs_contracting_dims = renumber(&dn.rhs_contracting_dims);
            let rd1: Vec<usize> = rd.iter().enumerate().filter(|&(d, _)| d != gd).map(|(_, &s)| s).collect();
            let dd = DotDims::new(&dn1, &ld, &rd1, W)?;
            let per_group = product(&rd1);
            let gst = strides(&rd)[gd];
            let mut acc: Option<Buf> = None;
            for (i, &(lo, hi)) in ranges.iter().enumerate() {
                // rhs[i] along the group dimension, as a row-major array of rd1.
                let offsets: Vec<usize> = (0..per_group)
                    .map(|j| {
                        let (outer, inner) = (j / gst, j % gst);
                        outer * gst * g + i * gst + inner
                    })
                    .collect();
                let part = dot_bufs(&mask(&a, &ld, ragged, lo, hi), &ld, &b.pick(&offsets), &rd1, &dd)?;
                match acc.as_mut() {
                    None => acc = Some(part),
                    Some(acc) => add_into(acc, &part)?,
                }
            }
            let expected = dd.out_dims(&ld, &rd1);
            let result = match acc {
                Some(r) => r,
                None => return Err(KernelError::Invalid(format!("{W}: no groups"))),
            };
            (result, expected)
        }
        (None, true, false) => {
            // Mode 2: one dot per group over its slice of the contracting dimension.
            let dd = DotDims::new(&dn, &ld, &rd, W)?;
            let mut acc = None;
            for &(lo, hi) in &ranges {
                append(&mut acc, dot_bufs(&mask(&a, &ld, ragged, lo, hi), &ld, &b, &rd, &dd)?)?;
            }
            let mut expected = vec![sizes.len()];
            expected.extend(dd.out_dims(&ld, &rd));
            let result = match acc {
                Some(r) => r,
                None => return Err(KernelError::Invalid(format!("{W}: no groups"))),
            };
            (result, expected)
        }
        (None, false, true) => {
            // Mode 3: batches after the last group are zero.
            let dd = DotDims::new(&dn, &ld, &rd, W)?;
            let total = ranges.last().map_or(0, |r| r.1);
            (dot_bufs(&mask(&a, &ld, ragged, 0, total), &ld, &b, &rd, &dd)?, dd.out_dims(&ld, &rd))
        }
        _ => {
            return Err(KernelError::Invalid(format!(
                "{W}: rhs_group_dims must be given exactly when the ragged dimension is not contracting or batch"
            )))
        }
    };
    if expected != out_dims {
        return Err(KernelError::Invalid(format!(
            "{W}: result dimensions {out_dims:?} differ from {expected:?}"
        )));
    }
    store(result, instr.shape(), W)
}
