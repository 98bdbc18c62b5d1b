//! `sin`, `cos` and `tan`: Cody-Waite reduction on every vector, Payne-Hanek (with the
//! per-lane select) only for a vector holding an argument of 2^30 or more, and the table
//! of 2/pi's bits (methods in the module's header); the entry points by the vector
//! function ABI, one `HLOC_VM_ENTRIES` line per function ([`entries`]).

/// The C text, a string literal for the prelude's `concat!`: the element functions and
/// the entry-point macros, without their uses.
macro_rules! trig_c {
    () => {
        r#"/* ---- sin, cos, tan ---- */
/* Bits of 2/pi after 64 zero bits, 64 of them from every 32nd on: bit i of 2/pi (weight
   2^-i, i >= 1) is bit p = i + 63 of the string, and entry w holds bits 32 w .. 32 w + 63,
   the first in its most significant bit. */
static const uint64_t hloc_vm_2opi[39] = {
  0x0000000000000000ull, 0x00000000a2f9836eull, 0xa2f9836e4e441529ull, 0x4e441529fc2757d1ull,
  0xfc2757d1f534ddc0ull, 0xf534ddc0db629599ull, 0xdb6295993c439041ull, 0x3c439041fe5163abull,
  0xfe5163abdebbc561ull, 0xdebbc561b7246e3aull, 0xb7246e3a424dd2e0ull, 0x424dd2e006492eeaull,
  0x06492eea09d1921cull, 0x09d1921cfe1deb1cull, 0xfe1deb1cb129a73eull, 0xb129a73ee88235f5ull,
  0xe88235f52ebb4484ull, 0x2ebb4484e99c7026ull, 0xe99c7026b45f7e41ull, 0xb45f7e413991d639ull,
  0x3991d639835339f4ull, 0x835339f49c845f8bull, 0x9c845f8bbdf9283bull, 0xbdf9283b1ff897ffull,
  0x1ff897ffde05980full, 0xde05980fef2f118bull, 0xef2f118b5a0a6d1full, 0x5a0a6d1f6d367ecfull,
  0x6d367ecf27cb09b7ull, 0x27cb09b74f463f66ull, 0x4f463f669e5fea2dull, 0x9e5fea2d7527bac7ull,
  0x7527bac7ebe5f17bull, 0xebe5f17b3d0739f7ull, 0x3d0739f78a5292eaull, 0x8a5292ea6bfb5fb1ull,
  0x6bfb5fb11f8d5d08ull, 0x1f8d5d0856033046ull, 0x56033046fc7b6babull,
};
/* a = q pi/2 + r_hi + r_lo, |r| <= pi/4 (plus rounding), q mod 4 returned, for
   0 <= a < 2^30 (Cody-Waite): k = round(a 2/pi), a - k P1 exact (fma; P1 = pi/2 to 53
   bits, |k| < 2^30), minus k P2 and k P3 in double-double. */
HLOC_VM_INLINE uint64_t hloc_vm_cw_pio2_f64(double a, double *r_hi, double *r_lo) {
  double kd = fma(a, 0x1.45f306dc9c883p-1, 0x1.8p52);
  uint64_t q = hloc_vm_bits_f64(kd);
  kd -= 0x1.8p52;
  double t1 = fma(-kd, 0x1.921fb54442d18p+0, a);
  double p = kd * 0x1.1a62633145c07p-54;
  double pe = fma(kd, 0x1.1a62633145c07p-54, -p);
  double e2;
  double t2 = hloc_vm_two_sum_f64(t1, -p, &e2);
  double lo = (e2 - pe) - kd * -0x1.f1976b7ed8fbcp-110;
  double h = t2 + lo;
  *r_hi = h;
  *r_lo = lo - (h - t2);
  return q;
}
/* The same for any a >= 0 (Payne-Hanek), on the integers: a = m 2^E (m < 2^53),
   a 2/pi mod 4 = m W 2^-190 mod 4 with W the 192 bits of 2/pi from bit E - 1 on (the
   earlier ones give multiples of 4); the top 2 bits of the low 192 bits of the product
   are the quadrant, the rest the fraction, rounded to the nearest quadrant and converted
   to double-double in three 52-bit pieces. The exponent is clamped into the table, so
   that every lane may run it. */
HLOC_VM_INLINE uint64_t hloc_vm_ph_pio2_f64(double a, double *r_hi, double *r_lo) {
  uint64_t ia = hloc_vm_bits_f64(a);
  uint64_t eb = ia >> 52;
  eb = eb < 1043u ? 1043u : eb > 2046u ? 2046u : eb;
  uint64_t m = (ia & 0xfffffffffffffull) | 0x10000000000000ull;
  uint64_t pos = eb - 1013u; /* bit position of 2/pi's bit E - 1 in the table */
  uint64_t w = pos >> 5, sh = pos & 31u;
  uint32_t v[6]; /* the window in 32-bit limbs, v[0] least significant */
  /* (unrolled by hand: -O2 does not unroll loops that grow the code, and the vectorizer
     takes only innermost loops) */
  v[5] = (uint32_t)(hloc_vm_2opi[w] >> (32u - sh));
  v[4] = (uint32_t)(hloc_vm_2opi[w + 1] >> (32u - sh));
  v[3] = (uint32_t)(hloc_vm_2opi[w + 2] >> (32u - sh));
  v[2] = (uint32_t)(hloc_vm_2opi[w + 3] >> (32u - sh));
  v[1] = (uint32_t)(hloc_vm_2opi[w + 4] >> (32u - sh));
  v[0] = (uint32_t)(hloc_vm_2opi[w + 5] >> (32u - sh));
  uint32_t m0 = (uint32_t)m, m1 = (uint32_t)(m >> 32);
  /* 32 x 32 -> 64-bit products (the widening multiply of both AVX2 and AVX-512) */
  uint64_t a0[6], a1[5];
  a0[0] = (uint64_t)m0 * v[0], a0[1] = (uint64_t)m0 * v[1], a0[2] = (uint64_t)m0 * v[2];
  a0[3] = (uint64_t)m0 * v[3], a0[4] = (uint64_t)m0 * v[4], a0[5] = (uint64_t)m0 * v[5];
  a1[0] = (uint64_t)m1 * v[0], a1[1] = (uint64_t)m1 * v[1], a1[2] = (uint64_t)m1 * v[2];
  a1[3] = (uint64_t)m1 * v[3], a1[4] = (uint64_t)m1 * v[4];
  uint64_t acc = (a0[0] >> 32) + (a0[1] & 0xffffffffu) + (a1[0] & 0xffffffffu);
  uint64_t r1 = acc & 0xffffffffu;
  acc = (acc >> 32) + (a0[1] >> 32) + (a1[0] >> 32) + (a0[2] & 0xffffffffu) + (a1[1] & 0xffffffffu);
  uint64_t r2 = acc & 0xffffffffu;
  acc = (acc >> 32) + (a0[2] >> 32) + (a1[1] >> 32) + (a0[3] & 0xffffffffu) + (a1[2] & 0xffffffffu);
  uint64_t r3 = acc & 0xffffffffu;
  acc = (acc >> 32) + (a0[3] >> 32) + (a1[2] >> 32) + (a0[4] & 0xffffffffu) + (a1[3] & 0xffffffffu);
  uint64_t r4 = acc & 0xffffffffu;
  acc = (acc >> 32) + (a0[4] >> 32) + (a1[3] >> 32) + (a0[5] & 0xffffffffu) + (a1[4] & 0xffffffffu);
  uint64_t hi = acc << 32 | r4; /* product bits 128..191 */
  uint64_t mid = r3 << 32 | r2;  /* bits 64..127 */
  uint64_t qp = (hi + 0x2000000000000000ull) >> 62;
  uint64_t fh = hi - (qp << 62); /* signed, in [-2^61, 2^61) */
  /* fraction = (A 2^-52 + B 2^-104 + C 2^-156) quadrants, A signed */
  double da = hloc_vm_f64(((fh + 0x6000000000000000ull) >> 10) + 0x4320000000000000ull) - 0x1.8p52;
  double db = hloc_vm_f64(((fh & 0x3ffu) << 42 | mid >> 22) | 0x4330000000000000ull) - 0x1p52;
  double dc = hloc_vm_f64(((mid & 0x3fffffu) << 30 | r1 >> 2) | 0x4330000000000000ull) - 0x1p52;
  double fa = da * 0x1p-52, fb = db * 0x1p-104;
  double f1 = fa + fb;
  double f2 = (fa - f1) + fb + dc * 0x1p-156;
  double fh1 = f1 + f2;
  double fl1 = f2 - (fh1 - f1);
  /* times pi/2 */
  double ph = fh1 * 0x1.921fb54442d18p+0;
  double pl = fma(fh1, 0x1.921fb54442d18p+0, -ph) + (fh1 * 0x1.1a62633145c07p-54 + fl1 * 0x1.921fb54442d18p+0);
  double phh = ph + pl;
  *r_hi = phh;
  *r_lo = pl - (phh - ph);
  return qp;
}
/* The reduction of a >= 0: with full = 0 (a constant after inlining) Cody-Waite alone,
   exact below 2^30; with full = 1 both, selected per lane by mask (no branch on data). */
HLOC_VM_INLINE uint64_t hloc_vm_reduce_pio2_f64(double a, int full, double *r_hi, double *r_lo) {
  double ch, cl, ph, pl;
  uint64_t qc = hloc_vm_cw_pio2_f64(a, &ch, &cl);
  if (!full) {
    *r_hi = ch;
    *r_lo = cl;
    return qc;
  }
  uint64_t qp = hloc_vm_ph_pio2_f64(a, &ph, &pl);
  int big = a >= 0x1p30;
  *r_hi = hloc_vm_sel_f64(big, ph, ch);
  *r_lo = hloc_vm_sel_f64(big, pl, cl);
  return big ? qp : qc;
}
/* sin(r_hi + r_lo) and cos(r_hi + r_lo) for |r| <= pi/4 + 2^-30: sin r = r + r^3 p(r^2)
   (minimax p of degree 5), cos r = 1 - r^2/2 + r^4 q(r^2) (degree 5), with the rounding
   errors of r^2 and of 1 - r^2/2 and the first-order terms of r_lo added to the small
   part. Each returns its result as s + *tail, unrounded (tan divides them). */
HLOC_VM_INLINE double hloc_vm_sin_kernel_f64(double r, double rl, double *tail) {
  double z = r * r;
  double p = 0x1.5d8fba74719ccp-33;
  p = fma(p, z, -0x1.ae5e5a43bcbe9p-26);
  p = fma(p, z, 0x1.71de356773091p-19);
  p = fma(p, z, -0x1.a01a019bfd83bp-13);
  p = fma(p, z, 0x1.111111110f7cdp-7);
  p = fma(p, z, -0x1.5555555555548p-3);
  *tail = fma(z * r, p, fma(-0.5 * z, rl, rl));
  return r;
}
HLOC_VM_INLINE double hloc_vm_cos_kernel_f64(double r, double rl, double *tail) {
  double z = r * r;
  double ez = fma(r, r, -z);
  double q = -0x1.8fa48016b4c82p-37;
  q = fma(q, z, 0x1.1ee9d783f1637p-29);
  q = fma(q, z, -0x1.27e4f7ea7e7b5p-22);
  q = fma(q, z, 0x1.a01a019c83f09p-16);
  q = fma(q, z, -0x1.6c16c16c14f8ep-10);
  q = fma(q, z, 0x1.555555555554bp-5);
  double hz = 0.5 * z;
  double w = 1.0 - hz;
  *tail = (((1.0 - w) - hz) - 0.5 * ez) + fma(z * z, q, -r * rl);
  return w;
}
/* sin of the reduced argument in quadrant q (mod 4) of the cosine's when cosq = 1. */
HLOC_VM_INLINE double hloc_vm_sincos_f64(double x, uint64_t cosq, int full) {
  double a = fabs(x), rh, rl;
  uint64_t q = hloc_vm_reduce_pio2_f64(a, full, &rh, &rl) + cosq;
  double st, ct;
  double s = hloc_vm_sin_kernel_f64(rh, rl, &st);
  double c = hloc_vm_cos_kernel_f64(rh, rl, &ct);
  int odd = (int)(q & 1u);
  double y = hloc_vm_sel_f64(odd, c, s) + hloc_vm_sel_f64(odd, ct, st);
  /* negative in quadrants 2 and 3, and sin is odd */
  uint64_t neg = ((q >> 1) & 1u) ^ (cosq ? 0u : hloc_vm_bits_f64(x) >> 63);
  y = hloc_vm_f64(hloc_vm_bits_f64(y) ^ (neg << 63));
  return hloc_vm_sel_f64(a < INFINITY, y, x - x);
}
HLOC_VM_INLINE double hloc_vm_sin_f64(double x, int full) {
  return hloc_vm_sel_f64(fabs(x) < 0x1p-26, x, hloc_vm_sincos_f64(x, 0, full));
}
HLOC_VM_INLINE double hloc_vm_cos_f64(double x, int full) { return hloc_vm_sincos_f64(x, 1, full); }
/* tan = sin / cos in quadrants 0 and 2, -cos / sin in 1 and 3: both as double-doubles,
   the quotient corrected by its residual (fma). */
HLOC_VM_INLINE double hloc_vm_tan_f64(double x, int full) {
  double a = fabs(x), rh, rl;
  uint64_t q = hloc_vm_reduce_pio2_f64(a, full, &rh, &rl);
  double st, ct;
  double s = hloc_vm_sin_kernel_f64(rh, rl, &st);
  double c = hloc_vm_cos_kernel_f64(rh, rl, &ct);
  double sh = s + st, sl = st - (sh - s);
  double chh = c + ct, cl = ct - (chh - c);
  int odd = (int)(q & 1u);
  double nh = hloc_vm_sel_f64(odd, -chh, sh), nl = hloc_vm_sel_f64(odd, -cl, sl);
  double dh = hloc_vm_sel_f64(odd, sh, chh), dl = hloc_vm_sel_f64(odd, sl, cl);
  double t = nh / dh;
  double y = t + (fma(-t, dh, nh) + fma(-t, dl, nl)) / dh;
  y = hloc_vm_f64(hloc_vm_bits_f64(y) ^ (hloc_vm_bits_f64(x) & 0x8000000000000000ull));
  y = hloc_vm_sel_f64(a < INFINITY, y, x - x);
  return hloc_vm_sel_f64(a < 0x1p-27, x, y);
}
/* f32: in double, on the same reduction (r_lo is below the float's precision), with
   shorter polynomials (relative error 2^-37 and 2^-33 before the final rounding). */
HLOC_VM_INLINE float hloc_vm_sincos_f32(float x, uint64_t cosq, int tan, int full) {
  double a = fabs((double)x), r, rl;
  uint64_t q = hloc_vm_reduce_pio2_f64(a, full, &r, &rl) + cosq;
  double z = r * r;
  double p = 0x1.6cd1d18b46788p-19;
  p = fma(p, z, -0x1.a00f7e9e43fe8p-13);
  p = fma(p, z, 0x1.11110869b5d77p-7);
  p = fma(p, z, -0x1.5555554c70e54p-3);
  double s = fma(z * r, p, r);
  double c = 0x1.99eb735c3ad4ap-16;
  c = fma(c, z, -0x1.6c0c331bb4e50p-10);
  c = fma(c, z, 0x1.55554a1079a39p-5);
  c = fma(c, z, -0.5);
  c = fma(c, z, 1.0);
  int odd = (int)(q & 1u);
  double y = tan ? hloc_vm_sel_f64(odd, -c, s) / hloc_vm_sel_f64(odd, s, c) : hloc_vm_sel_f64(odd, c, s);
  uint64_t neg = (tan ? 0u : (q >> 1) & 1u) ^ (cosq ? 0u : hloc_vm_bits_f32(x) >> 31);
  float yf = (float)y;
  yf = hloc_vm_f32(hloc_vm_bits_f32(yf) ^ (uint32_t)(neg << 31));
  yf = hloc_vm_sel_f32(fabsf(x) < INFINITY, yf, x - x);
  return cosq ? yf : hloc_vm_sel_f32(fabsf(x) < 0x1p-12f, x, yf);
}
HLOC_VM_INLINE float hloc_vm_sin_f32(float x, int full) { return hloc_vm_sincos_f32(x, 0, 0, full); }
HLOC_VM_INLINE float hloc_vm_cos_f32(float x, int full) { return hloc_vm_sincos_f32(x, 1, 0, full); }
HLOC_VM_INLINE float hloc_vm_tan_f32(float x, int full) { return hloc_vm_sincos_f32(x, 0, 1, full); }
/* The entry points hloc_v{sin,cos,tan}_f{32,64}. With gcc on x86-64 they are declared
   with the vector function ABI (simd("notinbranch"): a vectorized loop calls
   _ZGV<isa>N<lanes>v_<name> on a vector), and those entries are defined here, not cloned
   by gcc, as static functions named by .set (local symbols: translation units linked
   together do not clash; `used`, since the C compiler does not see the calls its
   vectorizer makes). An entry computes its vector on Cody-Waite alone and, only when one
   of its lanes is 2^30 or more (or infinite), those lanes again by NAME_hloc_full, both
   reductions with the per-lane select (the former entry point), a scalar function: a
   branch on the whole vector, so an ordinary vector pays no Payne-Hanek (f64 sin in a
   loop 9.2 -> 1.5 ns per element, AVX-512). Results are the select version's, bit for
   bit (a hash of 4M mixed results of all six functions, vector and scalar entries,
   unchanged). NAME_hloc_full was gcc's SIMD clone, 14 ns per element of an all-huge
   vector; as a scalar function an all-huge vector takes 15% longer, and the C compiler
   spends 40% less time on the six functions' entries (gcc 12: 590 -> 368 ms, loaded).
   (Inlining both reductions into the lane loop instead vectorized it at half width: its
   32-bit limbs and shift counts against 64-bit lanes.) The widest vector (512 bits with
   AVX-512, 256 with AVX, else 128) has the body; narrower entries (epilogues, loops at
   256 bits) pad their lanes into it, and the scalar entry (remainders, loops left
   scalar) runs Cody-Waite, or NAME_hloc_full for a huge argument. Elsewhere gcc's own
   SIMD clones of the select version. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#if defined(__AVX512F__)
#define HLOC_VM_VBYTES 64
#elif defined(__AVX__)
#define HLOC_VM_VBYTES 32
#else
#define HLOC_VM_VBYTES 16
#endif
/* An entry's symbol S defined (`.set S, target`): local to its translation unit, or, in
   a module's math unit (HLOC_VM_EXPORT, `shared.rs`), global and hidden, so that the
   module's other units, which declare the entries (HLOC_VM_IMPORT), call these ones and
   the C compiler builds them once per module rather than once per unit. */
#ifdef HLOC_VM_EXPORT
#define HLOC_VM_SET(S) ".globl " S "\n.hidden " S "\n.set " S
#else
#define HLOC_VM_SET(S) ".set " S
#endif
#define HLOC_VM_IMPORT(NAME, ELEM, T, I, HUGE, L16, L32, L64) \
  __attribute__((simd("notinbranch"), const, nothrow, leaf, visibility("hidden"))) T NAME(T x);
/* NAME's entries: ELEM(x, full) the element function of type T, HUGE(x) its test
   (an integer as wide as T, so that the lane loop has one vectorization factor), L16,
   L32, L64 the lanes of T in 16, 32 and 64 bytes. */
#define HLOC_VM_ENTRIES(NAME, ELEM, T, I, HUGE, L16, L32, L64) \
  __attribute__((simd("notinbranch"), const, nothrow, leaf)) T NAME(T x); \
  static __attribute__((noinline)) T NAME##_hloc_full(T x) { return ELEM(x, 1); } \
  typedef T NAME##_hloc_vw __attribute__((vector_size(HLOC_VM_VBYTES))); \
  static __attribute__((used, noinline)) HLOC_VM_WIDE NAME##_hloc_vw NAME##_hloc_wide(NAME##_hloc_vw x) { \
    NAME##_hloc_vw y; \
    I huge = 0; \
    for (int l = 0; l < (int)(HLOC_VM_VBYTES / sizeof(T)); ++l) { \
      y[l] = ELEM(x[l], 0); \
      huge |= (I)HUGE(x[l]); \
    } \
    if (__builtin_expect(huge != 0, 0)) \
      for (int l = 0; l < (int)(HLOC_VM_VBYTES / sizeof(T)); ++l) \
        if (HUGE(x[l])) y[l] = NAME##_hloc_full(x[l]); \
    return y; \
  } \
  static __attribute__((used, noinline)) T NAME##_hloc_scalar(T x) { \
    if (__builtin_expect(HUGE(x), 0)) return NAME##_hloc_full(x); \
    return ELEM(x, 0); \
  } \
  __asm__(HLOC_VM_SET(#NAME) ", " #NAME "_hloc_scalar"); \
  HLOC_VM_ENTRIES_16(NAME, T, L16) \
  HLOC_VM_ENTRIES_32(NAME, T, L32) \
  HLOC_VM_ENTRIES_64(NAME, L64)
/* An entry of B bytes, narrower than the widest, padding its lanes into it. */
#define HLOC_VM_NARROW(NAME, T, B) \
  typedef T NAME##_hloc_v##B __attribute__((vector_size(B))); \
  static __attribute__((used, noinline)) NAME##_hloc_v##B NAME##_hloc_w##B(NAME##_hloc_v##B x) { \
    NAME##_hloc_vw w = {0}, r; \
    NAME##_hloc_v##B y; \
    memcpy(&w, &x, B); \
    r = NAME##_hloc_wide(w); \
    memcpy(&y, &r, B); \
    return y; \
  }
#define HLOC_VM_SET_B(NAME, L, TO) __asm__(HLOC_VM_SET("_ZGVbN" #L "v_" #NAME) ", " #NAME TO);
#define HLOC_VM_SET_CD(NAME, L, TO) \
  __asm__(HLOC_VM_SET("_ZGVcN" #L "v_" #NAME) ", " #NAME TO "\n" \
          HLOC_VM_SET("_ZGVdN" #L "v_" #NAME) ", " #NAME TO);
#if HLOC_VM_VBYTES == 64
#define HLOC_VM_ENTRIES_16(NAME, T, L) HLOC_VM_NARROW(NAME, T, 16) HLOC_VM_SET_B(NAME, L, "_hloc_w16")
#define HLOC_VM_ENTRIES_32(NAME, T, L) HLOC_VM_NARROW(NAME, T, 32) HLOC_VM_SET_CD(NAME, L, "_hloc_w32")
#define HLOC_VM_ENTRIES_64(NAME, L) __asm__(HLOC_VM_SET("_ZGVeN" #L "v_" #NAME) ", " #NAME "_hloc_wide");
#elif HLOC_VM_VBYTES == 32
#define HLOC_VM_ENTRIES_16(NAME, T, L) HLOC_VM_NARROW(NAME, T, 16) HLOC_VM_SET_B(NAME, L, "_hloc_w16")
#define HLOC_VM_ENTRIES_32(NAME, T, L) HLOC_VM_SET_CD(NAME, L, "_hloc_wide")
#define HLOC_VM_ENTRIES_64(NAME, L)
#else
#define HLOC_VM_ENTRIES_16(NAME, T, L) HLOC_VM_SET_B(NAME, L, "_hloc_wide")
#define HLOC_VM_ENTRIES_32(NAME, T, L)
#define HLOC_VM_ENTRIES_64(NAME, L)
#endif
#else
/* Elsewhere each unit compiles its own (a math unit has nothing to export). */
#ifdef HLOC_VM_EXPORT
#define HLOC_VM_ENTRIES(NAME, ELEM, T, I, HUGE, L16, L32, L64)
#else
#define HLOC_VM_ENTRIES(NAME, ELEM, T, I, HUGE, L16, L32, L64) \
  HLOC_VM_SIMD T NAME(T x) { return ELEM(x, 1); }
#endif
#define HLOC_VM_IMPORT(NAME, ELEM, T, I, HUGE, L16, L32, L64) \
  HLOC_VM_SIMD T NAME(T x) { return ELEM(x, 1); }
#endif
#define HLOC_VM_HUGE_F64(x) (fabs(x) >= 0x1p30)
#define HLOC_VM_HUGE_F32(x) (fabsf(x) >= 0x1p30f)
"#
    };
}
pub(crate) use trig_c;

/// The entry points of the six functions, one line each (after the rest of the
/// vectorizable functions: they only use them). A translation unit takes the lines of the
/// functions its kernels call ([`entries`]): each defines its functions whether called
/// or not.
macro_rules! trig_entries_c {
    () => {
        concat!(
            "HLOC_VM_ENTRIES(hloc_vsin_f64, hloc_vm_sin_f64, double, int64_t, HLOC_VM_HUGE_F64, 2, 4, 8)\n",
            "HLOC_VM_ENTRIES(hloc_vcos_f64, hloc_vm_cos_f64, double, int64_t, HLOC_VM_HUGE_F64, 2, 4, 8)\n",
            "HLOC_VM_ENTRIES(hloc_vtan_f64, hloc_vm_tan_f64, double, int64_t, HLOC_VM_HUGE_F64, 2, 4, 8)\n",
            "HLOC_VM_ENTRIES(hloc_vsin_f32, hloc_vm_sin_f32, float, int32_t, HLOC_VM_HUGE_F32, 4, 8, 16)\n",
            "HLOC_VM_ENTRIES(hloc_vcos_f32, hloc_vm_cos_f32, float, int32_t, HLOC_VM_HUGE_F32, 4, 8, 16)\n",
            "HLOC_VM_ENTRIES(hloc_vtan_f32, hloc_vm_tan_f32, float, int32_t, HLOC_VM_HUGE_F32, 4, 8, 16)\n"
        )
    };
}
pub(crate) use trig_entries_c;

/// `(function name, its C line)` for each line of `trig_entries_c!()`.
pub(crate) fn entries() -> impl Iterator<Item = (&'static str, &'static str)> {
    trig_entries_c!().split_inclusive('\n').map(|line| {
        let name = line.split(['(', ',']).nth(1).unwrap_or_default().trim();
        (name, line)
    })
}
