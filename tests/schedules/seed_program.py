"""The seed example (seed 003 §2.2) as a lowered function, plus its numpy reference.

    X[S1, S2, 1024] -> A = X * 2 -> B = A + 1 -> C = sum_k B -> D = C * 2
                    -> E = broadcast D to [S1, S2, 1024] -> F = E + 1

`seed_func()` lowers it with `cinn_py.lower("fn", [X, F])` when the compute DSL is available and
otherwise builds the same loop nests with the IR constructors (`sched_programs.stage`).
"""

from __future__ import annotations

import numpy as np

from cinn_py import ir
from cinn_py.ir import LoweredFunc, Store
from tests.schedules.sched_programs import func, stage, sym, tensor

from cinn_py.ir import dtype as dt

RED = 1024


def seed_func(red: int = RED) -> LoweredFunc:
    try:
        import cinn_py.frontend.compute  # noqa: F401, PLC0415
        import cinn_py.lowering.ast_gen  # noqa: F401, PLC0415
    except ImportError:
        return _constructed(red)
    return _lowered(red)


def _lowered(red: int) -> LoweredFunc:  # pragma: no cover - switches on when the DSL lands
    import cinn_py as cp  # noqa: PLC0415
    from cinn_py.lowering.ast_gen import lower  # noqa: PLC0415

    s1, s2 = cp.sym("S1"), cp.sym("S2")
    x = cp.placeholder((s1, s2, red), "float32", "X")
    a = cp.compute((s1, s2, red), lambda i, j, k: x[i, j, k] * 2.0, "A")
    b = cp.compute((s1, s2, red), lambda i, j, k: a[i, j, k] + 1.0, "B")
    r = cp.reduce_axis(red, "k")
    c = cp.compute((s1, s2), lambda i, j: cp.reduce_sum(b[i, j, r], [r]), "C")
    d = cp.compute((s1, s2), lambda i, j: c[i, j] * 2.0, "D")
    e = cp.compute((s1, s2, red), lambda i, j, k: d[i, j], "E")
    f = cp.compute((s1, s2, red), lambda i, j, k: e[i, j, k] + 1.0, "F")
    return lower("fn", [x, f])


def _constructed(red: int) -> LoweredFunc:
    s1, s2 = sym("S1"), sym("S2")
    idt = dt.int64
    full, flat = (s1, s2, red), (s1, s2)
    x, a, b, e, f = (tensor(n, full, idt) for n in "XABEF")
    c, d = tensor("C", flat, idt), tensor("D", flat, idt)
    c_init = ir.Tensor("C__reduce_init", c.shape, c.dtype, c.buffer)
    two, one = ir.const(2.0), ir.const(1.0)
    stages = [
        stage("A", full, idt, lambda v: Store(a, ir.Load(x, tuple(v)) * two, tuple(v))),
        stage("B", full, idt, lambda v: Store(b, ir.Load(a, tuple(v)) + one, tuple(v))),
        stage("C", flat, idt, lambda v: Store(c, ir.Load(c, (v[0], v[1])) + ir.Load(b, tuple(v)), (v[0], v[1])),
              reduce_extents=(red,), init=lambda v: Store(c_init, ir.const(0.0), (v[0], v[1]))),
        stage("D", flat, idt, lambda v: Store(d, ir.Load(c, tuple(v)) * two, tuple(v))),
        stage("E", full, idt, lambda v: Store(e, ir.Load(d, (v[0], v[1])), tuple(v))),
        stage("F", full, idt, lambda v: Store(f, ir.Load(e, tuple(v)) + one, tuple(v))),
    ]
    return func("fn", [x], [f], stages, [s1, s2], temps=[a, b, c, d, e])


def seed_reference(x: np.ndarray) -> np.ndarray:
    """numpy F for input X (float64 accumulation, as a tolerance reference)."""
    c = (x.astype(np.float64) * 2 + 1).sum(axis=2)
    return (np.broadcast_to((c * 2)[:, :, None], x.shape) + 1).astype(np.float32)
