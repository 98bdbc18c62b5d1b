//! Control flow and wrappers: while, conditional, scan, tuple access helpers (the async
//! chains are in `async_chain.rs`).

use super::data::{gather_data, make, row_major_strides, udims, View};
use super::error::EvalError;
use hlo::literal::ArrayData;
use hlo::shape::Shape;
use hlo::{CompId, Instruction, Literal};

/// What control flow needs of the interpreter running it (the `Evaluator`): evaluating a
/// called computation, and the limit on one `while` loop's iterations.
pub(crate) trait Interpreter {
    /// Evaluates computation `comp` on `args` (one per parameter).
    fn call(&mut self, comp: CompId, args: Vec<Literal>) -> Result<Literal, EvalError>;
    /// The most iterations one `while` loop may run.
    fn while_limit(&self) -> u64;
}

/// `while`: runs the body while the condition holds.
pub(crate) fn run_while(
    ev: &mut dyn Interpreter,
    instr: &Instruction,
    init: Literal,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let cond = instr
        .while_condition()
        .ok_or_else(|| EvalError::invalid(what, "missing condition="))?;
    let body = instr
        .while_body()
        .ok_or_else(|| EvalError::invalid(what, "missing body="))?;
    let mut state = init;
    let limit = ev.while_limit();
    let mut iterations: u64 = 0;
    loop {
        let c = ev.call(cond, vec![state.clone()])?;
        match c.as_array().map(|a| a.data()) {
            Some(ArrayData::Pred(v)) if v.len() == 1 => {
                if !v[0] {
                    return Ok(state);
                }
            }
            _ => {
                return Err(EvalError::invalid(
                    what,
                    "while condition must return pred[]",
                ))
            }
        }
        if iterations == limit {
            return Err(EvalError::LoopLimit {
                instr: what.to_string(),
                limit,
            });
        }
        iterations += 1;
        state = ev.call(body, vec![state])?;
    }
}

/// `scan(inputs..., inits...)`: runs the body once per position of the scanned dimension
/// `d` (from the first to the last, or the reverse with `is_reverse=true`), on the
/// inputs' slices at that position and the carries; the body returns
/// `(outputs..., carries...)`. The result is `(outputs stacked along d..., final
/// carries...)`, or the one value when the body returns a non-tuple.
pub(crate) fn scan(
    ev: &mut dyn Interpreter,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let body = instr
        .to_apply()
        .ok_or_else(|| EvalError::invalid(what, "missing to_apply="))?;
    let d = instr
        .scan_dimension()
        .and_then(|d| usize::try_from(d).ok())
        .ok_or_else(|| EvalError::invalid(what, "scan needs dimensions={d}"))?;
    let c = usize::try_from(instr.scan_num_carries())
        .ok()
        .filter(|&c| c < vals.len())
        .ok_or_else(|| EvalError::invalid(what, "num_carries= is out of range"))?;
    let n_in = vals.len() - c;
    let inputs = vals[..n_in]
        .iter()
        .map(|v| super::data::array(v, what))
        .collect::<Result<Vec<_>, _>>()?;
    // The positions of each input along `d`: a view of one slice, moved by `d`'s stride.
    let mut slices: Vec<(View, usize, Shape)> = Vec::with_capacity(n_in);
    let mut length: Option<usize> = None;
    for a in &inputs {
        let dims = udims(a.shape(), what)?;
        if d >= dims.len() || length.is_some_and(|l| l != dims[d]) {
            return Err(EvalError::invalid(
                what,
                "scan inputs must have one common size along the scanned dimension",
            ));
        }
        length = Some(dims[d]);
        let strides = row_major_strides(&dims);
        let mut sdims = dims.clone();
        sdims.remove(d);
        let mut sstrides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
        sstrides.remove(d);
        let slice_shape = Shape::array(a.element_type(), sdims.iter().map(|&n| n as i64).collect());
        let view = View {
            dims: sdims,
            strides: sstrides,
            offset: 0,
        };
        slices.push((view, strides[d], slice_shape));
    }
    let length = length.unwrap_or(0);
    let declared = instr.shape();
    let returns_tuple = declared.is_tuple();
    let result_shapes: Vec<Shape> = if returns_tuple {
        declared.tuple_shapes().to_vec()
    } else {
        vec![declared.clone()]
    };
    let n_out = result_shapes.len().checked_sub(c).ok_or_else(|| {
        EvalError::invalid(what, "the result has fewer elements than num_carries=")
    })?;
    let mut carries: Vec<Literal> = vals[n_in..].iter().map(|&v| v.clone()).collect();
    // Per output, the step results in position order.
    let mut steps: Vec<Vec<Option<ArrayData>>> = vec![vec![None; length]; n_out];
    for t in 0..length {
        let pos = if instr.scan_is_reverse() {
            length - 1 - t
        } else {
            t
        };
        let mut args = Vec::with_capacity(vals.len());
        for (a, (view, stride, shape)) in inputs.iter().zip(&slices) {
            let mut v = view.clone();
            v.offset = (pos * stride) as isize;
            args.push(make(shape, gather_data(a.data(), &v, what)?, what)?);
        }
        args.append(&mut carries);
        let returned = ev.call(body, args)?;
        let mut parts = match returned {
            Literal::Tuple(parts) if returns_tuple => parts,
            single if !returns_tuple => vec![single],
            _ => {
                return Err(EvalError::invalid(
                    what,
                    "the scan body's result does not match the scan's shape",
                ))
            }
        };
        if parts.len() != n_out + c {
            return Err(EvalError::invalid(
                what,
                "the scan body returns the wrong number of values",
            ));
        }
        carries = parts.split_off(n_out);
        for (k, out) in parts.into_iter().enumerate() {
            match out {
                Literal::Array(a) => steps[k][pos] = Some(a.data().clone()),
                _ => {
                    return Err(EvalError::invalid(
                        what,
                        "a scan body output must be an array",
                    ))
                }
            }
        }
    }
    let mut results = Vec::with_capacity(n_out + c);
    for (k, per_step) in steps.into_iter().enumerate() {
        results.push(stack(per_step, &result_shapes[k], d, what)?);
    }
    results.extend(carries);
    if returns_tuple {
        Ok(Literal::Tuple(results))
    } else {
        results
            .pop()
            .ok_or_else(|| EvalError::invalid(what, "the scan has no result"))
    }
}

/// The step outputs (in position order) stacked along dimension `d` of `shape`.
fn stack(
    per_step: Vec<Option<ArrayData>>,
    shape: &Shape,
    d: usize,
    what: &str,
) -> Result<Literal, EvalError> {
    if per_step.is_empty() {
        return zeros(shape, what);
    }
    let dims = udims(shape, what)?;
    if d >= dims.len() || dims[d] != per_step.len() {
        return Err(EvalError::invalid(
            what,
            "a stacked scan output does not have the scan's length along the scanned dimension",
        ));
    }
    let mut step_dims = dims.clone();
    step_dims.remove(d);
    let step_len: usize = step_dims.iter().product();
    let mut parts = Vec::with_capacity(per_step.len());
    for p in per_step {
        match p {
            Some(p) if p.len() == step_len => parts.push(p),
            _ => {
                return Err(EvalError::invalid(
                    what,
                    "a scan body output does not match the stacked output's shape",
                ))
            }
        }
    }
    // `parts` concatenated is the [L, step dims...] array; read it in `shape`'s order.
    let all = concat(parts, what)?;
    let step_strides = row_major_strides(&step_dims);
    let mut strides: Vec<isize> = step_strides.iter().map(|&s| s as isize).collect();
    strides.insert(d, step_len as isize);
    let view = View {
        dims,
        strides,
        offset: 0,
    };
    make(shape, gather_data(&all, &view, what)?, what)
}

/// The storages appended in order (all of one kind).
fn concat(parts: Vec<ArrayData>, what: &str) -> Result<ArrayData, EvalError> {
    let mismatch = || EvalError::invalid(what, "scan body outputs change element type");
    let mut iter = parts.into_iter();
    let mut acc = iter.next().ok_or_else(mismatch)?;
    for p in iter {
        macro_rules! append {
            ($($v:ident),*) => {
                match (&mut acc, p) {
                    $((ArrayData::$v(a), ArrayData::$v(b)) => a.extend(b),)*
                    _ => return Err(mismatch()),
                }
            };
        }
        append!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, Bits16, Bits8, F32, F64, C64, C128);
    }
    Ok(acc)
}

/// `conditional`: a `pred` selects branch 0 (true) or 1 (false); an integer index selects
/// that branch, out-of-range indices the last one.
pub(crate) fn conditional(
    ev: &mut dyn Interpreter,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let branches = instr
        .branch_computations()
        .ok_or_else(|| EvalError::invalid(what, "missing branch computations"))?;
    let sel = vals
        .first()
        .and_then(|v| v.as_array())
        .ok_or_else(|| EvalError::invalid(what, "missing branch selector"))?;
    let n = branches.len();
    if n == 0 || vals.len() != n + 1 {
        return Err(EvalError::invalid(
            what,
            "conditional needs one operand per branch",
        ));
    }
    let k = match sel.data() {
        ArrayData::Pred(v) if v.len() == 1 => usize::from(!v[0]),
        ArrayData::S32(v) if v.len() == 1 => usize::try_from(v[0])
            .ok()
            .filter(|&i| i < n)
            .unwrap_or(n - 1),
        _ => {
            return Err(EvalError::invalid(
                what,
                "branch selector must be pred[] or s32[]",
            ))
        }
    };
    ev.call(branches[k], vec![vals[k + 1].clone()])
}

/// Element `i` of a tuple operand.
pub(crate) fn tuple_part(vals: &[&Literal], i: usize, what: &str) -> Result<Literal, EvalError> {
    match vals.first() {
        Some(Literal::Tuple(t)) => t
            .get(i)
            .cloned()
            .ok_or_else(|| EvalError::invalid(what, "tuple operand is too short")),
        _ => Err(EvalError::invalid(what, "expected a tuple operand")),
    }
}

/// A literal of `shape` with every element zero (tokens stay tokens).
pub(crate) fn zeros(shape: &Shape, what: &str) -> Result<Literal, EvalError> {
    match shape {
        Shape::Tuple(t) => Ok(Literal::Tuple(
            t.iter().map(|s| zeros(s, what)).collect::<Result<_, _>>()?,
        )),
        Shape::Array(a) => {
            let ty = a.element_type();
            let Some(empty) = ArrayData::new(ty) else {
                return Ok(Literal::Elided(shape.clone()));
            };
            let n = shape
                .element_count()
                .map_err(|e| EvalError::invalid(what, e.to_string()))? as usize;
            let data = super::data::map_data!(&empty, _v => vec![Default::default(); n]);
            make(shape, data, what)
        }
    }
}
