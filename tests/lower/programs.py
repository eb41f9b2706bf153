"""Small compute programs shared by the lowering tests (golden text, parser round trip).

Each builder returns the lowered function; build it after a name reset (the autouse fixture) so
that the printed iter-var names are the pinned ones.
"""

from __future__ import annotations

import cinn_py as cp
from cinn_py.ir import LoweredFunc, reset_name_ids


def elementwise() -> LoweredFunc:
    A = cp.placeholder((32, 64), "float32", "A")
    B = cp.compute((32, 64), lambda i, j: A[i, j] * 2.0, "B")
    return cp.lower("fn", [A, B])


def broadcast() -> LoweredFunc:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4, 8), lambda i, j: A[i], "B")
    return cp.lower("bcast", [A, B])


def reductions() -> dict[str, LoweredFunc]:
    out = {}
    for kind, dtype in [("sum", "float32"), ("prod", "int32"), ("max", "float32"), ("min", "int64"),
                        ("all", "bool"), ("any", "bool")]:
        reset_name_ids()
        A = cp.placeholder((8, 16), dtype, "A")
        k = cp.reduce_axis(16, "k")
        fn = getattr(cp, f"reduce_{kind}")
        B = cp.compute((8,), lambda i: fn(A[i, k], k), "B")  # noqa: B023 - called at once
        out[kind] = cp.lower(f"reduce_{kind}", [A, B])
    return out


def multi_axis_keepdims() -> LoweredFunc:
    A = cp.placeholder((2, 3, 4), "float32", "A")
    r0 = cp.reduce_axis(2, "r0")
    r2 = cp.reduce_axis(4, "r2")
    B = cp.compute((1, 3, 1), lambda i, j, k: cp.reduce_sum(A[r0, j, r2], [r0, r2]), "B")
    return cp.lower("keep", [A, B])


def full_reduction() -> LoweredFunc:
    A = cp.placeholder((4, 8), "float32", "A")
    r0, r1 = cp.reduce_axis(4, "r0"), cp.reduce_axis(8, "r1")
    T = cp.compute((), lambda: cp.reduce_sum(A[r0, r1], [r0, r1]), "T")
    U = cp.compute((), lambda: T[()] * 0.5, "U")
    return cp.lower("mean", [A, U])


def half() -> LoweredFunc:
    A = cp.placeholder((16,), "float16", "A")
    B = cp.placeholder((16,), "bfloat16", "B")
    C = cp.compute((16,), lambda i: cp.exp(A[i]) * 2, "C")
    D = cp.compute((16,), lambda i: cp.maximum(B[i], 0), "D")
    return cp.lower("half", [A, B, C, D])


def ints_bool() -> LoweredFunc:
    A = cp.placeholder((6,), "int32", "A")
    M = cp.placeholder((6,), "bool", "M")
    B = cp.compute((6,), lambda i: cp.select(M[i] & (A[i] > 0), A[i] % 3, -1), "B")
    C = cp.compute((6,), lambda i: cp.cast(B[i], "float32") + cp.cast(i, "float32"), "C")
    return cp.lower("ints", [A, M, B, C])


def symbolic_mixed() -> LoweredFunc:
    S = cp.sym("S")
    X = cp.placeholder((S, 4), "float32", "X")
    W = cp.placeholder((4,), "float32", "W")
    k = cp.reduce_axis(4, "k")
    Y = cp.compute((S,), lambda i: cp.reduce_sum(X[i, k] * W[k], [k]), "Y")
    Z = cp.compute((S * 2,), lambda i: Y[i / 2] + W[3], "Z")
    return cp.lower("sym", [X, W, Z])


def rms_norm() -> LoweredFunc:
    S = cp.sym("S")
    X = cp.placeholder((S, 768), "float32", "X")
    k = cp.reduce_axis(768, "k")
    SS = cp.compute((S,), lambda i: cp.reduce_sum(X[i, k] * X[i, k], [k]), "SS")
    Y = cp.compute((S, 768), lambda i, j: X[i, j] * cp.rsqrt(SS[i] / 768.0 + 1e-6), "Y")
    return cp.lower("rms_norm", [X, Y])


def two_outputs() -> LoweredFunc:
    A = cp.placeholder((4,), "float32", "A")
    B = cp.compute((4,), lambda i: A[i] + 1, "B")
    C = cp.compute((4,), lambda i: cp.sigmoid(B[i]), "C")
    return cp.lower("two", [A, C, B])
