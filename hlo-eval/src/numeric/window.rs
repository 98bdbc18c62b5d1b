//! `reduce-window` (variadic, padding, base and window dilation, strides) and
//! `select-and-scatter`. Cumulative windows longer than 16 follow XLA:CPU's blocked order
//! ([`super::window_scan`]).

use super::reducer::combine;
use super::util::{
    as_array, dims_of, elem_type, leaves, make_array, operand, pred_value, push_elem, result_part,
    scalar_at, splat, strides, wrap_results,
};
use super::window_scan::{blocked_reduce_window, Combiner};
use super::window_taps::WindowTaps;
use super::{CallComputation, KernelError};
use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, ComparisonType, Window};
use hlo::ir::reducer::classify as simple_reducer;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{CompId, Instruction, Literal, Module, Opcode};

/// The taps of `instr`'s window.
fn taps_of(
    instr: &Instruction,
    in_dims: &[usize],
    out_dims: &[usize],
    what: &str,
) -> Result<WindowTaps, KernelError> {
    WindowTaps::new(&window_attr(instr, what)?.dims, in_dims, out_dims, what)
}

/// The flat offset of `index` for `strides`.
fn flat(index: &[usize], strides: &[usize]) -> usize {
    index.iter().zip(strides).map(|(i, s)| i * s).sum()
}

fn window_attr<'a>(instr: &'a Instruction, what: &str) -> Result<&'a Window, KernelError> {
    instr
        .window()
        .ok_or_else(|| KernelError::Invalid(format!("{what}: missing window")))
}

/// Evaluates `reduce-window`.
pub(crate) fn reduce_window(
    module: &Module,
    instr: &Instruction,
    operands: &[&Literal],
    calls: &mut dyn CallComputation,
) -> Result<Literal, KernelError> {
    const W: &str = "reduce-window";
    if operands.is_empty() || !operands.len().is_multiple_of(2) {
        return Err(KernelError::Invalid(format!(
            "{W}: needs inputs and as many init values"
        )));
    }
    let n = operands.len() / 2;
    let inputs: Vec<&ArrayLiteral> = (0..n)
        .map(|i| operand(operands, i, W))
        .collect::<Result<_, _>>()?;
    let inits: Vec<&ArrayLiteral> = (n..2 * n)
        .map(|i| operand(operands, i, W))
        .collect::<Result<_, _>>()?;
    let in_dims = dims_of(inputs[0].shape(), W)?;
    if inputs
        .iter()
        .any(|a| a.shape().dims() != inputs[0].shape().dims())
        || inits.iter().any(|a| a.data().len() != 1)
    {
        return Err(KernelError::Invalid(format!(
            "{W}: inputs differ in shape or init values are not scalars"
        )));
    }
    let out_shapes: Vec<_> = (0..n)
        .map(|i| result_part(instr.shape(), i, W))
        .collect::<Result<_, _>>()?;
    let out_dims = dims_of(out_shapes[0], W)?;
    let taps = taps_of(instr, &in_dims, &out_dims, W)?;
    let in_strides = strides(&in_dims);
    let out_count: usize = out_dims.iter().product();
    let comp = instr
        .to_apply()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing to_apply")))?;
    let mut idx = vec![0usize; out_dims.len()];

    let blocked = hlo::ir::blocked_scan::cumulative_window(instr, inputs[0].shape().dims())
        .filter(|w| w.is_blocked());
    if let (1, Some(window)) = (n, blocked) {
        let mut f = Combiner {
            native: simple_reducer(module, comp),
            ty: inputs[0].element_type(),
            comp,
            calls,
        };
        return blocked_reduce_window(window, inputs[0], inits[0].data(), out_shapes[0], &mut f);
    }

    if let (1, Some(r)) = (n, simple_reducer(module, comp)) {
        let ty = inputs[0].element_type();
        if elem_type(out_shapes[0], W)? != ty || inits[0].element_type() != ty {
            return Err(KernelError::Invalid(format!("{W}: element types differ")));
        }
        let mut out = splat(inits[0].data(), 0, out_count);
        let src = inputs[0].data();
        for oi in 0..out_count {
            taps.for_each_tap(&idx, |t| {
                combine(r, ty, &mut out, oi, src, flat(t, &in_strides))
            })?;
            super::util::next_index(&mut idx, &out_dims);
        }
        return make_array(out_shapes[0], out, W);
    }

    let mut outs: Vec<ArrayData> = inits
        .iter()
        .map(|a| {
            ArrayData::new(a.element_type())
                .ok_or_else(|| KernelError::Invalid(format!("{W}: bad type")))
        })
        .collect::<Result<_, _>>()?;
    for _ in 0..out_count {
        let mut acc: Vec<Literal> = inits.iter().map(|a| scalar_at(a, 0)).collect();
        taps.for_each_tap(&idx, |t| {
            let ii = flat(t, &in_strides);
            let mut args = std::mem::take(&mut acc);
            args.extend(inputs.iter().map(|a| scalar_at(a, ii)));
            acc = leaves(calls.call(comp, &args)?);
            if acc.len() != n {
                return Err(KernelError::Invalid(format!(
                    "{W}: reducer returned {} values, expected {n}",
                    acc.len()
                )));
            }
            Ok(())
        })?;
        for (o, a) in outs.iter_mut().zip(&acc) {
            push_elem(o, as_array(a, W)?.data(), 0)?;
        }
        super::util::next_index(&mut idx, &out_dims);
    }
    let results = outs
        .into_iter()
        .zip(&out_shapes)
        .map(|(d, s)| make_array(s, d, W))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(wrap_results(results, instr.shape().is_tuple()))
}

fn comp_attr(instr: &Instruction, name: AttrName, what: &str) -> Result<CompId, KernelError> {
    match instr.attr(&name) {
        Some(AttrValue::Computation(c)) => Ok(*c),
        _ => Err(KernelError::Invalid(format!(
            "{what}: missing {}=",
            name.as_str()
        ))),
    }
}

/// A select computation that is a plain comparison of its parameters, applied natively.
fn native_select(module: &Module, comp: CompId) -> Option<ComparisonDirection> {
    let c = module.get_computation(comp)?;
    let root = c.root_instr();
    if root.opcode() != Opcode::Compare
        || c.parameters().len() != 2
        || root.operands() != [c.parameter(0)?, c.parameter(1)?]
        || matches!(root.comparison_type(), Some(ComparisonType::TotalOrder))
        || root.attr(&AttrName::Order).is_some()
    {
        return None;
    }
    let ty = c.instr(c.parameter(0)?).shape().element_type()?;
    if !(ty.is_float() || ty.is_integral())
        || matches!(ty.bit_width(), Some(64)) && ty.is_integral()
    {
        return None;
    }
    root.comparison_direction()
}

/// Evaluates `select-and-scatter`: each source element goes to the operand position the
/// select computation picks in its window, combined there with the scatter computation.
pub(crate) fn select_and_scatter(
    module: &Module,
    instr: &Instruction,
    operands: &[&Literal],
    calls: &mut dyn CallComputation,
) -> Result<Literal, KernelError> {
    const W: &str = "select-and-scatter";
    let x = operand(operands, 0, W)?;
    let source = operand(operands, 1, W)?;
    let init = operand(operands, 2, W)?;
    if init.data().len() != 1 {
        return Err(KernelError::Invalid(format!(
            "{W}: init value is not a scalar"
        )));
    }
    let select = comp_attr(instr, AttrName::Select, W)?;
    let scatter = comp_attr(instr, AttrName::Scatter, W)?;
    let in_dims = dims_of(x.shape(), W)?;
    let src_dims = dims_of(source.shape(), W)?;
    let taps = taps_of(instr, &in_dims, &src_dims, W)?;
    let in_strides = strides(&in_dims);
    let ty = elem_type(instr.shape(), W)?;
    let mut out = splat(init.data(), 0, x.data().len());
    let native = native_select(module, select);
    let reducer = simple_reducer(module, scatter);
    let mut idx = vec![0usize; src_dims.len()];
    let mut chosen = Vec::with_capacity(in_dims.len());
    for si in 0..source.data().len() {
        let found = taps.select(&idx, &mut chosen, |cur, cand| {
            let (cur, ii) = (flat(cur, &in_strides), flat(cand, &in_strides));
            Ok::<bool, KernelError>(match native {
                Some(dir) => {
                    let (a, b) = (
                        x.get_f64(cur).unwrap_or(f64::NAN),
                        x.get_f64(ii).unwrap_or(f64::NAN),
                    );
                    match dir {
                        ComparisonDirection::Ge => a >= b,
                        ComparisonDirection::Gt => a > b,
                        ComparisonDirection::Le => a <= b,
                        ComparisonDirection::Lt => a < b,
                        ComparisonDirection::Eq => a == b,
                        ComparisonDirection::Ne => a != b,
                    }
                }
                None => pred_value(
                    &calls.call(select, &[scalar_at(x, cur), scalar_at(x, ii)])?,
                    W,
                )?,
            })
        })?;
        if found {
            let oi = flat(&chosen, &in_strides);
            match reducer {
                Some(r) => combine(r, ty, &mut out, oi, source.data(), si)?,
                None => {
                    let cur =
                        make_array(&hlo::Shape::scalar(ty), super::util::take(&out, &[oi]), W)?;
                    let v = calls.call(scatter, &[cur, scalar_at(source, si)])?;
                    super::util::copy_elem(&mut out, oi, as_array(&v, W)?.data(), 0)?;
                }
            }
        }
        super::util::next_index(&mut idx, &src_dims);
    }
    make_array(instr.shape(), out, W)
}
