//! Closed integer intervals `[lo, hi]` and their arithmetic, as used by range evaluation.
//!
//! Results are sound over-approximations: every value the operation can produce on members of
//! the operands lies in the result. Bounds are computed in `i128` and saturated to `i64`, so a
//! bound that would overflow widens the interval instead of wrapping.

use std::fmt;

use crate::arith;

/// A closed interval of `i64`; empty when `lo > hi`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Interval {
    /// Smallest member.
    pub lo: i64,
    /// Largest member.
    pub hi: i64,
}

fn sat(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

// Interval arithmetic is named (`a.add(b)`) rather than overloaded: every result is an
// over-approximation, which an operator would hide.
#[allow(clippy::should_implement_trait)]
impl Interval {
    /// `[lo, hi]`.
    pub const fn new(lo: i64, hi: i64) -> Interval {
        Interval { lo, hi }
    }
    /// The single point `[v, v]`.
    pub const fn point(v: i64) -> Interval {
        Interval { lo: v, hi: v }
    }
    /// Every `i64`.
    pub const FULL: Interval = Interval {
        lo: i64::MIN,
        hi: i64::MAX,
    };
    /// The canonical empty interval `[0, -1]`.
    pub const EMPTY: Interval = Interval { lo: 0, hi: -1 };

    /// True if no integer lies in the interval.
    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }
    /// True if exactly one integer lies in the interval.
    pub fn is_point(self) -> bool {
        self.lo == self.hi
    }
    /// True if `v` is a member.
    pub fn contains(self, v: i64) -> bool {
        self.lo <= v && v <= self.hi
    }
    /// True if every member of `other` is a member of `self` (an empty `other` is contained).
    pub fn contains_interval(self, other: Interval) -> bool {
        other.is_empty() || (self.lo <= other.lo && other.hi <= self.hi)
    }
    /// Number of members (0 when empty).
    pub fn count(self) -> u128 {
        if self.is_empty() {
            0
        } else {
            (self.hi as i128 - self.lo as i128 + 1) as u128
        }
    }
    /// Members common to both.
    pub fn intersect(self, other: Interval) -> Interval {
        let r = Interval::new(self.lo.max(other.lo), self.hi.min(other.hi));
        if r.is_empty() {
            Interval::EMPTY
        } else {
            r
        }
    }
    /// The smallest interval holding both (the convex hull of the union).
    pub fn union(self, other: Interval) -> Interval {
        if self.is_empty() {
            return other;
        }
        if other.is_empty() {
            return self;
        }
        Interval::new(self.lo.min(other.lo), self.hi.max(other.hi))
    }

    fn from_i128(lo: i128, hi: i128) -> Interval {
        Interval::new(sat(lo), sat(hi))
    }
    fn either_empty(self, other: Interval) -> bool {
        self.is_empty() || other.is_empty()
    }

    /// `{a + b}`.
    pub fn add(self, other: Interval) -> Interval {
        if self.either_empty(other) {
            return Interval::EMPTY;
        }
        Interval::from_i128(
            self.lo as i128 + other.lo as i128,
            self.hi as i128 + other.hi as i128,
        )
    }
    /// `{-a}`.
    pub fn neg(self) -> Interval {
        if self.is_empty() {
            return Interval::EMPTY;
        }
        Interval::from_i128(-(self.hi as i128), -(self.lo as i128))
    }
    /// `{a - b}`.
    pub fn sub(self, other: Interval) -> Interval {
        self.add(other.neg())
    }
    /// `{a * b}`.
    pub fn mul(self, other: Interval) -> Interval {
        if self.either_empty(other) {
            return Interval::EMPTY;
        }
        let c = [
            self.lo as i128 * other.lo as i128,
            self.lo as i128 * other.hi as i128,
            self.hi as i128 * other.lo as i128,
            self.hi as i128 * other.hi as i128,
        ];
        Interval::from_i128(*c.iter().min().unwrap(), *c.iter().max().unwrap())
    }

    /// Applies a monotone-per-sign division to the corners, splitting the divisor at zero.
    fn divide(self, other: Interval, op: fn(i64, i64) -> Option<i64>) -> Interval {
        if self.either_empty(other) {
            return Interval::EMPTY;
        }
        // Division by zero has no value; only the non-zero divisors contribute.
        let parts = [
            Interval::new(other.lo, other.hi.min(-1)),
            Interval::new(other.lo.max(1), other.hi),
        ];
        let mut result = Interval::EMPTY;
        for d in parts.into_iter().filter(|p| !p.is_empty()) {
            // For a divisor of fixed sign, the quotient is monotone in each argument, so the
            // extremes are at the corners. An overflowing corner (MIN / -1) means "unbounded".
            let mut lo = i64::MAX;
            let mut hi = i64::MIN;
            for (a, b) in [
                (self.lo, d.lo),
                (self.lo, d.hi),
                (self.hi, d.lo),
                (self.hi, d.hi),
            ] {
                match op(a, b) {
                    Some(q) => {
                        lo = lo.min(q);
                        hi = hi.max(q);
                    }
                    None => return Interval::FULL,
                }
            }
            result = result.union(Interval::new(lo, hi));
        }
        result
    }
    /// `{a floordiv b | b != 0}`.
    pub fn floor_div(self, other: Interval) -> Interval {
        self.divide(other, arith::floor_div)
    }
    /// `{a ceildiv b | b != 0}`.
    pub fn ceil_div(self, other: Interval) -> Interval {
        self.divide(other, arith::ceil_div)
    }
    /// `{a mod b | b != 0}`.
    pub fn modulo(self, other: Interval) -> Interval {
        if self.either_empty(other) {
            return Interval::EMPTY;
        }
        if other.is_point() && other.lo > 0 {
            let c = other.lo;
            // Within one period the result is the interval itself shifted down.
            let (qlo, qhi) = (arith::floor_div(self.lo, c), arith::floor_div(self.hi, c));
            if let (Some(qlo), Some(qhi)) = (qlo, qhi) {
                if qlo == qhi {
                    let shift = qlo as i128 * c as i128;
                    return Interval::from_i128(self.lo as i128 - shift, self.hi as i128 - shift);
                }
            }
            return Interval::new(0, c - 1);
        }
        let mut result = Interval::EMPTY;
        if other.hi > 0 {
            let hi = other.hi - 1;
            // A non-negative dividend never grows under mod by a positive divisor.
            let hi = if self.lo >= 0 { hi.min(self.hi) } else { hi };
            result = result.union(Interval::new(0, hi));
        }
        if other.lo < 0 {
            let lo = sat(other.lo as i128 + 1);
            let lo = if self.hi <= 0 { lo.max(self.lo) } else { lo };
            result = result.union(Interval::new(lo, 0));
        }
        result
    }
    /// `{min(a, b)}`.
    pub fn min(self, other: Interval) -> Interval {
        if self.either_empty(other) {
            return Interval::EMPTY;
        }
        Interval::new(self.lo.min(other.lo), self.hi.min(other.hi))
    }
    /// `{max(a, b)}`.
    pub fn max(self, other: Interval) -> Interval {
        if self.either_empty(other) {
            return Interval::EMPTY;
        }
        Interval::new(self.lo.max(other.lo), self.hi.max(other.hi))
    }

    /// Three-valued `a < b` for all members: `Some(true)` always, `Some(false)` never, `None`
    /// if it depends on the members.
    pub fn lt(self, other: Interval) -> Option<bool> {
        if self.hi < other.lo {
            Some(true)
        } else if self.lo >= other.hi {
            Some(false)
        } else {
            None
        }
    }
    /// Three-valued `a <= b`.
    pub fn le(self, other: Interval) -> Option<bool> {
        if self.hi <= other.lo {
            Some(true)
        } else if self.lo > other.hi {
            Some(false)
        } else {
            None
        }
    }
    /// Three-valued `a > b`.
    pub fn gt(self, other: Interval) -> Option<bool> {
        other.lt(self)
    }
    /// Three-valued `a >= b`.
    pub fn ge(self, other: Interval) -> Option<bool> {
        other.le(self)
    }
    /// Three-valued `a == b`.
    pub fn eq_(self, other: Interval) -> Option<bool> {
        if self.is_point() && other.is_point() && self.lo == other.lo {
            Some(true)
        } else if self.hi < other.lo || other.hi < self.lo {
            Some(false)
        } else {
            None
        }
    }
    /// Three-valued `a != b`.
    pub fn ne_(self, other: Interval) -> Option<bool> {
        self.eq_(other).map(|b| !b)
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.lo, self.hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks an interval operation against brute force over small intervals.
    fn check_sound(
        op: fn(Interval, Interval) -> Interval,
        exact: fn(i64, i64) -> Option<i64>,
        tight: bool,
    ) {
        for alo in -6..=6 {
            for ahi in alo..=6 {
                for blo in -4..=4 {
                    for bhi in blo..=4 {
                        let (a, b) = (Interval::new(alo, ahi), Interval::new(blo, bhi));
                        let r = op(a, b);
                        let mut seen = Interval::EMPTY;
                        for x in alo..=ahi {
                            for y in blo..=bhi {
                                if let Some(v) = exact(x, y) {
                                    assert!(r.contains(v), "{a} op {b} = {r} misses {v}");
                                    seen = seen.union(Interval::point(v));
                                }
                            }
                        }
                        // Monotone operations (per sign of the divisor) are exactly tight.
                        if tight && !seen.is_empty() && !(blo <= 0 && bhi >= 0) {
                            assert_eq!(r, seen, "{a} op {b} is not tight");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn operations_are_sound() {
        check_sound(Interval::add, |a, b| Some(a + b), true);
        check_sound(Interval::sub, |a, b| Some(a - b), true);
        check_sound(Interval::mul, |a, b| Some(a * b), true);
        check_sound(Interval::floor_div, arith::floor_div, true);
        check_sound(Interval::ceil_div, arith::ceil_div, true);
        check_sound(Interval::modulo, arith::floor_mod, false);
        check_sound(Interval::min, |a, b| Some(a.min(b)), true);
        check_sound(Interval::max, |a, b| Some(a.max(b)), true);
    }

    #[test]
    fn division_by_positive_constant_is_exact() {
        let a = Interval::new(-11, 109);
        assert_eq!(a.floor_div(Interval::point(11)), Interval::new(-1, 9));
        assert_eq!(a.ceil_div(Interval::point(11)), Interval::new(-1, 10));
        assert_eq!(
            Interval::new(16, 20).modulo(Interval::point(8)),
            Interval::new(0, 4)
        );
        assert_eq!(
            Interval::new(5, 20).modulo(Interval::point(8)),
            Interval::new(0, 7)
        );
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        let a = Interval::new(i64::MAX - 1, i64::MAX);
        assert_eq!(a.add(Interval::point(10)).hi, i64::MAX);
        assert_eq!(Interval::FULL.neg(), Interval::new(-i64::MAX, i64::MAX));
        assert_eq!(
            Interval::point(i64::MIN).floor_div(Interval::point(-1)),
            Interval::FULL
        );
    }

    #[test]
    fn comparisons_are_three_valued() {
        let a = Interval::new(0, 3);
        assert_eq!(a.lt(Interval::new(4, 9)), Some(true));
        assert_eq!(a.lt(Interval::new(-5, 0)), Some(false));
        assert_eq!(a.lt(Interval::new(2, 9)), None);
        assert_eq!(Interval::point(2).eq_(Interval::point(2)), Some(true));
        assert_eq!(a.ne_(Interval::new(7, 8)), Some(true));
        assert_eq!(a.intersect(Interval::new(5, 6)), Interval::EMPTY);
        assert_eq!(a.union(Interval::new(5, 6)), Interval::new(0, 6));
    }
}
