//! The shared helpers: bit casts, selects on bit masks, sign transfer, the two-sum,
//! `HLOC_VM_INLINE` (always inline: `-O2` inlines only small functions, and a loop that
//! still calls one does not vectorize) and `HLOC_VM_SIMD` (the largest functions: SIMD
//! clones compiled once per translation unit, called by vectorized loops) and
//! `HLOC_VM_WIDE`, the mark of a kernel calling one (512-bit loops where AVX-512 is
//! enabled: gcc 12 makes only the 512-bit clones there).

/// The C text, a string literal for the prelude's `concat!`.
macro_rules! common_c {
    () => {
        r#"/* hloc generated code: vectorizable transcendental functions (no libm calls) */
/* The larger functions are always inlined: -O2 inlines only small ones, and a loop with a
   call does not vectorize. */
#define HLOC_VM_INLINE static inline __attribute__((always_inline))
/* The largest (pow, atan2, erf, cbrt; sin, cos and tan where trig.rs's vector entries
   are not defined) are compiled once per translation unit with SIMD clones instead: a
   vectorized loop calls the clone of its vector width, and gcc compiles the body once
   rather than once per use (a third less compile time for a module using them a few
   dozen times). */
#define HLOC_VM_SIMD static __attribute__((simd("notinbranch"), noinline))
/* With AVX-512 gcc 12 makes only the 512-bit clone of a static function, while
   -march=native's loops vectorize at 256 bits (-mprefer-vector-width=256, the default of
   every AVX-512 CPU): no loop calling one vectorized, each call ran the scalar body (f64
   sin 26 ns per element). So the printer marks a kernel that calls one HLOC_VM_WIDE: its
   loops prefer 512-bit vectors (10.4 ns, Rocket Lake; inlining instead gave 8.3 ns but
   compiled a module of 40 sin calls in 5.1 s rather than 0.4 s; the whole unit at 512
   bits made gpt2_greedy_decode_loop's softmax kernels 11% slower). */
#if defined(__AVX512F__)
#define HLOC_VM_WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define HLOC_VM_WIDE
#endif
static inline uint32_t hloc_vm_bits_f32(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float hloc_vm_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static inline uint64_t hloc_vm_bits_f64(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static inline double hloc_vm_f64(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
/* c ? a : b as a bit mask, not a branch: gcc would otherwise move the computation of an arm
   under a branch, which it cannot vectorize without -fno-trapping-math. */
static inline float hloc_vm_sel_f32(int c, float a, float b) {
  uint32_t m = 0u - (uint32_t)(c != 0);
  return hloc_vm_f32((hloc_vm_bits_f32(a) & m) | (hloc_vm_bits_f32(b) & ~m));
}
static inline double hloc_vm_sel_f64(int c, double a, double b) {
  uint64_t m = 0u - (uint64_t)(c != 0);
  return hloc_vm_f64((hloc_vm_bits_f64(a) & m) | (hloc_vm_bits_f64(b) & ~m));
}
/* |x| with the sign of s, on the bits. */
static inline float hloc_vm_sign_f32(float x, float s) {
  return hloc_vm_f32((hloc_vm_bits_f32(x) & 0x7fffffffu) | (hloc_vm_bits_f32(s) & 0x80000000u));
}
static inline double hloc_vm_sign_f64(double x, double s) {
  return hloc_vm_f64((hloc_vm_bits_f64(x) & 0x7fffffffffffffffull) | (hloc_vm_bits_f64(s) & 0x8000000000000000ull));
}

/* a + b = s + *e exactly (Knuth's two-sum). */
static inline double hloc_vm_two_sum_f64(double a, double b, double *e) {
  double s = a + b;
  double bb = s - a;
  *e = (a - (s - bb)) + (b - bb);
  return s;
}
"#
    };
}
pub(crate) use common_c;
