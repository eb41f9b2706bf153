"""Test helpers for schedules: `check_schedule` replays a schedule's trace and compares results.

`check_schedule(before, sch)`:
1. replays `sch.trace` through JSON (`Trace.from_json(trace.to_json())` + `replay`) and through
   the printed Python script (`trace.as_python()` executed on `before`), and asserts both give
   IR structurally equal to `sch`'s;
2. runs `before` and the scheduled IR on random inputs for several bindings of the symbolic dims
   and asserts equal outputs (`cinn_py.interp.run_ir`, or the `runner` given);
3. with the default runner, also compiles the scheduled IR for x86 (unless it has GPU-bound
   loops, which only the CUDA backend accepts) and asserts the kernel gives the same outputs, so
   every schedule test is a differential test of the x86 backend too.

Replays run with the name generator restored to its state when `sch` was created, so generated
names (`i_0`, `i_j_fused`) come out the same.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cinn_py.ir import (
    Call, CallType, CompileContext, Expr, For, LoweredFunc, Module, Var, assert_structural_equal,
    compile_context, const, is_const_int, substitute, walk,
)
from schedules.analysis.arith import simplify_index
from schedules.schedule import IRSchedule
from schedules.trace import Trace, replay

__all__ = ["check_schedule", "check_replay", "check_results", "random_inputs", "restored_names"]

Runner = Callable[[LoweredFunc, dict[str, np.ndarray]], dict[str, np.ndarray]]


@contextlib.contextmanager
def restored_names(sch: IRSchedule) -> Iterator[None]:
    """Run a block with the name generator as it was when `sch` was created."""
    with compile_context(CompileContext(names=copy.deepcopy(sch.initial_names))):
        yield


def check_replay(before: LoweredFunc | Module, sch: IRSchedule) -> None:
    """The trace replays (through JSON and through Python) to IR equal to `sch`'s."""
    after = sch.mod if isinstance(before, Module) else sch.func
    with restored_names(sch):
        from_json = replay(Trace.from_json(sch.trace.to_json()), before)
    assert_structural_equal(from_json.mod if isinstance(before, Module) else from_json.func, after)
    namespace: dict[str, Any] = {"func": before}
    with restored_names(sch):
        exec(compile(sch.trace.as_python(), "<schedule trace>", "exec"), namespace)  # noqa: S102 (test helper)
    replayed: IRSchedule = namespace["sch"]
    assert_structural_equal(replayed.mod if isinstance(before, Module) else replayed.func, after)
    assert replayed.trace.to_json() == sch.trace.to_json(), "replayed trace differs from the original"


def random_inputs(func: LoweredFunc, sym_values: Mapping[str, int],
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random arrays for the input tensors, symbolic dims bound from `sym_values`."""
    out = {}
    for t in func.inputs:
        shape = tuple(_dim(d, sym_values) for d in t.shape)
        np_dtype = t.dtype.to_numpy()
        if t.dtype.is_float:
            arr = rng.uniform(-2.0, 2.0, shape).astype(np_dtype)
        elif t.dtype.is_bool:
            arr = rng.integers(0, 2, shape).astype(np_dtype)
        else:
            arr = rng.integers(-8, 9, shape).astype(np_dtype)
        out[t.name] = arr
    return out


def _dim(d: Expr, sym_values: Mapping[str, int]) -> int:
    if is_const_int(d):
        return int(d.value)  # type: ignore[attr-defined]
    missing = sorted({v.name for v in walk(d) if isinstance(v, Var)} - set(sym_values))
    if missing:
        raise ValueError(f"no value for symbolic dim(s) {', '.join(missing)} (give sym_bindings)")
    value = simplify_index(substitute(d, {v: const(sym_values[v.name], v.dtype)
                                              for v in walk(d) if isinstance(v, Var)}))
    if not is_const_int(value):
        raise ValueError(f"random_inputs: cannot evaluate input dim {d}")
    return int(value.value)  # type: ignore[attr-defined]


def _default_runner() -> Runner:
    from cinn_py.interp import run_ir  # noqa: PLC0415

    return run_ir


def check_results(before: LoweredFunc, after: LoweredFunc, runner: Runner | None = None,
                  sym_bindings: Sequence[Mapping[str, int]] | None = None, seed: int = 0,
                  rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """`before` and `after` give the same outputs on random inputs for every binding."""
    run = runner or _default_runner()
    kernel = _x86_kernel(after) if runner is None else None
    bindings = list(sym_bindings) if sym_bindings is not None else _default_bindings(before)
    rng = np.random.default_rng(seed)
    for binding in bindings:
        inputs = random_inputs(before, binding, rng)
        expected = run(before, {k: v.copy() for k, v in inputs.items()})
        actual = run(after, {k: v.copy() for k, v in inputs.items()})
        assert expected.keys() == actual.keys(), f"outputs differ: {sorted(expected)} vs {sorted(actual)}"
        for name in expected:
            np.testing.assert_allclose(actual[name], expected[name], rtol=rtol, atol=atol,
                                       err_msg=f"output '{name}' differs for symbolic dims {dict(binding)}")
        if kernel is not None:
            _check_x86(kernel, after, inputs, expected, binding, rtol, atol)


def _x86_kernel(func: LoweredFunc) -> Any:
    """The x86 kernel of `func`, or None when it uses GPU-only constructs (bound loops,
    `__syncthreads`), which only the CUDA backend accepts."""
    if any(_gpu_only(n) for n in walk(func.body)):
        return None
    # The function steps as `cinn_py.build` runs them (schedules sit below the pipeline): the
    # target's passes, then its backend, which the backend table loads lazily.
    from cinn_py.backend import get_backend  # noqa: PLC0415
    from cinn_py.passes import run_passes  # noqa: PLC0415
    from cinn_py.target import Target  # noqa: PLC0415

    target = Target.parse("x86")
    return get_backend(target).build(run_passes(func, target.passes), target)


def _gpu_only(node: Any) -> bool:
    if isinstance(node, For):
        return node.bind_axis is not None
    return isinstance(node, Call) and node.call_type is CallType.INTRINSIC


def _check_x86(kernel: Any, func: LoweredFunc, inputs: Mapping[str, np.ndarray],
               expected: Mapping[str, np.ndarray], binding: Mapping[str, int], rtol: float,
               atol: float) -> None:
    outs = kernel(*[inputs[t.name].copy() for t in func.inputs])
    outs = outs if isinstance(outs, tuple) else (outs,)
    for tensor, got in zip(func.outputs, outs):
        if tensor.dtype.kind == "bfloat":  # the kernel returns bfloat16 bit patterns
            got = (np.asarray(got, np.uint32) << 16).view(np.float32)
        np.testing.assert_allclose(got, expected[tensor.name], rtol=max(rtol, 1e-4), atol=max(atol, 1e-4),
                                   err_msg=f"x86 kernel: output '{tensor.name}' differs for {dict(binding)}")


def _default_bindings(func: LoweredFunc) -> list[dict[str, int]]:
    """Small, odd and even values for every symbolic dim (at least each one's lower bound)."""
    syms = func.scalar_args
    if not syms:
        return [{}]
    out = []
    for value in (1, 3, 8, 13):
        binding = {}
        for s in syms:
            lower = (int(s.lower_bound.value) if s.lower_bound is not None
                     and is_const_int(s.lower_bound) else 1)
            binding[s.name] = max(value, lower)
        out.append(binding)
    return out


def check_schedule(before: LoweredFunc | Module, sch: IRSchedule, runner: Runner | None = None,
                   sym_bindings: Sequence[Mapping[str, int]] | None = None, seed: int = 0) -> None:
    """Replay checks (JSON and Python) plus the differential check of every function."""
    check_replay(before, sch)
    befores = before.functions if isinstance(before, Module) else (before,)
    afters = sch.mod.functions
    for b, a in zip(befores, afters):
        check_results(b, a, runner, sym_bindings, seed)
