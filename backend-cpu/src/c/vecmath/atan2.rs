//! `atan2`, f32 and f64 (methods in the module's header).

/// The C text, a string literal for the prelude's `concat!`.
macro_rules! atan2_c {
    () => {
        r#"/* ---- atan2 ---- */
/* atan2(y, x) in double: with b = max(|x|, |y|), s = min: t = s / b, or (s - b) / (s + b)
   (atan(s/b) - pi/4) above tan(pi/8), so |t| <= tan(pi/8); atan t = t + t^3 p(t^2),
   minimax p of degree 10 (f64) or 5 (f32: `small`); the result is n pi/4 +- atan t with n
   in 0..4 from the octant (pi/4 to 50 bits, so n pi/4 is exact, plus its low part), added
   with a two-sum, and y's sign. Both infinite: as |x| = |y| = 1; both zero: t = 0. */
HLOC_VM_INLINE double hloc_vm_atan2_f64(double y, double x, int small) {
  double ax = fabs(x), ay = fabs(y);
  int inf2 = (ax == INFINITY) & (ay == INFINITY);
  ax = hloc_vm_sel_f64(inf2, 1.0, ax);
  ay = hloc_vm_sel_f64(inf2, 1.0, ay);
  int swap = ay > ax;
  /* one infinite: the ratio is 0 */
  int inf1 = (ax == INFINITY) | (ay == INFINITY);
  ax = hloc_vm_sel_f64(inf1, hloc_vm_sel_f64(swap, 0.0, 1.0), ax);
  ay = hloc_vm_sel_f64(inf1, hloc_vm_sel_f64(swap, 1.0, 0.0), ay);
  double b = hloc_vm_sel_f64(swap, ay, ax), s = hloc_vm_sel_f64(swap, ax, ay);
  /* the octant's test and (s - b) / (s + b) on operands scaled away from subnormals and
     overflow (exact: both are within 2^2 of each other there) */
  double sc = hloc_vm_sel_f64(b < 0x1p-1000, 0x1p100, hloc_vm_sel_f64(b > 0x1p1000, 0x1p-100, 1.0));
  double bs = b * sc, ss = s * sc;
  int red = ss > bs * 0x1.a827999fcef32p-2;
  double en, ed;
  double num = hloc_vm_sel_f64(red, hloc_vm_two_sum_f64(ss, -bs, &en), s);
  double den = hloc_vm_sel_f64(red, hloc_vm_two_sum_f64(ss, bs, &ed), hloc_vm_sel_f64(b == 0.0, 1.0, b));
  double t = num / den;
  /* t's rounding error and that of s -+ b, to first order (f64 only: the octant's sum
     below would double it) */
  double tl = small ? 0.0 : (fma(-t, den, num) + hloc_vm_sel_f64(red, en - t * ed, 0.0)) / den;
  double z = t * t, p;
  if (small) {
    p = 0x1.8498dc3c4d50ap-5;
    p = fma(p, z, -0x1.5b2e060dc779cp-4);
    p = fma(p, z, 0x1.c463a020456fep-4);
    p = fma(p, z, -0x1.247ed6c6db241p-3);
    p = fma(p, z, 0x1.99991882852a5p-3);
    p = fma(p, z, -0x1.555554c5dbc6fp-2);
  } else {
    p = -0x1.254ea8455998fp-6;
    p = fma(p, z, 0x1.37c87c4bf32bep-5);
    p = fma(p, z, -0x1.9ccd52597dd54p-5);
    p = fma(p, z, 0x1.df0e076909b99p-5);
    p = fma(p, z, -0x1.10eba0b0cd610p-4);
    p = fma(p, z, 0x1.3b1116e3f7157p-4);
    p = fma(p, z, -0x1.745cf8b9ced01p-4);
    p = fma(p, z, 0x1.c71c70e4bb89bp-4);
    p = fma(p, z, -0x1.24924922a9837p-3);
    p = fma(p, z, 0x1.99999999957afp-3);
    p = fma(p, z, -0x1.555555555553dp-2);
  }
  double w = z * t * p;
  /* octant: n pi/4 + sg atan(t) with (swap, x < 0) = (0, 0): 0 + r pi/4, +; (1, 0):
     2 - r, -; (0, 1): 4 - r, -; (1, 1): 2 + r, + (r = red) */
  int xneg = (int)(hloc_vm_bits_f64(x) >> 63);
  double k = hloc_vm_sel_f64(swap | xneg, hloc_vm_sel_f64(swap, 2.0, 4.0), 0.0);
  double plus = hloc_vm_sel_f64(swap == xneg, 1.0, -1.0);
  double n = k + plus * hloc_vm_sel_f64(red, 1.0, 0.0);
  double e;
  double r = hloc_vm_two_sum_f64(n * 0x1.921fb54442d18p-1, plus * t, &e);
  r += fma(plus, w + tl, fma(n, 0x1.1a62633145c07p-55, e));
  r = hloc_vm_sign_f64(r, y);
  return hloc_vm_sel_f64((x != x) | (y != y), x + y, r);
}
HLOC_VM_SIMD double hloc_vatan2_f64(double y, double x) { return hloc_vm_atan2_f64(y, x, 0); }
HLOC_VM_SIMD float hloc_vatan2_f32(float y, float x) {
  return (float)hloc_vm_atan2_f64((double)y, (double)x, 1);
}
"#
    };
}
pub(crate) use atan2_c;
