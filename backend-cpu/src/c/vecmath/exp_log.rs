//! `exp`, `expm1`, `log`, `log1p`, `tanh` and `logistic`, f32 and f64 (methods in the
//! module's header). Every function is `HLOC_VM_INLINE`: as plain `static inline`, gcc's
//! `-O2` inlined one only into a unit's single caller, so a module with two kernels using
//! `tanh` (a bf16 MLP-Mixer's two GELU shapes) called it per element and left both loops
//! scalar (~80 ns per element against ~11 vectorized).

/// The C text, a string literal for the prelude's `concat!`.
macro_rules! exp_log_c {
    () => {
        r#"/* ---- f32 ---- */
/* e^r - 1 = r + r^2 q(r) for |r| <= ln2/2: minimax q of degree 5. */
HLOC_VM_INLINE float hloc_vm_expm1_poly_f32(float r) {
  float q = 0x1.a072dap-13f;
  q = fmaf(q, r, 0x1.6d4324p-10f);
  q = fmaf(q, r, 0x1.11114cp-7f);
  q = fmaf(q, r, 0x1.5554eap-5f);
  q = fmaf(q, r, 0x1.555556p-3f);
  q = fmaf(q, r, 0x1p-1f);
  return fmaf(r * r, q, r);
}
/* x = k ln2 + r with k integral (returned as float, its integer in *n) and |r| <= ln2/2,
   for |x| < 2^22 (Cody-Waite: fma makes x - k ln2_hi exact). */
HLOC_VM_INLINE float hloc_vm_reduce_exp_f32(float x, int32_t *n, float *r) {
  float k = fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
  *n = (int32_t)(hloc_vm_bits_f32(k) - 0x4b400000u);
  k -= 0x1.8p23f;
  float t = fmaf(k, -0x1.62e43p-1f, x);
  *r = fmaf(k, 0x1.05c610p-29f, t);
  return k;
}
/* e^x for -104 <= x <= 89 (callers clamp): t = 2^floor(n/2) (1 + p(r)), then t times
   s2 = 2^(n - floor(n/2)), so that large results overflow to inf and a subnormal one
   rounds once. Any float op with a subnormal result (multiply, add or subtract) takes a
   microcode assist on this machine class (5 against 0.3 ns an element vectorized; a
   log-space Sinkhorn ran 2.5x XLA's), so where t s2 < 2^-126 (t < 2^-126 / s2, a power of
   two built from s2's bits) one fma adds the product to c = 2^-126: the sum is normal and
   its ulp 2^-149 is the subnormal spacing, so it rounds the exact product as the multiply
   would (ties to even: c is an even multiple of 2^-149), and taking c's bits off the
   sum's bits leaves the subnormal's bits. Elsewhere c = 0 and the fma is the multiply.
   The vecmath tests' `exp_subnormal` checks it against the one multiply bit for bit. */
HLOC_VM_INLINE float hloc_vm_exp_f32(float x) {
  int32_t n;
  float r;
  hloc_vm_reduce_exp_f32(x, &n, &r);
  float p = hloc_vm_expm1_poly_f32(r);
  uint32_t h = (uint32_t)(n + 256) >> 1; /* floor(n / 2) + 128 */
  float s1 = hloc_vm_f32((h - 1u) << 23);
  uint32_t s2b = (uint32_t)(n - (int32_t)h + 255) << 23;
  float t = fmaf(p, s1, s1);
  uint8_t sub = t < hloc_vm_f32(0x40000000u - s2b); /* 2^-126 / s2 */
  float c = hloc_vm_sel_f32(sub, 0x1p-126f, 0.0f);
  uint32_t cb = sub ? 0x00800000u : 0u;
  return hloc_vm_f32(hloc_vm_bits_f32(fmaf(t, hloc_vm_f32(s2b), c)) - cb);
}
/* Below -104 e^x rounds to +0: those lanes compute e^0 and are blended to 0, since
   arithmetic with a subnormal result takes a microcode assist of ~100 cycles per element
   on x86 (a masked softmax's -3.4e38 entries ran 4x slower than the rest of the row). */
HLOC_VM_INLINE float hloc_vexp_f32(float x) {
  uint8_t zero = x < -104.0f;
  float c = hloc_vm_sel_f32(zero, 0.0f, x); /* NaN stays NaN */
  c = hloc_vm_sel_f32(c > 89.0f, 89.0f, c);
  return hloc_vm_sel_f32(zero, 0.0f, hloc_vm_exp_f32(c));
}
HLOC_VM_INLINE float hloc_vexpm1_f32(float x) {
  float c = hloc_vm_sel_f32(x < -25.0f, -25.0f, x);
  c = hloc_vm_sel_f32(c > 89.0f, 89.0f, c);
  int32_t n;
  float r;
  hloc_vm_reduce_exp_f32(c, &n, &r);
  float p = hloc_vm_expm1_poly_f32(r);
  /* 2^n (1 + p) - 1 = 2 (h p + (h - 1/2)) with h = 2^(n-1), n in [-37, 128]. */
  float h = hloc_vm_f32((uint32_t)(n + 126) << 23);
  float y = 2.0f * fmaf(h, p, h - 0.5f);
  return hloc_vm_sel_f32(fabsf(x) < 0x1p-25f, x, y);
}
/* log(1 + f) + corr for sqrt(2)/2 - 1 <= f <= sqrt(2) - 1 and tiny corr: f + f^2 q(f),
   minimax q of degree 8. */
HLOC_VM_INLINE float hloc_vm_log1p_poly_f32(float f, float corr) {
  float q = -0x1.3e96aep-4f;
  q = fmaf(q, f, 0x1.05ae0cp-3f);
  q = fmaf(q, f, -0x1.0c9354p-3f);
  q = fmaf(q, f, 0x1.22bcbp-3f);
  q = fmaf(q, f, -0x1.5485dap-3f);
  q = fmaf(q, f, 0x1.99a22ep-3f);
  q = fmaf(q, f, -0x1.00020ap-2f);
  q = fmaf(q, f, 0x1.55555p-2f);
  q = fmaf(q, f, -0x1.fffffep-2f);
  return fmaf(f * f, q, corr) + f;
}
/* e ln2 + lp with e integral (|e| <= 152). */
HLOC_VM_INLINE float hloc_vm_add_ln2_f32(float e, float lp) {
  return fmaf(e, 0x1.62e43p-1f, fmaf(e, -0x1.05c610p-29f, lp));
}
HLOC_VM_INLINE float hloc_vlog_f32(float x) {
  int sub = x < 0x1p-126f;
  float xs = hloc_vm_sel_f32(sub, x * 0x1p23f, x);
  uint32_t ix = hloc_vm_bits_f32(xs);
  /* x = 2^e m with sqrt(2)/2 <= m < sqrt(2) */
  uint32_t eb = (ix - 0x3f3504f3u + 0x40000000u) >> 23; /* e + 128 */
  float m = hloc_vm_f32(ix - ((eb - 128u) << 23));
  float e = (float)((int32_t)eb - 128 - 23 * sub);
  float y = hloc_vm_add_ln2_f32(e, hloc_vm_log1p_poly_f32(m - 1.0f, 0.0f));
  y = hloc_vm_sel_f32(x < 0.0f, NAN, y);
  y = hloc_vm_sel_f32(x == 0.0f, -INFINITY, y);
  return hloc_vm_sel_f32(x < INFINITY, y, x); /* +inf and NaN */
}
HLOC_VM_INLINE float hloc_vlog1p_f32(float x) {
  float u = 1.0f + x;
  float c = x - (u - 1.0f); /* 1 + x = u + c exactly (to 2^-24 relative for huge x) */
  uint32_t iu = hloc_vm_bits_f32(u);
  uint32_t eb = (iu - 0x3f3504f3u + 0x40000000u) >> 23; /* u = 2^e m, eb = e + 128 */
  float m = hloc_vm_f32(iu - ((eb - 128u) << 23));
  uint32_t ec = eb < 192u ? eb : 192u; /* c is 0 once u >= 2^25 */
  float sc = hloc_vm_f32((255u - ec) << 23); /* 2^-e */
  float f = m - 1.0f;
  /* log(1 + x) = e ln2 + log(m) + c 2^-e / m, 1 / m ~ 1 - f + f^2 */
  float corr = c * sc * fmaf(f, f, 1.0f - f);
  float e = (float)((int32_t)eb - 128);
  float y = hloc_vm_add_ln2_f32(e, hloc_vm_log1p_poly_f32(f, corr));
  y = hloc_vm_sel_f32(x < -1.0f, NAN, y);
  y = hloc_vm_sel_f32(x == -1.0f, -INFINITY, y);
  y = hloc_vm_sel_f32(x < INFINITY, y, x);
  return hloc_vm_sel_f32(fabsf(x) < 0x1p-24f, x, y);
}
HLOC_VM_INLINE float hloc_vtanh_f32(float x) {
  float a = fabsf(x);
  /* |x| < 0.75: x + x^3 p(x^2), minimax p of degree 5 */
  float t = x * x;
  float p = 0x1.f49a16p-10f;
  p = fmaf(p, t, -0x1.03fb4ap-7f);
  p = fmaf(p, t, 0x1.6225a4p-6f);
  p = fmaf(p, t, -0x1.b9d7bap-5f);
  p = fmaf(p, t, 0x1.111042p-3f);
  p = fmaf(p, t, -0x1.555554p-2f);
  float ys = hloc_vm_sign_f32(fmaf(x * t, p, x), x); /* tanh(-0) = -0 */
  /* else 1 - 2 / (e^(2|x|) + 1) with e^(2|x|) + 1 = 2^n (1 + q) + 1 rounded once; tanh is
     1 in float from |x| = 9.01 */
  float c = hloc_vm_sel_f32(a > 10.0f, 10.0f, a); /* NaN stays NaN */
  int32_t n;
  float r;
  hloc_vm_reduce_exp_f32(2.0f * c, &n, &r);
  float q = hloc_vm_expm1_poly_f32(r);
  float s = hloc_vm_f32((uint32_t)(n + 127) << 23);
  float yl = hloc_vm_sign_f32(1.0f - 2.0f / fmaf(s, q, s + 1.0f), x);
  return hloc_vm_sel_f32(a < 0.75f, ys, yl);
}
HLOC_VM_INLINE float hloc_vlogistic_f32(float x) {
  /* e = e^-|x| = 2^n (1 + q); 1 / (1 + e) for x >= 0 and e / (1 + e) below: no
     cancellation, no overflow, subnormal results for x < -87.3; beyond |x| = 104 the
     result is 1 or +0, computed from e^0 to keep subnormal arithmetic (a microcode assist
     per element, see hloc_vexp_f32) off the path */
  float c = fabsf(x);
  uint8_t far = c > 104.0f;
  c = hloc_vm_sel_f32(far, 0.0f, c);
  int32_t n;
  float r;
  hloc_vm_reduce_exp_f32(-c, &n, &r);
  float q = hloc_vm_expm1_poly_f32(r);
  uint32_t h = (uint32_t)(n + 256) >> 1;
  float s1 = hloc_vm_f32((h - 1u) << 23);
  float s2 = hloc_vm_f32((uint32_t)(n - (int32_t)h + 255) << 23);
  float e = fmaf(q, s1, s1) * s2;
  float s = s1 * s2;
  float y = hloc_vm_sel_f32(x >= 0.0f, 1.0f, e) / fmaf(s, q, s + 1.0f);
  return hloc_vm_sel_f32(far, hloc_vm_sel_f32(x >= 0.0f, 1.0f, 0.0f), y);
}
/* ---- f64 ---- */
/* e^r - 1 = r + r^2 q(r) for |r| <= ln2/2: minimax q of degree 10. */
HLOC_VM_INLINE double hloc_vm_expm1_poly_f64(double r) {
  double q = 0x1.1f1a01c28e702p-29;
  q = fma(q, r, 0x1.af4dfda9da241p-26);
  q = fma(q, r, 0x1.27e510e6f7b34p-22);
  q = fma(q, r, 0x1.71de022a1c64dp-19);
  q = fma(q, r, 0x1.a01a01905454cp-16);
  q = fma(q, r, 0x1.a01a01abe972ep-13);
  q = fma(q, r, 0x1.6c16c16c1a0b2p-10);
  q = fma(q, r, 0x1.11111111100dbp-7);
  q = fma(q, r, 0x1.555555555554ep-5);
  q = fma(q, r, 0x1.5555555555557p-3);
  q = fma(q, r, 0x1p-1);
  return fma(r * r, q, r);
}
HLOC_VM_INLINE double hloc_vm_reduce_exp_f64(double x, int64_t *n, double *r) {
  double k = fma(x, 0x1.71547652b82fep+0, 0x1.8p52);
  *n = (int64_t)(hloc_vm_bits_f64(k) - 0x4338000000000000ull);
  k -= 0x1.8p52;
  double t = fma(k, -0x1.62e42fefa39efp-1, x);
  *r = fma(k, -0x1.abc9e3b39803fp-56, t);
  return k;
}
/* e^x for -746 <= x <= 710 (callers clamp). */
HLOC_VM_INLINE double hloc_vm_exp_f64(double x) {
  int64_t n;
  double r;
  hloc_vm_reduce_exp_f64(x, &n, &r);
  double p = hloc_vm_expm1_poly_f64(r);
  uint64_t h = (uint64_t)(n + 2048) >> 1; /* floor(n / 2) + 1024 */
  double s1 = hloc_vm_f64((h - 1u) << 52);
  double s2 = hloc_vm_f64((uint64_t)(n - (int64_t)h + 2047) << 52);
  return fma(p, s1, s1) * s2;
}
/* Below -746 e^x rounds to +0, computed from e^0 (see hloc_vexp_f32: no subnormal
   arithmetic for a masked entry). */
HLOC_VM_INLINE double hloc_vexp_f64(double x) {
  uint8_t zero = x < -746.0;
  double c = hloc_vm_sel_f64(zero, 0.0, x);
  c = hloc_vm_sel_f64(c > 710.0, 710.0, c);
  return hloc_vm_sel_f64(zero, 0.0, hloc_vm_exp_f64(c));
}
HLOC_VM_INLINE double hloc_vexpm1_f64(double x) {
  double c = hloc_vm_sel_f64(x < -40.0, -40.0, x);
  c = hloc_vm_sel_f64(c > 710.0, 710.0, c);
  int64_t n;
  double r;
  hloc_vm_reduce_exp_f64(c, &n, &r);
  double p = hloc_vm_expm1_poly_f64(r);
  double h = hloc_vm_f64((uint64_t)(n + 1022) << 52);
  double y = 2.0 * fma(h, p, h - 0.5);
  return hloc_vm_sel_f64(fabs(x) < 0x1p-54, x, y);
}
/* e ln2 + log(1 + f) for sqrt(2)/2 - 1 <= f <= sqrt(2) - 1, with s = f / (2 + f):
   log(1 + f) = f - (f^2/2 - s (f^2/2 + s^2 q(s^2))), minimax q of degree 6. */
HLOC_VM_INLINE double hloc_vm_log_f64(double e, double f) {
  double s = f / (2.0 + f);
  double z = s * s;
  double q = 0x1.2b5ab560a3c08p-3;
  q = fma(q, z, 0x1.39fe2a23dfe26p-3);
  q = fma(q, z, 0x1.7462b673d7bep-3);
  q = fma(q, z, 0x1.c71c62de94f6dp-3);
  q = fma(q, z, 0x1.2492492df7589p-2);
  q = fma(q, z, 0x1.99999999952a4p-2);
  q = fma(q, z, 0x1.5555555555558p-1);
  double hfsq = 0.5 * f * f;
  double lo = fma(s, fma(z, q, hfsq), e * 0x1.473de6af278edp-34);
  return e * 0x1.62e42fefp-1 - ((hfsq - lo) - f);
}
HLOC_VM_INLINE double hloc_vlog_f64(double x) {
  int sub = x < 0x1p-1022;
  double xs = hloc_vm_sel_f64(sub, x * 0x1p52, x);
  uint64_t ix = hloc_vm_bits_f64(xs);
  uint64_t eb = (ix - 0x3fe6a09e667f3bcdull + 0x4000000000000000ull) >> 52; /* e + 1024 */
  double m = hloc_vm_f64(ix - ((eb - 1024u) << 52));
  /* e as a double without a 64-bit integer conversion */
  double e = hloc_vm_f64(0x4330000000000000ull | eb) - (0x1p52 + 1024.0) - hloc_vm_sel_f64(sub, 52.0, 0.0);
  double y = hloc_vm_log_f64(e, m - 1.0);
  y = hloc_vm_sel_f64(x < 0.0, NAN, y);
  y = hloc_vm_sel_f64(x == 0.0, -INFINITY, y);
  return hloc_vm_sel_f64(x < INFINITY, y, x);
}
HLOC_VM_INLINE double hloc_vlog1p_f64(double x) {
  double u = 1.0 + x;
  double c = x - (u - 1.0);
  uint64_t iu = hloc_vm_bits_f64(u);
  uint64_t eb = (iu - 0x3fe6a09e667f3bcdull + 0x4000000000000000ull) >> 52;
  double m = hloc_vm_f64(iu - ((eb - 1024u) << 52));
  uint64_t ec = eb < 1536u ? eb : 1536u;
  double sc = hloc_vm_f64((2047u - ec) << 52);
  double f = fma(c, sc, m - 1.0);
  double e = hloc_vm_f64(0x4330000000000000ull | eb) - (0x1p52 + 1024.0);
  double y = hloc_vm_log_f64(e, f);
  y = hloc_vm_sel_f64(x < -1.0, NAN, y);
  y = hloc_vm_sel_f64(x == -1.0, -INFINITY, y);
  y = hloc_vm_sel_f64(x < INFINITY, y, x);
  return hloc_vm_sel_f64(fabs(x) < 0x1p-54, x, y);
}
HLOC_VM_INLINE double hloc_vtanh_f64(double x) {
  double a = fabs(x);
  /* |x| < 0.75: x + x^3 p(x^2), minimax p of degree 12 */
  double t = x * x;
  double p = -0x1.b87f7059f9675p-20;
  p = fma(p, t, 0x1.512badaef824dp-17);
  p = fma(p, t, -0x1.215e2c0761635p-15);
  p = fma(p, t, 0x1.8b4e2e5b82ceap-14);
  p = fma(p, t, -0x1.f351ee583a719p-13);
  p = fma(p, t, 0x1.353284055a652p-11);
  p = fma(p, t, -0x1.7d9fddbaa90d8p-10);
  p = fma(p, t, 0x1.d6d397ce4db7ep-9);
  p = fma(p, t, -0x1.226e3434677c1p-7);
  p = fma(p, t, 0x1.664f487b7dc04p-6);
  p = fma(p, t, -0x1.ba1ba1ba0403dp-5);
  p = fma(p, t, 0x1.111111111101fp-3);
  p = fma(p, t, -0x1.5555555555555p-2);
  double ys = hloc_vm_sign_f64(fma(x * t, p, x), x);
  /* else 1 - 2 / (e^(2|x|) + 1); tanh is 1 in double from |x| = 19.06 */
  double c = hloc_vm_sel_f64(a > 20.0, 20.0, a);
  int64_t n;
  double r;
  hloc_vm_reduce_exp_f64(2.0 * c, &n, &r);
  double q = hloc_vm_expm1_poly_f64(r);
  double s = hloc_vm_f64((uint64_t)(n + 1023) << 52);
  double yl = hloc_vm_sign_f64(1.0 - 2.0 / fma(s, q, s + 1.0), x);
  return hloc_vm_sel_f64(a < 0.75, ys, yl);
}
HLOC_VM_INLINE double hloc_vlogistic_f64(double x) {
  double c = fabs(x);
  c = hloc_vm_sel_f64(c > 746.0, 746.0, c);
  int64_t n;
  double r;
  hloc_vm_reduce_exp_f64(-c, &n, &r);
  double q = hloc_vm_expm1_poly_f64(r);
  uint64_t h = (uint64_t)(n + 2048) >> 1;
  double s1 = hloc_vm_f64((h - 1u) << 52);
  double s2 = hloc_vm_f64((uint64_t)(n - (int64_t)h + 2047) << 52);
  double e = fma(q, s1, s1) * s2;
  double s = s1 * s2;
  return hloc_vm_sel_f64(x >= 0.0, 1.0, e) / fma(s, q, s + 1.0);
}
"#
    };
}
pub(crate) use exp_log_c;
