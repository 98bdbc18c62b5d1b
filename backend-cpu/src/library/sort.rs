//! `sort` and top-k. A comparator recognized as a key order ([`SortOrder`]) sorts typed
//! keys ([`sort_keys`](super::sort_keys)): lines in parallel, then every operand gathered
//! through the permutations in parallel. Any other comparator runs a stable merge sort of
//! each line's permutation calling the compiled comparator (only asked "is `a` strictly
//! before `b`", so an inconsistent comparator gives some order, never a failure).

use std::ffi::c_void;

use codegen::kir::ScalarType;
use hlo_eval::numeric::merge_sort;
use plan::SortOrder;
use rayon::prelude::*;

use super::arrays::{for_each_index, Arr, ScalarFn};
use super::sort_keys::{select_line, sort_line, sort_values, KeySpec, Line};
use crate::error::BackendError;

/// Work (elements) below which a sort's lines run on the calling thread.
const PARALLEL_MIN: usize = 1 << 14;

/// The physical offset of the first element of every line of `a` along `dim`, in
/// row-major order of the other dimensions.
fn line_bases(a: &Arr, dim: usize) -> Vec<usize> {
    let mut outer = a.dims.clone();
    outer[dim] = 1;
    let mut bases = Vec::with_capacity(outer.iter().product());
    let _ = for_each_index(&outer, |idx| {
        bases.push(a.offset(idx));
        Ok(())
    });
    bases
}

/// The key specs of `order` over `ins`, when every key names an operand of its type (for
/// top-k, operand 1 is the `s32` position).
fn specs_of(order: &SortOrder, ins: &[Arr], topk: bool) -> Option<Vec<KeySpec>> {
    order
        .keys
        .iter()
        .map(|k| {
            let ty = match ins.get(k.operand) {
                _ if topk && k.operand == 1 => ScalarType::S32,
                _ if topk && k.operand > 1 => return None,
                Some(a) => a.ty,
                None => return None,
            };
            (ty == k.ty).then(|| KeySpec::new(k)).flatten()
        })
        .collect()
}

/// The lines of the keys of line `l` (`bases[i]`: operand `i`'s line starts).
fn key_lines<'a>(
    specs: &[KeySpec],
    ins: &'a [Arr],
    bases: &[Vec<usize>],
    dim: usize,
    l: usize,
) -> Option<Vec<Line<'a>>> {
    specs
        .iter()
        .map(|s| match ins.get(s.operand) {
            Some(a) if bases.len() > s.operand => Line::new(a, bases[s.operand][l], a.strides[dim]),
            _ => Some(Line::index()),
        })
        .collect()
}

/// A pointer shared by the threads of a gather, each writing its own elements.
#[derive(Clone, Copy)]
struct SharedOut<T>(*mut T);
// SAFETY: the pointer is only written through at distinct elements by different threads
// (see `gather_typed`), and `T` is plain data.
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as for `Send`: no two threads touch one element.
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper).
    fn get(&self) -> *mut T {
        self.0
    }
}

/// `dst` line `l` position `p` = `src` line `l` position `perm[l * n + p]` for every line
/// (`*_bases`: line starts; `*_stride`: the sorted dimension's stride).
fn gather_typed<T: bytemuck::Pod + Send + Sync>(
    src: &[T],
    (src_bases, src_stride): (&[usize], usize),
    dst: &mut [T],
    (dst_bases, dst_stride): (&[usize], usize),
    n: usize,
    perm: &[u32],
) {
    const CHUNK: usize = 1 << 14;
    let len = dst.len();
    let out = SharedOut(dst.as_mut_ptr());
    let run = |(c, chunk): (usize, &[u32])| {
        let first = c * CHUNK;
        let (mut l, mut p) = (first / n, first % n);
        for &from in chunk {
            let o = dst_bases[l] + p * dst_stride;
            assert!(o < len, "sort gather out of bounds");
            let v = src[src_bases[l] + from as usize * src_stride];
            // SAFETY: `o` is in bounds (checked above); every (line, position) pair is
            // visited once over all chunks, and the layout maps distinct logical indices
            // to distinct offsets, so no element is written by two threads; `dst` is
            // borrowed mutably for the whole call.
            unsafe { *out.get().add(o) = v };
            p += 1;
            if p == n {
                p = 0;
                l += 1;
            }
        }
    };
    if perm.len() >= PARALLEL_MIN {
        perm.par_chunks(CHUNK).enumerate().for_each(run);
    } else {
        perm.chunks(CHUNK).enumerate().for_each(run);
    }
}

/// Gathers operand `src` into `dst` through the lines' permutations.
fn gather(
    src: &Arr,
    src_lines: (&[usize], usize),
    dst: &mut Arr,
    dst_lines: (&[usize], usize),
    n: usize,
    perm: &[u32],
) {
    let count = dst.count();
    match src.width {
        1 => gather_typed::<u8>(
            bytemuck::cast_slice(&src.words),
            src_lines,
            &mut bytemuck::cast_slice_mut(&mut dst.words)[..count],
            dst_lines,
            n,
            perm,
        ),
        2 => gather_typed::<u16>(
            bytemuck::cast_slice(&src.words),
            src_lines,
            &mut bytemuck::cast_slice_mut(&mut dst.words)[..count],
            dst_lines,
            n,
            perm,
        ),
        4 => gather_typed::<u32>(
            bytemuck::cast_slice(&src.words),
            src_lines,
            &mut bytemuck::cast_slice_mut(&mut dst.words)[..count],
            dst_lines,
            n,
            perm,
        ),
        8 => gather_typed::<u64>(
            &src.words,
            src_lines,
            &mut dst.words[..count],
            dst_lines,
            n,
            perm,
        ),
        _ => {
            for (l, (&sb, &db)) in src_lines.0.iter().zip(dst_lines.0).enumerate() {
                for (p, &from) in perm[l * n..(l + 1) * n].iter().enumerate() {
                    dst.copy_elem(db + p * dst_lines.1, src, sb + from as usize * src_lines.1);
                }
            }
        }
    }
}

/// Stores `vals[l * n + p]` (element bits) at line `l` position `p` of `dst`.
fn store_values(dst: &mut Arr, (bases, stride): (&[usize], usize), n: usize, vals: &[u64]) {
    fn store<T: bytemuck::Pod>(
        dst: &mut [T],
        (bases, stride): (&[usize], usize),
        n: usize,
        vals: &[u64],
        narrow: impl Fn(u64) -> T,
    ) {
        for (&b, line) in bases.iter().zip(vals.chunks_exact(n)) {
            if stride == 1 {
                for (d, &v) in dst[b..b + n].iter_mut().zip(line) {
                    *d = narrow(v);
                }
            } else {
                for (p, &v) in line.iter().enumerate() {
                    dst[b + p * stride] = narrow(v);
                }
            }
        }
    }
    let count = dst.count();
    let lines = (bases, stride);
    match dst.width {
        1 => store::<u8>(
            &mut bytemuck::cast_slice_mut(&mut dst.words)[..count],
            lines,
            n,
            vals,
            |v| v as u8,
        ),
        2 => store::<u16>(
            &mut bytemuck::cast_slice_mut(&mut dst.words)[..count],
            lines,
            n,
            vals,
            |v| v as u16,
        ),
        4 => store::<u32>(
            &mut bytemuck::cast_slice_mut(&mut dst.words)[..count],
            lines,
            n,
            vals,
            |v| v as u32,
        ),
        _ => store::<u64>(&mut dst.words[..count], lines, n, vals, |v| v),
    }
}

/// Sorts every line of a single operand by its own key: the radix sort carries the
/// elements' bits, so nothing is gathered after.
fn sort_values_by_key(
    a: &Arr,
    out: &mut Arr,
    dim: usize,
    spec: &KeySpec,
) -> Result<(), BackendError> {
    let n = a.dims[dim];
    let bases = line_bases(a, dim);
    let lines = bases.len();
    let mut vals = vec![0u64; lines * n];
    let sort_one = |(l, chunk): (usize, &mut [u64])| -> Result<(), BackendError> {
        let line = Line::new(a, bases[l], a.strides[dim])
            .ok_or_else(|| BackendError::Internal("sort key of an odd width".into()))?;
        if !sort_values(spec, &line, n, chunk) {
            // An unordered NaN: the merge sort's permutation.
            let mut perm = vec![0u32; n];
            sort_line(std::slice::from_ref(spec), &[line], n, &mut perm);
            let mut raw = vec![0u64; n];
            line.fill_raw(0, &mut raw);
            for (o, &p) in chunk.iter_mut().zip(&perm) {
                *o = raw[p as usize];
            }
        }
        Ok(())
    };
    if lines > 1 && lines * n >= PARALLEL_MIN {
        vals.par_chunks_mut(n).enumerate().try_for_each(sort_one)?;
    } else {
        vals.chunks_mut(n).enumerate().try_for_each(sort_one)?;
    }
    let out_bases = line_bases(out, dim);
    let stride = out.strides[dim];
    store_values(out, (&out_bases, stride), n, &vals);
    Ok(())
}

/// Sorts every line along `dim` by typed keys, then gathers every operand.
fn sort_by_keys(
    ins: &[Arr],
    outs: &mut [Arr],
    dim: usize,
    specs: &[KeySpec],
) -> Result<(), BackendError> {
    let n = ins[0].dims[dim];
    let in_bases: Vec<Vec<usize>> = ins.iter().map(|a| line_bases(a, dim)).collect();
    let lines = in_bases[0].len();
    if n == 0 || lines == 0 {
        return Ok(());
    }
    if u32::try_from(n).is_err() {
        return Err(BackendError::Internal(
            "sort line of 2^32 elements or more".into(),
        ));
    }
    if let ([a], [o], [spec]) = (ins, &mut *outs, specs) {
        return sort_values_by_key(a, o, dim, spec);
    }
    let mut perm = vec![0u32; lines * n];
    let sort_one = |(l, chunk): (usize, &mut [u32])| -> Result<(), BackendError> {
        let key_lines = key_lines(specs, ins, &in_bases, dim, l)
            .ok_or_else(|| BackendError::Internal("sort key of an odd width".into()))?;
        sort_line(specs, &key_lines, n, chunk);
        Ok(())
    };
    if lines > 1 && lines * n >= PARALLEL_MIN {
        perm.par_chunks_mut(n).enumerate().try_for_each(sort_one)?;
    } else {
        perm.chunks_mut(n).enumerate().try_for_each(sort_one)?;
    }
    for ((a, o), bases) in ins.iter().zip(outs.iter_mut()).zip(&in_bases) {
        let out_bases = line_bases(o, dim);
        let (s, d) = (a.strides[dim], o.strides[dim]);
        gather(a, (bases, s), o, (&out_bases, d), n, &perm);
    }
    Ok(())
}

fn check_dims(ins: &[Arr], outs: &[Arr]) -> Result<(), BackendError> {
    let first = ins
        .first()
        .ok_or_else(|| BackendError::Internal("sort without operands".into()))?;
    if ins.len() != outs.len()
        || ins.iter().chain(outs).any(|a| a.dims != first.dims)
        || ins.iter().zip(outs).any(|(a, b)| a.ty != b.ty)
    {
        return Err(BackendError::Internal(
            "sort operands and results differ".into(),
        ));
    }
    Ok(())
}

/// Sorts every operand along `dim` by the comparator over all operands' element pairs:
/// by typed keys where `order` (the comparator recognized) fits the operands, else
/// calling the compiled comparator.
pub(crate) fn sort(
    ins: &mut [Arr],
    outs: &mut [Arr],
    dim: usize,
    cmp: ScalarFn,
    order: Option<&SortOrder>,
) -> Result<(), BackendError> {
    check_dims(ins, outs)?;
    let dims = ins[0].dims.clone();
    let len = *dims
        .get(dim)
        .ok_or_else(|| BackendError::Internal("sort dimension out of range".into()))?;
    if let Some(specs) = order.and_then(|o| specs_of(o, ins, false)) {
        return sort_by_keys(ins, outs, dim, &specs);
    }
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
        let mut less = |i: usize, j: usize| -> Result<bool, BackendError> {
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

/// Top-k by typed keys: every row's first `k` positions selected in parallel, then the
/// values gathered and the positions stored.
fn topk_by_keys(
    x: &Arr,
    values: &mut Arr,
    indices: &mut Arr,
    k: usize,
    specs: &[KeySpec],
) -> Result<(), BackendError> {
    let dim = x.dims.len() - 1;
    let n = x.dims[dim];
    let x_bases = line_bases(x, dim);
    let rows = x_bases.len();
    if k == 0 || rows == 0 {
        return Ok(());
    }
    if u32::try_from(n).is_err() {
        return Err(BackendError::Internal(
            "top-k row of 2^32 elements or more".into(),
        ));
    }
    let ins = std::slice::from_ref(x);
    let bases = std::slice::from_ref(&x_bases);
    let mut picks = vec![0u32; rows * k];
    let select_one = |(r, out): (usize, &mut [u32])| -> Result<(), BackendError> {
        let key_lines = key_lines(specs, ins, bases, dim, r)
            .ok_or_else(|| BackendError::Internal("top-k key of an odd width".into()))?;
        select_line(specs, &key_lines, n, out);
        Ok(())
    };
    if rows > 1 && rows * n >= PARALLEL_MIN {
        picks
            .par_chunks_mut(k)
            .enumerate()
            .try_for_each(select_one)?;
    } else {
        picks.chunks_mut(k).enumerate().try_for_each(select_one)?;
    }
    let v_bases = line_bases(values, dim);
    let vs = values.strides[dim];
    gather(
        x,
        (&x_bases, x.strides[dim]),
        values,
        (&v_bases, vs),
        k,
        &picks,
    );
    let i_bases = line_bases(indices, dim);
    let is = indices.strides[dim];
    for (r, &b) in i_bases.iter().enumerate() {
        for (p, &pick) in picks[r * k..(r + 1) * k].iter().enumerate() {
            indices.set_int(b + p * is, i64::from(pick));
        }
    }
    Ok(())
}

/// The first `k` elements of every row (the last dimension): values and indices. By
/// typed keys where `order` fits the operand, else through the comparator (or, without
/// one, the total order).
pub(crate) fn topk(
    ins: &mut [Arr],
    outs: &mut [Arr],
    k: usize,
    largest: bool,
    cmp: Option<ScalarFn>,
    order: Option<&SortOrder>,
) -> Result<(), BackendError> {
    let bad = || BackendError::Internal("top-k operands and results differ".into());
    let specs = order.and_then(|o| specs_of(o, ins, true));
    let (x, [values, indices]) = (ins.first_mut().ok_or_else(bad)?, outs) else {
        return Err(bad());
    };
    let rank = x.dims.len();
    let n = *x.dims.last().ok_or_else(bad)?;
    if k > n || values.dims.last() != Some(&k) || indices.dims != values.dims || values.ty != x.ty {
        return Err(bad());
    }
    if let Some(specs) = specs {
        return topk_by_keys(x, values, indices, k, &specs);
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
                let mut less = |i: usize, j: usize| -> Result<bool, BackendError> {
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
                let mut less = |i: usize, j: usize| -> Result<bool, BackendError> {
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
