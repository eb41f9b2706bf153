"""A padded window read as one masked vector load.

conv2d, pool2d and their gradients read their input as `select(inside, x[.., min(max(e, lo), hi)
..], pad)`: the clamped index never leaves the tensor, and `inside` says whether `e` itself is in
[lo, hi]. In a vector loop the clamps make the index non-affine in the lane (a gather), although on
every lane where `inside` holds the clamped index *is* `e`. So when `inside` implies each clamp is
the identity (it contains `e >= lo` and `e < hi + 1` or `e <= hi` among its conjuncts) and the
unclamped index moves by one element per lane, the read is `llvm.masked.load` at the unclamped
address with mask `inside` and pass-through `pad`: lanes outside are never read (AVX-512 masked
loads suppress their faults), so the clamps are not needed.
"""

from __future__ import annotations

from cinn_py.ir import GE, LE, LT, Add, And, Expr, IntImm, Load, Max, Min, Select, Sub

__all__ = ["unclamped_window_load"]


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _const(e: Expr) -> int | None:
    """The value of a constant integer expression (`56 - 1`), else None."""
    if isinstance(e, IntImm):
        return int(e.value)
    if isinstance(e, (Add, Sub)):
        a, b = _const(e.a), _const(e.b)
        if a is None or b is None:
            return None
        return a + b if isinstance(e, Add) else a - b
    return None


def _clamp(index: Expr) -> tuple[Expr, int, int] | None:
    """(e, lo, hi) of `min(max(e, lo), hi)`."""
    if not (isinstance(index, Min) and isinstance(index.a, Max)):
        return None
    lo, hi = _const(index.a.b), _const(index.b)
    return None if lo is None or hi is None else (index.a.a, lo, hi)


def _bounded(e: Expr, lo: int, hi: int, facts: list[Expr]) -> bool:
    """`facts` (conjuncts) contain `e >= lo` and `e < hi + 1` (or `e <= hi`)."""
    low = any(isinstance(f, GE) and f.a == e and _const(f.b) == lo for f in facts)
    high = any((isinstance(f, LT) and f.a == e and _const(f.b) == hi + 1) or
               (isinstance(f, LE) and f.a == e and _const(f.b) == hi) for f in facts)
    return low and high


def unclamped_window_load(e: Select) -> Load | None:
    """`e`'s load with its clamps removed, when `e.condition` makes every clamp the identity
    (module docstring); None when `e` is not such a read."""
    load = e.true_value
    if not isinstance(load, Load):
        return None
    facts = _conjuncts(e.condition)
    indices: list[Expr] = []
    clamped = False
    for index in load.indices:
        clamp = _clamp(index)
        if clamp is None:
            indices.append(index)
            continue
        if not _bounded(*clamp, facts):
            return None
        indices.append(clamp[0])
        clamped = True
    return Load(load.tensor, tuple(indices)) if clamped else None
