//! The vectorizable transcendentals (`codegen::c::VECMATH`, in every prelude): their
//! largest error in ulps against libm stays within the bounds documented in
//! `codegen/src/c/vecmath.rs`, special values are exact, and gcc vectorizes loops that
//! call them. A C harness compiled with the system compiler (`$HLOC_CC`, else `cc`)
//! measures; without a compiler the tests print why and pass.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The documented bounds in ulps (`codegen/src/c/vecmath.rs`), per function.
const F32_BOUNDS: &[(&str, f64)] = &[
    ("exp", 1.5),
    ("expm1", 2.0),
    ("log", 1.5),
    ("log1p", 1.5),
    ("tanh", 1.5),
    ("logistic", 3.0),
    ("erf", 2.0),
];
const F64_BOUNDS: &[(&str, f64)] = &[
    ("exp", 1.5),
    ("expm1", 2.5),
    ("log", 1.5),
    ("log1p", 2.0),
    ("tanh", 1.5),
    ("logistic", 3.0),
];

/// The harness (after the prelude): `f32 STRIDE`, `f64 COUNT`, `special`.
const HARNESS: &str = r#"/* Accuracy harness for the vectorizable transcendentals (after the hloc prelude).
   f32 STRIDE [NAME]: every STRIDE-th bit pattern (1: all 2^32), error against libm's
   double function rounded once; f64 COUNT [NAME]: COUNT inputs (random bits, the
   function's interesting range, 2^-64..2^11 with random signs), error against libm's
   long double function; special: exact results on special inputs. Errors are in units
   in the last place of the correctly rounded result (inf counted as 2^128 or 2^1024). */
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <unistd.h>

static double ulps_f32(float got, double ref) {
  if (ref != ref) return got != got ? 0.0 : INFINITY;
  if (got != got) return INFINITY;
  if (isinf(ref)) return got == ref ? 0.0 : INFINITY;
  double g = isinf(got) ? copysign(0x1p128, got) : (double)got;
  if (fabs(ref) > 0x1p128) ref = copysign(0x1p128, ref);
  int e = ref == 0.0 ? -126 : ilogb(ref);
  e = e < -126 ? -126 : e > 127 ? 127 : e;
  return fabs(g - ref) / ldexp(1.0, e - 23);
}
static double ulps_f64(double got, long double ref) {
  if (ref != ref) return got != got ? 0.0 : INFINITY;
  if (got != got) return INFINITY;
  if (isinf(ref)) return got == ref ? 0.0 : INFINITY;
  long double g = isinf(got) ? copysignl(0x1p1024L, got) : (long double)got;
  if (fabsl(ref) > 0x1p1024L) ref = copysignl(0x1p1024L, ref);
  int e = ref == 0.0L ? -1022 : ilogbl(ref);
  e = e < -1022 ? -1022 : e > 1023 ? 1023 : e;
  return (double)(fabsl(g - ref) / ldexpl(1.0L, e - 52));
}
static double r_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }
static long double r_logisticl(long double x) { return 1.0L / (1.0L + expl(-x)); }

/* The functions are evaluated over arrays, in loops as the kernels' (vectorized at -O3). */
typedef struct { const char *name; void (*f)(const float *, float *, int); double (*ref)(double); } fn32;
typedef struct { const char *name; void (*f)(const double *, double *, int); long double (*ref)(long double); double lo, hi; } fn64;
#define W32(n) \
  static void w32_##n(const float *restrict x, float *restrict y, int m) { for (int i = 0; i < m; i++) y[i] = hloc_v##n##_f32(x[i]); }
#define W64(n) \
  static void w64_##n(const double *restrict x, double *restrict y, int m) { for (int i = 0; i < m; i++) y[i] = hloc_v##n##_f64(x[i]); }
W32(exp) W32(expm1) W32(log) W32(log1p) W32(tanh) W32(logistic) W32(erf)
W64(exp) W64(expm1) W64(log) W64(log1p) W64(tanh) W64(logistic)
static const fn32 F32[] = {
  {"exp", w32_exp, exp}, {"expm1", w32_expm1, expm1}, {"log", w32_log, log},
  {"log1p", w32_log1p, log1p}, {"tanh", w32_tanh, tanh}, {"logistic", w32_logistic, r_logistic},
  {"erf", w32_erf, erf},
};
/* lo < hi: a uniform range; lo == hi: 1 + small */
static const fn64 F64[] = {
  {"exp", w64_exp, expl, -750, 712}, {"expm1", w64_expm1, expm1l, -50, 712},
  {"log", w64_log, logl, 0, 0}, {"log1p", w64_log1p, log1pl, -1, 4},
  {"tanh", w64_tanh, tanhl, -25, 25}, {"logistic", w64_logistic, r_logisticl, -750, 50},
};
#define N32 (sizeof F32 / sizeof *F32)
#define N64 (sizeof F64 / sizeof *F64)

typedef struct { const void *fn; uint64_t begin, end, step; double worst, wx; } job;
#define BLOCK 4096
static void *run32(void *p) {
  job *j = p;
  const fn32 *f = j->fn;
  float xs[BLOCK], ys[BLOCK];
  for (uint64_t i = j->begin; i < j->end;) {
    int m = 0;
    for (; m < BLOCK && i < j->end; m++, i += j->step) {
      uint32_t b = (uint32_t)i;
      memcpy(&xs[m], &b, 4);
    }
    f->f(xs, ys, m);
    for (int k = 0; k < m; k++) {
      double u = ulps_f32(ys[k], f->ref((double)xs[k]));
      if (u > j->worst) { j->worst = u; j->wx = xs[k]; }
    }
  }
  return 0;
}
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* the i-th f64 input: random bits, the function's range (or 1 + small), or |x| in
   2^-64..2^11 with a random sign */
static double input64(const fn64 *f, uint64_t i) {
  uint64_t r = mix(i);
  double x;
  if (i % 4 == 0) {
    memcpy(&x, &r, 8);
  } else if (i % 4 == 1 && f->lo < f->hi) {
    x = f->lo + (f->hi - f->lo) * ((double)(r >> 11) * 0x1p-53);
  } else if (i % 4 == 1) {
    x = 1.0 + ldexp((double)(r >> 11) * 0x1p-53 - 0.5, -(int)(r & 31));
  } else {
    uint64_t b = (r & 0x800fffffffffffffull) | ((uint64_t)(1023 - 64 + (int)((r >> 52) % 75)) << 52);
    memcpy(&x, &b, 8);
  }
  return x;
}
static void *run64(void *p) {
  job *j = p;
  const fn64 *f = j->fn;
  double xs[BLOCK], ys[BLOCK];
  for (uint64_t i = j->begin; i < j->end;) {
    int m = 0;
    for (; m < BLOCK && i < j->end; m++, i += j->step) {
      xs[m] = input64(f, i);
    }
    f->f(xs, ys, m);
    for (int k = 0; k < m; k++) {
      double u = ulps_f64(ys[k], f->ref((long double)xs[k]));
      if (u > j->worst) { j->worst = u; j->wx = xs[k]; }
    }
  }
  return 0;
}
/* runs fn over [0, end) step `step` on the machine's cores; the worst error and its input */
static void sweep(void *(*run)(void *), const void *fn, uint64_t end, uint64_t step, double *worst, double *wx) {
  long nt = sysconf(_SC_NPROCESSORS_ONLN);
  nt = nt < 1 ? 1 : nt > 64 ? 64 : nt;
  job jobs[64];
  pthread_t th[64];
  for (long t = 0; t < nt; t++) {
    jobs[t] = (job){fn, (uint64_t)t * step, end, step * (uint64_t)nt, 0.0, 0.0};
    if (pthread_create(&th[t], 0, run, &jobs[t])) run(&jobs[t]), th[t] = 0;
  }
  *worst = 0.0;
  *wx = 0.0;
  for (long t = 0; t < nt; t++) {
    if (th[t]) pthread_join(th[t], 0);
    if (jobs[t].worst > *worst || (t == 0)) { *worst = jobs[t].worst; *wx = jobs[t].wx; }
  }
}

/* inputs whose results are exact (0, +-1, +-inf, NaN, the input itself): must match libm */
static const float S32[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, 0x1p-149f,
  -0x1p-149f, 0x1p-126f, -0x1p-126f, 0x1p-30f, -0x1p-30f, 1e30f, -1e30f, 0x1.fffffep127f,
  -0x1.fffffep127f, 100.0f, -100.0f, 200.0f, -200.0f, 2.0f, -2.0f};
static int same32(float a, float b) {
  uint32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return (a != a && b != b) || x == y;
}
static int same64(double a, double b) {
  uint64_t x, y;
  memcpy(&x, &a, 8);
  memcpy(&y, &b, 8);
  return (a != a && b != b) || x == y;
}
static int exact32(float r, float x) { return r != r || r == 0.0f || isinf(r) || r == 1.0f || r == -1.0f || r == x; }

int main(int argc, char **argv) {
  const char *only = argc > 3 ? argv[3] : NULL;
  if (argc > 2 && !strcmp(argv[1], "f32")) {
    uint64_t step = strtoull(argv[2], 0, 10);
    for (size_t k = 0; k < N32; k++) {
      if (only && strcmp(only, F32[k].name)) continue;
      double worst, wx;
      sweep(run32, &F32[k], 1ull << 32, step, &worst, &wx);
      printf("f32 %s %.3f %a %llu\n", F32[k].name, worst, wx, (unsigned long long)(((1ull << 32) + step - 1) / step));
    }
  } else if (argc > 2 && !strcmp(argv[1], "f64")) {
    uint64_t count = strtoull(argv[2], 0, 10);
    for (size_t k = 0; k < N64; k++) {
      if (only && strcmp(only, F64[k].name)) continue;
      double worst, wx;
      sweep(run64, &F64[k], count, 1, &worst, &wx);
      printf("f64 %s %.3f %a %llu\n", F64[k].name, worst, wx, (unsigned long long)count);
    }
  } else if (argc > 1 && !strcmp(argv[1], "special")) {
    int bad = 0, n = 0;
    for (size_t k = 0; k < N32; k++) {
      for (size_t i = 0; i < sizeof S32 / sizeof *S32; i++) {
        float x = S32[i], want = (float)F32[k].ref((double)x), got;
        F32[k].f(&x, &got, 1);
        if (!exact32(want, x)) continue;
        n++;
        if (!same32(got, want)) {
          bad++;
          printf("FAIL f32 %s(%a) = %a, want %a\n", F32[k].name, (double)x, (double)got, (double)want);
        }
      }
    }
    for (size_t k = 0; k < N64; k++) {
      for (size_t i = 0; i < sizeof S32 / sizeof *S32; i++) {
        double xs[3] = {S32[i], (double)S32[i] * 0x1p-900, 1e300 * S32[i]};
        for (int j = 0; j < 3; j++) {
          double x = xs[j], want = (double)F64[k].ref((long double)x), got;
          F64[k].f(&x, &got, 1);
          if (!(want != want || want == 0.0 || isinf(want) || want == 1.0 || want == -1.0 || want == x)) continue;
          n++;
          if (!same64(got, want)) {
            bad++;
            printf("FAIL f64 %s(%a) = %a, want %a\n", F64[k].name, x, got, want);
          }
        }
      }
    }
    printf("special %d checked %d failed\n", n, bad);
  } else {
    fprintf(stderr, "usage: %s f32 STRIDE [NAME] | f64 COUNT [NAME] | special\n", argv[0]);
    return 2;
  }
  return 0;
}
"#;

fn compiler() -> Option<String> {
    let cc = std::env::var("HLOC_CC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "cc".to_string());
    match Command::new(&cc).arg("--version").output() {
        Ok(out) if out.status.success() => Some(cc),
        _ => {
            println!("skipped: no C compiler `{cc}`");
            None
        }
    }
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hloc-vecmath-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Compiles the harness into `dir` with the runtime's flags: the functions run in
/// vectorized loops, as in kernels.
fn build(cc: &str, dir: &Path) -> PathBuf {
    let src = dir.join("harness.c");
    let exe = dir.join("harness");
    std::fs::write(&src, format!("{}{HARNESS}", codegen::c::PRELUDE)).expect("write harness");
    let mut last = String::new();
    for march in [Some("-march=native"), None] {
        let mut cmd = Command::new(cc);
        cmd.args(["-O3", "-fno-math-errno", "-std=gnu11", "-pthread"]);
        cmd.args(march);
        cmd.arg("-o").arg(&exe).arg(&src).arg("-lm");
        let out = cmd.output().expect("run the C compiler");
        if out.status.success() {
            return exe;
        }
        last = String::from_utf8_lossy(&out.stderr).into_owned();
    }
    panic!("the harness does not compile:\n{last}");
}

fn run(exe: &Path, args: &[&str]) -> String {
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("run the harness");
    assert!(out.status.success(), "harness {args:?} failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks the harness's `KIND NAME ULPS WORST_INPUT COUNT` lines against `bounds`.
fn check(out: &str, kind: &str, bounds: &[(&str, f64)]) {
    print!("{out}");
    let mut seen = Vec::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 5, "harness line `{line}`");
        assert_eq!(f[0], kind, "harness line `{line}`");
        let ulps: f64 = f[2].parse().expect("ulps");
        let bound = bounds
            .iter()
            .find(|(n, _)| *n == f[1])
            .unwrap_or_else(|| panic!("no documented bound for {kind} {}", f[1]))
            .1;
        assert!(
            ulps <= bound,
            "hloc_v{}_{kind}: {ulps} ulps at x = {} (documented bound {bound})",
            f[1],
            f[3]
        );
        seen.push(f[1].to_string());
    }
    for (name, _) in bounds {
        assert!(seen.iter().any(|s| s == name), "{kind} {name} not measured");
    }
}

#[test]
fn f32_strided_sweep_within_documented_bounds() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("f32");
    let exe = build(&cc, &dir);
    // Every 61st bit pattern: 70 million inputs per function, all exponents.
    check(&run(&exe, &["f32", "61"]), "f32", F32_BOUNDS);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn f64_random_sweep_within_documented_bounds() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("f64");
    let exe = build(&cc, &dir);
    check(&run(&exe, &["f64", "1000000"]), "f64", F64_BOUNDS);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn special_values_are_exact() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("special");
    let exe = build(&cc, &dir);
    let out = run(&exe, &["special"]);
    print!("{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("special ") && l.ends_with(" 0 failed")),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// All 2^32 f32 inputs per function (minutes on two cores; nextest stops a test at
/// 5 minutes, `cargo test -p codegen --test codegen -- --ignored vecmath` does not).
#[test]
#[ignore]
fn f32_exhaustive_within_documented_bounds() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("f32-all");
    let exe = build(&cc, &dir);
    check(&run(&exe, &["f32", "1"]), "f32", F32_BOUNDS);
    let _ = std::fs::remove_dir_all(&dir);
}

/// 10^8 f64 inputs per function, as documented.
#[test]
#[ignore]
fn f64_large_sweep_within_documented_bounds() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("f64-large");
    let exe = build(&cc, &dir);
    check(&run(&exe, &["f64", "100000000"]), "f64", F64_BOUNDS);
    let _ = std::fs::remove_dir_all(&dir);
}

/// gcc's loop vectorizer turns a loop over each function into SIMD code, for AVX2
/// (x86-64-v3) and AVX-512 (x86-64-v4), with the runtime's flags less `-march=native`.
#[test]
fn gcc_vectorizes_loops_over_each_function() {
    let Some(cc) = compiler() else { return };
    let version = Command::new(&cc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !cfg!(target_arch = "x86_64") || !version.contains("Free Software Foundation") {
        println!("skipped: `{cc}` is not gcc on x86_64");
        return;
    }
    let dir = scratch("vectorize");
    let mut src = String::from(codegen::c::PRELUDE);
    let mut loops = Vec::new();
    for (ty, bounds) in [("float", F32_BOUNDS), ("double", F64_BOUNDS)] {
        let s = if ty == "float" { "f32" } else { "f64" };
        for (name, _) in bounds {
            src.push_str(&format!(
                "void loop_{name}_{s}(const {ty} *restrict x, {ty} *restrict y, long n) {{\n"
            ));
            loops.push((format!("hloc_v{name}_{s}"), src.lines().count() + 1));
            src.push_str(&format!(
                "  for (long i = 0; i < n; i++) y[i] = hloc_v{name}_{s}(x[i]);\n}}\n"
            ));
        }
    }
    let path = dir.join("loops.c");
    std::fs::write(&path, &src).expect("write loops.c");
    for march in ["x86-64-v3", "x86-64-v4"] {
        let out = Command::new(&cc)
            .args([
                "-O3",
                "-fno-math-errno",
                "-std=gnu11",
                "-fopt-info-vec-optimized",
                "-c",
            ])
            .arg(format!("-march={march}"))
            .arg("-o")
            .arg(dir.join("loops.o"))
            .arg(&path)
            .output()
            .expect("run the C compiler");
        let report = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{report}");
        for (f, line) in &loops {
            let vectorized = report
                .lines()
                .any(|l| l.contains("loop vectorized") && l.contains(&format!("loops.c:{line}:")));
            assert!(
                vectorized,
                "{march}: the loop over {f} (line {line}) is not vectorized:\n{report}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
