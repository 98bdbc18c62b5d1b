//! The C prelude of every translation unit: 16-bit float conversions, integer helpers
//! with HLO's semantics, NaN-propagating min/max, the total order of floats, and index
//! arithmetic with floor semantics, then [`super::vecmath`]'s vectorizable exp, log, tanh,
//! logistic, ... with a documented maximum ulp error; the other transcendental functions
//! call libm's single- or double-precision functions (`sinf`, `pow`, ...); no
//! `-ffast-math` anywhere.

/// The prelude's text before the vectorizable functions, as a macro so that `concat!`
/// can build both [`BASE_PRELUDE`] and [`PRELUDE`] from it.
macro_rules! base_prelude_c {
    () => {
        r#"/* hloc generated code: prelude */
#include <stdint.h>
#include <string.h>
#include <math.h>

/* Floor division and modulo without a branch (a remainder of the divisor's opposite sign
   steps the quotient down): a branch in an index keeps gcc from vectorizing the loop. */
static inline int64_t hloc_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return q - (int64_t)((r != 0) & ((r ^ b) < 0));
}
static inline int64_t hloc_ceildiv(int64_t a, int64_t b) { return -hloc_floordiv(-a, b); }
static inline int64_t hloc_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r + (b & -(int64_t)((r != 0) & ((r ^ b) < 0)));
}
static inline int64_t hloc_imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t hloc_imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* f16 and bf16 travel as bit patterns and compute in f32, rounding to nearest even.
   The f16 conversions have no branch (every case computed, the result selected by masks)
   so that gcc vectorizes the loops that use them: with branches every f16 kernel ran as
   scalar code, 12x slower (an f16 GELU over 1M elements: 62 -> 5 ms of CPU). They are
   bit-identical to the branchy forms over all 2^16 halves and all 2^32 floats. */
static inline float hloc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  /* A subnormal half is m * 2^-24, exact in f32. */
  float sub = (float)m * 5.9604644775390625e-08f;
  uint32_t sub_bits;
  memcpy(&sub_bits, &sub, 4);
  uint32_t inf_nan = -(uint32_t)(e == 0x1fu), subnormal = -(uint32_t)(e == 0);
  /* Rebias the exponent by 112; an all-ones exponent (inf, NaN) by 112 more to 255. */
  uint32_t normal = (((e + 112u) << 23) | (m << 13)) + (inf_nan & (112u << 23));
  uint32_t bits = sign | (normal & ~subnormal) | (sub_bits & subnormal);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
static inline uint16_t hloc_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  /* Below 2^-14 the half is subnormal: adding 0.5 rounds |f| to a multiple of 2^-24
     (nearest even, the ulp of [0.5, 1)), and the low bits are then the half's. */
  float af;
  memcpy(&af, &ax, 4);
  float sub = af + 0.5f;
  uint32_t sub_bits;
  memcpy(&sub_bits, &sub, 4);
  uint32_t r = ax < 0x38800000u ? sub_bits - 0x3f000000u
                                : (ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u) >> 13;
  r = ax >= 0x477ff000u ? 0x7c00u : r;
  r = ax > 0x7f800000u ? (0x7e00u | ((ax >> 13) & 0x3ffu)) : r;
  return (uint16_t)(sign | r);
}
static inline float hloc_bf16_to_f32(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static inline uint16_t hloc_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* f8e4m3fn and f8e5m2 travel as bit patterns and compute in f32. Encoding rounds to
   nearest even from the exact value; too large gives inf (e5m2) or NaN (e4m3fn), as
   hlo::literal::minifloat and XLA's convert do. */
static inline float hloc_f8_to_f32(uint8_t b, int man, int bias, int fn) {
  int eb = 7 - man;
  uint32_t emask = (1u << eb) - 1u, mmask = (1u << man) - 1u;
  uint32_t e = (b >> man) & emask, m = b & mmask;
  float v;
  if (fn && e == emask && m == mmask) v = NAN;
  else if (!fn && e == emask) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexpf((float)m, 1 - bias - man);
  else v = ldexpf((float)((1u << man) | m), (int)e - bias - man);
  return (b & 0x80u) ? -v : v;
}
static inline uint8_t hloc_f32_to_f8(float f, int man, int bias, int fn) {
  int eb = 7 - man;
  uint32_t emask = (1u << eb) - 1u, mmask = (1u << man) - 1u;
  uint8_t sign = signbit(f) ? 0x80u : 0u;
  uint8_t nan = fn ? (uint8_t)(sign | 0x7fu) : (uint8_t)(sign | (emask << man) | (1u << (man - 1)));
  uint8_t over = fn ? nan : (uint8_t)(sign | (emask << man));
  if (f != f) return nan;
  double a = fabs((double)f);
  if (isinf(a)) return over;
  if (a == 0.0) return sign;
  int e;
  frexp(a, &e);
  e -= 1;
  int minexp = 1 - bias;
  uint32_t ef, mo;
  if (e < minexp) {
    uint64_t mi = (uint64_t)rint(a / ldexp(1.0, minexp - man));
    ef = (uint32_t)(mi >> man);
    mo = (uint32_t)mi & mmask;
  } else {
    uint64_t mi = (uint64_t)rint(a / ldexp(1.0, e - man));
    if (mi == (2ull << man)) { mi >>= 1; e += 1; }
    if (e + bias > 255) return over;
    ef = (uint32_t)(e + bias);
    mo = (uint32_t)mi & mmask;
  }
  uint32_t maxf = fn ? emask : emask - 1u;
  if (ef > maxf || (fn && ef == emask && mo == mmask)) return over;
  return (uint8_t)(sign | (ef << man) | mo);
}
static inline float hloc_f8e4m3fn_to_f32(uint8_t b) { return hloc_f8_to_f32(b, 3, 7, 1); }
static inline float hloc_f8e5m2_to_f32(uint8_t b) { return hloc_f8_to_f32(b, 2, 15, 0); }
static inline uint8_t hloc_f32_to_f8e4m3fn(float f) { return hloc_f32_to_f8(f, 3, 7, 1); }
static inline uint8_t hloc_f32_to_f8e5m2(float f) { return hloc_f32_to_f8(f, 2, 15, 0); }

/* Complex numbers: two parts, computed in double and rounded once (as the evaluator
   does with num-complex), division by Smith's algorithm. */
typedef struct { float re, im; } hloc_c64;
typedef struct { double re, im; } hloc_c128;
static inline hloc_c64 hloc_mk_c64(double re, double im) { hloc_c64 z = {(float)re, (float)im}; return z; }
static inline hloc_c128 hloc_mk_c128(double re, double im) { hloc_c128 z = {re, im}; return z; }
#define HLOC_COMPLEX_OPS(T, S)                                                     \
  static inline T hloc_add_##S(T a, T b) { return hloc_mk_##S((double)a.re + b.re, (double)a.im + b.im); } \
  static inline T hloc_sub_##S(T a, T b) { return hloc_mk_##S((double)a.re - b.re, (double)a.im - b.im); } \
  static inline T hloc_mul_##S(T a, T b) {                                         \
    double ar = a.re, ai = a.im, br = b.re, bi = b.im;                             \
    return hloc_mk_##S(ar * br - ai * bi, ar * bi + ai * br);                      \
  }                                                                                \
  static inline T hloc_div_##S(T a, T b) {                                         \
    double ar = a.re, ai = a.im, c = b.re, d = b.im;                               \
    if (fabs(c) >= fabs(d)) {                                                      \
      if (c == 0.0 && d == 0.0) return hloc_mk_##S(ar / c, ai / c);                \
      double r = d / c, den = c + d * r;                                           \
      return hloc_mk_##S((ar + ai * r) / den, (ai - ar * r) / den);                \
    }                                                                              \
    double r = c / d, den = c * r + d;                                             \
    return hloc_mk_##S((ar * r + ai) / den, (ai * r - ar) / den);                  \
  }                                                                                \
  static inline T hloc_neg_##S(T a) { return hloc_mk_##S(-(double)a.re, -(double)a.im); } \
  static inline double hloc_abs_##S(T a) { return hypot((double)a.re, (double)a.im); } \
  static inline uint8_t hloc_eq_##S(T a, T b) { return (uint8_t)(a.re == b.re && a.im == b.im); } \
  static inline T hloc_exp_##S(T a) {                                              \
    double e = exp((double)a.re);                                                  \
    if (a.im == 0) return hloc_mk_##S(e, a.im);                                    \
    return hloc_mk_##S(e * cos((double)a.im), e * sin((double)a.im));              \
  }                                                                                \
  static inline T hloc_log_##S(T a) {                                              \
    return hloc_mk_##S(log(hypot((double)a.re, (double)a.im)), atan2((double)a.im, (double)a.re)); \
  }                                                                                \
  static inline T hloc_sqrt_##S(T a) {                                             \
    double r = sqrt(hypot((double)a.re, (double)a.im)), th = atan2((double)a.im, (double)a.re) / 2; \
    return hloc_mk_##S(r * cos(th), r * sin(th));                                  \
  }                                                                                \
  static inline T hloc_sign_##S(T a) {                                             \
    double m = hypot((double)a.re, (double)a.im);                                  \
    if (m == 0 || m != m) return a;                                                \
    return hloc_mk_##S(a.re / m, a.im / m);                                        \
  }
HLOC_COMPLEX_OPS(hloc_c64, c64)
HLOC_COMPLEX_OPS(hloc_c128, c128)

/* Selects of two values computed anyway (neither arm traps or has a side effect): a bit
   mask, not a branch. With `c ? a : b` gcc moves an arm's computation (an inlined log1p)
   under a branch and then does not vectorize the loop ("control flow in loop"). Exact on
   the bits (NaN payloads, -0). */
#define HLOC_SEL(T, U, S)                                                          \
  static inline T hloc_sel_##S(uint8_t c, T a, T b) {                              \
    U m = (U)((U)0 - (U)(c != 0)), x, y;                                           \
    memcpy(&x, &a, sizeof x);                                                      \
    memcpy(&y, &b, sizeof y);                                                      \
    x = (U)((x & m) | (y & (U)~m));                                                \
    memcpy(&a, &x, sizeof a);                                                      \
    return a;                                                                      \
  }
HLOC_SEL(uint8_t, uint8_t, u8)
HLOC_SEL(int8_t, uint8_t, s8)
HLOC_SEL(int16_t, uint16_t, s16)
HLOC_SEL(uint16_t, uint16_t, u16)
HLOC_SEL(int32_t, uint32_t, s32)
HLOC_SEL(uint32_t, uint32_t, u32)
HLOC_SEL(float, uint32_t, f32)
HLOC_SEL(int64_t, uint64_t, s64)
HLOC_SEL(uint64_t, uint64_t, u64)
HLOC_SEL(double, uint64_t, f64)

/* Floats: NaN-propagating max/min (+0 above -0), sign, total-order keys. max and min are
   branch-free (the C compiler vectorizes them): `a > b ? a : b` and `b > a ? b : a` are
   one vmaxps each and agree unless a == b, where they are a and b, so and-ing their bits
   gives the max with +0 winning over -0 (or-ing: the min with -0 winning); a NaN operand
   (one unordered compare) gives a NaN, a + b, computed always and blended by the compare's
   mask: `unordered ? a + b : m` makes gcc compute the add only under a branch (it may trap
   under -ftrapping-math), and a loop with a branch is not vectorized. */
#define HLOC_FLOAT_OPS(T, S, U)                                                    \
  static inline U hloc_bits_##S(T x) { U u; memcpy(&u, &x, sizeof u); return u; } \
  static inline T hloc_from_bits_##S(U u) { T x; memcpy(&x, &u, sizeof x); return x; } \
  static inline T hloc_max_##S(T a, T b) {                                         \
    U m = hloc_bits_##S(a > b ? a : b) & hloc_bits_##S(b > a ? b : a);             \
    U n = hloc_bits_##S(a + b), u = (U)0 - (U)__builtin_isunordered(a, b);        \
    return hloc_from_bits_##S((n & u) | (m & ~u));                                 \
  }                                                                                \
  static inline T hloc_min_##S(T a, T b) {                                         \
    U m = hloc_bits_##S(a < b ? a : b) | hloc_bits_##S(b < a ? b : a);             \
    U n = hloc_bits_##S(a + b), u = (U)0 - (U)__builtin_isunordered(a, b);        \
    return hloc_from_bits_##S((n & u) | (m & ~u));                                 \
  }                                                                                \
  static inline T hloc_sign_##S(T x) { return (x != x || x == 0) ? x : (x > 0 ? (T)1 : (T)-1); }
HLOC_FLOAT_OPS(float, f32, uint32_t)
HLOC_FLOAT_OPS(double, f64, uint64_t)
/* The logistic function of small (scalar, libm) kernels, as the evaluator computes it. */
static inline float hloc_logistic_f32(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline double hloc_logistic_f64(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline int32_t hloc_total_f32(float x) {
  int32_t b;
  memcpy(&b, &x, 4);
  return b ^ (int32_t)((uint32_t)(b >> 31) >> 1);
}
static inline int64_t hloc_total_f64(double x) {
  int64_t b;
  memcpy(&b, &x, 8);
  return b ^ (int64_t)((uint64_t)(b >> 63) >> 1);
}

/* Integers with HLO's semantics: wrapping arithmetic, x/0 = -1, x%0 = x, MIN/-1 = MIN,
   shifts by >= the width give 0 (or the sign fill), negative powers give 0. */
#define HLOC_INT_OPS(T, U, S, SIGNED, BITS, MINV)                                  \
  static inline T hloc_add_##S(T a, T b) { return (T)((uint64_t)(U)a + (uint64_t)(U)b); } \
  static inline T hloc_sub_##S(T a, T b) { return (T)((uint64_t)(U)a - (uint64_t)(U)b); } \
  static inline T hloc_mul_##S(T a, T b) { return (T)((uint64_t)(U)a * (uint64_t)(U)b); } \
  static inline T hloc_neg_##S(T a) { return (T)(0 - (uint64_t)(U)a); }            \
  static inline T hloc_abs_##S(T a) { return (SIGNED && a < 0) ? hloc_neg_##S(a) : a; } \
  static inline T hloc_div_##S(T a, T b) {                                         \
    if (b == 0) return (T)-1;                                                      \
    if (SIGNED && a == (T)(MINV) && b == (T)-1) return a;                          \
    return (T)(a / b);                                                             \
  }                                                                                \
  static inline T hloc_rem_##S(T a, T b) {                                         \
    if (b == 0) return a;                                                          \
    if (SIGNED && b == (T)-1) return 0;                                            \
    return (T)(a % b);                                                             \
  }                                                                                \
  static inline T hloc_max_##S(T a, T b) { return a > b ? a : b; }                 \
  static inline T hloc_min_##S(T a, T b) { return a < b ? a : b; }                 \
  static inline T hloc_shl_##S(T a, T b) {                                         \
    if ((SIGNED && b < 0) || (uint64_t)(U)b >= BITS) return 0;                     \
    return (T)((U)a << (U)b);                                                      \
  }                                                                                \
  static inline T hloc_shrl_##S(T a, T b) {                                        \
    if ((SIGNED && b < 0) || (uint64_t)(U)b >= BITS) return 0;                     \
    return (T)((U)a >> (U)b);                                                      \
  }                                                                                \
  static inline T hloc_shra_##S(T a, T b) {                                        \
    int top = (int)(((U)a >> (BITS - 1)) & 1u);                                    \
    if ((SIGNED && b < 0) || (uint64_t)(U)b >= BITS) return top ? (T)-1 : (T)0;    \
    U r = (U)((U)a >> (U)b);                                                       \
    if (top && b > 0) r = (U)(r | (U)~((U)~(U)0 >> (U)b));                         \
    return (T)r;                                                                   \
  }                                                                                \
  static inline T hloc_pow_##S(T a, T e) {                                         \
    if (a == 1 || e == 0) return 1;                                                \
    if (SIGNED && e < 0) return 0;                                                 \
    T r = 1;                                                                       \
    U n = (U)e;                                                                    \
    while (n) {                                                                    \
      if (n & 1u) r = hloc_mul_##S(r, a);                                          \
      a = hloc_mul_##S(a, a);                                                      \
      n >>= 1;                                                                     \
    }                                                                              \
    return r;                                                                      \
  }                                                                                \
  static inline T hloc_sign_##S(T a) { return (T)((a > 0) - (SIGNED && a < 0)); }  \
  static inline T hloc_popcnt_##S(T a) { return (T)__builtin_popcountll((uint64_t)(U)a); } \
  static inline T hloc_clz_##S(T a) {                                              \
    return (U)a == 0 ? (T)BITS : (T)(__builtin_clzll((uint64_t)(U)a) - (64 - BITS)); \
  }
HLOC_INT_OPS(int8_t, uint8_t, s8, 1, 8, INT8_MIN)
HLOC_INT_OPS(int16_t, uint16_t, s16, 1, 16, INT16_MIN)
HLOC_INT_OPS(int32_t, uint32_t, s32, 1, 32, INT32_MIN)
HLOC_INT_OPS(int64_t, uint64_t, s64, 1, 64, INT64_MIN)
HLOC_INT_OPS(uint8_t, uint8_t, u8, 0, 8, 0)
HLOC_INT_OPS(uint16_t, uint16_t, u16, 0, 16, 0)
HLOC_INT_OPS(uint32_t, uint32_t, u32, 0, 32, 0)
HLOC_INT_OPS(uint64_t, uint64_t, u64, 0, 64, 0)

/* Float to integer: truncate, saturate, NaN gives 0. */
static inline int8_t hloc_f2i_s8(double x) { return x != x ? 0 : x <= -128.0 ? INT8_MIN : x >= 127.0 ? INT8_MAX : (int8_t)x; }
static inline int16_t hloc_f2i_s16(double x) { return x != x ? 0 : x <= -32768.0 ? INT16_MIN : x >= 32767.0 ? INT16_MAX : (int16_t)x; }
static inline int32_t hloc_f2i_s32(double x) { return x != x ? 0 : x <= -2147483648.0 ? INT32_MIN : x >= 2147483647.0 ? INT32_MAX : (int32_t)x; }
static inline int64_t hloc_f2i_s64(double x) { return x != x ? 0 : x <= -9223372036854775808.0 ? INT64_MIN : x >= 9223372036854775808.0 ? INT64_MAX : (int64_t)x; }
static inline uint8_t hloc_f2i_u8(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 255.0 ? UINT8_MAX : (uint8_t)x; }
static inline uint16_t hloc_f2i_u16(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 65535.0 ? UINT16_MAX : (uint16_t)x; }
static inline uint32_t hloc_f2i_u32(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 4294967295.0 ? UINT32_MAX : (uint32_t)x; }
static inline uint64_t hloc_f2i_u64(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)x; }
"#
    };
}

/// The prelude without [`super::vecmath`]: what a translation unit whose kernels call no
/// vectorizable transcendental function needs (its C compiler then parses a third as
/// much text).
pub const BASE_PRELUDE: &str = base_prelude_c!();

/// The whole prelude: [`BASE_PRELUDE`] and the vectorizable functions.
pub const PRELUDE: &str = concat!(base_prelude_c!(), super::vecmath::vecmath_c!());

/// The prelude a translation unit of the kernels `texts` needs: the header
/// ([`super::headers`]' declarations in place of `<stdint.h>`, `<string.h>` and
/// `<math.h>`, and index arithmetic), then each part of [`BASE_PRELUDE`] that one of the kernels names
/// (the 16-bit and 8-bit float conversions, complex numbers, float helpers, the integer
/// helpers of each type used, float-to-integer conversions), then the vectorizable
/// functions when one of them calls one (all named `hloc_v...`), with the entry points of
/// the trigonometric functions they call. Parsing unused helpers cost the C compiler about
/// a tenth of a small module's compile.
pub fn prelude_for<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    let texts: Vec<&str> = texts.collect();
    let uses = |needle: &str| texts.iter().any(|t| t.contains(needle));
    let mut out = String::new();
    for part in parts() {
        if part.triggers.is_empty() || part.triggers.iter().any(|t| uses(t)) {
            out.push_str(part.text);
        }
    }
    // The system headers' declarations written out (parsing them was a quarter of every
    // compiler process's fixed cost).
    let mut out = out.replacen(
        super::headers::REPLACED_INCLUDES,
        super::headers::DECLARATIONS,
        1,
    );
    if uses("hloc_v") {
        out.push_str(&super::vecmath::vecmath_for(|name| {
            uses(&format!("{name}("))
        }));
    }
    out
}

/// A part of [`BASE_PRELUDE`] and the names whose use in a kernel needs it (none: always).
#[derive(Debug)]
pub struct PreludePart {
    /// Its text, whole lines.
    pub text: &'static str,
    /// Substrings of a kernel's text that need it.
    pub triggers: Vec<String>,
}

/// [`BASE_PRELUDE`] cut into its parts, in order (their texts concatenate to it).
pub fn parts() -> &'static [PreludePart] {
    static PARTS: std::sync::OnceLock<Vec<PreludePart>> = std::sync::OnceLock::new();
    PARTS.get_or_init(|| split_parts(BASE_PRELUDE))
}

/// The integer type suffixes of the integer helpers.
const INT_TYPES: [&str; 8] = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"];

/// Cuts `text` (the base prelude) at its section comments; the integer helpers' and the
/// float-to-integer conversions' lines go one type at a time.
fn split_parts(text: &'static str) -> Vec<PreludePart> {
    let sections: [(&str, &[&str]); 7] = [
        (
            "/* f16 and bf16",
            &[
                "hloc_f16_to_f32",
                "hloc_f32_to_f16",
                "hloc_bf16_to_f32",
                "hloc_f32_to_bf16",
            ],
        ),
        ("/* f8e4m3fn", &["hloc_f8", "hloc_f32_to_f8"]),
        (
            "/* Complex numbers",
            &["hloc_c64", "hloc_c128", "_c64(", "_c128("],
        ),
        ("/* Selects", &["hloc_sel_"]),
        (
            "/* Floats:",
            &[
                "hloc_max_f",
                "hloc_min_f",
                "hloc_sign_f",
                "hloc_bits_f",
                "hloc_from_bits_f",
                "hloc_total_f",
                "hloc_logistic_f",
            ],
        ),
        ("/* Integers", &[]),
        ("/* Float to integer", &[]),
    ];
    let mut starts: Vec<usize> = sections
        .iter()
        .map(|(marker, _)| text.find(marker).unwrap_or(text.len()))
        .collect();
    starts.insert(0, 0);
    starts.push(text.len());
    let mut parts = vec![PreludePart {
        text: &text[starts[0]..starts[1]],
        triggers: Vec::new(),
    }];
    for (i, (marker, triggers)) in sections.iter().enumerate() {
        let body = &text[starts[i + 1]..starts[i + 2]];
        let per_type = *marker == "/* Integers" || *marker == "/* Float to integer";
        if !per_type {
            parts.push(PreludePart {
                text: body,
                triggers: triggers.iter().map(|t| t.to_string()).collect(),
            });
            continue;
        }
        // Lines naming one integer type's helpers go with that type; the rest (the
        // comment, the macro) with any of them.
        let any: Vec<String> = INT_TYPES.iter().map(|t| format!("_{t}(")).collect();
        let mut shared_end = 0;
        let mut at = 0;
        let mut typed = Vec::new();
        for line in body.split_inclusive('\n') {
            let end = at + line.len();
            let ty = INT_TYPES.iter().find(|t| {
                line.starts_with(&format!("static inline {}", c_int(t)))
                    && line.contains(&format!("_{t}("))
                    || line.starts_with("HLOC_INT_OPS(") && line.contains(&format!(", {t}, "))
            });
            match ty {
                Some(t) => typed.push((&body[at..end], format!("_{t}("))),
                None if typed.is_empty() => shared_end = end,
                None => typed.push((&body[at..end], String::new())),
            }
            at = end;
        }
        parts.push(PreludePart {
            text: &body[..shared_end],
            triggers: any,
        });
        for (line, trigger) in typed {
            parts.push(PreludePart {
                text: line,
                triggers: if trigger.is_empty() {
                    INT_TYPES.iter().map(|t| format!("_{t}(")).collect()
                } else {
                    vec![trigger]
                },
            });
        }
    }
    parts
}

/// The C type of integer type suffix `t`.
fn c_int(t: &str) -> &'static str {
    match t {
        "s8" => "int8_t",
        "s16" => "int16_t",
        "s32" => "int32_t",
        "s64" => "int64_t",
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        _ => "uint64_t",
    }
}

#[cfg(test)]
mod header_tests {
    use super::super::headers::{DECLARATIONS, REPLACED_INCLUDES};
    use std::process::Command;

    /// A C function per declared name and macro, called the way the printer calls them.
    fn uses_of_everything() -> String {
        let one = [
            "acos",
            "asin",
            "atan",
            "cos",
            "sin",
            "tan",
            "acosh",
            "asinh",
            "atanh",
            "cosh",
            "sinh",
            "tanh",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log10",
            "log1p",
            "log2",
            "logb",
            "cbrt",
            "fabs",
            "sqrt",
            "erf",
            "erfc",
            "lgamma",
            "tgamma",
            "ceil",
            "floor",
            "nearbyint",
            "rint",
            "round",
            "trunc",
        ];
        let two = [
            "atan2",
            "hypot",
            "pow",
            "fmod",
            "remainder",
            "copysign",
            "nextafter",
            "fdim",
            "fmax",
            "fmin",
        ];
        let mut c = String::new();
        for (t, s) in [("double", ""), ("float", "f")] {
            for f in one {
                c += &format!("{t} u_{f}{s}({t} x) {{ return {f}{s}(x); }}\n");
            }
            for f in two {
                c += &format!("{t} u_{f}{s}({t} x, {t} y) {{ return {f}{s}(x, y); }}\n");
            }
            c += &format!(
                "{t} u_misc{s}({t} x, int *e, {t} *ip) {{ return fma{s}(x, x, ldexp{s}(x, 3)) \
                 + frexp{s}(x, e) + scalbn{s}(x, 2) + ilogb{s}(x) + lrint{s}(x) + llrint{s}(x) \
                 + lround{s}(x) + llround{s}(x) + modf{s}(x, ip); }}\n\
                 int u_class{s}({t} x) {{ return isnan(x) + isinf(x) + isfinite(x) + \
                 signbit(x) + (x == NAN) + (x < INFINITY) + (x < HUGE_VAL) + (x < HUGE_VALF); }}\n"
            );
        }
        c += "void u_mem(void *a, const void *b, hloc_size_t n) { memcpy(a, b, n); \
              memmove(a, b, n); memset(a, memcmp(a, b, n), n); }\n";
        for t in ["int8_t", "int16_t", "int32_t", "int64_t", "intptr_t"] {
            let u = format!("u{t}");
            let lim = t.trim_end_matches("_t").to_uppercase();
            if t == "intptr_t" {
                c += &format!("{u} u_{t}({t} x) {{ return ({u})x + (uintptr_t)INT64_C(7); }}\n");
                continue;
            }
            c += &format!(
                "int64_t u_{t}({t} x, {u} y) {{ return (int64_t)(x < {lim}_MIN) + (x > {lim}_MAX) \
                 + (y == U{lim}_MAX) + (int64_t)(UINT64_C(3) * y) + INT64_C(-5) * x; }}\n"
            );
        }
        c
    }

    /// The declarations (`super::headers`) replace the includes in every unit.
    #[test]
    fn the_base_prelude_has_the_includes_replaced() {
        assert!(super::BASE_PRELUDE.contains(REPLACED_INCLUDES));
        let p = super::prelude_for(["hloc_f16_to_f32( hloc_vexp_f32("].into_iter());
        assert!(!p.contains("#include"), "{p}");
        assert!(p.contains(DECLARATIONS));
    }

    /// The declarations compile, warning-free, to the same code as the system headers'
    /// (gcc's assembly compared, the source file's name aside).
    #[test]
    fn declarations_compile_as_the_system_headers_do() {
        let cc = crate::cc::compiler();
        let dir = std::env::temp_dir().join(format!("hloc-headers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = uses_of_everything();
        let headers = "typedef __SIZE_TYPE__ hloc_size_t;\n";
        let mut asm = Vec::new();
        for (name, top) in [
            ("system", format!("{}{headers}", super::BASE_PRELUDE)),
            (
                "declared",
                super::BASE_PRELUDE.replacen(REPLACED_INCLUDES, DECLARATIONS, 1),
            ),
        ] {
            let src = dir.join(format!("{name}.c"));
            std::fs::write(&src, format!("{top}\n{body}")).unwrap();
            let out = dir.join(format!("{name}.s"));
            let flags = crate::cc::FLAGS.iter().filter(|f| **f != "-shared");
            let r = Command::new(&cc)
                .args(flags)
                .args(["-Wall", "-Werror", "-Wno-unused-function", "-S", "-o"])
                .arg(&out)
                .arg(&src)
                .output()
                .expect("runs the C compiler");
            assert!(
                r.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            let s = std::fs::read_to_string(&out).unwrap();
            asm.push(
                s.lines()
                    .filter(|l| !l.trim_start().starts_with(".file"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        assert!(asm[0] == asm[1], "the assembly differs");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
