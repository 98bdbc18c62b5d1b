//! The remaining opcodes: random numbers, FFT, linear algebra, batch norm, tokens, ids,
//! infeed/outfeed and send/recv.

use super::{array, complex_component, dim, same_shape, show, Ctx, Inferred, R};
use crate::attrs::{AttrName, AttrValue};
use crate::shape::{ElementType, Shape};

fn token() -> Shape {
    Shape::token()
}

pub(super) fn rng(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let (a, b) = (ctx.array(0)?, ctx.array(1)?);
    if !a.dims().is_empty() || !b.dims().is_empty() || a.element_type() != b.element_type() {
        return Err(format!(
            "rng's parameters must be two scalars of one type, not {} and {}",
            show(ctx.ops[0]),
            show(ctx.ops[1])
        ));
    }
    let dist = ctx.required(ctx.instr.rng_distribution(), "distribution=")?;
    match dist {
        "rng_uniform" => {}
        "rng_normal" if a.element_type().is_float() => {}
        "rng_normal" => return Err("rng_normal needs floating-point parameters".into()),
        other => return Err(format!("unknown rng distribution `{other}`")),
    }
    let d = ctx.declared_array()?;
    if d.element_type() != a.element_type() {
        return Err(format!(
            "rng returns {} but its parameters are {}",
            d.element_type(),
            a.element_type()
        ));
    }
    Ok(Inferred::Declared)
}

/// `(new state, random bits)`: the state keeps its shape; the bits are any integer array.
pub(super) fn rng_bit_generator(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    ctx.array(0)?;
    let d = ctx.declared();
    match d.tuple_shapes() {
        [state, bits] if same_shape(state, ctx.ops[0]) && bits.is_array() => Ok(Inferred::Declared),
        _ => Err(format!(
            "rng-bit-generator's shape must be ({}, bits), not {}",
            show(ctx.ops[0]),
            show(d)
        )),
    }
}

pub(super) fn rng_get_and_update_state(ctx: &Ctx<'_>) -> R {
    ctx.arity(0)?;
    Ok(Inferred::Shape(array(ElementType::U64, vec![2])))
}

pub(super) fn id_scalar(ctx: &Ctx<'_>) -> R {
    ctx.arity(0)?;
    Ok(Inferred::Shape(Shape::scalar(ElementType::U32)))
}

pub(super) fn fft(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let ty = ctx.required(ctx.instr.fft_type(), "fft_type=")?;
    let len = ctx.required(ctx.instr.fft_length(), "fft_length=")?;
    let r = a.dims().len();
    if len.is_empty() || len.len() > 3 || len.len() > r {
        return Err(format!(
            "fft_length must have 1 to 3 entries, at most the operand's rank {r}"
        ));
    }
    let tail = &a.dims()[r - len.len()..];
    let last = *len.last().unwrap_or(&0);
    let et = a.element_type();
    match ty {
        "FFT" | "IFFT" => {
            if !et.is_complex() {
                return Err(format!("{ty} needs a complex operand, not {et}"));
            }
            if tail != len {
                return Err(format!(
                    "{ty}'s fft_length does not match the operand's minor dimensions"
                ));
            }
            Ok(Inferred::Operand(0))
        }
        "RFFT" => {
            let out_t = match et {
                ElementType::F32 => ElementType::C64,
                ElementType::F64 => ElementType::C128,
                _ => return Err(format!("RFFT needs an f32 or f64 operand, not {et}")),
            };
            if tail != len {
                return Err(
                    "RFFT's fft_length does not match the operand's minor dimensions".into(),
                );
            }
            let mut out = a.dims().to_vec();
            out[r - 1] = if last == 0 { 0 } else { last / 2 + 1 };
            Ok(Inferred::Shape(array(out_t, out)))
        }
        "IRFFT" => {
            if !et.is_complex() {
                return Err(format!("IRFFT needs a complex operand, not {et}"));
            }
            let k = len.len();
            let ok = tail[..k - 1] == len[..k - 1]
                && tail[k - 1] == if last == 0 { 0 } else { last / 2 + 1 };
            if !ok {
                return Err(
                    "IRFFT's fft_length does not match the operand's minor dimensions".into(),
                );
            }
            let mut out = a.dims().to_vec();
            out[r - 1] = last;
            Ok(Inferred::Shape(array(complex_component(et), out)))
        }
        other => Err(format!("unknown fft_type `{other}`")),
    }
}

/// Checks `[..., m, m]` and returns m.
fn square(ctx: &Ctx<'_>, i: usize) -> Result<i64, String> {
    let a = ctx.array(i)?;
    let d = a.dims();
    let r = d.len();
    if r < 2 || d[r - 1] != d[r - 2] {
        return Err(format!(
            "{} needs square matrices [..., m, m], not {}",
            ctx.instr.opcode(),
            show(ctx.ops[i])
        ));
    }
    if !(a.element_type().is_float() || a.element_type().is_complex()) {
        return Err(format!(
            "{} needs a floating-point or complex type, not {}",
            ctx.instr.opcode(),
            a.element_type()
        ));
    }
    Ok(d[r - 1])
}

pub(super) fn cholesky(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    square(ctx, 0)?;
    Ok(Inferred::Operand(0))
}

pub(super) fn triangular_solve(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let m = square(ctx, 0)?;
    let (a, b) = (ctx.array(0)?, ctx.array(1)?);
    if a.element_type() != b.element_type() || a.dims().len() != b.dims().len() {
        return Err(format!(
            "triangular-solve's a {} and b {} differ in element type or rank",
            show(ctx.ops[0]),
            show(ctx.ops[1])
        ));
    }
    let r = b.dims().len();
    let left = matches!(
        ctx.instr.attr(&AttrName::LeftSide),
        Some(AttrValue::Bool(true))
    );
    let solved = if left {
        b.dims()[r - 2]
    } else {
        b.dims()[r - 1]
    };
    if solved != m || a.dims()[..r - 2] != b.dims()[..r - 2] {
        return Err(format!(
            "triangular-solve's b {} does not match a {} (left_side={left})",
            show(ctx.ops[1]),
            show(ctx.ops[0])
        ));
    }
    Ok(Inferred::Operand(1))
}

/// Checks the per-feature operands `idx` (rank 1, size of the feature dimension, same
/// float type) and returns the feature vector's shape.
fn features(ctx: &Ctx<'_>, idx: &[usize]) -> Result<Shape, String> {
    let a = ctx.array(0)?;
    if !a.element_type().is_float() {
        return Err("batch norm needs a floating-point operand".into());
    }
    let fi = &ctx.need(ctx.instr.feature_index(), "feature_index=")?;
    let f = a.dims()[dim(*fi, a.dims().len(), "feature_index")?];
    let v = array(a.element_type(), vec![f]);
    for &i in idx {
        if !same_shape(ctx.ops[i], &v) {
            return Err(format!(
                "batch norm operand {i} must be {}, not {}",
                show(&v),
                show(ctx.ops[i])
            ));
        }
    }
    Ok(v)
}

pub(super) fn batch_norm_training(ctx: &Ctx<'_>) -> R {
    ctx.arity(3)?;
    let v = features(ctx, &[1, 2])?;
    Ok(Inferred::Shape(Shape::tuple(vec![
        super::strip_layouts(ctx.ops[0]),
        v.clone(),
        v,
    ])))
}

pub(super) fn batch_norm_inference(ctx: &Ctx<'_>) -> R {
    ctx.arity(5)?;
    features(ctx, &[1, 2, 3, 4])?;
    Ok(Inferred::Operand(0))
}

pub(super) fn batch_norm_grad(ctx: &Ctx<'_>) -> R {
    ctx.arity(5)?;
    let v = features(ctx, &[1, 2, 3])?;
    if !same_shape(ctx.ops[4], ctx.ops[0]) {
        return Err("batch-norm-grad's output gradient must have the operand's shape".into());
    }
    Ok(Inferred::Shape(Shape::tuple(vec![
        super::strip_layouts(ctx.ops[0]),
        v.clone(),
        v,
    ])))
}

pub(super) fn same_as_operand(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    Ok(Inferred::Operand(0))
}

fn expect_token(ctx: &Ctx<'_>, i: usize) -> Result<(), String> {
    if ctx.ops[i].is_token() {
        Ok(())
    } else {
        Err(format!(
            "operand {i} of {} must be a token, not {}",
            ctx.instr.opcode(),
            show(ctx.ops[i])
        ))
    }
}

/// `after-all` orders its operands before its token result; XLA's verifier takes operands
/// of any shape (a value can be a dependency as well as a token).
pub(super) fn after_all(_ctx: &Ctx<'_>) -> R {
    Ok(Inferred::Shape(token()))
}

pub(super) fn add_dependency(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    Ok(Inferred::Operand(0))
}

pub(super) fn infeed(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    expect_token(ctx, 0)?;
    match ctx.declared().tuple_shapes() {
        [_, t] if t.is_token() => Ok(Inferred::Declared),
        _ => Err("infeed's shape must be (data, token[])".into()),
    }
}

pub(super) fn outfeed(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    expect_token(ctx, 1)?;
    Ok(Inferred::Shape(token()))
}

pub(super) fn send(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    expect_token(ctx, 1)?;
    match ctx.declared().tuple_shapes() {
        [data, _, t] if same_shape(data, ctx.ops[0]) && t.is_token() => Ok(Inferred::Declared),
        _ => Err(format!(
            "send's shape must be ({}, u32[], token[])",
            show(ctx.ops[0])
        )),
    }
}

pub(super) fn send_done(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    Ok(Inferred::Shape(token()))
}

pub(super) fn recv(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    expect_token(ctx, 0)?;
    match ctx.declared().tuple_shapes() {
        [_, _, t] if t.is_token() => Ok(Inferred::Declared),
        _ => Err("recv's shape must be (data, u32[], token[])".into()),
    }
}

pub(super) fn recv_done(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    match ctx.ops[0].tuple_shapes() {
        [data, _, t] => Ok(Inferred::Shape(Shape::tuple(vec![
            super::strip_layouts(data),
            super::strip_layouts(t),
        ]))),
        _ => Err(format!(
            "recv-done's operand must be a recv tuple, not {}",
            show(ctx.ops[0])
        )),
    }
}
