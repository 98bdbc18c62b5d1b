//! `sort` (multi-operand, comparator computation, stable merge sort along one dimension)
//! and top-k (the `topk` opcode and XLA:CPU's `TopK` custom call).

use super::scalar::{read, Scalar, ScalarFn};
use super::util::{
    dim, dims_of, operand, pred_value, result_part, scalar_at, strides, take, wrap_results,
};
use super::{CallComputation, KernelError};
use hlo::attrs::{AttrName, AttrValue};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::{Instruction, Literal, Module};

/// Stable merge sort of `items` with a fallible strict "less than". Hand-written because
/// the comparator is a called computation that may fail or be inconsistent: it is only
/// asked "is `a` strictly before `b`", so any comparator gives some order and never a
/// panic (the standard library's sorts may panic on an inconsistent order). Shared with
/// the compiled runtime's sort.
pub fn merge_sort<E>(
    items: &mut Vec<usize>,
    less: &mut dyn FnMut(usize, usize) -> Result<bool, E>,
) -> Result<(), E> {
    let n = items.len();
    let mut buf = vec![0usize; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut o) = (start, mid, start);
            while i < mid && j < end {
                // Take from the right only when strictly less: equal keys keep order.
                if less(items[j], items[i])? {
                    buf[o] = items[j];
                    j += 1;
                } else {
                    buf[o] = items[i];
                    i += 1;
                }
                o += 1;
            }
            buf[o..o + (mid - i)].copy_from_slice(&items[i..mid]);
            o += mid - i;
            buf[o..o + (end - j)].copy_from_slice(&items[j..end]);
            start = end;
        }
        std::mem::swap(items, &mut buf);
        width *= 2;
    }
    Ok(())
}

/// The flat offsets of every line along `axis` of an array of `dims`: one `Vec` per
/// line, in row-major order of the other dimensions.
fn lines(dims: &[usize], axis: usize) -> Vec<Vec<usize>> {
    let st = strides(dims);
    let total: usize = dims.iter().product();
    let len = dims[axis];
    if total == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(total / len);
    for base in 0..total {
        if (base / st[axis]).is_multiple_of(len) {
            out.push((0..len).map(|i| base + i * st[axis]).collect());
        }
    }
    out
}

/// Evaluates `sort`.
pub(crate) fn sort(
    module: &Module,
    instr: &Instruction,
    operands: &[&Literal],
    calls: &mut dyn CallComputation,
) -> Result<Literal, KernelError> {
    let arrays: Vec<&ArrayLiteral> = (0..operands.len())
        .map(|i| operand(operands, i, "sort"))
        .collect::<Result<_, _>>()?;
    let first = arrays
        .first()
        .ok_or_else(|| KernelError::Invalid("sort: no operands".into()))?;
    let dims = dims_of(first.shape(), "sort")?;
    if arrays
        .iter()
        .any(|a| a.shape().dims() != first.shape().dims())
    {
        return Err(KernelError::Invalid(
            "sort: operands have different dimensions".into(),
        ));
    }
    let axis = match instr.dimensions() {
        Some([d]) => dim(*d, dims.len(), "sort dimensions")?,
        _ => return Err(KernelError::Invalid("sort: needs dimensions={d}".into())),
    };
    let comp = instr
        .to_apply()
        .ok_or_else(|| KernelError::Invalid("sort: missing to_apply comparator".into()))?;
    let native = ScalarFn::compile(module, comp).filter(|f| f.params() == 2 * arrays.len());
    let mut order = Vec::with_capacity(first.data().len());
    let (mut args, mut scratch) = (Vec::new(), Vec::new());
    for line in lines(&dims, axis) {
        let natives: Option<Vec<Vec<Scalar>>> = native.as_ref().and_then(|_| {
            arrays
                .iter()
                .map(|a| line.iter().map(|&i| read(a, i)).collect())
                .collect()
        });
        let mut perm: Vec<usize> = (0..line.len()).collect();
        let mut less = |i: usize, j: usize| -> Result<bool, KernelError> {
            if let (Some(f), Some(vals)) = (&native, &natives) {
                args.clear();
                for v in vals {
                    args.push(v[i]);
                    args.push(v[j]);
                }
                if let Some(Scalar::B(b)) = f.eval(&args, &mut scratch) {
                    return Ok(b);
                }
            }
            let mut lits = Vec::with_capacity(2 * arrays.len());
            for a in &arrays {
                lits.push(scalar_at(a, line[i]));
                lits.push(scalar_at(a, line[j]));
            }
            pred_value(&calls.call(comp, &lits)?, "sort")
        };
        merge_sort(&mut perm, &mut less)?;
        order.push((line, perm));
    }
    // Place the sorted elements back along their lines.
    let n = first.data().len();
    let mut src = vec![0usize; n];
    for (line, perm) in &order {
        for (pos, &p) in perm.iter().enumerate() {
            src[line[pos]] = line[p];
        }
    }
    let mut results = Vec::with_capacity(arrays.len());
    for (i, a) in arrays.iter().enumerate() {
        let shape = result_part(instr.shape(), i, "sort")?;
        results.push(super::util::make_array(
            shape,
            take(a.data(), &src),
            "sort",
        )?);
    }
    Ok(wrap_results(results, instr.shape().is_tuple()))
}

/// Keys whose integer order is the total order of the values: `-NaN < -inf < ... < -0 <
/// +0 < ... < inf < NaN` for floats, the numeric order for integers.
fn total_order_keys(a: &ArrayLiteral) -> Result<Vec<i128>, KernelError> {
    fn float_key(bits: u64, width: u32) -> i128 {
        let sign = 1u64 << (width - 1);
        let mag = bits & (sign - 1);
        if bits & sign != 0 {
            -(mag as i128) - 1
        } else {
            mag as i128
        }
    }
    Ok(match a.data() {
        ArrayData::Pred(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::S8(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::S16(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::S32(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::S64(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::U8(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::U16(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::U32(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::U64(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ArrayData::Bits16(v) => v.iter().map(|&x| float_key(u64::from(x), 16)).collect(),
        ArrayData::Bits8(v) => v.iter().map(|&x| float_key(u64::from(x), 8)).collect(),
        ArrayData::F32(v) => v
            .iter()
            .map(|&x| float_key(u64::from(x.to_bits()), 32))
            .collect(),
        ArrayData::F64(v) => v.iter().map(|&x| float_key(x.to_bits(), 64)).collect(),
        ArrayData::C64(_) | ArrayData::C128(_) => {
            return Err(KernelError::Unsupported("top-k of complex values".into()))
        }
    })
}

/// Builds the `(values, s32 indices)` result of a top-k from the chosen positions per
/// row.
fn topk_result(
    instr: &Instruction,
    x: &ArrayLiteral,
    rows: usize,
    n: usize,
    k: usize,
    picks: &[usize],
) -> Result<Literal, KernelError> {
    let mut src = Vec::with_capacity(rows * k);
    let mut idx = Vec::with_capacity(rows * k);
    for r in 0..rows {
        for &p in &picks[r * k..(r + 1) * k] {
            src.push(r * n + p);
            idx.push(
                i32::try_from(p)
                    .map_err(|_| KernelError::Invalid("top-k: index does not fit s32".into()))?,
            );
        }
    }
    let vshape = result_part(instr.shape(), 0, "top-k")?;
    let ishape = result_part(instr.shape(), 1, "top-k")?;
    let values = super::util::make_array(vshape, take(x.data(), &src), "top-k values")?;
    let indices = match ishape.element_type() {
        Some(ElementType::S32) => ArrayData::S32(idx),
        Some(ElementType::S64) => ArrayData::S64(idx.into_iter().map(i64::from).collect()),
        Some(ElementType::U32) => ArrayData::U32(idx.into_iter().map(|i| i as u32).collect()),
        other => {
            return Err(KernelError::Unsupported(format!(
                "top-k: index type {other:?}"
            )))
        }
    };
    let indices = super::util::make_array(ishape, indices, "top-k indices")?;
    Ok(Literal::Tuple(vec![values, indices]))
}

/// Rows, row length and `k` of a top-k over the last dimension.
fn topk_dims(x: &ArrayLiteral, k: i64) -> Result<(usize, usize, usize), KernelError> {
    let dims = dims_of(x.shape(), "top-k")?;
    let n = *dims
        .last()
        .ok_or_else(|| KernelError::Invalid("top-k of a scalar".into()))?;
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= n)
        .ok_or_else(|| KernelError::Invalid(format!("top-k: k={k} for rows of {n}")))?;
    let rows = x.data().len().checked_div(n).unwrap_or(0);
    Ok((rows, n, k))
}

/// Evaluates the `topk` opcode: the `k` largest (or smallest with `largest=false`) along
/// the last dimension in XLA's total order, ties broken by lower index first.
pub(crate) fn topk(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    let x = operand(operands, 0, "topk")?;
    let k = instr
        .topk_k()
        .ok_or_else(|| KernelError::Invalid("topk: missing k".into()))?;
    let largest = !matches!(instr.attr(&AttrName::Largest), Some(AttrValue::Bool(false)));
    let (rows, n, k) = topk_dims(x, k)?;
    let keys = total_order_keys(x)?;
    let mut picks = Vec::with_capacity(rows * k);
    for r in 0..rows {
        let row = &keys[r * n..(r + 1) * n];
        let mut perm: Vec<usize> = (0..n).collect();
        // Stable: equal keys keep index order.
        if largest {
            perm.sort_by(|&a, &b| row[b].cmp(&row[a]));
        } else {
            perm.sort_by(|&a, &b| row[a].cmp(&row[b]));
        }
        picks.extend_from_slice(&perm[..k]);
    }
    topk_result(instr, x, rows, n, k, &picks)
}

/// Evaluates XLA:CPU's `TopK` custom call: its comparator (over values, or over values
/// and `s32` indices) orders each row; the first `k` (from the result shape) are kept.
pub(crate) fn topk_custom_call(
    module: &Module,
    instr: &Instruction,
    operands: &[&Literal],
    calls: &mut dyn CallComputation,
) -> Result<Literal, KernelError> {
    let x = operand(operands, 0, "TopK")?;
    let vshape = result_part(instr.shape(), 0, "TopK")?;
    let k = *vshape
        .dims()
        .last()
        .ok_or_else(|| KernelError::Invalid("TopK: scalar result".into()))?;
    let comp = *instr
        .called_computations()
        .first()
        .ok_or_else(|| KernelError::Invalid("TopK: missing comparator".into()))?;
    let params = module
        .get_computation(comp)
        .map(|c| c.parameters().len())
        .filter(|&p| p == 2 || p == 4)
        .ok_or_else(|| {
            KernelError::Invalid("TopK: comparator must take 2 or 4 parameters".into())
        })?;
    let (rows, n, k) = topk_dims(x, k)?;
    let index_scalars: Vec<Literal> = (0..n)
        .map(|i| {
            let data = ArrayData::S32(vec![i as i32]);
            super::util::make_array(&Shape::scalar(ElementType::S32), data, "TopK")
        })
        .collect::<Result<_, _>>()?;
    let native = ScalarFn::compile(module, comp).filter(|f| f.params() == params);
    let (mut args, mut scratch) = (Vec::new(), Vec::new());
    let mut picks = Vec::with_capacity(rows * k);
    for r in 0..rows {
        let vals: Vec<Literal> = (0..n).map(|i| scalar_at(x, r * n + i)).collect();
        let natives: Option<Vec<Scalar>> = native
            .as_ref()
            .and_then(|_| (0..n).map(|i| read(x, r * n + i)).collect());
        let mut perm: Vec<usize> = (0..n).collect();
        let mut less = |i: usize, j: usize| -> Result<bool, KernelError> {
            if let (Some(f), Some(v)) = (&native, &natives) {
                args.clear();
                args.extend([v[i], v[j], Scalar::I(i as i128), Scalar::I(j as i128)]);
                args.truncate(params);
                if let Some(Scalar::B(b)) = f.eval(&args, &mut scratch) {
                    return Ok(b);
                }
            }
            let mut args = vec![vals[i].clone(), vals[j].clone()];
            args.push(index_scalars[i].clone());
            args.push(index_scalars[j].clone());
            // A two-parameter comparator looks at the values only.
            args.truncate(params);
            pred_value(&calls.call(comp, &args)?, "TopK")
        };
        merge_sort(&mut perm, &mut less)?;
        picks.extend_from_slice(&perm[..k]);
    }
    topk_result(instr, x, rows, n, k, &picks)
}
