"""Run a compiled function on random inputs and compare it with the reference interpreter.

Used by `cinn-py run` and the demo: `run_and_compare(func, {"S1": 3})` builds the function for
the target, draws inputs (symbolic dims default to 4), runs the kernel and `run_ir`, and reports
the largest error per output and the kernel's median time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.pipeline import as_lowered_func, build
from cinn_py.interp import run_ir
from cinn_py.ir import Expr, LoweredFunc, Tensor
from cinn_py.symbolic import simplify

# Per-dtype tolerance of compiled vs interpreted results (libm vs numpy math, sum order).
TOLERANCE = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 2e-4, "float64": 1e-10}


@dataclass
class RunReport:
    """Outcome of one `run_and_compare`."""

    target: str
    symbols: dict[str, int]
    errors: dict[str, float] = field(default_factory=dict)
    """Max |kernel - interpreter| / (1 + |interpreter|) per output."""
    median_ms: float = 0.0
    ok: bool = True

    def format(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in self.symbols.items()) or "static shapes"
        lines = [f"target {self.target} ({dims}): median {self.median_ms:.3f} ms"]
        for name, err in self.errors.items():
            lines.append(f"  {name}: max relative error {err:.3g}")
        lines.append("OK: matches the interpreter" if self.ok else "MISMATCH against the interpreter")
        return "\n".join(lines)


def _dim_value(dim: Expr, symbols: dict[str, int]) -> int:
    from cinn_py.ir import IntImm, Var, substitute

    folded = simplify(substitute(dim, {Var(k, dim.dtype): IntImm(dim.dtype, v) for k, v in symbols.items()}))
    if not isinstance(folded, IntImm):
        raise ValueError(f"cannot evaluate dim {dim} with {symbols}; pass --dims for every symbolic dim")
    return folded.value


MAX_RUN_BYTES = 4 * 2**30
"""What `run` may allocate for its inputs and outputs (twice: kernel and interpreter)."""


def _check_memory(func: LoweredFunc, symbols: dict[str, int]) -> None:
    """Refuse dims whose tensors cannot be allocated, before numpy fails with a MemoryError."""
    total = 0
    for tensor in (*func.inputs, *func.outputs):
        shape = tuple(_dim_value(d, symbols) for d in tensor.shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"run: tensor '{tensor.name}' would have the negative shape {shape} with "
                             f"{symbols}")
        total += math.prod(shape) * max(1, tensor.dtype.bits // 8)
    if 2 * total > MAX_RUN_BYTES:
        raise ValueError(f"run: the inputs and outputs of '{func.name}' need {2 * total / 2**30:.3g} GiB "
                         "with "
                         f"{symbols} (at most {MAX_RUN_BYTES / 2**30:.3g} GiB); choose smaller --dims")


def random_inputs(func: LoweredFunc, symbols: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """One random array per input tensor, shaped by `symbols` (values in [-1, 1) for floats)."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for tensor in func.inputs:
        arrays[tensor.name] = _random_array(tensor, tuple(_dim_value(d, symbols) for d in tensor.shape), rng)
    return arrays


def _random_array(tensor: Tensor, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dtype = tensor.dtype
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_integral:
        return rng.integers(-8 if dtype.is_int else 0, 8, shape).astype(dtype.to_numpy())
    if dtype.kind == "bfloat":  # passed as bfloat16 bit patterns (uint16), as both runtimes accept
        bits = rng.uniform(-1, 1, shape).astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rng.uniform(-1, 1, shape).astype(dtype.to_numpy())


def run_and_compare(program: Any, symbols: dict[str, int] | None = None, *, seed: int = 0,
                    target: str = "x86", fast_math: bool = False, repeat: int = 5,
                    schedule: str | None = None) -> RunReport:
    """Build `program` for `target` (`schedule="auto"`: auto-scheduled first), run it on random
    inputs and compare with `run_ir`."""
    func = as_lowered_func(program)
    values = {v.name: 4 for v in func.scalar_args} | dict(symbols or {})
    unknown = sorted(set(values) - {v.name for v in func.scalar_args})
    if unknown:
        raise ValueError(f"run: {unknown} are not symbolic dims of '{func.name}' "
                         f"(it has {[v.name for v in func.scalar_args]})")
    _check_memory(func, values)
    inputs = random_inputs(func, values, seed)
    reference = run_ir(func, inputs, values)
    kernel = build(func, target=target, fast_math=fast_math, schedule=schedule)
    args = [inputs[t.name] for t in func.inputs]
    times, outputs = [], None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        outputs = kernel(*args)
        times.append((time.perf_counter() - start) * 1e3)
    results = outputs if isinstance(outputs, tuple) else (outputs,)
    report = RunReport(target, values, median_ms=float(np.median(times)))
    for tensor, got in zip(func.outputs, results):
        got = np.asarray(got)
        if tensor.dtype.kind == "bfloat" and got.dtype == np.uint16:
            got = (got.astype(np.uint32) << 16).view(np.float32)
        report.errors[tensor.name] = _relative_error(got, reference[tensor.name])
        report.ok &= report.errors[tensor.name] <= TOLERANCE.get(str(tensor.dtype), 0.0)
    return report


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, np.abs(g - w) / (1.0 + np.abs(w)))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
