//! What a translation unit takes from `<stdint.h>`, `<string.h>` and `<math.h>`, declared
//! by the prelude itself. Parsing the three system headers cost gcc 12 about 7 ms of a
//! unit's ~20 ms fixed cost (a one-line unit: 9.5 ms alone, 11.4 ms with `<stdint.h>`,
//! 15.3 ms with `<math.h>`), on every compiler process, so on each core's path of every
//! cold compile. The functions are the C library's under their own names, which gcc (and
//! clang) know as built-ins whatever header declares them; the integer types and limits
//! are the compiler's predefined ones, which the headers use too: the code generated is
//! the same (checked by comparing gcc's assembly of whole modules' units both ways). The
//! math macros are glibc's definitions for GCC >= 6.

/// The `#include` lines of [`super::BASE_PRELUDE`] that [`DECLARATIONS`] replaces on the
/// CPU (the CUDA prelude drops every `#include` of it and brings its own).
pub(super) const REPLACED_INCLUDES: &str =
    "#include <stdint.h>\n#include <string.h>\n#include <math.h>\n";

/// The declarations in place of [`REPLACED_INCLUDES`]: the exact-width integer types and
/// their limits from the compiler's predefined macros, every `<math.h>` function of C99
/// in `double` and `float` (the printer's libm calls, the vector math's fallbacks, and
/// more, so that no kernel depends on this list being exact), the memory functions, and
/// the classification macros and constants the printer and prelude use.
pub(super) const DECLARATIONS: &str = r#"/* <stdint.h>, <string.h> and <math.h>: what the kernels use. */
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;
#define INT8_MIN (-__INT8_MAX__ - 1)
#define INT16_MIN (-__INT16_MAX__ - 1)
#define INT32_MIN (-__INT32_MAX__ - 1)
#define INT64_MIN (-__INT64_MAX__ - 1)
#define INT8_MAX __INT8_MAX__
#define INT16_MAX __INT16_MAX__
#define INT32_MAX __INT32_MAX__
#define INT64_MAX __INT64_MAX__
#define UINT8_MAX __UINT8_MAX__
#define UINT16_MAX __UINT16_MAX__
#define UINT32_MAX __UINT32_MAX__
#define UINT64_MAX __UINT64_MAX__
#ifdef __INT64_C
#define INT64_C(c) __INT64_C(c)
#define UINT64_C(c) __UINT64_C(c)
#else
#define INT64_C(c) c##L
#define UINT64_C(c) c##UL
#endif
typedef __SIZE_TYPE__ hloc_size_t;
void *memcpy(void *__restrict, const void *__restrict, hloc_size_t);
void *memmove(void *, const void *, hloc_size_t);
void *memset(void *, int, hloc_size_t);
int memcmp(const void *, const void *, hloc_size_t);
#define NAN (__builtin_nanf(""))
#define INFINITY (__builtin_inff())
#define HUGE_VAL (__builtin_huge_val())
#define HUGE_VALF (__builtin_huge_valf())
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf_sign(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)
#define HLOC_M1(N) double N(double); float N##f(float);
#define HLOC_M2(N) double N(double, double); float N##f(float, float);
HLOC_M1(acos) HLOC_M1(asin) HLOC_M1(atan) HLOC_M2(atan2) HLOC_M1(cos) HLOC_M1(sin)
HLOC_M1(tan) HLOC_M1(acosh) HLOC_M1(asinh) HLOC_M1(atanh) HLOC_M1(cosh) HLOC_M1(sinh)
HLOC_M1(tanh) HLOC_M1(exp) HLOC_M1(exp2) HLOC_M1(expm1) HLOC_M1(log) HLOC_M1(log10)
HLOC_M1(log1p) HLOC_M1(log2) HLOC_M1(logb) HLOC_M1(cbrt) HLOC_M1(fabs) HLOC_M2(hypot)
HLOC_M2(pow) HLOC_M1(sqrt) HLOC_M1(erf) HLOC_M1(erfc) HLOC_M1(lgamma) HLOC_M1(tgamma)
HLOC_M1(ceil) HLOC_M1(floor) HLOC_M1(nearbyint) HLOC_M1(rint) HLOC_M1(round)
HLOC_M1(trunc) HLOC_M2(fmod) HLOC_M2(remainder) HLOC_M2(copysign) HLOC_M2(nextafter)
HLOC_M2(fdim) HLOC_M2(fmax) HLOC_M2(fmin)
#undef HLOC_M1
#undef HLOC_M2
double fma(double, double, double); float fmaf(float, float, float);
double ldexp(double, int); float ldexpf(float, int);
double frexp(double, int *); float frexpf(float, int *);
double scalbn(double, int); float scalbnf(float, int);
int ilogb(double); int ilogbf(float);
long lrint(double); long lrintf(float); long long llrint(double); long long llrintf(float);
long lround(double); long lroundf(float);
long long llround(double); long long llroundf(float);
double modf(double, double *); float modff(float, float *);
"#;
