"""The peers `cinn-py bench --peers` times next to cinn-py: what a user would pick instead.

* `torch.compile`: each workload's PyTorch expression (`Workload.torch`) compiled by
  `torch.compile` (TorchInductor's C++/OpenMP CPU backend; needs a C++ compiler), with static
  shapes; the compile happens in the warm-up calls, outside the timed ones.
* `numba`: the loops a numba user writes for each workload, `@njit(parallel=True,
  fastmath=True)` with `prange` over the rows / blocks / tasks (the same fast-math licence the
  cinn-py kernels get), writing into a preallocated output like the cinn-py kernels. The column
  sum keeps a strip of partial sums per task, the transpose runs over 32 x 32 tiles and the
  matmuls are the `i, k, j` loop order (a contiguous, vectorisable inner loop) without packing
  or register tiling: what one writes without calling BLAS.

Both are optional (`torch`, `numba`); a missing one is reported as unavailable, not an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["PEERS", "numba_kernel", "torch_compiled"]

PEERS = ("torch.compile", "numba")
GELU_C = math.sqrt(2.0 / math.pi)
prange = range  # numba.prange once numba is imported (`_jit` rebinds it before compiling)


# ---------------------------------------------------------------------------------------------
# torch.compile
# ---------------------------------------------------------------------------------------------
def torch_compiled(torch: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(torch, *tensors)` compiled with `torch.compile` (static shapes). Dynamo's caches are
    reset first: every workload compiles the same wrapper code object, and past its recompile
    limit (8) dynamo would silently run it eagerly."""
    torch._dynamo.reset()
    return torch.compile(lambda *tensors: fn(torch, *tensors), dynamic=False)


# ---------------------------------------------------------------------------------------------
# numba: one function per workload, `f(*inputs, out)`
# ---------------------------------------------------------------------------------------------
def _relu(x: np.ndarray, out: np.ndarray) -> None:
    for i in prange(x.shape[0]):
        v = x[i] * np.float32(2) + np.float32(1)
        out[i] = v if v > 0 else np.float32(0)


def _rmsnorm(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    rows, cols = x.shape
    for i in prange(rows):
        s = np.float32(0)
        for j in range(cols):
            s += x[i, j] * x[i, j]
        r = np.float32(1) / np.sqrt(s / np.float32(cols) + np.float32(1e-6))
        for j in range(cols):
            out[i, j] = x[i, j] * r * w[j]


def _softmax(x: np.ndarray, out: np.ndarray) -> None:
    rows, cols = x.shape
    for i in prange(rows):
        m = x[i, 0]
        for j in range(cols):
            m = max(m, x[i, j])
        s = np.float32(0)
        for j in range(cols):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        r = np.float32(1) / s
        for j in range(cols):
            out[i, j] *= r


def _rowsum(x: np.ndarray, out: np.ndarray) -> None:
    for i in prange(x.shape[0]):
        s = np.float32(0)
        for j in range(x.shape[1]):
            s += x[i, j]
        out[i] = s


def _colsum(x: np.ndarray, out: np.ndarray) -> None:
    rows, cols = x.shape
    tasks = 8
    partial = np.zeros((tasks, cols), dtype=np.float32)
    per = (rows + tasks - 1) // tasks
    for t in prange(tasks):
        for i in range(t * per, min(rows, (t + 1) * per)):
            for j in range(cols):
                partial[t, j] += x[i, j]
    for j in range(cols):
        s = np.float32(0)
        for t in range(tasks):
            s += partial[t, j]
        out[j] = s


def _layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    rows, cols = x.shape
    for i in prange(rows):
        s = np.float32(0)
        sq = np.float32(0)
        for j in range(cols):
            s += x[i, j]
            sq += x[i, j] * x[i, j]
        mean = s / np.float32(cols)
        var = max(sq / np.float32(cols) - mean * mean, np.float32(0))
        r = np.float32(1) / np.sqrt(var + np.float32(1e-5))
        for j in range(cols):
            out[i, j] = (x[i, j] - mean) * r * g[j] + b[j]


def _bias_gelu(x: np.ndarray, bias: np.ndarray, out: np.ndarray) -> None:
    rows, cols = x.shape
    c = np.float32(GELU_C)
    for i in prange(rows):
        for j in range(cols):
            v = x[i, j] + bias[j]
            out[i, j] = (np.float32(0.5) * v
                         * (np.float32(1) + np.tanh(c * (v + np.float32(0.044715) * v * v * v))))


def _transpose(x: np.ndarray, out: np.ndarray) -> None:
    n, m = x.shape
    tile = 32
    tiles_m = (m + tile - 1) // tile
    for t in prange(((n + tile - 1) // tile) * tiles_m):
        i0, j0 = (t // tiles_m) * tile, (t % tiles_m) * tile
        for j in range(j0, min(m, j0 + tile)):
            for i in range(i0, min(n, i0 + tile)):
                out[j, i] = x[i, j]


def _matmul_bias_relu(a: np.ndarray, b: np.ndarray, bias: np.ndarray, out: np.ndarray,
                      relu: bool = True) -> None:
    m, k = a.shape
    n = b.shape[1]
    for i in prange(m):
        for j in range(n):
            out[i, j] = 0
        for p in range(k):
            aip = a[i, p]
            for j in range(n):
                out[i, j] += aip * b[p, j]
        if relu:
            for j in range(n):
                out[i, j] = max(out[i, j] + bias[j], np.float32(0))


def _bmm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    batch, m, k = a.shape
    n = b.shape[2]
    for t in prange(batch * m):
        z, i = t // m, t % m
        for j in range(n):
            out[z, i, j] = 0
        for p in range(k):
            aip = a[z, i, p]
            for j in range(n):
                out[z, i, j] += aip * b[z, p, j]


NUMBA_FUNCS: dict[str, Callable[..., None]] = {
    "relu": _relu, "rmsnorm": _rmsnorm, "softmax": _softmax, "rowsum": _rowsum, "colsum": _colsum,
    "layernorm": _layernorm, "bias_gelu": _bias_gelu, "transpose": _transpose,
    "bmm": _bmm, "matmul_bias_relu": _matmul_bias_relu,
}
"""Workload name -> its numba loops (the plain Python function, compiled by `numba_kernel`)."""


def numba_kernel(numba: Any, name: str) -> Callable[..., None] | None:
    """The numba-compiled loops of workload `name` (None: no numba version of it)."""
    globals()["prange"] = numba.prange  # numba resolves globals when it compiles
    if name == "matmul":  # the same loops without the epilogue
        mm = numba.njit(parallel=True, fastmath=True)(_matmul_bias_relu)
        return lambda a, b, out: mm(a, b, np.zeros(0, np.float32), out, False)
    fn = NUMBA_FUNCS.get(name)
    return None if fn is None else numba.njit(parallel=True, fastmath=True)(fn)
