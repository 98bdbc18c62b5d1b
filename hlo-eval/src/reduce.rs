//! `reduce` (variadic) and `map`. Single-operand reductions whose computation is one
//! add/multiply/maximum/minimum/and/or/xor of its two parameters (as
//! [`hlo::ir::reducer::classify`] recognises) run as typed loops; the rest
//! call the reducer computation per element. Sums and products of floats follow XLA:CPU's
//! order ([`xla_order`]): for 16-bit floats their results are XLA's bit for bit; for `f32`
//! and `f64` the tree of 32-element windows keeps the oracle as accurate as XLA's (an
//! in-order `f32` sum of 2^20 positive values drifts by 2e-4 relative, past the
//! comparison's tolerance, where XLA's and the compiled backends' orders stay within 1e-6).

mod xla_order;

use super::data::{make, map_data, udims, View};
use super::elementwise::{fmax, fmin};
use super::scalar::{wrap_to_width, Int, SmallFloat};
use super::EvalError;
use hlo::ir::reducer::{classify, Reducer};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::Shape;
use hlo::{CompId, Literal, Module};

/// For each input element (row-major), the output position it reduces into, as a view
/// over the input dimensions with zero strides on the reduced ones.
fn reduce_view(
    in_dims: &[usize],
    reduced: &[i64],
    what: &str,
) -> Result<(View, Vec<usize>), EvalError> {
    let mut is_reduced = vec![false; in_dims.len()];
    for &d in reduced {
        let d = usize::try_from(d)
            .ok()
            .filter(|&d| d < in_dims.len() && !is_reduced[d]);
        let d = d.ok_or_else(|| EvalError::invalid(what, "bad reduce dimension"))?;
        is_reduced[d] = true;
    }
    let out_dims: Vec<usize> = (0..in_dims.len())
        .filter(|&d| !is_reduced[d])
        .map(|d| in_dims[d])
        .collect();
    let mut strides = vec![0isize; in_dims.len()];
    let mut s = 1isize;
    for d in (0..in_dims.len()).rev() {
        if !is_reduced[d] {
            strides[d] = s;
            s *= in_dims[d] as isize;
        }
    }
    Ok((
        View {
            dims: in_dims.to_vec(),
            strides,
            offset: 0,
        },
        out_dims,
    ))
}

fn fold<T: Copy>(src: &[T], init: T, view: &View, n_out: usize, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = vec![init; n_out];
    let mut k = 0;
    view.for_each(|p| {
        out[p] = f(out[p], src[k]);
        k += 1;
    });
    out
}

fn int_fold<T: Int>(src: &[T], init: T, view: &View, n: usize, op: Reducer, bits: u32) -> Vec<T> {
    let r = match op {
        Reducer::Add => fold(src, init, view, n, T::wadd),
        Reducer::Mul => fold(src, init, view, n, T::wmul),
        Reducer::Max => fold(src, init, view, n, std::cmp::max),
        Reducer::Min => fold(src, init, view, n, std::cmp::min),
        Reducer::And => fold(src, init, view, n, T::band),
        Reducer::Or => fold(src, init, view, n, T::bor),
        Reducer::Xor => fold(src, init, view, n, T::bxor),
    };
    if bits < T::STORAGE_BITS {
        r.into_iter().map(|x| wrap_to_width(x, bits)).collect()
    } else {
        r
    }
}

fn float_fn(op: Reducer) -> Option<fn(f64, f64) -> f64> {
    Some(match op {
        Reducer::Add => |a, b| a + b,
        Reducer::Mul => |a, b| a * b,
        Reducer::Max => fmax,
        Reducer::Min => fmin,
        _ => return None,
    })
}

/// The typed-loop reduction; `None` when the op does not apply to the type. `shape` is
/// the input's dimensions and which of them are reduced.
fn fast_reduce(
    a: &ArrayLiteral,
    init: &ArrayLiteral,
    (view, shape): (&View, (&[usize], &[bool])),
    n: usize,
    op: Reducer,
) -> Option<ArrayData> {
    let ty = a.element_type();
    let bits = ty.bit_width()?;
    Some(match (a.data(), init.data()) {
        (ArrayData::Pred(s), ArrayData::Pred(i)) => ArrayData::Pred(match op {
            Reducer::And | Reducer::Min | Reducer::Mul => fold(s, i[0], view, n, |x, y| x & y),
            Reducer::Or | Reducer::Max | Reducer::Add => fold(s, i[0], view, n, |x, y| x | y),
            Reducer::Xor => fold(s, i[0], view, n, |x, y| x ^ y),
        }),
        (ArrayData::S8(s), ArrayData::S8(i)) => ArrayData::S8(int_fold(s, i[0], view, n, op, bits)),
        (ArrayData::S16(s), ArrayData::S16(i)) => {
            ArrayData::S16(int_fold(s, i[0], view, n, op, bits))
        }
        (ArrayData::S32(s), ArrayData::S32(i)) => {
            ArrayData::S32(int_fold(s, i[0], view, n, op, bits))
        }
        (ArrayData::S64(s), ArrayData::S64(i)) => {
            ArrayData::S64(int_fold(s, i[0], view, n, op, bits))
        }
        (ArrayData::U8(s), ArrayData::U8(i)) => ArrayData::U8(int_fold(s, i[0], view, n, op, bits)),
        (ArrayData::U16(s), ArrayData::U16(i)) => {
            ArrayData::U16(int_fold(s, i[0], view, n, op, bits))
        }
        (ArrayData::U32(s), ArrayData::U32(i)) => {
            ArrayData::U32(int_fold(s, i[0], view, n, op, bits))
        }
        (ArrayData::U64(s), ArrayData::U64(i)) => {
            ArrayData::U64(int_fold(s, i[0], view, n, op, bits))
        }
        (ArrayData::F32(s), ArrayData::F32(i)) => {
            let f = float_fn(op)?;
            let step = |x: f32, y: f32| f(f64::from(x), f64::from(y)) as f32;
            ArrayData::F32(if matches!(op, Reducer::Add | Reducer::Mul) {
                xla_order::tree_fold(s, shape.0, shape.1, i[0], step)
            } else {
                fold(s, i[0], view, n, step)
            })
        }
        (ArrayData::F64(s), ArrayData::F64(i)) => {
            let f = float_fn(op)?;
            ArrayData::F64(if matches!(op, Reducer::Add | Reducer::Mul) {
                xla_order::tree_fold(s, shape.0, shape.1, i[0], f)
            } else {
                fold(s, i[0], view, n, f)
            })
        }
        (ArrayData::Bits16(s), ArrayData::Bits16(i)) => {
            let f = float_fn(op)?;
            let c = SmallFloat::of(ty)?;
            let step =
                |x: u16, y: u16| c.encode(f(c.decode(u32::from(x)), c.decode(u32::from(y)))) as u16;
            // Their max and min are the same in any order.
            ArrayData::Bits16(if matches!(op, Reducer::Add | Reducer::Mul) {
                xla_order::tree_fold(s, shape.0, shape.1, i[0], step)
            } else {
                fold(s, i[0], view, n, step)
            })
        }
        _ => return None,
    })
}

/// Writes the scalar `v` into element `p` of `dst` (same storage variant).
pub(crate) fn set_element(
    dst: &mut ArrayData,
    p: usize,
    v: &Literal,
    what: &str,
) -> Result<(), EvalError> {
    let src = v.as_array().ok_or_else(|| {
        EvalError::invalid(
            what,
            "computation returned a tuple where a scalar was expected",
        )
    })?;
    macro_rules! go {
        ($($v:ident),*) => {
            match (dst, src.data()) {
                $((ArrayData::$v(d), ArrayData::$v(s)) if s.len() == 1 => d[p] = s[0],)*
                _ => return Err(EvalError::invalid(what, "computation result type does not match")),
            }
        };
    }
    go!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, Bits16, Bits8, F32, F64, C64, C128);
    Ok(())
}

/// Calls a computation on scalar arguments.
pub(crate) type Caller<'a> = dyn FnMut(CompId, Vec<Literal>) -> Result<Literal, EvalError> + 'a;

/// `reduce` of `inputs` with initial values `inits` over `dims` by computation `comp`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce(
    module: &Module,
    inputs: &[&ArrayLiteral],
    inits: &[&ArrayLiteral],
    dims: &[i64],
    comp: CompId,
    shape: &Shape,
    call: &mut Caller<'_>,
    what: &str,
) -> Result<Literal, EvalError> {
    let first = inputs
        .first()
        .ok_or_else(|| EvalError::invalid(what, "reduce needs operands"))?;
    let in_dims = udims(first.shape(), what)?;
    if inputs
        .iter()
        .any(|a| a.shape().dims() != first.shape().dims())
        || inits.len() != inputs.len()
        || inits.iter().any(|i| i.data().len() != 1)
    {
        return Err(EvalError::invalid(
            what,
            "reduce operands or initial values do not match",
        ));
    }
    let (view, out_dims) = reduce_view(&in_dims, dims, what)?;
    let n: usize = out_dims.iter().product();
    let out_shapes: Vec<Shape> = if shape.is_tuple() {
        shape.tuple_shapes().to_vec()
    } else {
        vec![shape.clone()]
    };
    if out_shapes.len() != inputs.len() {
        return Err(EvalError::invalid(
            what,
            "reduce result arity does not match",
        ));
    }
    if inputs.len() == 1 {
        if let Some(op) = classify(module, comp) {
            let is_reduced: Vec<bool> = (0..in_dims.len() as i64)
                .map(|d| dims.contains(&d))
                .collect();
            let shape = (&in_dims[..], &is_reduced[..]);
            if let Some(data) = fast_reduce(first, inits[0], (&view, shape), n, op) {
                return make(&out_shapes[0], data, what);
            }
        }
    }
    let mut accs: Vec<ArrayData> = inits
        .iter()
        .map(|i| map_data!(i.data(), v => vec![v[0]; n]))
        .collect();
    let mut positions = Vec::with_capacity(first.data().len());
    view.for_each(|p| positions.push(p));
    for (k, &p) in positions.iter().enumerate() {
        let mut args = Vec::with_capacity(2 * inputs.len());
        for (acc, init) in accs.iter().zip(inits) {
            let data = map_data!(acc, v => vec![v[p]]);
            args.push(make(&Shape::scalar(init.element_type()), data, what)?);
        }
        for a in inputs {
            args.push(super::data::scalar_at(a, k, what)?);
        }
        let r = call(comp, args)?;
        match r {
            Literal::Tuple(parts) if inputs.len() > 1 => {
                if parts.len() != accs.len() {
                    return Err(EvalError::invalid(
                        what,
                        "reducer returned the wrong number of values",
                    ));
                }
                for (acc, part) in accs.iter_mut().zip(&parts) {
                    set_element(acc, p, part, what)?;
                }
            }
            r => set_element(&mut accs[0], p, &r, what)?,
        }
    }
    let mut outs = Vec::with_capacity(accs.len());
    for (acc, s) in accs.into_iter().zip(&out_shapes) {
        outs.push(make(s, acc, what)?);
    }
    Ok(if shape.is_tuple() {
        Literal::Tuple(outs)
    } else {
        outs.remove(0)
    })
}

/// `map`: applies `comp` to the elements at each position of the operands.
pub(crate) fn map(
    inputs: &[&ArrayLiteral],
    comp: CompId,
    shape: &Shape,
    call: &mut Caller<'_>,
    what: &str,
) -> Result<Literal, EvalError> {
    let ty = shape
        .element_type()
        .ok_or_else(|| EvalError::invalid(what, "map result must be an array"))?;
    let n = shape
        .element_count()
        .map_err(|e| EvalError::invalid(what, e.to_string()))? as usize;
    if inputs.iter().any(|a| a.data().len() != n) {
        return Err(EvalError::invalid(what, "map operands differ in shape"));
    }
    let mut out = ArrayData::new(ty).ok_or_else(|| EvalError::invalid(what, "map of tokens"))?;
    out = map_data!(&out, _v => Vec::with_capacity(n));
    for k in 0..n {
        let args = inputs
            .iter()
            .map(|a| super::data::scalar_at(a, k, what))
            .collect::<Result<Vec<_>, _>>()?;
        let r = call(comp, args)?;
        let r = r
            .as_array()
            .ok_or_else(|| EvalError::invalid(what, "map computation must return a scalar"))?;
        macro_rules! push {
            ($($v:ident),*) => {
                match (&mut out, r.data()) {
                    $((ArrayData::$v(d), ArrayData::$v(s)) if s.len() == 1 => d.push(s[0]),)*
                    _ => return Err(EvalError::invalid(what, "map computation result type does not match")),
                }
            };
        }
        push!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, Bits16, Bits8, F32, F64, C64, C128);
    }
    make(shape, out, what)
}
