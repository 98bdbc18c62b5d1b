//! `sort` and top-k: a stable merge sort of each line's permutation (the comparator is
//! only asked "is `a` strictly before `b`", so an inconsistent comparator gives some
//! order, never a failure), then every operand gathered through it.

use std::ffi::c_void;

use codegen::kir::ScalarType;
use hlo_eval::numeric::merge_sort;

use super::{for_each_index, Arr, ScalarFn};
use crate::error::RuntimeError;

fn check_dims(ins: &[Arr], outs: &[Arr]) -> Result<(), RuntimeError> {
    let first = ins
        .first()
        .ok_or_else(|| RuntimeError::Internal("sort without operands".into()))?;
    if ins.len() != outs.len()
        || ins.iter().chain(outs).any(|a| a.dims != first.dims)
        || ins.iter().zip(outs).any(|(a, b)| a.ty != b.ty)
    {
        return Err(RuntimeError::Internal(
            "sort operands and results differ".into(),
        ));
    }
    Ok(())
}

/// Sorts every operand along `dim` by the comparator over all operands' element pairs.
pub(crate) fn sort(
    ins: &mut [Arr],
    outs: &mut [Arr],
    dim: usize,
    cmp: ScalarFn,
) -> Result<(), RuntimeError> {
    check_dims(ins, outs)?;
    let dims = ins[0].dims.clone();
    let len = *dims
        .get(dim)
        .ok_or_else(|| RuntimeError::Internal("sort dimension out of range".into()))?;
    let mut outer = dims.clone();
    outer[dim] = 1;
    let mut ptrs: Vec<*mut c_void> = Vec::with_capacity(2 * ins.len() + 1);
    for_each_index(&outer, |base| {
        let mut idx = base.to_vec();
        // Physical offsets of the line in every input.
        let lines: Vec<Vec<usize>> = ins
            .iter()
            .map(|a| {
                (0..len)
                    .map(|i| {
                        idx[dim] = i;
                        a.offset(&idx)
                    })
                    .collect()
            })
            .collect();
        let mut perm: Vec<usize> = (0..len).collect();
        let mut less = |i: usize, j: usize| -> Result<bool, RuntimeError> {
            ptrs.clear();
            for (a, line) in ins.iter_mut().zip(&lines) {
                ptrs.push(a.ptr(line[i]));
                ptrs.push(a.ptr(line[j]));
            }
            cmp.test(&mut ptrs)
        };
        merge_sort(&mut perm, &mut less)?;
        for (k, out) in outs.iter_mut().enumerate() {
            for (pos, &src) in perm.iter().enumerate() {
                idx[dim] = pos;
                let o = out.offset(&idx);
                out.copy_elem(o, &ins[k], lines[k][src]);
            }
        }
        Ok(())
    })
}

/// A key whose integer order is XLA's total order of the element: `-NaN < -inf < ... <
/// -0 < +0 < ... < inf < NaN` for floats, the numeric order for integers.
fn total_order_key(a: &Arr, e: usize) -> i128 {
    fn float_key(bits: u64, width: u32) -> i128 {
        let sign = 1u64 << (width - 1);
        let mag = bits & (sign - 1);
        if bits & sign != 0 {
            -(mag as i128) - 1
        } else {
            mag as i128
        }
    }
    let b = &a.bytes()[e * a.width..(e + 1) * a.width];
    let mut word = [0u8; 8];
    word[..a.width].copy_from_slice(b);
    let bits = u64::from_ne_bytes(word);
    match a.ty {
        ScalarType::F8E4M3FN | ScalarType::F8E5M2 => float_key(bits, 8),
        ScalarType::F16 | ScalarType::BF16 => float_key(bits, 16),
        ScalarType::F32 => float_key(bits, 32),
        ScalarType::F64 => float_key(bits, 64),
        ScalarType::U64 => i128::from(bits),
        _ => i128::from(a.int(e)),
    }
}

/// The first `k` elements of every row (the last dimension): values and indices.
pub(crate) fn topk(
    ins: &mut [Arr],
    outs: &mut [Arr],
    k: usize,
    largest: bool,
    cmp: Option<ScalarFn>,
) -> Result<(), RuntimeError> {
    let bad = || RuntimeError::Internal("top-k operands and results differ".into());
    let (x, [values, indices]) = (ins.first_mut().ok_or_else(bad)?, outs) else {
        return Err(bad());
    };
    let rank = x.dims.len();
    let n = *x.dims.last().ok_or_else(bad)?;
    if k > n || values.dims.last() != Some(&k) || indices.dims != values.dims || values.ty != x.ty {
        return Err(bad());
    }
    let mut outer = x.dims.clone();
    outer[rank - 1] = 1;
    let mut ptrs: Vec<*mut c_void> = Vec::with_capacity(5);
    for_each_index(&outer, |base| {
        let mut idx = base.to_vec();
        let line: Vec<usize> = (0..n)
            .map(|i| {
                idx[rank - 1] = i;
                x.offset(&idx)
            })
            .collect();
        let mut perm: Vec<usize> = (0..n).collect();
        match cmp {
            Some(f) => {
                let mut less = |i: usize, j: usize| -> Result<bool, RuntimeError> {
                    let (mut ii, mut jj) = (i as i32 as i64 as u64, j as i32 as i64 as u64);
                    ptrs.clear();
                    ptrs.push(x.ptr(line[i]));
                    ptrs.push(x.ptr(line[j]));
                    ptrs.push((&mut ii as *mut u64).cast());
                    ptrs.push((&mut jj as *mut u64).cast());
                    // A two-parameter comparator looks at the values only.
                    ptrs.truncate(f.params);
                    f.test(&mut ptrs)
                };
                merge_sort(&mut perm, &mut less)?;
            }
            None => {
                let keys: Vec<i128> = line.iter().map(|&e| total_order_key(x, e)).collect();
                let mut less = |i: usize, j: usize| -> Result<bool, RuntimeError> {
                    Ok(if largest {
                        keys[i] > keys[j]
                    } else {
                        keys[i] < keys[j]
                    })
                };
                merge_sort(&mut perm, &mut less)?;
            }
        }
        for (pos, &src) in perm.iter().take(k).enumerate() {
            idx[rank - 1] = pos;
            let o = values.offset(&idx);
            values.copy_elem(o, x, line[src]);
            let o = indices.offset(&idx);
            indices.set_int(o, src as i64);
        }
        Ok(())
    })
}
