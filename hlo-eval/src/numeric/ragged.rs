//! `ragged-dot`: a dot whose lhs is split into groups along one "ragged" dimension by
//! `group_sizes`, in JAX's three modes (the roles of the dimensions are
//! [`hlo::ragged_dot`], shared with the verifier):
//!
//! 1. ragged non-contracting lhs dimension, rhs with a group dimension:
//!    `[b, m, k] x [g, b, k, n] -> [b, m, n]`, rows of group `i` use `rhs[i]`;
//! 2. ragged contracting dimension: `[b, m, k] x [b, k, n] -> [g, b, m, n]`, group `i`
//!    contracts over its own range of `k`;
//! 3. ragged batch dimension: `[b, m, k] x [b, k, n] -> [b, m, n]`, the plain dot (each
//!    batch meets only its own rhs batch, whatever group it is in).
//!
//! Computed as the definition reads, one dense dot per group of the operands with every
//! element outside the group zeroed: group `i` of a prefix row `p` (a row of
//! `group_sizes: [p..., g]`, or the one row of `[g]`) covers `[ends[p][i] - sizes[p][i],
//! ends[p][i])` along the ragged dimension, `ends` the running sums. That is JAX's
//! reference rule, so positions after the last group belong to no group (zero rows in
//! mode 1, no term in mode 2) and a negative size gives an empty range that moves the
//! following groups back.

use super::dot::{dot_bufs, DotDims};
use super::util::{dims_of, elem_type, int_values, operand, product, strides};
use super::widen::{load, store, Buf, Domain, Num};
use super::KernelError;
use hlo::ragged_dot::{ragged_dims, RaggedDims, RaggedMode};
use hlo::{Instruction, Literal};

/// `buf` with the elements whose `keep` is false zeroed.
fn mask(buf: &Buf, keep: &[bool]) -> Buf {
    fn go<T: Num>(v: &[T], keep: &[bool]) -> Vec<T> {
        v.iter()
            .zip(keep)
            .map(|(&x, &k)| if k { x } else { T::default() })
            .collect()
    }
    match buf {
        Buf::Int(v) => Buf::Int(go(v, keep)),
        Buf::F32(v) => Buf::F32(go(v, keep)),
        Buf::F64(v) => Buf::F64(go(v, keep)),
        Buf::C64(v) => Buf::C64(go(v, keep)),
        Buf::C128(v) => Buf::C128(go(v, keep)),
    }
}

/// `n` zeros in `like`'s domain.
fn zeros_like(like: &Buf, n: usize) -> Buf {
    match like {
        Buf::Int(_) => Buf::Int(vec![0; n]),
        Buf::F32(_) => Buf::F32(vec![0.0; n]),
        Buf::F64(_) => Buf::F64(vec![0.0; n]),
        Buf::C64(_) => Buf::C64(vec![Default::default(); n]),
        Buf::C128(_) => Buf::C128(vec![Default::default(); n]),
    }
}

/// The group ranges of every prefix row: `ranges[p][i] = (start, end)` (JAX's rule, see
/// the module doc).
fn group_ranges(sizes: &[i64], groups: usize) -> Vec<Vec<(i64, i64)>> {
    sizes
        .chunks(groups.max(1))
        .map(|row| {
            let mut end = 0i64;
            row.iter()
                .map(|&s| {
                    end = end.saturating_add(s);
                    (end.saturating_sub(s), end)
                })
                .collect()
        })
        .collect()
}

/// For an operand of dimensions `dims` whose ragged dimension is `ragged` and whose prefix
/// dimensions are `prefix`: which elements group `g` keeps.
fn group_mask(
    dims: &[usize],
    ragged: usize,
    prefix: &[usize],
    ranges: &[Vec<(i64, i64)>],
    g: usize,
) -> Vec<bool> {
    let st = strides(dims);
    let coord = |i: usize, d: usize| (i / st[d]) % dims[d].max(1);
    (0..product(dims))
        .map(|i| {
            let row = prefix
                .iter()
                .fold(0usize, |acc, &d| acc * dims[d] + coord(i, d));
            let (lo, hi) = ranges[row.min(ranges.len() - 1)][g];
            let r = coord(i, ragged) as i64;
            lo <= r && r < hi
        })
        .collect()
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
    let ld = dims_of(lhs.shape(), W)?;
    let rd = dims_of(rhs.shape(), W)?;
    let dn = instr.dot_dimension_numbers();
    let roles: RaggedDims = ragged_dims(instr, ld.len(), rd.len())
        .map_err(|e| KernelError::Invalid(format!("{W}: {e}")))?;
    let gs_dims: Vec<i64> = gs.shape().dims().to_vec();
    let ld64: Vec<i64> = ld.iter().map(|&d| d as i64).collect();
    let groups = roles
        .group_count(&ld64, &gs_dims)
        .map_err(|e| KernelError::Invalid(format!("{W}: {e}")))? as usize;
    let ranges = group_ranges(&int_values(gs, W)?, groups);
    let out_ty = elem_type(instr.shape(), W)?;
    let domain = Domain::of(&[lhs.element_type(), rhs.element_type(), out_ty]);
    let a = load(domain, lhs, W)?;
    let b = load(domain, rhs, W)?;
    let out_dims = dims_of(instr.shape(), W)?;
    let lhs_mask = |g| group_mask(&ld, roles.lhs_ragged, &roles.lhs_prefix, &ranges, g);
    let (result, expected) = match (roles.mode, roles.rhs_group, roles.rhs_ragged) {
        (RaggedMode::NonContracting, Some(gd), _) => {
            // Drop the rhs group dimension and renumber the rhs dims after it.
            if rd[gd] != groups {
                return Err(KernelError::Invalid(format!(
                    "{W}: {groups} groups for {} rhs groups",
                    rd[gd]
                )));
            }
            let renumber = |v: &[i64]| -> Vec<i64> {
                v.iter()
                    .map(|&d| if d > gd as i64 { d - 1 } else { d })
                    .collect()
            };
            let mut dn1 = dn.clone();
            dn1.rhs_batch_dims = renumber(&dn.rhs_batch_dims);
            dn1.rhs_contracting_dims = renumber(&dn.rhs_contracting_dims);
            let rd1: Vec<usize> = rd
                .iter()
                .enumerate()
                .filter(|&(d, _)| d != gd)
                .map(|(_, &s)| s)
                .collect();
            let dd = DotDims::new(&dn1, &ld, &rd1, W)?;
            let per_group = product(&rd1);
            let gst = strides(&rd)[gd];
            let mut acc: Option<Buf> = None;
            for g in 0..groups {
                // rhs[g] along the group dimension, as a row-major array of rd1.
                let offsets: Vec<usize> = (0..per_group)
                    .map(|j| {
                        let (outer, inner) = (j / gst, j % gst);
                        outer * gst * groups + g * gst + inner
                    })
                    .collect();
                let part = dot_bufs(&mask(&a, &lhs_mask(g)), &ld, &b.pick(&offsets), &rd1, &dd)?;
                match acc.as_mut() {
                    None => acc = Some(part),
                    Some(acc) => add_into(acc, &part)?,
                }
            }
            let expected = dd.out_dims(&ld, &rd1);
            let result = match acc {
                Some(r) => r,
                // No groups: every row is outside them.
                None => zeros_like(&a, product(&expected)),
            };
            (result, expected)
        }
        (RaggedMode::Contracting, None, Some(rr)) => {
            // One dot per group of both operands restricted to the group's range (so that
            // an infinity outside the group meets no zero).
            let dd = DotDims::new(&dn, &ld, &rd, W)?;
            let mut acc = None;
            for g in 0..groups {
                let rhs_mask = group_mask(&rd, rr, &roles.rhs_prefix, &ranges, g);
                let part = dot_bufs(&mask(&a, &lhs_mask(g)), &ld, &mask(&b, &rhs_mask), &rd, &dd)?;
                append(&mut acc, part)?;
            }
            let mut expected = vec![groups];
            expected.extend(dd.out_dims(&ld, &rd));
            let result = match acc {
                Some(r) => r,
                None => zeros_like(&a, 0),
            };
            (result, expected)
        }
        (RaggedMode::Batch, None, Some(_)) => {
            let dd = DotDims::new(&dn, &ld, &rd, W)?;
            (dot_bufs(&a, &ld, &b, &rd, &dd)?, dd.out_dims(&ld, &rd))
        }
        _ => {
            return Err(KernelError::Invalid(format!(
                "{W}: the dimension numbers do not pair the ragged dimension"
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
