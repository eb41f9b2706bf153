// cinn-py CUDA emulator: the CUDA built-ins a generated kernel uses, for g++ on the CPU.
//
// The generated translation unit is compiled unchanged with `-include cuda_emu.h`; this header
// supplies what NVRTC would (execution-space keywords, `threadIdx`/`blockIdx`/`blockDim`/
// `gridDim`, `__shared__`, barriers, warp shuffles and votes, atomics, `__half`/`__nv_bfloat16`,
// the math intrinsics) and the launch runtime that runs a grid:
//
//  * every block runs on the calling OS thread, one block after another; the block's threads are
//    fibers (ucontext), switched deterministically: a thread runs until it reaches a barrier, a
//    warp collective or its end, then the next runnable thread runs;
//  * `__shared__` variables are `thread_local` statics: one copy per OS thread, shared by the
//    fibers of the block running there (the dynamic `extern __shared__` array is one
//    thread_local array of CINN_EMU_MAX_DYNAMIC_SHARED bytes);
//  * `__syncthreads()` releases when every thread of the block waits at a barrier; a barrier
//    that some threads never reach (they exited, or wait at a warp collective) is a deadlock
//    and fails the launch with a message naming the threads and source lines;
//  * warp collectives (`__shfl*_sync`, `__ballot_sync`, `__any_sync`, `__all_sync`,
//    `__syncwarp`) release when every lane of the mask has arrived; lanes then exchange the
//    values they brought (real warp semantics, including `width` segments);
//  * built with -fsanitize=thread, each emulated thread is a TSan fiber and barriers/warp
//    collectives are the only happens-before edges between them, so TSan reports unsynchronised
//    accesses to shared and global memory as data races.
#pragma once
#define CINN_CUDA_EMULATION 1

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <type_traits>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#define CINN_EMU_TSAN 1
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}
#define CINN_EMU_RUNTIME __attribute__((no_sanitize("thread")))
#else
#define CINN_EMU_RUNTIME
#endif

// NVRTC's 64-bit integers (`long long`), which the driver names `int64_t`/`uint64_t` inside the
// kernel's translation unit (compile.py): the host's int64_t may be `long`, a distinct type.
typedef long long cinn_emu_int64_t;
typedef unsigned long long cinn_emu_uint64_t;

#ifndef CINN_EMU_MAX_DYNAMIC_SHARED
#define CINN_EMU_MAX_DYNAMIC_SHARED (228 * 1024)
#endif

// ------------------------------------------------------------------------------------------
// Execution spaces and qualifiers.
// ------------------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ thread_local

// ------------------------------------------------------------------------------------------
// Vector types.
// ------------------------------------------------------------------------------------------
struct uint3 { unsigned int x, y, z; };
typedef uint3 dim3;
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };

// ------------------------------------------------------------------------------------------
// float16 / bfloat16: storage types, converted with round-to-nearest-even.
// ------------------------------------------------------------------------------------------
struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f);  // NOLINT: CUDA's __half converts implicitly too
  operator float() const;
};
struct alignas(4) __half2 { __half x, y; };
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f);  // NOLINT
  operator float() const;
};
struct alignas(4) __nv_bfloat162 { __nv_bfloat16 x, y; };

inline float __half2float(__half h) {
  _Float16 v;
  memcpy(&v, &h.__x, 2);
  return (float)v;
}
inline __half __float2half(float f) {
  _Float16 v = (_Float16)f;
  __half h;
  memcpy(&h.__x, &v, 2);
  return h;
}
inline __half __float2half_rn(float f) { return __float2half(f); }
inline __half::__half(float f) : __x(__float2half(f).__x) {}
inline __half::operator float() const { return __half2float(*this); }

inline float __bfloat162float(__nv_bfloat16 h) {
  unsigned int u = (unsigned int)h.__x << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  unsigned int u;
  memcpy(&u, &f, 4);
  __nv_bfloat16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    h.__x = (unsigned short)((u >> 16) | 0x40u);  // quiet NaN
    return h;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  h.__x = (unsigned short)(u >> 16);
  return h;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
inline __nv_bfloat16::__nv_bfloat16(float f) : __x(__float2bfloat16(f).__x) {}
inline __nv_bfloat16::operator float() const { return __bfloat162float(*this); }

// ------------------------------------------------------------------------------------------
// Math intrinsics and bit casts.
// ------------------------------------------------------------------------------------------
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
inline int __float_as_int(float f) { int v; memcpy(&v, &f, 4); return v; }
inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
inline long long __double_as_longlong(double d) { long long v; memcpy(&v, &d, 8); return v; }

// Integer bit intrinsics: CUDA defines __clz(0) == 32 / __clzll(0) == 64, the GCC builtins leave
// 0 undefined, hence the guard.
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }

// CUDA's min/max: integer overloads compare in the common type, floating ones are fminf/fmaxf
// (a NaN operand yields the other operand).
template <class A, class B>
inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  if constexpr (std::is_floating_point<C>::value) return fmin((C)a, (C)b);
  else return (C)a < (C)b ? (C)a : (C)b;
}
template <class A, class B>
inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  if constexpr (std::is_floating_point<C>::value) return fmax((C)a, (C)b);
  else return (C)a > (C)b ? (C)a : (C)b;
}
template <class T> inline T __ldg(const T* p) { return *p; }

// ------------------------------------------------------------------------------------------
// The launch runtime.
// ------------------------------------------------------------------------------------------
namespace cinn_emu {

enum State : int { RUNNABLE, AT_BARRIER, AT_WARP, DONE };

struct Thread {
  ucontext_t ctx;
  uint3 tid;
  int lane, warp;
  int state;
  const char* file;
  int line;
  unsigned mask;               // the mask of the warp collective it waits at
  unsigned long long value;    // the value it brought to the collective
  void* fiber;                 // TSan fiber
};

struct Warp {
  unsigned long long values[32];  // what each lane brought, copied when the collective releases
  unsigned arrived;               // lanes that took part in the last released collective
  char sync;                      // TSan synchronisation object
};

struct Launch {
  uint3 grid, block, bid;
  int nthreads, nwarps;
  Thread* threads;
  Warp* warps;
  char* stacks;
  size_t stack_bytes;
  ucontext_t sched;
  void* sched_fiber;
  void (*body)(void*);  // runs the kernel for the current thread
  void* body_context;
  bool failed;
  char barrier_sync;
  char block_edge[2];
  unsigned long long block_number;
};

extern thread_local Launch* g_launch;
extern thread_local Thread* g_thread;
extern thread_local char g_error[4096];

// The launch runtime (cuda_emu_runtime.cpp: one shared library for every kernel, or compiled into
// the race checker's single translation unit).
void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void abort_thread();
void syncthreads(const char* file, int line);
const unsigned long long* warp_collective(unsigned mask, unsigned long long value, const char* what,
                                          unsigned* arrived);
unsigned vote(unsigned mask, bool pred, const char* what);
unsigned activemask();
int launch(const unsigned* dims, unsigned long long dynamic_shared, void (*body)(void*), void* body_context);

template <class T>
inline unsigned long long to_bits(T v) {
  static_assert(sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

// `src` is the lane (within the thread's `width` segment) to read; out of range: own value.
template <class T>
inline T shuffle(unsigned mask, T v, int src_in_segment, int width, bool in_range, const char* what) {
  unsigned arrived = 0;
  const unsigned long long* values = warp_collective(mask, to_bits(v), what, &arrived);
  const int lane = g_thread->lane;
  if (width <= 0 || width > 32 || (width & (width - 1))) {
    fail("%s: width %d is not a power of two in [1, 32]", what, width);
    abort_thread();
  }
  if (!in_range) return v;
  const int src = (lane / width) * width + (src_in_segment & (width - 1));
  if (!(arrived >> src & 1u)) return v;  // the source lane did not take part: undefined on a GPU
  return from_bits<T>(values[src]);
}

template <class... A, size_t... I>
inline void call_kernel(void (*kernel)(A...), void** params, std::index_sequence<I...>) {
  kernel(*static_cast<typename std::remove_cv<A>::type*>(params[I])...);
}

template <class... A>
struct KernelCall {
  void (*kernel)(A...);
  void** params;
};

template <class... A>
inline void run_kernel_call(void* context) {
  const KernelCall<A...>* call = static_cast<const KernelCall<A...>*>(context);
  call_kernel(call->kernel, call->params, std::index_sequence_for<A...>{});
}

template <class... A>
inline int launch_kernel(void (*kernel)(A...), void** params, const unsigned* dims,
                         unsigned long long dynamic_shared) {
  KernelCall<A...> call{kernel, params};
  return launch(dims, dynamic_shared, &run_kernel_call<A...>, &call);
}

}  // namespace cinn_emu

// ------------------------------------------------------------------------------------------
// The CUDA built-ins on top of the runtime.
// ------------------------------------------------------------------------------------------
#define threadIdx (cinn_emu::g_thread->tid)
#define blockIdx (cinn_emu::g_launch->bid)
#define blockDim (cinn_emu::g_launch->block)
#define gridDim (cinn_emu::g_launch->grid)
#define warpSize 32
#define __syncthreads() cinn_emu::syncthreads(__FILE__, __LINE__)

inline void __threadfence() {}
inline void __threadfence_block() {}
inline unsigned __activemask() { return cinn_emu::activemask(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { cinn_emu::vote(mask & cinn_emu::activemask(), true, "__syncwarp"); }
inline unsigned __ballot_sync(unsigned mask, int pred) { return cinn_emu::vote(mask, pred != 0, "__ballot_sync"); }
inline int __any_sync(unsigned mask, int pred) { return cinn_emu::vote(mask, pred != 0, "__any_sync") != 0; }
inline int __all_sync(unsigned mask, int pred) {
  return cinn_emu::vote(mask, pred != 0, "__all_sync") == (mask & cinn_emu::activemask());
}

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return cinn_emu::shuffle(mask, v, src, width, true, "__shfl_sync");
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const int in_segment = (int)(cinn_emu::g_thread->lane % (width > 0 ? width : 32));
  const int src = in_segment ^ lane_mask;
  return cinn_emu::shuffle(mask, v, src, width, src < width, "__shfl_xor_sync");
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int in_segment = (int)(cinn_emu::g_thread->lane % (width > 0 ? width : 32));
  return cinn_emu::shuffle(mask, v, in_segment - (int)delta, width, in_segment >= (int)delta, "__shfl_up_sync");
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int in_segment = (int)(cinn_emu::g_thread->lane % (width > 0 ? width : 32));
  const int src = in_segment + (int)delta;
  return cinn_emu::shuffle(mask, v, src, width, src < width, "__shfl_down_sync");
}

[[noreturn]] inline void __trap() {
  const cinn_emu::Thread* t = cinn_emu::g_thread;
  cinn_emu::fail("__trap() in thread (%u,%u,%u) of block (%u,%u,%u)", t->tid.x, t->tid.y, t->tid.z,
                 cinn_emu::g_launch->bid.x, cinn_emu::g_launch->bid.y, cinn_emu::g_launch->bid.z);
  cinn_emu::abort_thread();
}

// Atomics: real atomic read-modify-writes (TSan sees them as synchronised accesses).
template <class T>
inline T cinn_emu_atomic_update(T* p, T v, int op) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T next = op == 0 ? (T)(old + v) : op == 1 ? (old > v ? old : v) : op == 2 ? (old < v ? old : v) : v;
    if (__atomic_compare_exchange_n(p, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return old;
  }
}
inline float cinn_emu_atomic_add_float(float* p, float v) {
  unsigned int* u = (unsigned int*)p;
  unsigned int old = __atomic_load_n(u, __ATOMIC_RELAXED);
  for (;;) {
    float f;
    memcpy(&f, &old, 4);
    f += v;
    unsigned int next;
    memcpy(&next, &f, 4);
    if (__atomic_compare_exchange_n(u, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
      memcpy(&f, &old, 4);
      return f;
    }
  }
}
inline double cinn_emu_atomic_add_double(double* p, double v) {
  unsigned long long* u = (unsigned long long*)p;
  unsigned long long old = __atomic_load_n(u, __ATOMIC_RELAXED);
  for (;;) {
    double f;
    memcpy(&f, &old, 8);
    f += v;
    unsigned long long next;
    memcpy(&next, &f, 8);
    if (__atomic_compare_exchange_n(u, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
      memcpy(&f, &old, 8);
      return f;
    }
  }
}
inline float atomicAdd(float* p, float v) { return cinn_emu_atomic_add_float(p, v); }
inline double atomicAdd(double* p, double v) { return cinn_emu_atomic_add_double(p, v); }
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicSub(unsigned* p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <class T> inline T atomicMax(T* p, T v) { return cinn_emu_atomic_update(p, v, 1); }
template <class T> inline T atomicMin(T* p, T v) { return cinn_emu_atomic_update(p, v, 2); }
template <class T> inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
inline float atomicExch(float* p, float v) {
  unsigned int b = __atomic_exchange_n((unsigned int*)p, (unsigned int)__float_as_int(v), __ATOMIC_SEQ_CST);
  return __int_as_float((int)b);
}
template <class T>
inline T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
