//! The vectorizable transcendentals (`backend_cpu::c::VECMATH`, in every prelude): their
//! largest error in ulps against libm stays within the bounds documented in
//! `codegen/src/c/vecmath/mod.rs`, special values are exact, and gcc vectorizes loops that
//! call them. A C harness compiled with the system compiler (`$HLOC_CC`, else `cc`)
//! measures; without a compiler the tests print why and pass.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The documented bounds in ulps (`codegen/src/c/vecmath/mod.rs`), per function.
const F32_BOUNDS: &[(&str, f64)] = &[
    ("exp", 1.5),
    ("expm1", 2.0),
    ("log", 1.5),
    ("log1p", 1.5),
    ("tanh", 1.5),
    ("logistic", 3.0),
    ("erf", 2.0),
    ("sin", 1.0),
    ("cos", 1.0),
    ("tan", 1.0),
    ("cbrt", 1.0),
];
const F64_BOUNDS: &[(&str, f64)] = &[
    ("exp", 1.5),
    ("expm1", 2.5),
    ("log", 1.5),
    ("log1p", 2.0),
    ("tanh", 1.5),
    ("logistic", 3.0),
    ("erf", 1.5),
    ("sin", 1.5),
    ("cos", 1.5),
    ("tan", 2.0),
    ("cbrt", 1.0),
];
/// The two-argument functions (`hloc_v*_f32(a, b)`), measured on sampled pairs.
const F32_PAIR_BOUNDS: &[(&str, f64)] = &[("pow", 1.0), ("atan2", 1.0)];
const F64_PAIR_BOUNDS: &[(&str, f64)] = &[("pow", 2.0), ("atan2", 1.5)];

/// The harness (after the prelude): `f32 STRIDE`, `f64 COUNT`, `f32_2 COUNT`,
/// `f64_2 COUNT`, `special`.
const HARNESS: &str = include_str!("harness.c");

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
    std::fs::write(&src, format!("{}{HARNESS}", backend_cpu::c::PRELUDE)).expect("write harness");
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
            "hloc_v{}_{kind}: {ulps} ulps at {} (documented bound {bound})",
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
fn pair_sweeps_within_documented_bounds() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("pairs");
    let exe = build(&cc, &dir);
    check(&run(&exe, &["f32_2", "1000000"]), "f32", F32_PAIR_BOUNDS);
    check(&run(&exe, &["f64_2", "1000000"]), "f64", F64_PAIR_BOUNDS);
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

/// `exp_subnormal` of the harness: f32 `exp` rounds a subnormal result through an fma with 2^-126
/// (no multiply with a subnormal result, which takes a microcode assist); its result is
/// the one multiply's, bit for bit. `args` are the harness's FIRST LAST STEP.
fn exp_rounds_as_one_multiply(name: &str, args: &[&str]) {
    let Some(cc) = compiler() else { return };
    let dir = scratch(name);
    let exe = build(&cc, &dir);
    let out = Command::new(&exe)
        .arg("exp_subnormal")
        .args(args)
        .output()
        .expect("run the harness");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("exp_subnormal "))
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    assert!(f[3].parse::<u64>().expect("subnormal count") > 0, "{line}");
    assert!(out.status.success() && f[5] == "0", "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every fifth negative float from -80 (0xc2a00000) to -120 (0xc2f00000): about 440,000
/// subnormal results, the boundaries next to them, and the clamped inputs below -104.
/// (The ignored test below takes every input.)
#[test]
fn exp_subnormal_results_round_as_one_multiply() {
    exp_rounds_as_one_multiply("exp-sub", &["0xc2a00000", "0xc2f00000", "5"]);
}

/// All 2^32 inputs (NaNs, infinities, both signs), about a minute on two cores.
#[test]
#[ignore]
fn exp_rounds_as_one_multiply_on_all_f32() {
    exp_rounds_as_one_multiply("exp-all", &["0", "0xffffffff", "1"]);
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

/// 10^8 pairs per two-argument function and type, as documented.
#[test]
#[ignore]
fn pair_large_sweeps_within_documented_bounds() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("pairs-large");
    let exe = build(&cc, &dir);
    check(&run(&exe, &["f32_2", "100000000"]), "f32", F32_PAIR_BOUNDS);
    check(&run(&exe, &["f64_2", "100000000"]), "f64", F64_PAIR_BOUNDS);
    let _ = std::fs::remove_dir_all(&dir);
}

/// gcc's loop vectorizer turns a loop over each function into SIMD code, for AVX2
/// (x86-64-v3) and AVX-512 (x86-64-v4, also at 256 bits as -march=native there), with
/// the runtime's flags (less `-march=native`:
/// `-O2 -ftree-vectorize -fvect-cost-model=dynamic`, where only small functions are
/// inlined and loops are not unrolled) and with `-O3`.
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
    let mut src = String::from(backend_cpu::c::PRELUDE);
    let mut loops = Vec::new();
    let sets = [
        ("float", F32_BOUNDS, false),
        ("double", F64_BOUNDS, false),
        ("float", F32_PAIR_BOUNDS, true),
        ("double", F64_PAIR_BOUNDS, true),
    ];
    for (ty, bounds, pair) in sets {
        let s = if ty == "float" { "f32" } else { "f64" };
        for (name, _) in bounds {
            let (params, args) = if pair {
                (
                    format!("const {ty} *restrict a, const {ty} *restrict b"),
                    "a[i], b[i]",
                )
            } else {
                (format!("const {ty} *restrict x"), "x[i]")
            };
            src.push_str(&format!(
                "HLOC_VM_WIDE void loop_{name}_{s}({params}, {ty} *restrict y, long n) {{\n"
            ));
            loops.push((format!("hloc_v{name}_{s}"), src.lines().count() + 1));
            src.push_str(&format!(
                "  for (long i = 0; i < n; i++) y[i] = hloc_v{name}_{s}({args});\n}}\n"
            ));
        }
    }
    let path = dir.join("loops.c");
    std::fs::write(&path, &src).expect("write loops.c");
    let runtime_flags: &[&str] = &["-O2", "-ftree-vectorize", "-fvect-cost-model=dynamic"];
    for opt in [runtime_flags, &["-O3"]] {
        // The last is what -march=native means on AVX-512 CPUs (Skylake-X to Sapphire
        // Rapids): 512-bit registers, loops vectorized at 256 bits but for those marked
        // HLOC_VM_WIDE, as the printer marks kernels calling the SIMD-cloned functions.
        for march in [
            &["-march=x86-64-v3"][..],
            &["-march=x86-64-v4"],
            &["-march=x86-64-v4", "-mprefer-vector-width=256"],
        ] {
            let out = Command::new(&cc)
                .args(opt)
                .args([
                    "-fno-math-errno",
                    "-std=gnu11",
                    "-fopt-info-vec-optimized",
                    "-c",
                ])
                .args(march)
                .arg("-o")
                .arg(dir.join("loops.o"))
                .arg(&path)
                .output()
                .expect("run the C compiler");
            let report = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{report}");
            for (f, line) in &loops {
                let vectorized = report.lines().any(|l| {
                    l.contains("loop vectorized") && l.contains(&format!("loops.c:{line}:"))
                });
                assert!(
                    vectorized,
                    "{opt:?} {march:?}: the loop over {f} (line {line}) is not vectorized:\n{report}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A translation unit gets the trigonometric entry points of the functions its kernels
/// call, and only those (they are compiled whether called or not).
#[test]
fn prelude_has_the_entry_points_of_the_called_trig_functions() {
    let kernel = "void k(const double *x, double *y) { y[0] = hloc_vsin_f64(x[0]); }";
    let prelude = backend_cpu::c::prelude_for([kernel].into_iter());
    let entry = |name: &str| format!("HLOC_VM_ENTRIES({name},");
    assert!(prelude.contains(&entry("hloc_vsin_f64")), "{prelude}");
    for other in ["hloc_vcos_f64", "hloc_vtan_f64", "hloc_vsin_f32"] {
        assert!(!prelude.contains(&entry(other)), "{other} in\n{prelude}");
    }
    for name in ["sin", "cos", "tan"] {
        for t in ["f32", "f64"] {
            let f = format!("hloc_v{name}_{t}");
            assert!(backend_cpu::c::PRELUDE.contains(&entry(&f)), "{f}");
        }
    }
}

/// Two translation units calling the same trigonometric functions link into one program,
/// whether each defines its own entry points (local symbols) or both declare the ones a
/// third unit, the module's math unit, defines (`units_sharing_math`: global hidden
/// symbols); and arrays mixing arguments below 2^30 with huge ones (one huge lane among
/// small ones, whole vectors of huge ones, a remainder past the last vector) give libm's
/// results within the documented bounds, through the vector entries and the scalar one.
#[test]
fn two_units_with_mixed_huge_arguments_link_and_match_libm() {
    let Some(cc) = compiler() else { return };
    let kernels = |tag: &str| {
        format!(
            "HLOC_VM_WIDE void run_{tag}(const double *restrict x, double *restrict s, \
             double *restrict t, long n) {{\n  for (long i = 0; i < n; i++) {{ s[i] = \
             hloc_vsin_f64(x[i] * 0.5) * 2.0; t[i] = hloc_vtan_f64(x[i]); }}\n}}\n\
             HLOC_VM_WIDE void run32_{tag}(const float *restrict x, float *restrict c, long \
             n) {{\n  for (long i = 0; i < n; i++) c[i] = hloc_vcos_f32(x[i]);\n}}\n"
        )
    };
    let (ka, kb) = (kernels("a"), kernels("b"));
    let local: Vec<String> = [&ka, &kb]
        .iter()
        .map(|k| {
            format!(
                "{}\n{k}",
                backend_cpu::c::prelude_for([k.as_str()].into_iter())
            )
        })
        .collect();
    let shared = backend_cpu::c::units_sharing_math(&[vec![ka.as_str()], vec![kb.as_str()]]);
    assert_eq!(shared.len(), 3);
    for unit in &shared[..2] {
        assert!(unit.contains("HLOC_VM_IMPORT(hloc_vsin_f64,"), "{unit}");
        assert!(!unit.contains("HLOC_VM_ENTRIES(hloc_v"), "{unit}");
    }
    assert!(shared[2].contains("#define HLOC_VM_EXPORT"));
    for (mode, units) in [("local", local), ("shared", shared)] {
        link_and_run_mixed_huge(&cc, mode, &units);
    }
}

/// Links the units `units` (defining `run_a`, `run_b`, `run32_a` and `run32_b`) with a
/// main that checks both pairs against libm, and runs it.
fn link_and_run_mixed_huge(cc: &str, mode: &str, units: &[String]) {
    let dir = scratch(&format!("two-units-{mode}"));
    let main = r#"
#include <stdio.h>
#include <stdlib.h>
void run_a(const double *, double *, double *, long);
void run_b(const double *, double *, double *, long);
void run32_a(const float *, float *, long);
void run32_b(const float *, float *, long);
static double ulps(double got, long double want, int mant, int emin) {
  if (want != want) return got != got ? 0 : 1e9;
  if (got == want) return 0;
  int e = want == 0 ? emin : ilogbl(want);
  e = e < emin ? emin : e;
  return (double)(fabsl((long double)got - want) / ldexpl(1.0L, e - mant));
}
int main(void) {
  enum { N = 1003 };
  static double x[N], s[N], t[N];
  static float xf[N], cf[N];
  unsigned long long r = 1;
  for (int i = 0; i < N; i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(r >> 11) / 9007199254740992.0 * 2 - 1;
    int huge = i % 13 == 5 || (i >= 200 && i < 264) || i >= N - 3;
    x[i] = huge ? ldexp(u, 31 + (int)(r % 990)) : u * 20;
    if (i == 300) x[i] = 0x1p30;
    if (i == 301) x[i] = 0x1p30 - 0x1p-23;
    if (i == 302) x[i] = INFINITY;
    if (i == 303) x[i] = NAN;
    xf[i] = huge ? ldexpf((float)u, 31 + (int)(r % 96)) : (float)(u * 20);
  }
  int bad = 0;
  for (int pass = 0; pass < 2; pass++) {
    (pass ? run_b : run_a)(x, s, t, N);
    (pass ? run32_b : run32_a)(xf, cf, N);
    for (int i = 0; i < N; i++) {
      double us = ulps(s[i], sinl(x[i] * 0.5) * 2, 52, -1022), ut = ulps(t[i], tanl(x[i]), 52, -1022);
      double uc = ulps(cf[i], cos((double)xf[i]), 23, -126);
      if (us > 1.5 || ut > 2.0 || uc > 1.0) {
        if (bad++ < 5) printf("bad %d x=%a sin %g tan %g ulps, f32 x=%a cos %g ulps\n", i, x[i], us, ut, xf[i], uc);
      }
    }
  }
  printf("%d bad\n", bad);
  return bad != 0;
}
"#;
    let mut srcs = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let src = dir.join(format!("unit{i}.c"));
        std::fs::write(&src, unit).expect("write a unit");
        srcs.push(src);
    }
    let m = dir.join("main.c");
    std::fs::write(&m, format!("#include <math.h>\n{main}")).expect("write main.c");
    srcs.push(m);
    let exe = dir.join("two-units");
    let out = Command::new(cc)
        .args([
            "-O2",
            "-ftree-vectorize",
            "-fvect-cost-model=dynamic",
            "-march=native",
            "-fno-math-errno",
            "-std=gnu11",
        ])
        .arg("-o")
        .arg(&exe)
        .args(&srcs)
        .arg("-lm")
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&exe, &[]);
    print!("{out}");
    assert!(out.contains("0 bad"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
