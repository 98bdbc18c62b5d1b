//! The scalar pieces of the C printer: C types, index expressions and guards, literals,
//! and HLO's `convert` and `bitcast-convert` of one C expression (16- and 8-bit floats
//! widened to and narrowed from `float`). Leaves of the printer: they print no statement.

use affine::{Expr, ExprKind};

use codegen::kir::{Const, ScalarType};

/// The C type holding a value of `t`.
pub fn c_type(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Pred | ScalarType::U8 | ScalarType::F8E4M3FN | ScalarType::F8E5M2 => "uint8_t",
        ScalarType::S8 => "int8_t",
        ScalarType::S16 => "int16_t",
        ScalarType::S32 => "int32_t",
        ScalarType::S64 => "int64_t",
        ScalarType::U16 | ScalarType::F16 | ScalarType::BF16 => "uint16_t",
        ScalarType::U32 => "uint32_t",
        ScalarType::U64 => "uint64_t",
        ScalarType::F32 => "float",
        ScalarType::F64 => "double",
        ScalarType::C64 => "hloc_c64",
        ScalarType::C128 => "hloc_c128",
    }
}

/// The C type of a value of `t` in a kernel's registers (its temporaries, accumulators and
/// expressions), where it differs from [`c_type`], the type in memory: a pred is an
/// `int32_t` 0 or 1 there, as C's own comparisons are, and a `uint8_t` only in a pred
/// buffer or local array (the store narrows it). A `uint8_t` compare result converted to
/// `float` kept gcc 12 from vectorizing the loop ("no vectype for stmt": a byte lane per
/// float lane); as `int32_t`, the width of the `float` and `int32_t` lanes it meets, both
/// label_smooth_xent_32k's `fusion_2` loops vectorize.
pub fn reg_type(t: ScalarType) -> &'static str {
    if t == ScalarType::Pred {
        "int32_t"
    } else {
        c_type(t)
    }
}

/// An index expression in C (`int64_t` arithmetic with floor division and modulo).
pub fn expr_c(e: Expr) -> String {
    match e.kind() {
        ExprKind::Const(c) => {
            if c == i64::MIN {
                "(-9223372036854775807LL - 1)".into()
            } else if c < 0 {
                format!("({c}LL)")
            } else {
                format!("{c}LL")
            }
        }
        ExprKind::Var(v) => v.to_string(),
        ExprKind::Add(a, b) => format!("({} + {})", expr_c(a), expr_c(b)),
        ExprKind::Mul(a, b) => format!("({} * {})", expr_c(a), expr_c(b)),
        ExprKind::FloorDiv(a, b) => format!("hloc_floordiv({}, {})", expr_c(a), expr_c(b)),
        ExprKind::CeilDiv(a, b) => format!("hloc_ceildiv({}, {})", expr_c(a), expr_c(b)),
        ExprKind::Mod(a, b) => format!("hloc_mod({}, {})", expr_c(a), expr_c(b)),
        ExprKind::Min(a, b) => format!("hloc_imin({}, {})", expr_c(a), expr_c(b)),
        ExprKind::Max(a, b) => format!("hloc_imax({}, {})", expr_c(a), expr_c(b)),
    }
}

/// A float literal in C (`NAN`, `INFINITY` by name).
fn float_lit(x: f64) -> String {
    if x.is_nan() {
        "NAN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "INFINITY".into()
        } else {
            "(-INFINITY)".into()
        }
    } else {
        format!("{x:?}")
    }
}

/// Is this a 16- or 8-bit float computed in `f32`?
pub(super) fn is_half(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::F16 | ScalarType::BF16 | ScalarType::F8E4M3FN | ScalarType::F8E5M2
    )
}

/// `x` (of type `t`, a half) widened to `float`.
pub(super) fn widen(t: ScalarType, x: String) -> String {
    match t {
        ScalarType::F16 => format!("hloc_f16_to_f32({x})"),
        ScalarType::BF16 => format!("hloc_bf16_to_f32({x})"),
        ScalarType::F8E4M3FN => format!("hloc_f8e4m3fn_to_f32({x})"),
        ScalarType::F8E5M2 => format!("hloc_f8e5m2_to_f32({x})"),
        _ => x,
    }
}

/// `x` (a `float`) rounded to half type `t`.
pub(super) fn narrow(t: ScalarType, x: String) -> String {
    match t {
        ScalarType::F16 => format!("hloc_f32_to_f16({x})"),
        ScalarType::BF16 => format!("hloc_f32_to_bf16({x})"),
        ScalarType::F8E4M3FN => format!("hloc_f32_to_f8e4m3fn({x})"),
        ScalarType::F8E5M2 => format!("hloc_f32_to_f8e5m2({x})"),
        _ => x,
    }
}

/// The arithmetic type of `t`: halves compute in `f32`.
pub(super) fn arith(t: ScalarType) -> ScalarType {
    if is_half(t) {
        ScalarType::F32
    } else {
        t
    }
}

/// libm function of a float op for `f32` (`expf`) or `f64` (`exp`).
pub(super) fn libm(name: &str, t: ScalarType) -> String {
    if t == ScalarType::F64 {
        name.to_string()
    } else {
        format!("{name}f")
    }
}

/// A constant of type `t` in C.
pub(super) fn const_c(t: ScalarType, c: Const) -> String {
    match (t, c) {
        (t, Const::Complex(re, im)) => {
            format!("hloc_mk_{}({}, {})", t.name(), float_lit(re), float_lit(im))
        }
        (t, Const::Int(i)) if t.is_complex() => format!("hloc_mk_{}({i}.0, 0.0)", t.name()),
        (t, Const::Float(x)) if t.is_complex() => {
            format!("hloc_mk_{}({}, 0.0)", t.name(), float_lit(x))
        }
        (t, Const::Bool(b)) if t.is_complex() => {
            format!(
                "hloc_mk_{}({}, 0.0)",
                t.name(),
                if b { "1.0" } else { "0.0" }
            )
        }
        (_, Const::Bool(b)) => convert_c(if b { "1" } else { "0" }, ScalarType::Pred, t),
        (ScalarType::U64, Const::Int(i)) => format!("((uint64_t){i}ULL)"),
        (ScalarType::S64, Const::Int(i)) if i == i128::from(i64::MIN) => "INT64_MIN".into(),
        (t, Const::Int(i)) if t.is_float() => convert_c(&format!("{i}.0"), ScalarType::F64, t),
        (t, Const::Int(i)) => format!("(({}){i}LL)", c_type(t)),
        (ScalarType::F64, Const::Float(x)) => float_lit(x),
        (ScalarType::F32, Const::Float(x)) => format!("((float){})", float_lit(x)),
        (t, Const::Float(x)) if is_half(t) => narrow(t, format!("((float){})", float_lit(x))),
        (t, Const::Float(x)) => convert_c(&float_lit(x), ScalarType::F64, t),
    }
}

/// HLO `convert` from `from` to `to` of the C expression `x`.
pub(super) fn convert_c(x: &str, from: ScalarType, to: ScalarType) -> String {
    if from == to {
        return x.to_string();
    }
    if to.is_complex() {
        return if from.is_complex() {
            format!(
                "({{ {} hloc_z_ = {x}; hloc_mk_{}(hloc_z_.re, hloc_z_.im); }})",
                c_type(from),
                to.name()
            )
        } else {
            let re = convert_c(x, from, ScalarType::F64);
            format!("hloc_mk_{}({re}, 0.0)", to.name())
        };
    }
    if from.is_complex() {
        if to == ScalarType::Pred {
            return format!(
                "({{ {} hloc_z_ = {x}; (int32_t)(hloc_z_.re != 0 || hloc_z_.im != 0); }})",
                c_type(from)
            );
        }
        // To a real type: the real part.
        return convert_c(&format!("({x}).re"), from.component(), to);
    }
    if to == ScalarType::Pred {
        return format!("((int32_t)({} != 0))", widen(from, x.to_string()));
    }
    if from.is_float() {
        let w = widen(from, x.to_string());
        if to.is_float() {
            return if is_half(to) {
                narrow(to, format!("((float)({w}))"))
            } else {
                format!("(({})({w}))", c_type(to))
            };
        }
        return format!("hloc_f2i_{}((double)({w}))", to.name());
    }
    // From an integer or pred.
    if is_half(to) {
        return narrow(to, format!("((float)({x}))"));
    }
    format!("(({})({x}))", c_type(to))
}

/// HLO `bitcast-convert` from `from` to `to` of the C expression `x` (through `memcpy`
/// where the types differ in kind).
pub(super) fn bitcast_c(x: &str, from: ScalarType, to: ScalarType) -> String {
    if is_half(from) || is_half(to) || (from.is_int() && to.is_int()) {
        return format!("(({})({x}))", c_type(to));
    }
    format!(
        "({{ {} hloc_in_ = {x}; {} hloc_out_; memcpy(&hloc_out_, &hloc_in_, sizeof hloc_out_); hloc_out_; }})",
        c_type(from),
        c_type(to)
    )
}
