//! Elementwise opcodes: operands of the same dimensions (HLO has no implicit broadcast;
//! `clamp` bounds and the `select` predicate may be scalars), element type rules per
//! opcode.

use super::{complex_component, show, Ctx, Inferred, R};
use crate::opcode::Opcode;
use crate::shape::{ElementType, TypeClass};

/// Which element types an opcode accepts.
#[derive(Clone, Copy)]
enum Types {
    /// Any data type.
    Any,
    /// Numbers (not `pred`).
    Numeric,
    /// Floating point or complex.
    FloatOrComplex,
    /// Real floating point.
    Float,
    /// `pred` or integers.
    Logical,
    /// Integers.
    Integral,
    /// Signed integers, floats, complex.
    Signed,
}

impl Types {
    fn accepts(self, et: ElementType) -> bool {
        let c = et.class();
        match self {
            Types::Any => et.is_array_type(),
            Types::Numeric => matches!(
                c,
                TypeClass::Signed | TypeClass::Unsigned | TypeClass::Float | TypeClass::Complex
            ),
            Types::FloatOrComplex => matches!(c, TypeClass::Float | TypeClass::Complex),
            Types::Float => c == TypeClass::Float,
            Types::Logical => {
                matches!(c, TypeClass::Pred | TypeClass::Signed | TypeClass::Unsigned)
            }
            Types::Integral => matches!(c, TypeClass::Signed | TypeClass::Unsigned),
            Types::Signed => matches!(c, TypeClass::Signed | TypeClass::Float | TypeClass::Complex),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Types::Any => "an array type",
            Types::Numeric => "a numeric type",
            Types::FloatOrComplex => "a floating-point or complex type",
            Types::Float => "a floating-point type",
            Types::Logical => "pred or an integer type",
            Types::Integral => "an integer type",
            Types::Signed => "a signed integer, floating-point or complex type",
        }
    }
}

pub(super) fn infer(ctx: &Ctx<'_>) -> R {
    use Opcode::*;
    let op = ctx.instr.opcode();
    match op {
        Copy => {
            ctx.arity(1)?;
            Ok(Inferred::Operand(0))
        }
        Abs => unary(ctx, Types::Numeric, complex_component),
        Negate => unary(ctx, Types::Numeric, |t| t),
        Sign => unary(ctx, Types::Signed, |t| t),
        Exp | Expm1 | Log | Log1p | Logistic | Sqrt | Rsqrt | Cbrt | Cos | Sin | Tan | Tanh
        | Acos | Acosh | Asin | Asinh | Atan | Atanh | Cosh | Sinh | Erf => {
            unary(ctx, Types::FloatOrComplex, |t| t)
        }
        Floor | Ceil | RoundNearestAfz | RoundNearestEven => unary(ctx, Types::Float, |t| t),
        IsFinite => unary(ctx, Types::Float, |_| ElementType::Pred),
        Not => unary(ctx, Types::Logical, |t| t),
        PopulationCount | Clz => unary(ctx, Types::Integral, |t| t),
        Real | Imag => unary(ctx, Types::Numeric, complex_component),
        ReducePrecision => {
            let (e, m) = &ctx.need(
                ctx.instr.reduce_precision_bits(),
                "exponent_bits= and mantissa_bits=",
            )?;
            if *e < 1 || *m < 0 {
                return Err(format!(
                    "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, not {e} and {m}"
                ));
            }
            unary(ctx, Types::Float, |t| t)
        }
        Convert => {
            ctx.arity(1)?;
            let from = ctx.array(0)?.element_type();
            let to = ctx.declared_array()?.element_type();
            if from.is_complex() && !to.is_complex() {
                return Err(format!(
                    "convert from complex {from} to real {to} is not allowed (use real/imag)"
                ));
            }
            Ok(Inferred::Like(0, to))
        }
        BitcastConvert => bitcast_convert(ctx),
        Add | Subtract | Multiply | Divide | Maximum | Minimum | Remainder | Power => {
            binary(ctx, Types::Any, |t| t)
        }
        Atan2 => binary(ctx, Types::FloatOrComplex, |t| t),
        Complex => binary(ctx, Types::Float, |t| match t {
            ElementType::F64 => ElementType::C128,
            _ => ElementType::C64,
        })
        .and_then(|r| {
            let t = ctx.array(0)?.element_type();
            if matches!(t, ElementType::F32 | ElementType::F64) {
                Ok(r)
            } else {
                Err(format!("complex takes f32 or f64 parts, not {t}"))
            }
        }),
        And | Or | Xor => binary(ctx, Types::Logical, |t| t),
        ShiftLeft | ShiftRightArithmetic | ShiftRightLogical | Mulhi => {
            binary(ctx, Types::Integral, |t| t)
        }
        Compare => {
            if ctx.instr.comparison_direction().is_none() {
                return Err("compare needs direction=".into());
            }
            let r = binary(ctx, Types::Any, |_| ElementType::Pred)?;
            check_comparison_type(ctx)?;
            Ok(r)
        }
        Select => select(ctx),
        Clamp => clamp(ctx),
        StochasticConvert => stochastic_convert(ctx),
        _ => Err(format!("`{op}` is not an elementwise opcode")),
    }
}

/// An explicit `type=` must fit the operands (XLA's rule): floats and complex numbers
/// compare as FLOAT or TOTALORDER, signed integers as SIGNED, unsigned ones and `pred` as
/// UNSIGNED. A mismatch would make the comparison's meaning depend on which one is believed.
fn check_comparison_type(ctx: &Ctx<'_>) -> Result<(), String> {
    use crate::attrs::{AttrName, AttrValue, ComparisonType as T};
    let Some(AttrValue::ComparisonType(given)) = ctx.instr.attr(&AttrName::Type) else {
        return Ok(());
    };
    let et = ctx.array(0)?.element_type();
    let allowed: &[T] = match et.class() {
        TypeClass::Float | TypeClass::Complex => &[T::Float, T::TotalOrder],
        TypeClass::Signed => &[T::Signed],
        TypeClass::Unsigned | TypeClass::Pred => &[T::Unsigned],
        _ => return Ok(()),
    };
    if allowed.contains(given) {
        return Ok(());
    }
    let names: Vec<&str> = allowed.iter().map(|t| t.as_str()).collect();
    Err(format!(
        "compare of {et} cannot have type={}; it takes type={}",
        given.as_str(),
        names.join(" or type=")
    ))
}

fn check_type(ctx: &Ctx<'_>, i: usize, types: Types) -> Result<ElementType, String> {
    let t = ctx.array(i)?.element_type();
    if types.accepts(t) {
        Ok(t)
    } else {
        Err(format!(
            "{} needs {}, but operand {i} is {t}",
            ctx.instr.opcode(),
            types.describe()
        ))
    }
}

fn unary(ctx: &Ctx<'_>, types: Types, result: impl Fn(ElementType) -> ElementType) -> R {
    ctx.arity(1)?;
    let t = check_type(ctx, 0, types)?;
    Ok(Inferred::Like(0, result(t)))
}

/// Operands `i` and `j` have the same dimensions.
fn same_dims(ctx: &Ctx<'_>, i: usize, j: usize) -> Result<(), String> {
    if ctx.ops[i].dims() == ctx.ops[j].dims() {
        Ok(())
    } else {
        Err(format!(
            "operands {i} and {j} of {} have different dimensions ({} vs {}); HLO has no implicit broadcast",
            ctx.instr.opcode(),
            show(ctx.ops[i]),
            show(ctx.ops[j])
        ))
    }
}

fn binary(ctx: &Ctx<'_>, types: Types, result: impl Fn(ElementType) -> ElementType) -> R {
    ctx.arity(2)?;
    let a = check_type(ctx, 0, types)?;
    let b = check_type(ctx, 1, types)?;
    if a != b {
        return Err(format!(
            "operands of {} have different element types ({a} vs {b})",
            ctx.instr.opcode()
        ));
    }
    same_dims(ctx, 0, 1)?;
    Ok(Inferred::Like(0, result(a)))
}

fn select(ctx: &Ctx<'_>) -> R {
    ctx.arity(3)?;
    let p = ctx.array(0)?;
    if p.element_type() != ElementType::Pred {
        return Err(format!(
            "select's predicate must be pred, not {}",
            p.element_type()
        ));
    }
    let a = ctx.array(1)?.element_type();
    let b = ctx.array(2)?.element_type();
    if a != b {
        return Err(format!(
            "select's branches have different element types ({a} vs {b})"
        ));
    }
    same_dims(ctx, 1, 2)?;
    if !p.dims().is_empty() {
        same_dims(ctx, 0, 1)?;
    }
    Ok(Inferred::Like(1, a))
}

fn clamp(ctx: &Ctx<'_>) -> R {
    ctx.arity(3)?;
    let t = check_type(ctx, 1, Types::Any)?;
    for i in [0, 2] {
        let b = ctx.array(i)?;
        if b.element_type() != t {
            return Err(format!(
                "clamp bound {i} is {} but the operand is {t}",
                b.element_type()
            ));
        }
        if !b.dims().is_empty() {
            same_dims(ctx, i, 1)?;
        }
    }
    Ok(Inferred::Like(1, t))
}

fn stochastic_convert(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let t = check_type(ctx, 0, Types::Float)?;
    let r = ctx.array(1)?.element_type();
    if !r.is_unsigned_integral() || r.bit_width() != t.bit_width() {
        return Err(format!(
            "stochastic-convert's random operand must be an unsigned integer as wide as {t}, not {r}"
        ));
    }
    same_dims(ctx, 0, 1)?;
    Ok(Inferred::Like(0, ctx.declared_array()?.element_type()))
}

/// Same bit width: same dimensions. Narrower result: one more, minor dimension holding the
/// ratio. Wider result: the operand's minor dimension (the ratio) disappears.
fn bitcast_convert(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let d = ctx.declared_array()?;
    let (from, to) = (
        a.element_type().bit_width().unwrap_or(0),
        d.element_type().bit_width().unwrap_or(0),
    );
    let ok = if from == to {
        a.dims() == d.dims()
    } else if from > to {
        let ratio = i64::from(from / to.max(1));
        from % to.max(1) == 0
            && d.dims()
                .split_last()
                .is_some_and(|(&last, rest)| last == ratio && rest == a.dims())
    } else {
        let ratio = i64::from(to / from.max(1));
        to % from.max(1) == 0
            && a.dims()
                .split_last()
                .is_some_and(|(&last, rest)| last == ratio && rest == d.dims())
    };
    if ok {
        Ok(Inferred::Declared)
    } else {
        Err(format!(
            "bitcast-convert from {} to {} does not keep the bits ({from}-bit to {to}-bit elements)",
            show(ctx.ops[0]),
            show(ctx.declared())
        ))
    }
}
