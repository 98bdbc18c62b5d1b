/* hloc's CUDA host emulation: the exact CUDA C that NVRTC compiles, compiled as host C++
   after this header. Every thread of a block is a fiber (ucontext) when the kernel has
   barriers: __syncthreads() is a real rendezvous, and a barrier that some thread never
   reaches aborts with "divergent barrier" instead of hanging; warp shuffles are rendezvous
   too (see hloc_host::shuffle). Kernels without barriers or shuffles run
   their threads as a plain loop. Shared memory is one copy per block (function-scope
   thread_local: an OS thread runs one block at a time). HLOC_CUDA_HOST_ORDER=reverse runs
   each block's threads in reverse order: a correct kernel gives the same bits either way.
   Atomics are atomic by construction: several OS threads may run blocks of one launch at
   once, so they are the C++ compiler's atomic builtins (a float add a compare-and-swap
   loop on its bits). */
#define HLOC_CUDA_HOST 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <ucontext.h>
#include <vector>

struct hloc_dim3 { unsigned int x, y, z; };
static thread_local hloc_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))

static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clzll(long long x) { return __builtin_clzll((unsigned long long)x); }

namespace hloc_host {
struct Fiber {
  ucontext_t ctx;
  bool done;
  bool waiting;
};
static thread_local ucontext_t scheduler;
static thread_local Fiber *current;
static thread_local void (*body)(void *const *);
static thread_local void *const *body_bufs;
static thread_local std::vector<char *> stacks;
static const size_t STACK_BYTES = 256 * 1024;

static void trampoline() {
  body(body_bufs);
  current->done = true;  /* uc_link returns to the scheduler */
}

static bool reverse_order() {
  const char *o = getenv("HLOC_CUDA_HOST_ORDER");
  return o && strcmp(o, "reverse") == 0;
}

/* Runs one block of `threads` threads of `kernel`; with `fibers`, each thread a fiber. */
static void run_block(unsigned threads, bool fibers, void (*kernel)(void *const *),
                      void *const *bufs) {
  bool rev = reverse_order();
  blockDim = {threads, 1, 1};
  if (!fibers) {
    for (unsigned i = 0; i < threads; ++i) {
      threadIdx = {rev ? threads - 1 - i : i, 0, 0};
      kernel(bufs);
    }
    return;
  }
  std::vector<Fiber> fs(threads);
  while (stacks.size() < threads) stacks.push_back((char *)malloc(STACK_BYTES));
  body = kernel;
  body_bufs = bufs;
  for (unsigned t = 0; t < threads; ++t) {
    getcontext(&fs[t].ctx);
    fs[t].ctx.uc_stack.ss_sp = stacks[t];
    fs[t].ctx.uc_stack.ss_size = STACK_BYTES;
    fs[t].ctx.uc_link = &scheduler;
    fs[t].done = fs[t].waiting = false;
    makecontext(&fs[t].ctx, trampoline, 0);
  }
  for (;;) {
    /* One round: every live thread runs to its next barrier or its end. */
    for (unsigned i = 0; i < threads; ++i) {
      unsigned t = rev ? threads - 1 - i : i;
      if (fs[t].done) continue;
      fs[t].waiting = false;
      current = &fs[t];
      threadIdx = {t, 0, 0};
      swapcontext(&scheduler, &fs[t].ctx);
    }
    unsigned done = 0;
    for (unsigned t = 0; t < threads; ++t) done += fs[t].done;
    if (done == threads) return;
    if (done != 0) {
      fprintf(stderr, "hloc cuda-host: divergent barrier: %u of %u threads of block %u ended "
              "while the others wait at __syncthreads()\n", done, threads, blockIdx.x);
      abort();
    }
  }
}
}  // namespace hloc_host

static inline void __syncthreads() {
  hloc_host::Fiber *f = hloc_host::current;
  f->waiting = true;
  swapcontext(&f->ctx, &hloc_host::scheduler);
}

namespace hloc_host {
/* The 32-bit words the block's threads offer to a shuffle, one per thread. */
static thread_local std::vector<unsigned> offered;

/* A shuffle is two rendezvous: every thread offers its word, reads its source lane's,
   and waits until all have read before any offers again. The kernel IR's verifier puts
   shuffles only where every thread of the block reaches them (fibers run the block). */
static inline unsigned shuffle(unsigned v, unsigned src_lane, int width) {
  unsigned t = threadIdx.x;
  if (offered.size() < blockDim.x) offered.resize(blockDim.x);
  offered[t] = v;
  __syncthreads();
  unsigned lane = t % (unsigned)width;
  unsigned r = src_lane < (unsigned)width ? offered[t - lane + src_lane] : v;
  __syncthreads();
  return r;
}
}  // namespace hloc_host

static inline unsigned __shfl_down_sync(unsigned, unsigned v, unsigned off, int width) {
  return hloc_host::shuffle(v, threadIdx.x % (unsigned)width + off, width);
}
static inline unsigned __shfl_xor_sync(unsigned, unsigned v, unsigned mask, int width) {
  return hloc_host::shuffle(v, (threadIdx.x % (unsigned)width) ^ mask, width);
}

/* CUDA's atomics, on memory that blocks running on other OS threads may update too. */
template <typename T> static inline T hloc_host_cas(T *p, T e, T d) {
  __atomic_compare_exchange_n(p, &e, d, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return e;
}
static inline unsigned int atomicCAS(unsigned int *p, unsigned int e, unsigned int d) {
  return hloc_host_cas(p, e, d);
}
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long e,
                                           unsigned long long d) {
  return hloc_host_cas(p, e, d);
}
#define HLOC_HOST_INT_ATOMICS(T)                                                        \
  static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); } \
  static inline T atomicMin(T *p, T v) {                                                \
    T cur = __atomic_load_n(p, __ATOMIC_RELAXED);                                       \
    while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_RELAXED,  \
                                                   __ATOMIC_RELAXED)) {                 \
    }                                                                                   \
    return cur;                                                                         \
  }                                                                                     \
  static inline T atomicMax(T *p, T v) {                                                \
    T cur = __atomic_load_n(p, __ATOMIC_RELAXED);                                       \
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_RELAXED,  \
                                                   __ATOMIC_RELAXED)) {                 \
    }                                                                                   \
    return cur;                                                                         \
  }
HLOC_HOST_INT_ATOMICS(int)
HLOC_HOST_INT_ATOMICS(unsigned int)
HLOC_HOST_INT_ATOMICS(long long)
HLOC_HOST_INT_ATOMICS(unsigned long long)
#define HLOC_HOST_FLOAT_ADD(T, U)                                                       \
  static inline T atomicAdd(T *p, T v) {                                                \
    U *w = (U *)p;                                                                      \
    U seen = __atomic_load_n(w, __ATOMIC_RELAXED);                                      \
    for (;;) {                                                                          \
      T old, sum;                                                                       \
      memcpy(&old, &seen, sizeof old);                                                  \
      sum = old + v;                                                                    \
      U next;                                                                           \
      memcpy(&next, &sum, sizeof next);                                                 \
      if (__atomic_compare_exchange_n(w, &seen, next, false, __ATOMIC_RELAXED,          \
                                      __ATOMIC_RELAXED))                                \
        return old;                                                                     \
    }                                                                                   \
  }
HLOC_HOST_FLOAT_ADD(float, unsigned int)
HLOC_HOST_FLOAT_ADD(double, unsigned long long)
