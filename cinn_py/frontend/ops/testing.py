"""Differential test declarations of ops (`OpDef.test`), read by the op harness.

An op declares the dtypes it supports and, per dtype, its `Case`s: NetBuilder calls with input
specs (shape, value range) and keyword arguments. The harness
(`cinn_py.tools.op_harness`, run by tests/frontend/net_builder/test_op_harness.py) builds each
case, runs it compiled for x86 against the op's numpy reference (`Program.run_numpy`), and
NVRTC-compiles its CUDA kernels.

Shapes hold ints and symbolic-dim names ("S0"); the harness binds a name to a few values (1 and
a non-power-of-two), so one case checks a symbolic batch dim at several sizes. The default shape
set covers size-1 dims, non-power-of-two dims and a symbolic dim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

SpecDim = Union[int, str]
SpecShape = tuple[SpecDim, ...]

FLOATS = ("float32", "float16", "bfloat16", "float64")
INTS = ("int32", "int64")
NUMERIC = ("float32", "float16", "bfloat16", "int32", "int64")

SHAPES: tuple[SpecShape, ...] = ((1,), (7,), (3, 5), (2, 1, 6), ("S0", 5))
"""Default shapes of elementwise cases: a size-1 dim, non-power-of-two dims, a symbolic batch."""


@dataclass(frozen=True)
class Input:
    """An input of a case: `shape`, `dtype` (None: the dtype under test) and values drawn
    uniformly from [low, high] (integers for integer dtypes, True/False for bool)."""

    shape: SpecShape
    dtype: str | None = None
    low: float = -2.0
    high: float = 2.0
    name: str | None = None
    avoid_zero: bool = False
    """Keep values away from 0 (|v| >= 0.5; integers nonzero): divisors."""
    specials: bool = False
    """Plant NaN, +inf and -inf among float values (is_nan, is_inf, is_finite)."""


@dataclass(frozen=True)
class Case:
    """A NetBuilder call: `args` are `Input`s (become input variables) or plain Python values
    passed as they are (a scalar operand, a shape); `kwargs` are passed by name."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    method: str | None = None
    """The method to call; None: the op's first method."""

    def label(self) -> str:
        parts = ["x".join(str(d) for d in a.shape) or "scalar" if isinstance(a, Input) else repr(a)
                 for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return ",".join(parts).replace(" ", "")


CaseFn = Callable[[str], Sequence[Case]]


@dataclass(frozen=True)
class OpTest:
    """What the harness runs for one op: `cases(dtype)` for every dtype of `dtypes`."""

    dtypes: tuple[str, ...]
    cases: CaseFn
    rtol: float | None = None
    """Relative tolerance for float results (None: by dtype, see `tolerance`)."""
    atol: float | None = None
    cuda: bool = True
    """Whether the op's kernels are NVRTC-compiled (False only with a reason in the op module)."""


def tolerance(dtype: str, test: OpTest) -> tuple[float, float]:
    """(rtol, atol) for a result of `dtype`: exact for integers and bool."""
    base = {"float16": (4e-3, 4e-3), "bfloat16": (2e-2, 2e-2), "float32": (2e-5, 2e-6),
            "float64": (1e-12, 1e-14)}.get(dtype)
    if base is None:
        return 0.0, 0.0
    rtol = base[0] if test.rtol is None else max(base[0], test.rtol)
    atol = base[1] if test.atol is None else max(base[1], test.atol)
    return rtol, atol


# -- case generators ------------------------------------------------------------------------------------
def unary_cases(low: float = -2.0, high: float = 2.0, shapes: Sequence[SpecShape] = SHAPES,
                specials: bool = False, **kwargs: Any) -> CaseFn:
    """One case per shape, values in [low, high] (with NaN/inf planted under `specials`)."""
    def cases(dtype: str) -> list[Case]:
        return [Case((Input(s, low=low, high=high, specials=specials),), dict(kwargs)) for s in shapes]
    return cases


BROADCASTS: tuple[tuple[SpecShape, SpecShape, int], ...] = (
    ((3, 5), (5,), -1),          # numpy-style trailing alignment
    ((2, 3, 5), (3,), 1),        # CINN axis: y's dims align at axis 1
    ((2, 3, 5), (3, 1), 1),      # ... with a size-1 dim broadcast
    ((1, 5), (3, 1), -1),        # both operands broadcast
    (("S0", 5), (5,), -1),       # symbolic batch
    ((4,), (2, 4), -1),          # x is the smaller operand
)


def binary_cases(low: float = -2.0, high: float = 2.0, y_low: float | None = None,
                 y_high: float | None = None,
                 shapes: Sequence[SpecShape] = SHAPES,
                 broadcasts: Sequence[tuple[SpecShape, SpecShape, int]] = BROADCASTS,
                 scalar: float | None = None, y_avoid_zero: bool = False) -> CaseFn:
    """Equal shapes, CINN `axis` broadcasts and (with `scalar`) a Python-number operand."""
    ylo = low if y_low is None else y_low
    yhi = high if y_high is None else y_high

    def cases(dtype: str) -> list[Case]:
        def y(shape: SpecShape) -> Input:
            return Input(shape, low=ylo, high=yhi, avoid_zero=y_avoid_zero)
        out = [Case((Input(s, low=low, high=high), y(s))) for s in shapes]
        out += [Case((Input(a, low=low, high=high), y(b)), {"axis": axis}) for a, b, axis in broadcasts]
        if scalar is not None:
            value: Any = int(scalar) if dtype.startswith(("int", "uint")) else scalar
            out.append(Case((Input((3, 5), low=low, high=high), value)))
        return out
    return cases
