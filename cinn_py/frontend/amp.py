"""Automatic mixed precision: a graph pass that runs a float32 program's matmuls and elementwise
arithmetic in float16 or bfloat16 while reductions and normalisations stay in float32 (PAI's
AMP, PyTorch autocast's lists).

Each op falls in one of three lists:

- **allow** (`ALLOW`): run in the low dtype; float32 operands are cast down (matmul, add,
  multiply, relu, gelu, tanh, ...). Matmul accumulates in float32 inside its kernel anyway.
- **deny** (`DENY`): run in float32; low-precision operands are cast up (every reduction,
  softmax, layer_norm, rms_norm, exp, log, pow, erf, ...): their sums accumulate in float32 and
  their ranges do not overflow float16.
- everything else **follows** its operands: low when every floating-point operand is already
  low, else float32 (movement ops such as reshape/transpose/broadcast_to/slice/concat).

Program inputs keep their dtype (the fp32 master values); an output whose dtype changed is cast
back, so the pass preserves the program's signature. Casts are shared (one per value and dtype).

The low dtype is float16 or bfloat16. bfloat16 has float32's exponent range, so its gradients
neither overflow nor flush to zero where float32's would not: training in bfloat16 needs no loss
scaling, while float16 training should use `LossScaler` (its range ends at 65504 and its smallest
normal is 6.1e-5). Reductions accumulate in float32 inside every fp16/bf16 kernel either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.ir import DType, bfloat16, dtype_of, float16, float32

ALLOW: frozenset[str] = frozenset({
    "matmul", "add", "subtract", "multiply", "divide", "negative", "scale", "relu", "relu6",
    "leaky_relu", "gelu",
    "tanh", "sigmoid", "silu", "maximum", "minimum", "clip", "select", "identity", "abs",
})
DENY: frozenset[str] = frozenset({
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "softmax",
    "layer_norm", "rms_norm",
    "batchnorm", "exp", "log", "log2", "log10", "log1p", "pow", "erf", "rsqrt", "sqrt",
    "reciprocal", "cumsum",
})


LOW_DTYPES: tuple[DType, ...] = (float16, bfloat16)
"""The dtypes allow-listed ops may run in."""


@dataclass(frozen=True)
class AmpLists:
    """The op lists of `auto_mixed_precision` (replace a list to customise)."""

    allow: frozenset[str] = ALLOW
    deny: frozenset[str] = DENY

    def __post_init__(self) -> None:
        both = self.allow & self.deny
        if both:
            raise FrontendError(f"auto_mixed_precision: ops {sorted(both)} are in both the allow and deny "
                                "lists")


def auto_mixed_precision(program: Program, dtype: str = "float16", lists: AmpLists = AmpLists()) -> Program:
    """`program` (float32) with its allow-listed ops in `dtype`, see the module docstring."""
    low = dtype_of(dtype)
    if low not in LOW_DTYPES:
        raise FrontendError(f"auto_mixed_precision: argument 'dtype': expected one of "
                            f"{[d.scalar_name() for d in LOW_DTYPES]}, got {low}")
    nb = NetBuilder(program.name)
    env: dict[int, Variable] = {id(v): nb.create_input(v.dtype, v.shape, v.name) for v in program.inputs}
    nb.reserve_names([op.output.name for op in program.ops])
    casts = _Casts(nb)
    for op in program.ops:
        ins = [env[id(v)] for v in op.inputs]
        want = _precision(op, ins, low, lists)
        ins = ([casts.to(v, want) if want is not None and v.dtype.is_float and v.dtype != want else v
                for v in ins])
        env[id(op.output)] = nb.emit(op.type, ins, dict(op.attrs), name=op.output.name)
    outs = [casts.to(env[id(v)], v.dtype) for v in program.outputs]
    return nb.build(outs)


def _precision(op: Operator, ins: list[Variable], low: DType, lists: AmpLists) -> DType | None:
    """The float dtype the op's float operands get, or None to leave them (no float operand, or
    an op such as cast whose float32 operand is meant)."""
    floats = [v for v in ins if v.dtype.is_float]
    if not floats or op.type == "cast":
        return None
    if op.type in lists.deny:
        return float32
    if op.type in lists.allow:
        return low
    return low if all(v.dtype == low for v in floats) else float32


@dataclass
class _Casts:
    nb: NetBuilder
    done: dict[tuple[int, str], Variable] = field(default_factory=dict)

    def to(self, v: Variable, d: DType) -> Variable:
        if v.dtype == d:
            return v
        key = (id(v), d.scalar_name())
        if key not in self.done:
            self.done[key] = self.nb.cast(v, d.scalar_name())
        return self.done[key]


# -- loss scaling -----------------------------------------------------------------------------------------
@dataclass
class LossScaler:
    """Dynamic loss scaling (PyTorch's GradScaler, Paddle's `decr_every_n_nan_or_inf`): multiply
    the loss by `scale` before the float16 backward, divide the gradients by it after; a step whose
    gradients hold inf/NaN is skipped and halves the scale; `growth_interval` clean steps double it.
    Not needed for bfloat16 (float32's exponent range; PyTorch's GradScaler is off for it too)."""

    scale: float = 2.0 ** 16
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    _clean_steps: int = 0

    def scale_loss(self, loss: np.ndarray) -> np.ndarray:
        return (np.asarray(loss, np.float32) * np.float32(self.scale)).astype(np.asarray(loss).dtype)

    def unscale(self, grads: Iterable[np.ndarray]) -> tuple[list[np.ndarray], bool]:
        """float32 gradients divided by the scale, and whether all are finite (else skip the step)."""
        out = [np.asarray(g, np.float32) / np.float32(self.scale) for g in grads]
        return out, all(bool(np.isfinite(g).all()) for g in out)

    def update(self, finite: bool) -> None:
        if not finite:
            self.scale *= self.backoff_factor
            self._clean_steps = 0
            return
        self._clean_steps += 1
        if self._clean_steps >= self.growth_interval:
            self.scale *= self.growth_factor
            self._clean_steps = 0
