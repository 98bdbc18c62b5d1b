//! `cbrt`, f32 and f64 (methods in the module's header).

/// The C text, a string literal for the prelude's `concat!`.
macro_rules! cbrt_c {
    () => {
        r#"/* ---- cbrt ---- */
/* |x| = 2^(3k + j) m with m in [1, 2), j in 0..2 (subnormals scaled by 2^54 first):
   cbrt(2^j m) from a minimax polynomial of degree 5 in m (relative error 2^-19.6) times
   2^(j/3), then Newton steps: one plain (2^-38), and for f64 a second on the residual
   y^3 - a computed with fma (y^2 as a double-double), whose final addition is the only
   rounding; then times 2^k (exact) with x's sign. */
HLOC_VM_INLINE double hloc_vm_cbrt_f64(double x, int small) {
  double a = fabs(x);
  int sub = a < 0x1p-1022;
  uint64_t ia = hloc_vm_bits_f64(hloc_vm_sel_f64(sub, a * 0x1p54, a));
  uint64_t eb = ia >> 52;
  double m = hloc_vm_f64((ia & 0xfffffffffffffull) | 0x3ff0000000000000ull);
  double ed = hloc_vm_f64(0x4330000000000000ull | eb) - (0x1p52 + 1023.0) - hloc_vm_sel_f64(sub, 54.0, 0.0);
  /* k = floor(ed / 3) = round((ed - 1) / 3) */
  double kb = fma(ed - 1.0, 0x1.5555555555555p-2, 0x1.8p52);
  uint64_t ki = hloc_vm_bits_f64(kb) - 0x4338000000000000ull; /* k, two's complement */
  double kd = kb - 0x1.8p52;
  double j = ed - 3.0 * kd;
  double am = m * hloc_vm_sel_f64(j == 1.0, 2.0, hloc_vm_sel_f64(j == 2.0, 4.0, 1.0));
  double y = 0x1.5e85c94fa393fp-8;
  y = fma(y, m, -0x1.9cc446be7c512p-5);
  y = fma(y, m, 0x1.9f49b3876df5ep-3);
  y = fma(y, m, -0x1.e07d847cc9d6dp-2);
  y = fma(y, m, 0x1.ad23520d840e8p-1);
  y = fma(y, m, 0x1.e4b0caec45324p-2);
  y *= hloc_vm_sel_f64(j == 1.0, 0x1.428a2f98d728bp+0, hloc_vm_sel_f64(j == 2.0, 0x1.965fea53d6e3dp+0, 1.0));
  double y2 = y * y;
  y = y - (y2 * y - am) / (3.0 * y2);
  if (!small) {
    y2 = y * y;
    double e2 = fma(y, y, -y2);
    double res = fma(y2, y, -am) + e2 * y;
    y = y - res / (3.0 * y2);
  }
  y *= hloc_vm_f64((ki + 1023u) << 52);
  y = hloc_vm_sign_f64(y, x);
  return hloc_vm_sel_f64((a > 0.0) & (a < INFINITY), y, x);
}
HLOC_VM_SIMD double hloc_vcbrt_f64(double x) { return hloc_vm_cbrt_f64(x, 0); }
HLOC_VM_SIMD float hloc_vcbrt_f32(float x) { return (float)hloc_vm_cbrt_f64((double)x, 1); }
"#
    };
}
pub(crate) use cbrt_c;
