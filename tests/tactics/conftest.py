"""Groups built with the compute DSL for the auto-scheduler tests."""

from __future__ import annotations

from typing import Any

import numpy as np

import cinn_py as cp


def rmsnorm(rows: Any, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    W = cp.placeholder((cols,), "float32", "W")
    k = cp.reduce_axis(cols, "k")
    Sq = cp.compute((rows,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], k), "Sq")
    Y = cp.compute((rows, cols), lambda i, j: X[i, j] * cp.rsqrt(Sq[i] * (1.0 / cols) + 1e-6) * W[j], "Y")
    return cp.lower("rmsnorm", [X, W, Y])


def softmax(rows: Any, cols: Any) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k1, k2 = cp.reduce_axis(cols, "k1"), cp.reduce_axis(cols, "k2")
    M = cp.compute((rows,), lambda i: cp.reduce_max(X[i, k1], k1), "M")
    E = cp.compute((rows, cols), lambda i, j: cp.exp(X[i, j] - M[i]), "E")
    S = cp.compute((rows,), lambda i: cp.reduce_sum(E[i, k2], k2), "S")
    Y = cp.compute((rows, cols), lambda i, j: E[i, j] / S[i], "Y")
    return cp.lower("softmax", [X, Y])


def layernorm(rows: int, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k1, k2 = cp.reduce_axis(cols, "k1"), cp.reduce_axis(cols, "k2")
    Sum = cp.compute((rows,), lambda i: cp.reduce_sum(X[i, k1], k1), "Sum")
    D = cp.compute((rows, cols), lambda i, j: X[i, j] - Sum[i] * (1.0 / cols), "D")
    Sq = cp.compute((rows,), lambda i: cp.reduce_sum(D[i, k2] * D[i, k2], k2), "Sq")
    Y = cp.compute((rows, cols), lambda i, j: D[i, j] * cp.rsqrt(Sq[i] * (1.0 / cols) + 1e-5), "Y")
    return cp.lower("layernorm", [X, Y])


def colnorm(rows: int, cols: int) -> Any:
    X = cp.placeholder((rows, cols), "float32", "X")
    k = cp.reduce_axis(rows, "k")
    C = cp.compute((cols,), lambda j: cp.reduce_sum(X[k, j], k), "C")
    Y = cp.compute((rows, cols), lambda i, j: X[i, j] / C[j], "Y")
    return cp.lower("colnorm", [X, Y])


def elementwise(n: Any, m: Any) -> Any:
    X = cp.placeholder((n, m), "float32", "X")
    A = cp.compute((n, m), lambda i, j: X[i, j] * 2.0, "A")
    Y = cp.compute((n, m), lambda i, j: cp.tanh(A[i, j]) + 1.0, "Y")
    return cp.lower("elementwise", [X, Y])


def broadcast(n: int, m: int) -> Any:
    X = cp.placeholder((n, m), "float32", "X")
    B = cp.placeholder((m,), "float32", "B")
    T = cp.compute((n,), lambda i: X[i, 0] * 0.5, "T")
    Y = cp.compute((n, m), lambda i, j: X[i, j] + B[j] * T[i], "Y")
    return cp.lower("broadcast", [X, B, Y])


def transpose(n: int, m: int) -> Any:
    X = cp.placeholder((n, m), "float32", "X")
    T = cp.compute((m, n), lambda i, j: X[j, i], "T")
    Y = cp.compute((m, n), lambda i, j: T[i, j] * 3.0 - 1.0, "Y")
    return cp.lower("transpose", [X, Y])


def reduce_all(n: int, zero_d: bool) -> Any:
    X = cp.placeholder((n,), "float32", "X")
    k = cp.reduce_axis(n, "k")
    shape = () if zero_d else (1,)
    fn = (lambda: cp.reduce_sum(X[k] * 2.0, k)) if zero_d else (lambda i: cp.reduce_sum(X[k] * 2.0, k))
    R = cp.compute(shape, fn, "R")
    return cp.lower("reduce_all", [X, R])


def inputs_for(func: Any, shapes: dict[str, tuple[int, ...]] | None = None,
               seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 inputs in [0.5, 1.5) (away from 0: the groups divide by sums)."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in func.inputs:
        shape = (shapes or {}).get(t.name) or tuple(int(d.value) for d in t.shape)
        out[t.name] = (rng.random(shape, dtype=np.float32) + 0.5).astype(np.float32)
    return out
