//! Checked integer arithmetic with floor semantics. `None` means overflow or division by zero.

/// `floor(a / b)`; `None` on division by zero or overflow (`i64::MIN / -1`).
pub fn floor_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// `ceil(a / b)`; `None` on division by zero or overflow.
pub fn ceil_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) == (b < 0)) {
        q.checked_add(1)
    } else {
        Some(q)
    }
}

/// `a - b * floor(a / b)`: in `[0, b)` for `b > 0`, in `(b, 0]` for `b < 0`; `None` for `b == 0`.
pub fn floor_mod(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    if b == -1 {
        return Some(0);
    }
    let r = a % b;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some(r + b)
    } else {
        Some(r)
    }
}

/// Greatest common divisor of absolute values (`gcd(0, 0) == 0`), or `None` if it is 2^63.
pub fn gcd(a: i64, b: i64) -> Option<i64> {
    let (mut x, mut y) = (a.unsigned_abs(), b.unsigned_abs());
    while y != 0 {
        let t = x % y;
        x = y;
        y = t;
    }
    i64::try_from(x).ok()
}

/// Least common multiple of absolute values, or `None` on overflow.
pub fn lcm(a: i64, b: i64) -> Option<i64> {
    if a == 0 || b == 0 {
        return Some(0);
    }
    let g = gcd(a, b)?;
    (a / g).checked_mul(b)?.checked_abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_semantics_match_euclid_for_positive_divisors() {
        for a in -20i64..=20 {
            for b in 1i64..=7 {
                assert_eq!(floor_div(a, b), Some(a.div_euclid(b)), "{a} floordiv {b}");
                assert_eq!(floor_mod(a, b), Some(a.rem_euclid(b)), "{a} mod {b}");
                let c = ceil_div(a, b).unwrap();
                assert!(c * b >= a && (c - 1) * b < a, "{a} ceildiv {b} = {c}");
            }
        }
    }

    #[test]
    fn negative_divisors_round_toward_negative_infinity() {
        assert_eq!(floor_div(7, -2), Some(-4));
        assert_eq!(floor_mod(7, -2), Some(-1));
        assert_eq!(ceil_div(7, -2), Some(-3));
        assert_eq!(floor_div(-7, -2), Some(3));
        assert_eq!(floor_mod(-7, -2), Some(-1));
    }

    #[test]
    fn overflow_and_zero_are_reported() {
        assert_eq!(floor_div(i64::MIN, -1), None);
        assert_eq!(ceil_div(i64::MIN, -1), None);
        assert_eq!(floor_mod(i64::MIN, -1), Some(0));
        assert_eq!(floor_div(1, 0), None);
        assert_eq!(floor_mod(1, 0), None);
        assert_eq!(gcd(i64::MIN, 0), None);
        assert_eq!(gcd(12, -18), Some(6));
        assert_eq!(lcm(4, 6), Some(12));
        assert_eq!(lcm(i64::MAX, i64::MAX - 1), None);
    }
}
