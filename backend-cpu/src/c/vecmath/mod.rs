//! Vectorizable transcendental functions in C, part of every translation unit's prelude:
//! transcendentals are vectorizable polynomial code with a documented maximum ulp error.
//!
//! Each function is `static inline` (the larger ones always inlined), maps `float` to
//! `float` (`hloc_v*_f32`; f16, bf16 and f8 compute in f32 and use them too) or `double` to
//! `double` (`hloc_v*_f64`), calls nothing from libm (`fma`, `fmaf` and `fabs` are
//! instructions under the runtime's `-O2 -ftree-vectorize -march=native -fno-math-errno`)
//! and has no branch on data: ranges are clamped, special cases chosen by selects on bit
//! masks (`hloc_vm_sel_*`; a C `?:` whose arm computes would be moved under a branch, which
//! gcc cannot vectorize without `-fno-trapping-math`), table lookups are gathers. So a
//! kernel loop over them vectorizes (AVX2 and AVX-512 both, at `-O2 -ftree-vectorize` and at
//! `-O3`; a test checks it with gcc).
//!
//! Coefficients are minimax fits of the relative error of the final result (Remez exchange
//! in mpmath at 60 digits on a 1500-point grid, `remez.py` beside this file), rounded to the
//! type; the tables (2/pi's bits, pow's logarithms) were computed with mpmath at 1400 and
//! 300 bits. Methods:
//! - `exp`, `expm1`: x = k ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 in two parts, with
//!   fma), e^r - 1 = r + r^2 q(r) (q of degree 5 for f32, 10 for f64), 2^k put in the
//!   exponent bits in two factors so that subnormal results round once and large ones
//!   overflow to inf. expm1 is 2 (h (e^r - 1) + (h - 1/2)) with h = 2^(k-1), and x itself
//!   below 2^-25 (f32) or 2^-54 (f64).
//! - `log`, `log1p`: x = 2^e m with sqrt(2)/2 <= m < sqrt(2) from the bits (subnormals
//!   scaled by 2^23 or 2^52 first), log m = log(1 + f): f32 f + f^2 q(f) (degree 8), f64
//!   f - (f^2/2 - s (f^2/2 + s^2 q(s^2))) with s = f / (2 + f) (degree 6); plus e ln2 (two
//!   parts). log1p takes u = 1 + x and adds its rounding error c as c 2^-e / m.
//! - `tanh`: |x| < 0.75: x + x^3 p(x^2) (degree 5 for f32, 12 for f64); else
//!   1 - 2 / (e^(2|x|) + 1) with the sign of x, the exponential's + 1 rounded once.
//! - `logistic`: with e = e^-|x|, 1 / (1 + e) for x >= 0 and e / (1 + e) below: no
//!   overflow, no cancellation, subnormal results for x < -87.3 (f32).
//! - `erf`: f32: |x| < 1: x p(x^2) (degree 6, the constant term in two parts); else
//!   1 - e^(-x^2) q(|x| - 5/2) with q ~ erfc(x) e^(x^2) on [1, 4] (degree 10, weighted by
//!   erf's ulp), with the sign of x; |x| >= 4 gives +-1 (erf is 1 in f32 from 3.92). f64:
//!   the same on [0, 1) (degree 11) and [1, 6] (q of degree 21 in |x| - 7/2, e^(-x^2)
//!   corrected for the rounding of x^2 with fma); erf is 1 in f64 from 5.92.
//! - `sin`, `cos`, `tan`: |x| = q pi/2 + r with |r| <= pi/4, r as a double-double.
//!   Below 2^30 Cody-Waite: k = round(|x| 2/pi), |x| - k P1 exact (fma; P1 = pi/2 to 53
//!   bits), k P2 and k P3 subtracted with two-sums (pi/2 to 159 bits). Above, Payne-Hanek
//!   in integer arithmetic without branches: |x| = m 2^E, the 192 bits of 2/pi from bit
//!   E - 1 (the earlier ones contribute multiples of 4) read from a 39-entry table of
//!   64-bit words indexed by the exponent (gathers), multiplied by m in 32-bit limbs
//!   (11 products), the top 2 of the low 192 bits of the product are q, the rest the
//!   fraction, rounded to the nearest quadrant and converted to a double-double through
//!   three 52-bit pieces (the closest double to a multiple of pi/2 needs 2^-122). A
//!   vector (of the vector function ABI's entries, `trig.rs`) runs Cody-Waite alone
//!   unless one of its lanes is 2^30 or more; such lanes run both reductions (a scalar
//!   function) and a mask selects (Payne-Hanek on every lane had made f64 sin 6x slower:
//!   9.5 -> 1.5 ns per element, AVX-512). With several translation units a module
//!   compiles these entries once, in a unit of their own (`shared.rs`). sin r = r + r^3 p(r^2), cos r =
//!   1 - r^2/2 + r^4 q(r^2) (degree 5 each in f64, r's low part and the rounding of r^2 and
//!   1 - r^2/2 in the tail); the quadrant selects and negates; tan = sin / cos or -cos / sin
//!   with both as double-doubles and the quotient corrected by its residual. f32 computes
//!   in double (the same reduction; degrees 3 and 2) and rounds once. sin and tan return x
//!   below 2^-26 (f64) or 2^-12 (f32), where that is the rounded result.
//! - `atan2(y, x)`: with b = max(|x|, |y|) and s the other, t = s / b, or (s - b) / (s + b)
//!   above tan(pi/8); atan t = t + t^3 p(t^2) (degree 10 for f64, 5 for f32 in double) and
//!   the result n pi/4 +- atan t (n in 0..4 from the octant, pi/4 to 50 bits so that n pi/4
//!   is exact, plus its low part) with a two-sum, t's rounding error (and that of s -+ b)
//!   added to first order; y's sign. s and b are scaled by 2^+-100 near the ends of the
//!   range; both infinite count as |x| = |y| = 1.
//! - `cbrt`: |x| = 2^(3k + j) m (subnormals scaled by 2^54), cbrt(m) of degree 5
//!   (2^-19.6) times 2^(j/3), a Newton step, and for f64 a second one on the residual
//!   y^3 - a computed with fma (y^2 as a double-double), so its final addition is the only
//!   rounding; times 2^k. f32 computes in double.
//! - `pow`: e^(y log|x|) with the special cases of C99 F.10.4.4 (libm's) chosen by masks
//!   (integer and odd y from the bits of |y| + 2^52). f64: log|x| as a double-double
//!   (relative error ~2^-68): x = 2^e m, m in 256 intervals split at 1, m inv - 1 = f
//!   exactly with fma (|f| <= 2^-8; inv = 1 next to 1), log(1/inv) from the table in two
//!   parts, log(1 + f) = f - f^2/2 + f^3 q(f) (degree 5), summed with two-sums; y log|x| as
//!   hi + lo (fma) and e^(hi + lo) with lo added to the reduced argument. f32: in double,
//!   log|x| from the same table to degree 5 (Taylor; relative error 2^-41) and e^(y log|x|)
//!   (2^-34 on the result), rounded once.
//!
//! Largest error in ulps of the correctly rounded result (|got - exact| / ulp, inf counted
//! as 2^128 or 2^1024), measured by `codegen/tests/codegen/vecmath/` (gcc 12, x86-64 with
//! AVX-512): one-argument f32 functions over all 2^32 inputs against glibc's double
//! functions, f64 over 10^8 inputs per function (a quarter random bit patterns, a quarter
//! uniform over the range below, half |x| in [2^-64, 2^11) with random signs) against
//! glibc's long double functions. Two-argument functions over a sampled 2-D sweep (10^8
//! pairs for f32 and f64; per quarter: random bit patterns for both; x uniform in [0, 4]
//! with y uniform such that |y log x| <= 700 (f64) or 100 (f32) for pow, both uniform in
//! [-4, 4] for atan2; x within 2^-k of 1 (k < 32; f32 16) with the same y for pow, both
//! uniform in [-1000, 1000] for atan2; x uniform in [-10, 10] with integral y in [-60, 60]
//! (f32 [-30, 30]) for pow, both |x| in [2^-64, 2^11) with random signs (f32 uniform in
//! [-10, 10]) for atan2). The bound is what the tests assert
//! (the strided f32, 10^6-input f64 and 10^6-pair sweeps on every run, the large ones when
//! asked):
//!
//! | function   | f32 max | f32 bound | f64 max | f64 bound | f64 uniform range |
//! |------------|---------|-----------|---------|-----------|-------------------|
//! | `exp`      | 0.988   | 1.5       | 0.976   | 1.5       | [-750, 712]       |
//! | `expm1`    | 1.439   | 2.0       | 1.802   | 2.5       | [-50, 712]        |
//! | `log`      | 0.951   | 1.5       | 0.825   | 1.5       | 1 + [-2^-1, 2^-1] |
//! | `log1p`    | 1.019   | 1.5       | 1.387   | 2.0       | [-1, 4]           |
//! | `tanh`     | 1.056   | 1.5       | 1.052   | 1.5       | [-25, 25]         |
//! | `logistic` | 2.402   | 3.0       | 2.327   | 3.0       | [-750, 50]        |
//! | `erf`      | 1.325   | 2.0       | 1.346   | 1.5       | [-6, 6]           |
//! | `sin`      | 0.502   | 1.0       | 0.774   | 1.5       | [-2e9, 2e9]       |
//! | `cos`      | 0.502   | 1.0       | 0.760   | 1.5       | [-2e9, 2e9]       |
//! | `tan`      | 0.502   | 1.0       | 0.908   | 2.0       | [-2e9, 2e9]       |
//! | `cbrt`     | 0.500   | 1.0       | 0.500   | 1.0       | [-10, 10]         |
//! | `pow`      | 0.500   | 1.0       | 1.177   | 2.0       | (2-D, above)      |
//! | `atan2`    | 0.500   | 1.0       | 0.848   | 1.5       | (2-D, above)      |
//!
//! Special values are exact, as libm's (tested): NaN gives NaN; exp(-inf) = 0,
//! exp(inf) = inf, overflow to inf, underflow to 0 (subnormal results within the bounds
//! above); expm1(-inf) = -1; log(0) = -inf, log(x < 0) = NaN, log(inf) = inf,
//! log1p(-1) = -inf, log1p(x < -1) = NaN; tanh(+-0) = +-0, tanh(+-inf) = +-1;
//! logistic(-inf) = 0, logistic(inf) = 1; erf(+-0) = +-0, erf(+-inf) = +-1; sin, cos, tan
//! of +-inf are NaN, sin(+-0) = tan(+-0) = +-0; cbrt(+-0) = +-0, cbrt(+-inf) = +-inf; tiny
//! inputs give themselves where libm does (expm1, log1p, tanh, sin, tan, erf's x 2/sqrt(pi)
//! rounded once); pow: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN, pow(-1, +-inf) = 1,
//! NaN otherwise from NaN, NaN for finite x < 0 and non-integral y, the sign of x for odd
//! integral y (incl. +-0 and -inf), 0 or inf for |x| in {0, inf} or y = +-inf as
//! (|x| > 1) == (y > 0), overflow to inf and underflow to 0; atan2: every combination of
//! +-0, +-inf and finite values in all quadrants (+-0, +-pi/4, +-pi/2, +-3pi/4, +-pi as
//! libm), tested on a grid of special values against libm bit for bit.
//!
//! Still libm calls (the printer's `libm`), none of them transcendental: sqrt, floor,
//! ceil, round, rint and fabs (instructions under these flags) and fmod (exact, a libm
//! call that does not vectorize); rsqrt is 1 / sqrt, two correctly rounded instructions
//! (under 1 ulp).

pub(crate) mod atan2;
pub(crate) mod cbrt;
pub(crate) mod common;
pub(crate) mod erf;
pub(crate) mod exp_log;
pub(crate) mod pow;
mod select;
pub(crate) mod shared;
pub(crate) mod trig;

/// The functions compiled as SIMD clones (`HLOC_VM_SIMD`, name prefixes) or, for sin, cos
/// and tan with gcc on x86-64, with vector entries whose widest is 512 bits with AVX-512:
/// the printer marks a kernel calling one `HLOC_VM_WIDE` (`common.rs`), else with AVX-512
/// its loops stay scalar (clones) or call a 256-bit entry that pads into the 512-bit one.
pub(crate) const SIMD_CLONED: [&str; 7] = [
    "hloc_vsin_",
    "hloc_vcos_",
    "hloc_vtan_",
    "hloc_vpow_",
    "hloc_vatan2_",
    "hloc_vcbrt_",
    "hloc_verf_f64",
];

/// The functions of [`SIMD_CLONED`] compiled in every translation unit that calls one:
/// the trigonometric functions' entries are compiled once per module of several units
/// ([`shared`]).
pub(crate) const PER_UNIT_CLONED: [&str; 4] =
    ["hloc_vpow_", "hloc_vatan2_", "hloc_vcbrt_", "hloc_verf_f64"];

/// The C text of [`VECMATH`], as a macro so that `concat!` can append it to the prelude.
macro_rules! vecmath_c {
    () => {
        concat!(
            $crate::c::vecmath::common::common_c!(),
            $crate::c::vecmath::exp_log::exp_log_c!(),
            $crate::c::vecmath::erf::erf_c!(),
            $crate::c::vecmath::trig::trig_c!(),
            $crate::c::vecmath::atan2::atan2_c!(),
            $crate::c::vecmath::cbrt::cbrt_c!(),
            $crate::c::vecmath::pow::pow_c!(),
            $crate::c::vecmath::trig::trig_entries_c!()
        )
    };
}
pub(crate) use vecmath_c;

/// The vectorizable transcendental functions: C, `static inline`, after the prelude's
/// includes, with the entry points of every trigonometric function.
pub const VECMATH: &str = vecmath_c!();

/// [`VECMATH`] for a translation unit whose kernels call the functions for which
/// `calls(name)` holds: the trigonometric functions' entry points are compiled whether
/// called or not (their vector entries are reached only through the vector function
/// ABI's names, which the C compiler cannot see), so a unit gets only those it calls; and
/// of the functions, only the parts that define what it calls ([`select`]).
pub fn vecmath_for(calls: impl Fn(&str) -> bool) -> String {
    let entries: String = trig::entries()
        .filter(|(name, _)| calls(name))
        .map(|(_, line)| line)
        .collect();
    select::needed_text(&calls, &entries) + &entries
}

#[cfg(test)]
mod select_tests {
    use super::select::{needed_text, parts};

    #[test]
    fn the_parts_are_vecmath_in_order() {
        let all: String = parts().concat();
        let entries = super::trig::trig_entries_c!();
        assert_eq!(format!("{all}{entries}"), super::VECMATH);
    }

    #[test]
    fn a_unit_gets_what_it_calls_and_what_that_needs() {
        let only = |called: &[&str]| {
            let called: Vec<String> = called.iter().map(|s| s.to_string()).collect();
            needed_text(&|n| called.iter().any(|c| c == n), "")
        };
        let exp = only(&["hloc_vexp_f32"]);
        assert!(exp.contains("hloc_vexp_f32("), "exp's own part");
        assert!(exp.starts_with(parts()[0]), "the helpers first");
        for other in [
            "hloc_vpow_f32(",
            "hloc_vatan2_f32(",
            "hloc_vcbrt_f32(",
            "hloc_vm_sin_f64(",
        ] {
            assert!(!exp.contains(other), "{other} with exp only");
        }
        // pow is built on exp and log: their part comes along, before it.
        let pow = only(&["hloc_vpow_f64"]);
        let (at_exp, at_pow) = (
            pow.find(parts()[1]).expect("exp/log part"),
            pow.find(parts()[6]).expect("pow part"),
        );
        assert!(at_exp < at_pow);
        // Nothing called: the helpers alone.
        assert_eq!(only(&[]), parts()[0]);
        // An entry line names the trigonometric part's functions.
        let sin_entry = super::trig::entries()
            .find(|(n, _)| *n == "hloc_vsin_f64")
            .map(|(_, l)| l)
            .expect("sin's entry line");
        assert!(needed_text(&|_| false, sin_entry).contains(parts()[3]));
    }
}
