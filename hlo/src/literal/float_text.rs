//! Floating-point text as XLA writes it: C's `%.Ng`, and the shortest round-tripping
//! forms of `RoundTripFpToString`.

/// C's `printf("%.{precision}g", v)` (glibc spelling of `nan`, `-nan`, `inf`, `-inf`).
pub fn format_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let p = precision.max(1);
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if exp < -4 || exp >= p as i64 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i64 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

/// Removes trailing zeros after a decimal point, and the point itself if nothing follows.
fn strip_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    let s = s.trim_end_matches('0');
    s.strip_suffix('.').unwrap_or(s)
}

/// `nan(0x...)` suffix when the mantissa is not the quiet-NaN default.
fn payload_suffix(mantissa: u64, quiet: u64) -> String {
    if mantissa != quiet {
        format!("(0x{mantissa:x})")
    } else {
        String::new()
    }
}

/// XLA's `RoundTripFpToString(float)`: `%.6g` when that reads back exactly, else `%.9g`;
/// NaN payloads as `nan(0x...)`.
pub fn f32_to_string(v: f32) -> String {
    if v.is_nan() {
        let m = u64::from(v.to_bits() & 0x7f_ffff);
        return format_g(f64::from(v), 6) + &payload_suffix(m, 1 << 22);
    }
    let s = format_g(f64::from(v), 6);
    if s.parse::<f32>().ok() == Some(v) {
        s
    } else {
        format_g(f64::from(v), 9)
    }
}

/// XLA's `RoundTripFpToString(double)`: `%.15g` when that reads back exactly, else `%.17g`.
pub fn f64_to_string(v: f64) -> String {
    if v.is_nan() {
        let m = v.to_bits() & ((1 << 52) - 1);
        return format_g(v, 15) + &payload_suffix(m, 1 << 51);
    }
    let s = format_g(v, 15);
    if s.parse::<f64>().ok() == Some(v) {
        s
    } else {
        format_g(v, 17)
    }
}

/// A small-float value (already decoded) printed with `%.{max_digits10}g`, plus the NaN
/// payload when it is not the quiet default.
pub(crate) fn small_to_string(
    v: f64,
    max_digits10: usize,
    nan_payload: Option<(u32, u32)>,
) -> String {
    let s = format_g(v, max_digits10);
    match nan_payload {
        Some((m, quiet)) if v.is_nan() => s + &payload_suffix(u64::from(m), u64::from(quiet)),
        _ => s,
    }
}

/// XLA's `StrCat(float)` (absl's six significant digits), used for attributes such as
/// `epsilon=`.
pub fn f32_attr_to_string(v: f32) -> String {
    format_g(f64::from(v), 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g() {
        assert_eq!(format_g(1.0, 6), "1");
        assert_eq!(format_g(0.5, 6), "0.5");
        assert_eq!(format_g(1e-5, 6), "1e-05");
        assert_eq!(format_g(123456.0, 6), "123456");
        assert_eq!(format_g(1234567.0, 6), "1.23457e+06");
        assert_eq!(format_g(0.0001, 6), "0.0001");
        assert_eq!(format_g(9.9999995, 6), "10");
        assert_eq!(format_g(-0.0, 6), "-0");
        assert_eq!(format_g(1e100, 6), "1e+100");
        assert_eq!(format_g(f64::NEG_INFINITY, 6), "-inf");
    }

    #[test]
    fn round_trip_forms() {
        assert_eq!(f32_to_string(0.1), "0.1");
        assert_eq!(f32_to_string(f32::from_bits(0x3200_0000)), "7.4505806e-09");
        assert_eq!(f32_to_string(16777217.0), "16777216");
        assert_eq!(f32_to_string(f32::from_bits(0x7fc0_0000)), "nan");
        assert_eq!(f32_to_string(f32::from_bits(0xffc0_0000)), "-nan");
        assert_eq!(f32_to_string(f32::from_bits(0x7f80_0001)), "nan(0x1)");
        assert_eq!(f64_to_string(0.1), "0.1");
        assert_eq!(f64_to_string(1.0 / 3.0), "0.33333333333333331");
        assert_eq!(f32_attr_to_string(0.001), "0.001");
        assert_eq!(f32_attr_to_string(1e-5), "1e-05");
    }
}
