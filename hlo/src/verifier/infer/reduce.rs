//! Reductions and other ops with a scalar computation: reduce, reduce-window,
//! select-and-scatter, sort, top-k, map. (Scatter's computation is checked here too.)

use super::{array, dim, distinct_dims, same_shape, show, Ctx, Inferred, R};
use crate::attrs::Window;
use crate::ir::CompId;
use crate::shape::{ElementType, Shape};

/// The element type of a rank-0 shape.
fn scalar_type(s: &Shape) -> Option<ElementType> {
    s.as_array()
        .filter(|a| a.dims().is_empty())
        .map(|a| a.element_type())
}

/// A value of type `v` may feed an accumulator of type `acc` (XLA allows floating-point
/// precision to differ).
fn feeds(v: ElementType, acc: ElementType) -> bool {
    v == acc || (v.is_float() && acc.is_float())
}

/// Checks a reducer: parameters `(acc_0..acc_{n-1}, val_0..val_{n-1})`, scalars, the
/// accumulators exactly `acc`, the values of types feeding them; it returns the
/// accumulators (a scalar when n = 1, else a tuple of scalars).
pub(super) fn check_scalar_reducer(
    ctx: &Ctx<'_>,
    comp: CompId,
    acc: &[Shape],
    role: &str,
) -> Result<(), String> {
    let values: Vec<ElementType> = acc.iter().filter_map(Shape::element_type).collect();
    check_reducer_values(ctx, comp, acc, &values, role)
}

/// [`check_scalar_reducer`] with the value types given separately.
fn check_reducer_values(
    ctx: &Ctx<'_>,
    comp: CompId,
    acc: &[Shape],
    values: &[ElementType],
    role: &str,
) -> Result<(), String> {
    let sig = ctx.signature(comp)?;
    let n = acc.len();
    if sig.params.len() != 2 * n {
        return Err(format!(
            "{role} `{}` takes {} parameters but {} are needed",
            sig.name,
            sig.params.len(),
            2 * n
        ));
    }
    for i in 0..n {
        if !same_shape(sig.params[i], &acc[i]) {
            return Err(format!(
                "{role} `{}` parameter {i} is {} but the accumulator is {}",
                sig.name,
                show(sig.params[i]),
                show(&acc[i])
            ));
        }
        let p = sig.params[n + i];
        if !scalar_type(p).is_some_and(|t| feeds(values[i], t)) {
            return Err(format!(
                "{role} `{}` parameter {} is {} but the values are {}",
                sig.name,
                n + i,
                show(p),
                values[i]
            ));
        }
    }
    let ok = if n == 1 {
        same_shape(sig.result, &acc[0])
    } else {
        let t = sig.result.tuple_shapes();
        sig.result.is_tuple() && t.len() == n && t.iter().zip(acc).all(|(a, b)| same_shape(a, b))
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{role} `{}` returns {} but must return the accumulator{}",
            sig.name,
            show(sig.result),
            if n == 1 { "" } else { "s as a tuple" }
        ))
    }
}

/// Splits `2N` operands into N inputs of equal dimensions and N scalar inits; returns the
/// init scalars and the input value types.
fn inputs_and_inits(ctx: &Ctx<'_>) -> Result<(usize, Vec<Shape>, Vec<ElementType>), String> {
    let n = ctx.ops.len();
    if n < 2 || !n.is_multiple_of(2) {
        return Err(format!(
            "{} takes N inputs and N initial values, not {n} operands",
            ctx.instr.opcode()
        ));
    }
    let k = n / 2;
    let first = ctx.array(0)?;
    let mut inits = Vec::with_capacity(k);
    let mut values = Vec::with_capacity(k);
    for i in 0..k {
        let a = ctx.array(i)?;
        if a.dims() != first.dims() {
            return Err(format!(
                "input {i} {} has other dimensions than input 0 {}",
                show(ctx.ops[i]),
                show(ctx.ops[0])
            ));
        }
        let init = ctx.ops[k + i];
        let Some(t) = scalar_type(init) else {
            return Err(format!(
                "initial value {i} must be a scalar, not {}",
                show(init)
            ));
        };
        if !feeds(a.element_type(), t) {
            return Err(format!(
                "input {i} is {} but its initial value is {t}",
                a.element_type()
            ));
        }
        inits.push(Shape::scalar(t));
        values.push(a.element_type());
    }
    Ok((k, inits, values))
}

fn result_of(k: usize, shapes: Vec<Shape>) -> Inferred {
    if k == 1 {
        Inferred::Shape(shapes.into_iter().next().unwrap_or(Shape::tuple(vec![])))
    } else {
        Inferred::Shape(Shape::tuple(shapes))
    }
}

pub(super) fn reduce(ctx: &Ctx<'_>) -> R {
    let (k, inits, values) = inputs_and_inits(ctx)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let a = ctx.array(0)?;
    let ds = distinct_dims(dims, a.dims().len(), "reduce dimension")?;
    let comp = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    check_reducer_values(ctx, comp, &inits, &values, "reducer")?;
    let mut keep = vec![true; a.dims().len()];
    for d in ds {
        keep[d] = false;
    }
    let out: Vec<i64> = a
        .dims()
        .iter()
        .zip(&keep)
        .filter(|(_, &k)| k)
        .map(|(&d, _)| d)
        .collect();
    let shapes = inits
        .iter()
        .map(|s| array(s.element_type().unwrap_or(ElementType::F32), out.clone()))
        .collect();
    Ok(result_of(k, shapes))
}

/// The result dimensions of a window over `dims` (XLA's `InferWindowOutputShape`).
pub(super) fn window_output(dims: &[i64], w: &Window) -> Result<Vec<i64>, String> {
    if w.dims.len() != dims.len() {
        return Err(format!(
            "the window has {} dimensions but the operand has rank {}",
            w.dims.len(),
            dims.len()
        ));
    }
    let mut out = Vec::with_capacity(dims.len());
    for (i, (wd, &n)) in w.dims.iter().zip(dims).enumerate() {
        if wd.size < 1 || wd.stride < 1 || wd.base_dilation < 1 || wd.window_dilation < 1 {
            return Err(format!(
                "window dimension {i} needs positive size, stride and dilations"
            ));
        }
        let n = i128::from(n);
        let base = if n == 0 {
            0
        } else {
            (n - 1) * i128::from(wd.base_dilation) + 1
        };
        let padded = base + i128::from(wd.padding_low) + i128::from(wd.padding_high);
        let window = (i128::from(wd.size) - 1) * i128::from(wd.window_dilation) + 1;
        let size = if padded < window {
            0
        } else {
            (padded - window) / i128::from(wd.stride) + 1
        };
        if padded < 0 || size > i128::from(i64::MAX) {
            return Err(format!(
                "window dimension {i} gives a negative or overflowing padded size"
            ));
        }
        out.push(size as i64);
    }
    Ok(out)
}

/// The `window=` attribute; a scalar operand needs none (its window has no dimensions).
fn window_or_empty<'a>(ctx: &Ctx<'a>) -> Result<&'a Window, String> {
    static EMPTY: std::sync::OnceLock<Window> = std::sync::OnceLock::new();
    match ctx.instr.window() {
        Some(w) => Ok(w),
        None if ctx.ops.first().is_some_and(|s| s.dims().is_empty()) => {
            Ok(EMPTY.get_or_init(Window::default))
        }
        None => Err(format!("{} needs window=", ctx.instr.opcode())),
    }
}

pub(super) fn reduce_window(ctx: &Ctx<'_>) -> R {
    let (k, inits, values) = inputs_and_inits(ctx)?;
    let out = window_output(ctx.ops[0].dims(), window_or_empty(ctx)?)?;
    let comp = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    check_reducer_values(ctx, comp, &inits, &values, "reducer")?;
    let shapes = inits
        .iter()
        .map(|s| array(s.element_type().unwrap_or(ElementType::F32), out.clone()))
        .collect();
    Ok(result_of(k, shapes))
}

pub(super) fn select_and_scatter(ctx: &Ctx<'_>) -> R {
    ctx.arity(3)?;
    let a = ctx.array(0)?;
    let src = ctx.array(1)?;
    let init = ctx.ops[2];
    let t = src.element_type();
    if scalar_type(init) != Some(t) {
        return Err(format!(
            "the initial value must be a {t} scalar like the source, not {}",
            show(init)
        ));
    }
    let out = window_output(a.dims(), window_or_empty(ctx)?)?;
    if out != src.dims() {
        return Err(format!(
            "the source {} does not match the window's output over the operand ({})",
            show(ctx.ops[1]),
            show(&array(t, out))
        ));
    }
    let comps = ctx.instr.called_computations();
    let select = ctx.required_comp(
        match ctx.instr.attr(&crate::AttrName::Select) {
            Some(crate::AttrValue::Computation(c)) => Some(*c),
            _ => comps.first().copied(),
        },
        "select=",
    )?;
    let scatter = ctx.required_comp(
        match ctx.instr.attr(&crate::AttrName::Scatter) {
            Some(crate::AttrValue::Computation(c)) => Some(*c),
            _ => comps.get(1).copied(),
        },
        "scatter=",
    )?;
    let sig = ctx.signature(select)?;
    let op_scalar = Shape::scalar(a.element_type());
    sig.expect_params(&[&op_scalar, &op_scalar], "select computation")?;
    sig.expect_result(&Shape::scalar(ElementType::Pred), "select computation")?;
    check_scalar_reducer(ctx, scatter, &[Shape::scalar(t)], "scatter computation")?;
    Ok(Inferred::Operand(0))
}

pub(super) fn sort(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let a = ctx.array(0)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let [d] = dims else {
        return Err("sort takes one dimension".into());
    };
    dim(*d, a.dims().len(), "sort dimension")?;
    let mut params = Vec::with_capacity(2 * ctx.ops.len());
    for i in 0..ctx.ops.len() {
        let b = ctx.array(i)?;
        if b.dims() != a.dims() {
            return Err(format!(
                "sort operand {i} {} has other dimensions than operand 0 {}",
                show(ctx.ops[i]),
                show(ctx.ops[0])
            ));
        }
        let s = Shape::scalar(b.element_type());
        params.push(s.clone());
        params.push(s);
    }
    let cmp = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    let sig = ctx.signature(cmp)?;
    let refs: Vec<&Shape> = params.iter().collect();
    sig.expect_params(&refs, "comparator")?;
    sig.expect_result(&Shape::scalar(ElementType::Pred), "comparator")?;
    if ctx.ops.len() == 1 {
        Ok(Inferred::Operand(0))
    } else {
        Ok(Inferred::Shape(Shape::tuple(
            ctx.ops.iter().map(|s| super::strip_layouts(s)).collect(),
        )))
    }
}

pub(super) fn topk(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let k = *ctx.required(ctx.instr.topk_k().as_ref(), "k=")?;
    let Some((&n, rest)) = a.dims().split_last() else {
        return Err("topk needs an operand of rank at least 1".into());
    };
    if k < 0 || k > n {
        return Err(format!("k={k} is not within [0, {n}]"));
    }
    let mut out = rest.to_vec();
    out.push(k);
    Ok(Inferred::Shape(Shape::tuple(vec![
        array(a.element_type(), out.clone()),
        array(ElementType::S32, out),
    ])))
}

pub(super) fn map(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let a = ctx.array(0)?;
    let mut params = Vec::with_capacity(ctx.ops.len());
    for i in 0..ctx.ops.len() {
        let b = ctx.array(i)?;
        if b.dims() != a.dims() {
            return Err(format!(
                "map operand {i} {} has other dimensions than operand 0 {}",
                show(ctx.ops[i]),
                show(ctx.ops[0])
            ));
        }
        params.push(Shape::scalar(b.element_type()));
    }
    let f = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    let sig = ctx.signature(f)?;
    let refs: Vec<&Shape> = params.iter().collect();
    sig.expect_params(&refs, "mapped computation")?;
    let Some(t) = scalar_type(sig.result) else {
        return Err(format!(
            "mapped computation `{}` must return a scalar, not {}",
            sig.name,
            show(sig.result)
        ));
    };
    Ok(Inferred::Like(0, t))
}
