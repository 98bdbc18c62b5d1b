/* hloc's CUDA host emulation: the exact CUDA C that NVRTC compiles, compiled as host C++
   after this header. Every thread of a block is a fiber (its own stack) when the kernel has
   barriers: __syncthreads() is a real rendezvous, and a barrier that some thread never
   reaches aborts with "divergent barrier" instead of hanging; warp shuffles are rendezvous
   too, one each (see hloc_host::shuffle). Kernels without barriers or shuffles run
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
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))

static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clzll(long long x) { return __builtin_clzll((unsigned long long)x); }

namespace hloc_host {
/* Switching fibers. glibc's swapcontext saves and restores the signal mask with a system
   call on every switch, and a block of 128 threads makes 256 switches per barrier: a row
   reduction's shuffles over 8192 blocks cost ~10^8 system calls per launch (up6
   kmeans_while ran past 400 s). On x86-64 a switch is what a function call may not
   clobber (the System V ABI's callee-saved registers) pushed on the old stack and popped
   from the new one; elsewhere ucontext as before. */
#if defined(__x86_64__) && defined(__ELF__)
#define HLOC_HOST_FAST_SWITCH 1
/* Saves the callee-saved registers on the current stack, stores its stack pointer to
   *save_sp, and resumes the fiber whose stack pointer is next_sp. Hidden: every unit
   defines its own copy, and none is exported from the shared object. */
extern "C" __attribute__((visibility("hidden"))) void hloc_fiber_switch(void **save_sp,
                                                                         void *next_sp);
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl hloc_fiber_switch\n"
    ".hidden hloc_fiber_switch\n"
    ".type hloc_fiber_switch, @function\n"
    "hloc_fiber_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size hloc_fiber_switch, .-hloc_fiber_switch\n");
#endif

struct Fiber {
#ifdef HLOC_HOST_FAST_SWITCH
  void *sp;
#else
  ucontext_t ctx;
#endif
  bool done;
  bool waiting;
  /* Shuffles this thread has made in this block: their parity picks the exchange buffer. */
  unsigned shuffles;
};
#ifdef HLOC_HOST_FAST_SWITCH
static thread_local void *scheduler;
#else
static thread_local ucontext_t scheduler;
#endif
static thread_local Fiber *current;
static thread_local void (*body)(void *const *);
static thread_local void *const *body_bufs;
static thread_local std::vector<char *> stacks;
static const size_t STACK_BYTES = 256 * 1024;

/* From fiber `f` back to the scheduler. */
static inline void yield_to_scheduler(Fiber *f) {
#ifdef HLOC_HOST_FAST_SWITCH
  hloc_fiber_switch(&f->sp, scheduler);
#else
  swapcontext(&f->ctx, &scheduler);
#endif
}

static void trampoline() {
  body(body_bufs);
  current->done = true;
#ifdef HLOC_HOST_FAST_SWITCH
  /* A fresh stack has no return address: the thread's end is a last switch. */
  hloc_fiber_switch(&current->sp, scheduler);
  abort();
#endif
  /* uc_link returns to the scheduler */
}

/* Prepares fiber `f` to start `trampoline` on `stack`. */
static void start_fiber(Fiber *f, char *stack) {
  f->done = f->waiting = false;
  f->shuffles = 0;
#ifdef HLOC_HOST_FAST_SWITCH
  /* The frame hloc_fiber_switch pops: six zero registers, then the return address;
     `ret` leaves the stack pointer 8 below a 16-byte boundary, as after a call. */
  uintptr_t top = ((uintptr_t)stack + STACK_BYTES) & ~(uintptr_t)15;
  void **sp = (void **)(top - 64);
  for (int i = 0; i < 6; ++i) sp[i] = 0;
  sp[6] = (void *)trampoline;
  f->sp = sp;
#else
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = stack;
  f->ctx.uc_stack.ss_size = STACK_BYTES;
  f->ctx.uc_link = &scheduler;
  makecontext(&f->ctx, trampoline, 0);
#endif
}

/* From the scheduler into fiber `f` until it waits at a barrier or ends. */
static inline void resume(Fiber *f) {
#ifdef HLOC_HOST_FAST_SWITCH
  hloc_fiber_switch(&scheduler, f->sp);
#else
  swapcontext(&scheduler, &f->ctx);
#endif
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
  for (unsigned t = 0; t < threads; ++t) start_fiber(&fs[t], stacks[t]);
  for (;;) {
    /* One round: every live thread runs to its next barrier or its end. */
    for (unsigned i = 0; i < threads; ++i) {
      unsigned t = rev ? threads - 1 - i : i;
      if (fs[t].done) continue;
      fs[t].waiting = false;
      current = &fs[t];
      threadIdx = {t, 0, 0};
      resume(&fs[t]);
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
  hloc_host::yield_to_scheduler(f);
}

namespace hloc_host {
/* The 32-bit words the block's threads offer to shuffles: two halves of one per thread,
   used by alternate shuffles. */
static thread_local std::vector<unsigned> offered;

/* A shuffle is one rendezvous: every thread offers its word, waits for all, and reads its
   source lane's. Alternate shuffles offer in alternate halves: a thread can offer again
   in the same half only after the next shuffle's rendezvous, which every thread reaches
   after reading this one's words. The kernel IR's verifier puts shuffles only where every
   thread of the block reaches them (fibers run the block). */
static inline unsigned shuffle(unsigned v, unsigned src_lane, int width) {
  unsigned t = threadIdx.x;
  if (offered.size() < 2 * blockDim.x) offered.resize(2 * blockDim.x);
  unsigned *half = offered.data() + (current->shuffles++ & 1u) * blockDim.x;
  half[t] = v;
  __syncthreads();
  unsigned lane = t % (unsigned)width;
  return src_lane < (unsigned)width ? half[t - lane + src_lane] : v;
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
