//! The prelude of a CUDA module: what NVRTC does not provide (it ships no headers: no
//! `stdint.h`, no `math.h` macros), then the C printer's prelude (`backend_cpu::c`'s
//! `BASE_PRELUDE`: 16-bit and 8-bit floats as bit patterns, integer helpers with HLO's
//! semantics, NaN-propagating min/max, total-order keys) with every helper a `__device__`
//! function. One copy of those semantics serves both targets.
//!
//! Under `HLOC_CUDA_HOST` (the host emulation compiles the same text as C++ with an
//! emulation header that includes the system headers) the typedefs and macros come from
//! the system instead.

/// What the module needs before the shared helpers.
const CUDA_HEADER: &str = r#"/* hloc generated CUDA: prelude */
#ifndef HLOC_CUDA_HOST
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define NAN __int_as_float(0x7fc00000)
#define INFINITY __int_as_float(0x7f800000)
#endif
/* A loop NVRTC must not unroll (the printer's `unroll.rs` says which); nothing on the host. */
#ifdef HLOC_CUDA_HOST
#define HLOC_ROLLED
#else
#define HLOC_ROLLED _Pragma("unroll 1")
#endif
/* The words of atomic updates' compare-and-swap loops (the printer casts to the pointer
   types CUDA's atomics take; the host emulation defines those atomics with the C++
   compiler's atomic builtins). */
#ifdef HLOC_CUDA_HOST
static __device__ inline uint32_t hloc_atomic_load_u32(uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static __device__ inline uint64_t hloc_atomic_load_u64(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
#else
static __device__ inline uint32_t hloc_atomic_load_u32(uint32_t *p) { return *(volatile uint32_t *)p; }
static __device__ inline uint64_t hloc_atomic_load_u64(uint64_t *p) { return *(volatile uint64_t *)p; }
#endif
static __device__ inline uint32_t hloc_atomic_cas_u32(uint32_t *p, uint32_t e, uint32_t d) {
  return atomicCAS((unsigned int *)p, (unsigned int)e, (unsigned int)d);
}
static __device__ inline uint64_t hloc_atomic_cas_u64(uint64_t *p, uint64_t e, uint64_t d) {
  return atomicCAS((unsigned long long *)p, (unsigned long long)e, (unsigned long long)d);
}
/* 32-bit index arithmetic with the 64-bit helpers' floor semantics (the printer uses them
   where the kernel's ranges bound every sub-expression within +-(2^31 - 1)). */
static __device__ inline int32_t hloc_floordiv32(int32_t a, int32_t b) {
  int32_t q = a / b, r = a % b;
  return q - (int32_t)((r != 0) & ((r ^ b) < 0));
}
static __device__ inline int32_t hloc_ceildiv32(int32_t a, int32_t b) { return -hloc_floordiv32(-a, b); }
static __device__ inline int32_t hloc_mod32(int32_t a, int32_t b) {
  int32_t r = a % b;
  return r + (b & -(int32_t)((r != 0) & ((r ^ b) < 0)));
}
static __device__ inline int32_t hloc_imin32(int32_t a, int32_t b) { return a < b ? a : b; }
static __device__ inline int32_t hloc_imax32(int32_t a, int32_t b) { return a > b ? a : b; }
/* Element i of buffer b through a 32-bit byte offset, widened once (the printer uses it
   where i is non-negative and i * sizeof(T) fits 32 bits): the pointer stays in uniform
   registers, where b[i] with a 32-bit i needs it in two registers for a wide multiply-add. */
template <typename T> static __device__ inline T &hloc_at(T *b, uint32_t i) {
  return *(T *)((const char *)b + (uint64_t)(i * (uint32_t)sizeof(T)));
}
/* A value's bits as another type of the same width (no GNU statement expressions in
   CUDA C++). */
template <typename To, typename From> static __device__ inline To hloc_bitcast(From x) {
  To y;
  memcpy(&y, &x, sizeof y);
  return y;
}
template <typename T> static __device__ inline bool hloc_unordered(T a, T b) {
  return a != a || b != b;
}
/* Warp shuffles of any scalar of up to 8 bytes as one or two 32-bit shuffles (the
   hardware's own unit; 16-bit floats travel as their bit patterns): lane + arg (down) or
   lane ^ arg (XOR) within groups of `width` lanes. */
template <bool XOR> static __device__ inline unsigned hloc_shfl32(unsigned w, unsigned arg, int width) {
  return XOR ? __shfl_xor_sync(0xffffffffu, w, arg, width)
             : __shfl_down_sync(0xffffffffu, w, arg, width);
}
template <bool XOR, typename T> static __device__ inline T hloc_shfl(T x, unsigned arg, int width) {
  unsigned long long b = 0;
  memcpy(&b, &x, sizeof x);
  unsigned lo = hloc_shfl32<XOR>((unsigned)b, arg, width);
  unsigned hi = sizeof x > 4 ? hloc_shfl32<XOR>((unsigned)(b >> 32), arg, width) : 0u;
  b = ((unsigned long long)hi << 32) | lo;
  memcpy(&x, &b, sizeof x);
  return x;
}
"#;

/// The whole prelude of a CUDA module.
pub fn cuda_prelude() -> String {
    let mut out = String::from(CUDA_HEADER);
    for line in backend_cpu::c::BASE_PRELUDE.split_inclusive('\n') {
        if line.starts_with("#include") || line.starts_with("/* hloc generated code") {
            continue;
        }
        out.push_str(
            &line
                .replace("static inline ", "static __device__ inline ")
                .replace("__builtin_isunordered(", "hloc_unordered(")
                .replace("__builtin_popcountll(", "__popcll(")
                .replace("__builtin_clzll(", "__clzll("),
        );
    }
    out
}
