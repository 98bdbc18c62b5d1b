/* Accuracy harness for the vectorizable transcendentals (after the hloc prelude).
   f32 STRIDE [NAME]: every STRIDE-th bit pattern (1: all 2^32), error against libm's
   double function rounded once; f64 COUNT [NAME]: COUNT inputs (random bits, the
   function's interesting range, 2^-64..2^11 with random signs), error against libm's
   long double function; f32_2 COUNT [NAME] and f64_2 COUNT [NAME]: COUNT pairs of a
   two-argument function (a quarter each: random bits for both, the function's range, a
   second range, a third; see pair32/pair64); special: exact results on special inputs
   (for pow and atan2 a grid of them, bit for bit against libm). Errors are in units
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
W32(sin) W32(cos) W32(tan) W32(cbrt)
W64(exp) W64(expm1) W64(log) W64(log1p) W64(tanh) W64(logistic) W64(erf)
W64(sin) W64(cos) W64(tan) W64(cbrt)
static const fn32 F32[] = {
  {"exp", w32_exp, exp}, {"expm1", w32_expm1, expm1}, {"log", w32_log, log},
  {"log1p", w32_log1p, log1p}, {"tanh", w32_tanh, tanh}, {"logistic", w32_logistic, r_logistic},
  {"erf", w32_erf, erf}, {"sin", w32_sin, sin}, {"cos", w32_cos, cos}, {"tan", w32_tan, tan},
  {"cbrt", w32_cbrt, cbrt},
};
/* lo < hi: a uniform range; lo == hi: 1 + small */
static const fn64 F64[] = {
  {"exp", w64_exp, expl, -750, 712}, {"expm1", w64_expm1, expm1l, -50, 712},
  {"log", w64_log, logl, 0, 0}, {"log1p", w64_log1p, log1pl, -1, 4},
  {"tanh", w64_tanh, tanhl, -25, 25}, {"logistic", w64_logistic, r_logisticl, -750, 50},
  {"erf", w64_erf, erfl, -6, 6}, {"sin", w64_sin, sinl, -2e9, 2e9},
  {"cos", w64_cos, cosl, -2e9, 2e9}, {"tan", w64_tan, tanl, -2e9, 2e9},
  {"cbrt", w64_cbrt, cbrtl, -10, 10},
};
#define N32 (sizeof F32 / sizeof *F32)
#define N64 (sizeof F64 / sizeof *F64)

/* Two-argument functions, (y, x) order as C's atan2 and (x, y) as pow. */
typedef struct { const char *name; void (*f)(const float *, const float *, float *, int); double (*ref)(double, double); } fn32b;
typedef struct { const char *name; void (*f)(const double *, const double *, double *, int); long double (*ref)(long double, long double); } fn64b;
#define W32B(n) \
  static void w32_##n(const float *restrict a, const float *restrict b, float *restrict y, int m) { for (int i = 0; i < m; i++) y[i] = hloc_v##n##_f32(a[i], b[i]); }
#define W64B(n) \
  static void w64_##n(const double *restrict a, const double *restrict b, double *restrict y, int m) { for (int i = 0; i < m; i++) y[i] = hloc_v##n##_f64(a[i], b[i]); }
W32B(pow) W32B(atan2) W64B(pow) W64B(atan2)
static const fn32b F32B[] = {{"pow", w32_pow, pow}, {"atan2", w32_atan2, atan2}};
static const fn64b F64B[] = {{"pow", w64_pow, powl}, {"atan2", w64_atan2, atan2l}};
#define N32B (sizeof F32B / sizeof *F32B)
#define N64B (sizeof F64B / sizeof *F64B)

typedef struct { const void *fn; uint64_t begin, end, step; double worst, wx, wy; } job;
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

static double unif(uint64_t r, double lo, double hi) { return lo + (hi - lo) * ((double)(r >> 11) * 0x1p-53); }
/* the i-th pair: random bits for both; pow: x in [0, 4] with |y log x| <= L, x within 2^-k
   of 1 (k < 32) with the same y, x in [-10, 10] with integral y in [-60, 60] (L = 700 for
   f64, 100 for f32, y in [-30, 30]); atan2: both in [-4, 4], in [-1000, 1000], in
   [-10, 10] (f32) or 2^-64..2^11 with random signs (f64). */
static void pair64(int pow_, uint64_t i, double *a, double *b) {
  uint64_t r = mix(i), s = mix(~i);
  double x, y;
  switch (i % 4) {
  case 0: memcpy(&x, &r, 8); memcpy(&y, &s, 8); break;
  case 1:
    if (pow_) x = unif(r, 0, 4), y = unif(s, -700, 700) / fmax(fabs(log(x)), 1e-3);
    else x = unif(r, -4, 4), y = unif(s, -4, 4);
    break;
  case 2:
    if (pow_) x = 1.0 + unif(r, -1, 1) * ldexp(1, -(int)(r & 31)), y = unif(s, -700, 700) / fmax(fabs(log(x)), 1e-300);
    else x = unif(r, -1e3, 1e3), y = unif(s, -1e3, 1e3);
    break;
  default:
    if (pow_) {
      x = unif(r, -10, 10), y = trunc(unif(s, -60, 60));
    } else {
      uint64_t u = (r & 0x800fffffffffffffull) | ((uint64_t)(1023 - 64 + (int)((r >> 52) % 75)) << 52);
      uint64_t v = (s & 0x800fffffffffffffull) | ((uint64_t)(1023 - 64 + (int)((s >> 52) % 75)) << 52);
      memcpy(&x, &u, 8);
      memcpy(&y, &v, 8);
    }
  }
  *a = x, *b = y;
}
static void pair32(int pow_, uint64_t i, float *a, float *b) {
  uint64_t r = mix(i), s = mix(~i);
  uint32_t u = (uint32_t)r, v = (uint32_t)s;
  float x, y;
  switch (i % 4) {
  case 0: memcpy(&x, &u, 4); memcpy(&y, &v, 4); break;
  case 1:
    x = (float)(pow_ ? unif(r, 0, 4) : unif(r, -4, 4));
    y = (float)(pow_ ? unif(s, -100, 100) / fmax(fabs(log(x)), 1e-3) : unif(s, -4, 4));
    break;
  case 2:
    x = (float)(pow_ ? 1.0 + unif(r, -1, 1) * ldexp(1, -(int)(r & 15)) : unif(r, -1e3, 1e3));
    y = (float)(pow_ ? unif(s, -100, 100) / fmax(fabs(log(x)), 1e-30) : unif(s, -1e3, 1e3));
    break;
  default:
    x = (float)unif(r, -10, 10);
    y = (float)(pow_ ? trunc(unif(s, -30, 30)) : unif(s, -10, 10));
  }
  *a = x, *b = y;
}
static void *run64b(void *p) {
  job *j = p;
  const fn64b *f = j->fn;
  int pow_ = !strcmp(f->name, "pow");
  double as[BLOCK], bs[BLOCK], ys[BLOCK];
  for (uint64_t i = j->begin; i < j->end;) {
    int m = 0;
    for (; m < BLOCK && i < j->end; m++, i += j->step) pair64(pow_, i, &as[m], &bs[m]);
    f->f(as, bs, ys, m);
    for (int k = 0; k < m; k++) {
      double u = ulps_f64(ys[k], f->ref((long double)as[k], (long double)bs[k]));
      if (u > j->worst) { j->worst = u; j->wx = as[k]; j->wy = bs[k]; }
    }
  }
  return 0;
}
static void *run32b(void *p) {
  job *j = p;
  const fn32b *f = j->fn;
  int pow_ = !strcmp(f->name, "pow");
  float as[BLOCK], bs[BLOCK], ys[BLOCK];
  for (uint64_t i = j->begin; i < j->end;) {
    int m = 0;
    for (; m < BLOCK && i < j->end; m++, i += j->step) pair32(pow_, i, &as[m], &bs[m]);
    f->f(as, bs, ys, m);
    for (int k = 0; k < m; k++) {
      double u = ulps_f32(ys[k], f->ref((double)as[k], (double)bs[k]));
      if (u > j->worst) { j->worst = u; j->wx = as[k]; j->wy = bs[k]; }
    }
  }
  return 0;
}
/* runs fn over [0, end) step `step` on the machine's cores; the worst error and its input */
static void sweep(void *(*run)(void *), const void *fn, uint64_t end, uint64_t step, double *worst, double *wx, double *wy) {
  long nt = sysconf(_SC_NPROCESSORS_ONLN);
  nt = nt < 1 ? 1 : nt > 64 ? 64 : nt;
  job jobs[64];
  pthread_t th[64];
  for (long t = 0; t < nt; t++) {
    jobs[t] = (job){fn, (uint64_t)t * step, end, step * (uint64_t)nt, 0.0, 0.0, 0.0};
    if (pthread_create(&th[t], 0, run, &jobs[t])) run(&jobs[t]), th[t] = 0;
  }
  *worst = 0.0;
  *wx = 0.0;
  *wy = 0.0;
  for (long t = 0; t < nt; t++) {
    if (th[t]) pthread_join(th[t], 0);
    if (jobs[t].worst > *worst || (t == 0)) { *worst = jobs[t].worst; *wx = jobs[t].wx; *wy = jobs[t].wy; }
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

/* e^x with its result rounded by one multiply, t * 2^(n - floor(n/2)) (what
   hloc_vm_exp_f32 computes, rounding a subnormal result through an fma with 2^-126
   instead): the truth that rounding must equal. */
static float exp_one_multiply(float x) {
  uint8_t zero = x < -104.0f;
  float c = hloc_vm_sel_f32(zero, 0.0f, x);
  c = hloc_vm_sel_f32(c > 89.0f, 89.0f, c);
  int32_t n;
  float r;
  hloc_vm_reduce_exp_f32(c, &n, &r);
  float p = hloc_vm_expm1_poly_f32(r);
  uint32_t h = (uint32_t)(n + 256) >> 1;
  float s1 = hloc_vm_f32((h - 1u) << 23);
  float s2 = hloc_vm_f32((uint32_t)(n - (int32_t)h + 255) << 23);
  return hloc_vm_sel_f32(zero, 0.0f, fmaf(p, s1, s1) * s2);
}
__attribute__((noinline)) static void exp_one_multiply_loop(const float *x, float *y, int n) {
  for (int i = 0; i < n; i++) y[i] = exp_one_multiply(x[i]);
}
/* `exp_subnormal FIRST LAST STEP`: hloc_vexp_f32 (vectorized) against exp_one_multiply on
   the bit patterns FIRST, FIRST + STEP, ... <= LAST; prints the count that differ. */
static int exp_subnormal(uint64_t first, uint64_t last, uint64_t step) {
  static float x[BLOCK], a[BLOCK], b[BLOCK];
  uint64_t bad = 0, subnormal = 0, total = 0;
  for (uint64_t u = first; u <= last;) {
    int n = 0;
    for (; n < BLOCK && u <= last; n++, u += step) {
      uint32_t v = (uint32_t)u;
      memcpy(&x[n], &v, 4);
    }
    w32_exp(x, a, n);
    exp_one_multiply_loop(x, b, n);
    for (int i = 0; i < n; i++) {
      uint32_t ua, ub;
      memcpy(&ua, &a[i], 4);
      memcpy(&ub, &b[i], 4);
      if (ua != ub) {
        if (bad < 5) printf("FAIL exp(%a): %08x, one multiply %08x\n", (double)x[i], ua, ub);
        bad++;
      }
      subnormal += ub != 0 && ub < 0x800000u;
    }
    total += (uint64_t)n;
  }
  printf("exp_subnormal %llu inputs %llu subnormal %llu differ\n", (unsigned long long)total,
         (unsigned long long)subnormal, (unsigned long long)bad);
  return bad != 0;
}

int main(int argc, char **argv) {
  const char *only = argc > 3 ? argv[3] : NULL;
  if (argc > 2 && !strcmp(argv[1], "f32")) {
    uint64_t step = strtoull(argv[2], 0, 10);
    for (size_t k = 0; k < N32; k++) {
      if (only && strcmp(only, F32[k].name)) continue;
      double worst, wx, wy;
      sweep(run32, &F32[k], 1ull << 32, step, &worst, &wx, &wy);
      printf("f32 %s %.3f %a %llu\n", F32[k].name, worst, wx, (unsigned long long)(((1ull << 32) + step - 1) / step));
    }
  } else if (argc > 2 && !strcmp(argv[1], "f64")) {
    uint64_t count = strtoull(argv[2], 0, 10);
    for (size_t k = 0; k < N64; k++) {
      if (only && strcmp(only, F64[k].name)) continue;
      double worst, wx, wy;
      sweep(run64, &F64[k], count, 1, &worst, &wx, &wy);
      printf("f64 %s %.3f %a %llu\n", F64[k].name, worst, wx, (unsigned long long)count);
    }
  } else if (argc > 2 && (!strcmp(argv[1], "f32_2") || !strcmp(argv[1], "f64_2"))) {
    uint64_t count = strtoull(argv[2], 0, 10);
    int f32 = !strcmp(argv[1], "f32_2");
    for (size_t k = 0; k < (f32 ? N32B : N64B); k++) {
      const char *name = f32 ? F32B[k].name : F64B[k].name;
      if (only && strcmp(only, name)) continue;
      double worst, wx, wy;
      sweep(f32 ? run32b : run64b, f32 ? (const void *)&F32B[k] : (const void *)&F64B[k], count, 1, &worst, &wx, &wy);
      printf("%s %s %.3f %a,%a %llu\n", f32 ? "f32" : "f64", name, worst, wx, wy, (unsigned long long)count);
    }
  } else if (argc > 4 && !strcmp(argv[1], "exp_subnormal")) {
    return exp_subnormal(strtoull(argv[2], 0, 0), strtoull(argv[3], 0, 0), strtoull(argv[4], 0, 0));
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
    /* pow and atan2 on a grid of special values: bit for bit as libm where libm's result is
       0, +-inf, +-1, NaN or exact (pow), or where an argument is 0 or inf (atan2: 0 and
       multiples of pi/4) */
    static const double G[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25, -0.25,
      INFINITY, -INFINITY, NAN, 1e-310, -1e-310, 1e308, -1e308, 2.5, -2.5, 0x1p53, -0x1p53,
      0x1p52 + 1, -(0x1p52 + 1), 0x1p24 + 1, -(0x1p24 + 1), 1e300, 1e-300, 1e30, -1e30, 7.0};
    for (size_t i = 0; i < sizeof G / sizeof *G; i++) {
      for (size_t j = 0; j < sizeof G / sizeof *G; j++) {
        double a = G[i], b = G[j], got, want;
        int edge = a == 0.0 || b == 0.0 || isinf(a) || isinf(b);
        for (size_t k = 0; k < N64B; k++) {
          F64B[k].f(&a, &b, &got, 1);
          long double wl = F64B[k].ref(a, b);
          want = (double)wl;
          int pow_ = !strcmp(F64B[k].name, "pow");
          if (!(pow_ ? (want != want || want == 0.0 || isinf(want) || want == 1.0 || want == -1.0 || (long double)want == wl) : edge)) continue;
          n++;
          if (!same64(got, pow_ ? want : atan2(a, b))) {
            bad++;
            printf("FAIL f64 %s(%a, %a) = %a, want %a\n", F64B[k].name, a, b, got, want);
          }
        }
        float af = (float)a, bf = (float)b, gf;
        int edgef = af == 0.0f || bf == 0.0f || isinf(af) || isinf(bf);
        for (size_t k = 0; k < N32B; k++) {
          F32B[k].f(&af, &bf, &gf, 1);
          double wd = F32B[k].ref((double)af, (double)bf);
          float wf = (float)wd;
          int pow_ = !strcmp(F32B[k].name, "pow");
          if (!(pow_ ? (wf != wf || wf == 0.0f || isinf(wf) || wf == 1.0f || wf == -1.0f || (double)wf == wd) : edgef)) continue;
          n++;
          if (!same32(gf, pow_ ? wf : atan2f(af, bf))) {
            bad++;
            printf("FAIL f32 %s(%a, %a) = %a, want %a\n", F32B[k].name, (double)af, (double)bf, (double)gf, (double)wf);
          }
        }
      }
    }
    printf("special %d checked %d failed\n", n, bad);
  } else {
    fprintf(stderr, "usage: %s f32 STRIDE [NAME] | f64 COUNT [NAME] | f32_2 COUNT [NAME] | f64_2 COUNT [NAME] | special | exp_subnormal FIRST LAST STEP\n", argv[0]);
    return 2;
  }
  return 0;
}
