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

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn the_base_prelude_has_the_includes_replaced() {
        assert!(super::super::BASE_PRELUDE.contains(REPLACED_INCLUDES));
        let p = super::super::prelude_for(["hloc_f16_to_f32( hloc_vexp_f32("].into_iter());
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
            ("system", format!("{}{headers}", super::super::BASE_PRELUDE)),
            (
                "declared",
                super::super::BASE_PRELUDE.replacen(REPLACED_INCLUDES, DECLARATIONS, 1),
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
