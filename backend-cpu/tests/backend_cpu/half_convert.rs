//! The prelude's f16 conversions (`hloc_f16_to_f32`, `hloc_f32_to_f16`), written without a
//! branch so that gcc vectorizes the loops of f16 kernels, against the plain branchy
//! definitions (IEEE binary16, round to nearest even, NaN payloads kept and quieted): every
//! one of the 2^16 halves, and floats over the whole 32-bit range (every 7th pattern plus
//! each rounding tie and its neighbours, subnormal halves, the overflow edge, infinities
//! and NaNs). A second check asks gcc whether a loop of conversions vectorizes. A C harness
//! compiled with the system compiler (`$HLOC_CC`, else `cc`) runs both; without a compiler
//! the test prints why and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The reference conversions (branchy, one case at a time) and a main that compares the
/// prelude's with them, printing the first mismatches and their count.
const HARNESS: &str = r#"
#include <stdio.h>
static float ref_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
  if (e == 0x1fu) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    float f = ldexpf((float)m, -24);
    memcpy(&bits, &f, 4);
    bits |= sign;
  } else {
    bits = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
static uint16_t ref_f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  float af;
  memcpy(&af, &ax, 4);
  if (ax < 0x38800000u) return (uint16_t)(sign | (uint16_t)rintf(ldexpf(af, 24)));
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
static long bad = 0;
static void check(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  uint16_t got = hloc_f32_to_f16(f), want = ref_f2h(f);
  if (got != want && bad++ < 5) printf("f32 %08x: got %04x, want %04x\n", u, got, want);
}
int main(void) {
  for (uint32_t h = 0; h < 65536; h++) {
    float a = hloc_f16_to_f32((uint16_t)h), b = ref_h2f((uint16_t)h);
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    if (x != y && bad++ < 5) printf("f16 %04x: got %08x, want %08x\n", h, x, y);
  }
  for (uint64_t u = 0; u < (1ull << 32); u += 7) check((uint32_t)u);
  /* Every tie (low 13 bits 0x1000) and its neighbours, at every exponent and sign. */
  for (uint64_t hi = 0; hi < (1ull << 19); hi++)
    for (uint32_t lo = 0x0fffu; lo <= 0x1001u; lo++) check((uint32_t)(hi << 13) | lo);
  /* Dense windows around the subnormal, overflow and infinity edges, both signs. */
  const uint32_t edges[] = {0x38800000u, 0x33000000u, 0x477ff000u, 0x7f800000u, 0u};
  for (int i = 0; i < 5; i++)
    for (uint32_t d = 0; d < 0x40000u; d++)
      for (uint32_t s = 0; s < 2; s++) {
        uint32_t base = edges[i] > 0x20000u ? edges[i] - 0x20000u : 0u;
        check((base + d) | (s << 31));
      }
  printf("mismatches %ld\n", bad);
  return bad != 0;
}
"#;

/// A loop of f16 arithmetic as the kernels print it.
const LOOP: &str = r#"
void f16_axpy(const uint16_t *restrict a, const uint16_t *restrict b, uint16_t *restrict c,
              long n) {
  for (long i = 0; i < n; i++)
    c[i] = hloc_f32_to_f16(hloc_f16_to_f32(a[i]) * 2.0f + hloc_f16_to_f32(b[i]));
}
"#;

fn compiler() -> Option<String> {
    let cc = std::env::var("HLOC_CC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "cc".to_string());
    let ok = Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("skipped: no C compiler `{cc}`");
    }
    ok.then_some(cc)
}

fn scratch(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hloc-half-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn compile(cc: &str, args: &[&str], src: &Path) -> std::process::Output {
    Command::new(cc)
        .args(args)
        .arg(src)
        .arg("-lm")
        .output()
        .expect("run the C compiler")
}

#[test]
fn f16_conversions_match_the_branchy_definitions() {
    let Some(cc) = compiler() else { return };
    let dir = scratch("convert");
    let (src, exe) = (dir.join("h.c"), dir.join("h"));
    std::fs::write(&src, format!("{}{HARNESS}", backend_cpu::c::BASE_PRELUDE)).expect("write");
    let exe_arg = exe.to_str().expect("utf-8 path");
    let out = compile(&cc, &["-O2", "-std=gnu11", "-o", exe_arg], &src);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the harness");
    let text = String::from_utf8_lossy(&run.stdout);
    std::fs::remove_dir_all(&dir).ok();
    assert!(run.status.success(), "{text}");
    assert!(text.contains("mismatches 0"), "{text}");
}

#[test]
fn f16_conversion_loops_vectorize() {
    let Some(cc) = compiler() else { return };
    let version = Command::new(&cc)
        .arg("--version")
        .output()
        .expect("version");
    let version = String::from_utf8_lossy(&version.stdout);
    if !version.contains("gcc") && !version.contains("GCC") && !version.contains("Free Software") {
        println!("skipped: `{cc}` is not gcc ({version}); -fopt-info is gcc's");
        return;
    }
    let dir = scratch("vector");
    let src = dir.join("v.c");
    std::fs::write(&src, format!("{}{LOOP}", backend_cpu::c::BASE_PRELUDE)).expect("write");
    let obj = dir.join("v.o");
    let obj_arg = obj.to_str().expect("utf-8 path");
    // The kernels' flags (backend-cpu's `cc::FLAGS`, less `-shared -fPIC`).
    let args = [
        "-O2",
        "-ftree-vectorize",
        "-fvect-cost-model=dynamic",
        "-march=native",
        "-fno-math-errno",
        "-std=gnu11",
        "-c",
        "-fopt-info-vec-optimized",
        "-o",
        obj_arg,
    ];
    let out = compile(&cc, &args, &src);
    std::fs::remove_dir_all(&dir).ok();
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    // Only the appended function has a loop (the prelude's unused inline helpers emit no
    // code), so a vectorized loop past the prelude's lines is it.
    let base = backend_cpu::c::BASE_PRELUDE.lines().count();
    let vectorized = report.lines().any(|l| {
        l.contains("loop vectorized")
            && l.split(':')
                .nth(1)
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n > base)
    });
    assert!(vectorized, "the f16 loop did not vectorize:\n{report}");
}
