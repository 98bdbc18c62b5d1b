//! `erf`, f32 and f64 (methods in the module's header).

/// The C text, a string literal for the prelude's `concat!`.
macro_rules! erf_c {
    () => {
        r#"/* ---- erf ---- */
static inline float hloc_verf_f32(float x) {
  float a = fabsf(x);
  /* |x| < 1: x p(x^2), minimax p of degree 6 */
  float t = x * x;
  float p = 0x1.496a3p-14f;
  p = fmaf(p, t, -0x1.a3f7p-11f);
  p = fmaf(p, t, 0x1.5405b2p-8f);
  p = fmaf(p, t, -0x1.b7f90cp-6f);
  p = fmaf(p, t, 0x1.ce2cf8p-4f);
  p = fmaf(p, t, -0x1.81273ep-2f);
  /* the constant term (2/sqrt(pi) to 1e-9) in two parts */
  float ys = fmaf(x, 0x1.20dd74p+0f, x * fmaf(p, t, 0x1.fc9168p-25f));
  /* 1 <= |x| <= 4: 1 - e^(-x^2) q(|x| - 5/2), q ~ erfc(x) e^(x^2) of degree 10; erf is 1
     in float from |x| = 3.92 */
  float c = hloc_vm_sel_f32(a > 4.0f, 4.0f, a);
  float u = c - 2.5f;
  float q = 0x1.3a814ap-19f;
  q = fmaf(q, u, -0x1.92485p-18f);
  q = fmaf(q, u, 0x1.6af7d4p-17f);
  q = fmaf(q, u, -0x1.d1094cp-15f);
  q = fmaf(q, u, 0x1.cc198cp-13f);
  q = fmaf(q, u, -0x1.81f2e2p-11f);
  q = fmaf(q, u, 0x1.429c14p-9f);
  q = fmaf(q, u, -0x1.062cb8p-7f);
  q = fmaf(q, u, 0x1.989b44p-6f);
  q = fmaf(q, u, -0x1.3086dep-4f);
  q = fmaf(q, u, 0x1.afbb38p-3f);
  float e = hloc_vm_exp_f32(-c * c);
  float yl = hloc_vm_sign_f32(fmaf(-e, q, 1.0f), x);
  return hloc_vm_sel_f32(a < 1.0f, ys, yl);
}

/* |x| < 1: x p(x^2), minimax p of degree 11 (relative error 2^-57), its constant term 2/sqrt(pi)
   in two parts; 1 <= |x| < 6: 1 - e^(-x^2) q(|x| - 7/2), q ~ erfc(x) e^(x^2) of degree 21
   weighted by erf's relative error (2^-58.7), e^(-x^2) corrected for the rounding of x^2;
   erf is 1 in double from |x| = 5.92. */
HLOC_VM_SIMD double hloc_verf_f64(double x) {
  double a = fabs(x);
  double t = x * x;
  double p = -0x1.abae43c781af9p-31;
  p = fma(p, t, 0x1.d71b0d5ad1a9ep-27);
  p = fma(p, t, -0x1.5c0726b124af7p-23);
  p = fma(p, t, 0x1.b97fd3cf9882bp-20);
  p = fma(p, t, -0x1.f4ca4d6e465acp-17);
  p = fma(p, t, 0x1.f9a2baa8efa67p-14);
  p = fma(p, t, -0x1.c02db03dd6879p-11);
  p = fma(p, t, 0x1.565bccf92b2c2p-8);
  p = fma(p, t, -0x1.b82ce311fa93cp-6);
  p = fma(p, t, 0x1.ce2f21a040d16p-4);
  p = fma(p, t, -0x1.812746b0379bdp-2);
  double ys = fma(x, 0x1.20dd750429b6dp+0, x * fma(p, t, 0x1.1ae3a914fed80p-56));
  double c = hloc_vm_sel_f64(a > 6.0, 6.0, a);
  double u = c - 3.5;
  double q = -0x1.e80cf11e13b69p-43;
  q = fma(q, u, -0x1.fc27ee759dbecp-39);
  q = fma(q, u, -0x1.e0d2682e502a6p-36);
  q = fma(q, u, -0x1.fa3bf58d85e15p-34);
  q = fma(q, u, -0x1.2b306d8b889ccp-32);
  q = fma(q, u, -0x1.c331fb9a082c6p-33);
  q = fma(q, u, 0x1.712913dd18a17p-31);
  q = fma(q, u, 0x1.689c1762f79e6p-29);
  q = fma(q, u, 0x1.35a3d377b3353p-29);
  q = fma(q, u, 0x1.e3a98e15edbcfp-29);
  q = fma(q, u, -0x1.98cb7d03cd218p-26);
  q = fma(q, u, 0x1.54b8a68b05237p-24);
  q = fma(q, u, -0x1.b14388f3feb38p-22);
  q = fma(q, u, 0x1.ee2e9f9aea610p-20);
  q = fma(q, u, -0x1.1448aefb60263p-17);
  q = fma(q, u, 0x1.2f85fee4c2db0p-15);
  q = fma(q, u, -0x1.460b159b22ab5p-13);
  q = fma(q, u, 0x1.563201a326e91p-11);
  q = fma(q, u, -0x1.5e5d7f6873c1fp-9);
  q = fma(q, u, 0x1.5d58113baeccbp-7);
  q = fma(q, u, -0x1.5285d2ea4d8dbp-5);
  q = fma(q, u, 0x1.3e0a99a0f12c7p-3);
  double c2 = c * c;
  double e = hloc_vm_exp_f64(-c2);
  e = fma(-e, fma(c, c, -c2), e); /* e^-(c2 + err) */
  double yl = hloc_vm_sign_f64(fma(-e, q, 1.0), x);
  return hloc_vm_sel_f64(a < 1.0, ys, yl);
}
"#
    };
}
pub(crate) use erf_c;
