//! Control flow and calls: while, conditional, call, fusion, custom-call, scan
//! (the generic async ops are in `async_chain.rs`).

use super::{same_shape, show, strip_layouts, Ctx, Inferred, R};
use crate::shape::{ElementType, Shape};

pub(super) fn while_loop(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let s = ctx.ops[0];
    let body = ctx.required_comp(ctx.instr.while_body(), "body=")?;
    let cond = ctx.required_comp(ctx.instr.while_condition(), "condition=")?;
    let b = ctx.signature(body)?;
    b.expect_params(&[s], "while body")?;
    b.expect_result(s, "while body")?;
    let c = ctx.signature(cond)?;
    c.expect_params(&[s], "while condition")?;
    c.expect_result(&Shape::scalar(ElementType::Pred), "while condition")?;
    Ok(Inferred::Operand(0))
}

pub(super) fn conditional(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let branches = ctx.need(
        ctx.instr.branch_computations(),
        "branch_computations= (or true_computation= and false_computation=)",
    )?;
    let sel = ctx.ops[0];
    let by_pred = sel.element_type() == Some(ElementType::Pred);
    if by_pred
        && ctx
            .instr
            .attr(&crate::AttrName::BranchComputations)
            .is_some()
    {
        return Err(
            "unexpected attribute \"branch_computations\": a conditional on a pred \
                    takes true_computation= and false_computation="
                .into(),
        );
    }
    let ok_sel = sel.rank() == 0
        && match sel.element_type() {
            Some(ElementType::Pred) => branches.len() == 2,
            Some(ElementType::S32) => !branches.is_empty(),
            _ => false,
        };
    if !ok_sel {
        return Err(format!(
            "the branch selector must be pred[] (two branches) or s32[], not {}{}",
            show(sel),
            if by_pred {
                " with other than two branches"
            } else {
                ""
            }
        ));
    }
    if ctx.ops.len() != branches.len() + 1 {
        return Err(format!(
            "conditional has {} branches but {} branch operands",
            branches.len(),
            ctx.ops.len() - 1
        ));
    }
    let mut result: Option<&Shape> = None;
    for (i, &b) in branches.iter().enumerate() {
        let sig = ctx.signature(b)?;
        sig.expect_params(&[ctx.ops[i + 1]], &format!("branch {i}"))?;
        match result {
            None => result = Some(sig.result),
            Some(r) => sig.expect_result(r, &format!("branch {i}"))?,
        }
    }
    match result {
        Some(r) if same_shape(r, ctx.declared()) => Ok(Inferred::Declared),
        Some(r) => Ok(Inferred::Shape(strip_layouts(r))),
        None => Err("conditional has no branches".into()),
    }
}

fn called(ctx: &Ctx<'_>, comp: crate::ir::CompId, role: &str) -> R {
    let sig = ctx.signature(comp)?;
    sig.expect_params(ctx.ops, role)?;
    if same_shape(sig.result, ctx.declared()) {
        Ok(Inferred::Declared)
    } else {
        Ok(Inferred::Shape(strip_layouts(sig.result)))
    }
}

pub(super) fn call(ctx: &Ctx<'_>) -> R {
    let c = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    called(ctx, c, "called computation")
}

pub(super) fn fusion(ctx: &Ctx<'_>) -> R {
    let c = ctx.required_comp(ctx.instr.calls(), "calls=")?;
    if ctx.instr.fusion_kind().is_none() {
        return Err("fusion needs kind=".into());
    }
    aliasing(ctx)?;
    called(ctx, c, "fused computation")
}

/// `output_to_operand_aliasing`: each output index names a subshape of the result, each
/// operand index a subshape of that operand, and the two have the same shape.
pub(super) fn aliasing(ctx: &Ctx<'_>) -> Result<(), String> {
    for a in ctx.instr.output_to_operand_aliasing() {
        let out = ctx.declared().subshape(&a.output_index).ok_or_else(|| {
            format!(
                "output_to_operand_aliasing names output {{{}}}, which the result does not have",
                super::join(&a.output_index)
            )
        })?;
        let op = usize::try_from(a.operand)
            .ok()
            .and_then(|i| ctx.ops.get(i))
            .ok_or_else(|| {
                format!(
                    "output_to_operand_aliasing names operand {}, which does not exist",
                    a.operand
                )
            })?;
        let sub = op.subshape(&a.operand_index).ok_or_else(|| {
            format!(
                "output_to_operand_aliasing names {{{}}} of operand {}, which it does not have",
                super::join(&a.operand_index),
                a.operand
            )
        })?;
        if !same_shape(out, sub) {
            return Err(format!(
                "output_to_operand_aliasing aliases output {{{}}} {} with operand {} {{{}}} {}",
                super::join(&a.output_index),
                show(out),
                a.operand,
                super::join(&a.operand_index),
                show(sub)
            ));
        }
    }
    Ok(())
}

/// A custom call's result is whatever it declares; its called computations must exist.
pub(super) fn custom_call(ctx: &Ctx<'_>) -> R {
    if ctx.instr.custom_call_target().is_none() {
        return Err("custom-call needs custom_call_target=".into());
    }
    for c in ctx.instr.called_computations_iter() {
        ctx.signature(c)?;
    }
    aliasing(ctx)?;
    if let Some(crate::AttrValue::Shapes(constraints)) =
        ctx.instr.attr(&crate::AttrName::OperandLayoutConstraints)
    {
        if constraints.len() != ctx.ops.len() {
            return Err(format!(
                "Expected {} operand layout constraints, {} given",
                ctx.ops.len(),
                constraints.len()
            ));
        }
        for (i, (c, op)) in constraints.iter().zip(ctx.ops).enumerate() {
            if !same_shape(c, op) {
                return Err(format!(
                    "operand layout constraint {} for operand {i} is not compatible with operand shape {}",
                    show(c),
                    show(op)
                ));
            }
        }
    }
    Ok(Inferred::Declared)
}

/// `scan(inputs..., inits...), dimensions={d}, num_carries=N, to_apply=body`: the last N
/// operands are the initial carries, the others the inputs, all of the same size L along
/// their dimension `d`. At each of the L steps (from position 0 up, or from L-1 down with
/// `is_reverse=true`) the body takes the inputs' slices at that position (dimension `d`
/// removed) followed by the carries, and returns `(outputs..., carries...)`: the new
/// carries, of the shapes of the initial ones, and this step's outputs, which the scan
/// stacks along a new dimension `d` of size L. The result is `(stacked outputs...,
/// final carries...)`; a body returning one value that is not a tuple makes a scan
/// returning that one value (stacked when N is 0, the final carry when N is 1).
pub(super) fn scan(ctx: &Ctx<'_>) -> R {
    let body = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions={d}")?;
    let &[d] = dims else {
        return Err(format!(
            "scan takes one dimension in dimensions=, not {}",
            dims.len()
        ));
    };
    let carries = ctx.instr.scan_num_carries();
    let n_ops = ctx.ops.len();
    let c = usize::try_from(carries)
        .ok()
        .filter(|&c| c <= n_ops)
        .ok_or_else(|| {
            format!("num_carries={carries} is out of range for a scan of {n_ops} operands")
        })?;
    let n_in = n_ops - c;
    if n_in == 0 {
        return Err(format!(
            "scan needs at least one input besides its {c} carr{}",
            if c == 1 { "y" } else { "ies" }
        ));
    }
    let mut length: Option<i64> = None;
    let mut params: Vec<Shape> = Vec::with_capacity(n_ops);
    for i in 0..n_in {
        let a = ctx.array(i)?;
        let du = usize::try_from(d)
            .ok()
            .filter(|&du| du < a.dims().len())
            .ok_or_else(|| {
                format!(
                    "scan dimension {d} is out of range for input {i} {}",
                    show(ctx.ops[i])
                )
            })?;
        let len = a.dims()[du];
        match length {
            None => length = Some(len),
            Some(l) if l != len => {
                return Err(format!(
                    "scan input {i} {} has size {len} along dimension {d}, but input 0 has {l}",
                    show(ctx.ops[i])
                ))
            }
            Some(_) => {}
        }
        let mut slice = a.dims().to_vec();
        slice.remove(du);
        params.push(Shape::array(a.element_type(), slice));
    }
    let length = length.unwrap_or(0);
    params.extend(ctx.ops[n_in..].iter().map(|s| strip_layouts(s)));
    let sig = ctx.signature(body)?;
    let param_refs: Vec<&Shape> = params.iter().collect();
    sig.expect_params(&param_refs, "scan body")?;
    let returned: Vec<&Shape> = if sig.result.is_tuple() {
        sig.result.tuple_shapes().iter().collect()
    } else {
        vec![sig.result]
    };
    if returned.len() < c {
        return Err(format!(
            "scan body `{}` returns {} but must return (outputs..., {c} carries)",
            sig.name,
            show(sig.result)
        ));
    }
    let n_out = returned.len() - c;
    let mut elements: Vec<Shape> = Vec::with_capacity(returned.len());
    for (k, out) in returned[..n_out].iter().enumerate() {
        let a = out
            .as_array()
            .filter(|a| a.element_type().is_array_type())
            .ok_or_else(|| {
                format!(
                    "scan body `{}` output {k} must be an array, not {}",
                    sig.name,
                    show(out)
                )
            })?;
        let du = usize::try_from(d)
            .ok()
            .filter(|&du| du <= a.dims().len())
            .ok_or_else(|| {
                format!(
                    "scan dimension {d} is out of range for stacking body output {k} {}",
                    show(out)
                )
            })?;
        let mut stacked = a.dims().to_vec();
        stacked.insert(du, length);
        elements.push(Shape::array(a.element_type(), stacked));
    }
    for (k, (got, init)) in returned[n_out..].iter().zip(&ctx.ops[n_in..]).enumerate() {
        if !same_shape(got, init) {
            return Err(format!(
                "scan body `{}` returns carry {k} as {} but its initial value is {}",
                sig.name,
                show(got),
                show(init)
            ));
        }
        elements.push(strip_layouts(init));
    }
    let result = if sig.result.is_tuple() {
        Shape::tuple(elements)
    } else {
        elements.pop().unwrap_or_else(|| Shape::tuple(Vec::new()))
    };
    if same_shape(&result, ctx.declared()) {
        Ok(Inferred::Declared)
    } else {
        Ok(Inferred::Shape(result))
    }
}
