// cinn-py CUDA device runtime: fixed-width integer types, math helpers and the cross-thread
// reduction helpers that `cinn_py.passes.cross_thread_reduce` emits calls to.
//
// Follows CINN's `cinn_cuda_runtime_source.cuh` naming (`cinn_block_reduce_<op>_<t>`,
// `cinn_discrete_reduce_<op>_<t>`, `cinn_warp_reduce_<op>_<t>`), written from scratch.
//
// Type suffixes: fp32 fp64 fp16 bf16 int32 int64 bool.  Ops: sum prod max min (numeric types),
// all any (bool).  float16/bfloat16 values are reduced in float (the `shm` scratch of those
// helpers is `float*`), bool values in int (`shm` is `int*`).
//
// Protocols (all helpers must be reached by every thread of the block, with no thread-dependent
// branch around the call: the pass guarantees this):
//  * warp reduce: reduce over threadIdx.x inside one warp; blockDim.x must be a power of two
//    <= 32, or a multiple of 32 (then each warp reduces its own 32 lanes).
//  * block reduce (value, shm, return_warp): reduce over threadIdx.x, separately for every
//    (threadIdx.y, threadIdx.z) row.  blockDim.x must be a power of two <= 32 or a multiple of 32.
//    Warp shuffle -> __syncthreads (earlier users of shm are done) -> lane 0 of each warp writes
//    shm[row * 32 + warp] -> __syncthreads -> the first warp of the row reduces those partials ->
//    its lane 0 writes shm[row * 32] -> __syncthreads -> every thread returns shm[row * 32].
//    shm holds 32 * blockDim.y * blockDim.z elements.  return_warp=true returns the warp-level
//    result without touching shm (CINN's WarpReduceMethod).
//  * discrete reduce (value, shm): reduce over threadIdx.y, separately for every
//    (threadIdx.x, threadIdx.z) column, by a halving tree in shm (blockDim.x * blockDim.y *
//    blockDim.z elements); every thread returns its column's result.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// NVRTC has no <cstdint>.  (The CPU emulator, codegen/cuda/emulator, takes them from the host's
// <stdint.h>, except int64_t/uint64_t: it names `long long` ones so, as here.)
#ifndef CINN_CUDA_EMULATION
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long int uint64_t;
#endif

// ------------------------------------------------------------------------------------------
// Scalar math helpers that CUDA lacks as single functions.
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ float cinn_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double cinn_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float cinn_fast_sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
__device__ __forceinline__ float cinn_fast_tanh(float x) {
  // tanh(x) = 1 - 2 / (exp(2x) + 1); saturates correctly for large |x|.
  return 1.0f - __fdividef(2.0f, __expf(2.0f * x) + 1.0f);
}

// ------------------------------------------------------------------------------------------
// Combiners and identities.
// ------------------------------------------------------------------------------------------
#define CINN_RT_OP_sum(a, b) ((a) + (b))
#define CINN_RT_OP_prod(a, b) ((a) * (b))
#define CINN_RT_OP_max(a, b) ((a) > (b) ? (a) : (b))
#define CINN_RT_OP_min(a, b) ((a) < (b) ? (a) : (b))
#define CINN_RT_OP_all(a, b) ((a) && (b))
#define CINN_RT_OP_any(a, b) ((a) || (b))

#define CINN_RT_F32_INF __int_as_float(0x7f800000)
#define CINN_RT_F64_INF __longlong_as_double(0x7ff0000000000000LL)
#define CINN_RT_I32_MAX 2147483647
#define CINN_RT_I32_MIN (-2147483647 - 1)
#define CINN_RT_I64_MAX 9223372036854775807LL
#define CINN_RT_I64_MIN (-9223372036854775807LL - 1LL)

#define CINN_RT_IDENTITY(x) x
#define CINN_RT_TO_INT(x) ((int)(x))
#define CINN_RT_TO_BOOL(x) ((x) != 0)

// ------------------------------------------------------------------------------------------
// One family of helpers for (op, suffix).
//   T: the value type; ACC: the type reductions are computed in (and the shm element type);
//   TO_ACC / FROM_ACC convert between them; IDENT is the identity of OP in ACC.
// ------------------------------------------------------------------------------------------
#define CINN_RT_DEFINE_REDUCE(OP, SFX, T, ACC, IDENT, TO_ACC, FROM_ACC)                               \
  __device__ __forceinline__ ACC cinn_warp_shuffle_##OP##_##SFX##_internal(ACC v, int width) {          \
    const unsigned mask = __activemask();                                                             \
    for (int offset = width >> 1; offset > 0; offset >>= 1) {                                         \
      ACC other = __shfl_xor_sync(mask, v, offset, width);                                            \
      v = CINN_RT_OP_##OP(v, other);                                                                   \
    }                                                                                                 \
    return v;                                                                                         \
  }                                                                                                   \
  __device__ __forceinline__ T cinn_warp_reduce_##OP##_##SFX(const T value) {                           \
    const int width = blockDim.x < 32 ? (int)blockDim.x : 32;                                        \
    return FROM_ACC(cinn_warp_shuffle_##OP##_##SFX##_internal(TO_ACC(value), width));                \
  }                                                                                                   \
  __device__ __forceinline__ T cinn_block_reduce_##OP##_##SFX(const T value, ACC* shm,                 \
                                                               bool return_warp = false) {            \
    const int width = blockDim.x < 32 ? (int)blockDim.x : 32;                                        \
    ACC v = cinn_warp_shuffle_##OP##_##SFX##_internal(TO_ACC(value), width);                          \
    if (return_warp || blockDim.x <= 32) {                                                            \
      return FROM_ACC(v);                                                                             \
    }                                                                                                 \
    ACC* row_shm = shm + (threadIdx.z * blockDim.y + threadIdx.y) * 32;                               \
    const int lane = threadIdx.x & 31;                                                                \
    const int warp = threadIdx.x >> 5;                                                                \
    __syncthreads(); /* earlier users of shm are done */                                              \
    if (lane == 0) {                                                                                  \
      row_shm[warp] = v;                                                                              \
    }                                                                                                 \
    __syncthreads();                                                                                  \
    if (warp == 0) {                                                                                  \
      const int num_warps = (blockDim.x + 31) >> 5;                                                   \
      ACC partial = lane < num_warps ? row_shm[lane] : (ACC)(IDENT);                                  \
      partial = cinn_warp_shuffle_##OP##_##SFX##_internal(partial, 32);                               \
      if (lane == 0) {                                                                                \
        row_shm[0] = partial;                                                                         \
      }                                                                                               \
    }                                                                                                 \
    __syncthreads();                                                                                  \
    return FROM_ACC(row_shm[0]);                                                                      \
  }                                                                                                   \
  __device__ __forceinline__ T cinn_discrete_reduce_##OP##_##SFX(const T value, ACC* shm) {            \
    const int bx = blockDim.x;                                                                        \
    const int base = threadIdx.z * blockDim.y * bx + threadIdx.x;                                     \
    __syncthreads(); /* earlier users of shm are done */                                              \
    shm[base + threadIdx.y * bx] = TO_ACC(value);                                                     \
    __syncthreads();                                                                                  \
    for (int n = blockDim.y; n > 1;) {                                                                \
      const int half = (n + 1) >> 1;                                                                  \
      if ((int)threadIdx.y + half < n) {                                                              \
        shm[base + threadIdx.y * bx] =                                                                \
            CINN_RT_OP_##OP(shm[base + threadIdx.y * bx], shm[base + (threadIdx.y + half) * bx]);     \
      }                                                                                               \
      __syncthreads();                                                                                \
      n = half;                                                                                       \
    }                                                                                                 \
    return FROM_ACC(shm[base]);                                                                       \
  }

#define CINN_RT_DEFINE_NUMERIC(SFX, T, ACC, ZERO, ONE, LOWEST, HIGHEST, TO_ACC, FROM_ACC) \
  CINN_RT_DEFINE_REDUCE(sum, SFX, T, ACC, ZERO, TO_ACC, FROM_ACC)                         \
  CINN_RT_DEFINE_REDUCE(prod, SFX, T, ACC, ONE, TO_ACC, FROM_ACC)                         \
  CINN_RT_DEFINE_REDUCE(max, SFX, T, ACC, LOWEST, TO_ACC, FROM_ACC)                       \
  CINN_RT_DEFINE_REDUCE(min, SFX, T, ACC, HIGHEST, TO_ACC, FROM_ACC)

CINN_RT_DEFINE_NUMERIC(fp32, float, float, 0.0f, 1.0f, -CINN_RT_F32_INF, CINN_RT_F32_INF,
                       CINN_RT_IDENTITY, CINN_RT_IDENTITY)
CINN_RT_DEFINE_NUMERIC(fp64, double, double, 0.0, 1.0, -CINN_RT_F64_INF, CINN_RT_F64_INF,
                       CINN_RT_IDENTITY, CINN_RT_IDENTITY)
CINN_RT_DEFINE_NUMERIC(fp16, __half, float, 0.0f, 1.0f, -CINN_RT_F32_INF, CINN_RT_F32_INF,
                       __half2float, __float2half)
CINN_RT_DEFINE_NUMERIC(bf16, __nv_bfloat16, float, 0.0f, 1.0f, -CINN_RT_F32_INF, CINN_RT_F32_INF,
                       __bfloat162float, __float2bfloat16)
CINN_RT_DEFINE_NUMERIC(int32, int, int, 0, 1, CINN_RT_I32_MIN, CINN_RT_I32_MAX,
                       CINN_RT_IDENTITY, CINN_RT_IDENTITY)
CINN_RT_DEFINE_NUMERIC(int64, long long int, long long int, 0LL, 1LL, CINN_RT_I64_MIN, CINN_RT_I64_MAX,
                       CINN_RT_IDENTITY, CINN_RT_IDENTITY)
CINN_RT_DEFINE_REDUCE(all, bool, bool, int, 1, CINN_RT_TO_INT, CINN_RT_TO_BOOL)
CINN_RT_DEFINE_REDUCE(any, bool, bool, int, 0, CINN_RT_TO_INT, CINN_RT_TO_BOOL)

// Checked builds (`build(..., checked=True)`): every index the compiler cannot prove in range goes
// through cinn_checked_index.  The first failing check (per launch) records its number + 1 and the
// index in cinn_oob_status, which the host reads after the launch and turns into an
// OutOfBoundsAccessError; the access itself goes to element 0 instead (or traps when the
// dimension is empty, where no element is safe).
__device__ long long cinn_oob_status[2];

// Traffic-counting builds (`generate_cuda(..., count_traffic=True)`): every global load and store adds its
// bytes here ([0] loaded, [1] stored); the host zeroes both before a launch and reads them after
// (codegen.cuda.traffic). A load prints as `(cinn_traffic_add(0, 4), A[i])`.
__device__ unsigned long long cinn_traffic[2];

__device__ __forceinline__ void cinn_traffic_add(int store, unsigned long long bytes) {
  atomicAdd(&cinn_traffic[store], bytes);
}

__device__ __forceinline__ long long cinn_checked_index(long long index, long long extent, int check) {
  if ((unsigned long long)index < (unsigned long long)extent) return index;
  if (atomicCAS((unsigned long long*)&cinn_oob_status[0], 0ull, (unsigned long long)check + 1ull) == 0ull) {
    cinn_oob_status[1] = index;
  }
  if (extent <= 0) __trap();
  return 0;
}
