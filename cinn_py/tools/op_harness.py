"""The differential op harness: every registered op with a `test` declaration (`OpDef.test`,
`cinn_py.frontend.ops.testing`) built through its NetBuilder method, compiled for x86 and run
against its numpy reference, and NVRTC-compiled for CUDA.

    from cinn_py.tools.op_harness import harness_items, run_x86, compile_cuda
    for op, dtype, case in harness_items():
        run_x86(op, dtype, case)

A symbolic dim of a case is bound to `SYMBOL_VALUES` in turn (1 and a non-power-of-two), so the
same compiled program is checked at several sizes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend.ops import REGISTRY
from cinn_py.frontend.ops.base import OpDef, numpy_dtype
from cinn_py.frontend.ops.testing import Case, Input, tolerance
from cinn_py.ir import bfloat16, dtype_of

SYMBOL_VALUES = (3, 1)


def harness_items(full: bool = False) -> Iterator[tuple[str, str, int]]:
    """(op, dtype, case index) of the declared cases, in registry order: every case for an op's
    first dtype, and (unless `full`) every third case and the last one for its other dtypes, which
    keeps CI fast while each dtype still meets several shapes."""
    for name, op in REGISTRY.items():
        if op.test is None:
            continue
        for k, dtype in enumerate(op.test.dtypes):
            n = len(op.test.cases(dtype))
            picked = range(n) if full or k == 0 else sorted(set(range(0, n, 3)) | {n - 1})
            for index in picked:
                yield name, dtype, index


def tested_ops() -> list[str]:
    return [name for name, op in REGISTRY.items() if op.test is not None]


def case_of(op: str, dtype: str, index: int) -> Case:
    test = REGISTRY[op].test
    assert test is not None
    return test.cases(dtype)[index]


def build_case(op: str, dtype: str, case: Case) -> tuple[Any, list[Input]]:
    """The Program of one case and its inputs in order."""
    from cinn_py.frontend.net_builder import NetBuilder  # noqa: PLC0415

    opdef = REGISTRY[op]
    nb = NetBuilder(f"harness_{op}")
    inputs: list[Input] = []

    def arg(value: Any) -> Any:
        if isinstance(value, Input):
            inputs.append(value)
            return nb.create_input(value.dtype or dtype, list(value.shape),
                                   value.name or f"in{len(inputs) - 1}")
        if isinstance(value, list) and value and all(isinstance(v, Input) for v in value):
            return [arg(v) for v in value]
        return value

    args = [arg(a) for a in case.args]
    kwargs = {k: arg(v) for k, v in case.kwargs.items()}
    method = getattr(nb, case.method or opdef.methods[0])
    out = method(*args, **kwargs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return nb.build(outs), inputs


def make_arrays(inputs: Sequence[Input], dtype: str, symbols: dict[str, int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for inp in inputs:
        d = numpy_dtype(dtype_of(inp.dtype or dtype))
        shape = tuple(symbols[s] if isinstance(s, str) else s for s in inp.shape)
        if d == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        elif d.kind in "iu":
            a = rng.integers(int(np.ceil(inp.low)), int(np.floor(inp.high)) + 1, size=shape).astype(d)
            arrays.append(np.where(a == 0, np.ones((), d), a) if inp.avoid_zero else a)
        else:
            a = rng.uniform(inp.low, inp.high, size=shape)
            if inp.avoid_zero:
                a = np.where(np.abs(a) < 0.5, np.where(a < 0, -0.5, 0.5), a)
            a = a.astype(d)
            if inp.specials and a.size:
                flat = a.reshape(-1)
                for k, v in zip(rng.choice(flat.size, size=min(3, flat.size), replace=False),
                                (np.nan, np.inf, -np.inf)):
                    flat[k] = v
            arrays.append(a)
    return arrays


def _symbols(inputs: Sequence[Input]) -> list[str]:
    return sorted({s for inp in inputs for s in inp.shape if isinstance(s, str)})


def compare(op: OpDef, dtype: str, got: Any, want: Any, what: str) -> None:
    assert op.test is not None
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    for g, w in zip(gots, wants):
        assert g.dtype == w.dtype and g.shape == w.shape, (
            f"{op.name} [{dtype}] {what}: got {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
        rtol, atol = tolerance(str(w.dtype), op.test)
        if w.dtype.kind == "f" or w.dtype == numpy_dtype(bfloat16):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=f"{op.name} [{dtype}] {what}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{op.name} [{dtype}] {what}")


def run_x86(op: str, dtype: str, index: int) -> None:
    """Compile the case for x86 and compare with `Program.run_numpy` at each symbol binding."""
    from cinn_py.pipeline import compile_program  # noqa: PLC0415

    case = case_of(op, dtype, index)
    program, inputs = build_case(op, dtype, case)
    compiled = compile_program(program, target="x86")
    names = _symbols(inputs)
    for value in SYMBOL_VALUES if names else SYMBOL_VALUES[:1]:
        arrays = make_arrays(inputs, dtype, {n: value for n in names}, seed=index * 7 + value)
        want = program.run_numpy(*arrays)
        got = compiled(*arrays)
        compare(REGISTRY[op], dtype, got, want, f"case {index} {case.label()} x86 (symbols={value})")


def run_cuda_emulated(op: str, dtype: str, index: int) -> None:
    """Build the case's auto-scheduled CUDA kernels, run them in the CPU emulator and compare with
    `Program.run_numpy` at each symbol binding (`cinn_py.tools.testing.cuda`)."""
    from cinn_py.pipeline import compile_program  # noqa: PLC0415
    from cinn_py.tools.testing.cuda import cuda_emulation  # noqa: PLC0415

    case = case_of(op, dtype, index)
    program, inputs = build_case(op, dtype, case)
    with cuda_emulation():
        compiled = compile_program(program, target="cuda", schedule="auto")
    names = _symbols(inputs)
    for value in SYMBOL_VALUES if names else SYMBOL_VALUES[:1]:
        arrays = make_arrays(inputs, dtype, {n: value for n in names}, seed=index * 7 + value)
        want = program.run_numpy(*arrays)
        got = compiled(*arrays)
        compare(REGISTRY[op], dtype, got, want,
                f"case {index} {case.label()} CUDA emulated (symbols={value})")


def compile_cuda(op: str, dtype: str, index: int) -> int:
    """NVRTC-compile the auto-scheduled CUDA kernels of the case's groups; returns their count."""
    import cinn_py  # noqa: PLC0415
    from cinn_py.frontend.fusion import plan  # noqa: PLC0415
    from cinn_py.lowering.group import lower_group  # noqa: PLC0415
    from cinn_py.tools.fuzz import compile_cuda_auto  # noqa: PLC0415

    program, _ = build_case(op, dtype, case_of(op, dtype, index))
    groups = plan(program).groups
    for group in groups:
        func = lower_group(group)
        if func.scalar_args:
            compile_cuda_auto(func)
        else:
            cinn_py.codegen(func, target="cuda", schedule="auto").cubin  # noqa: B018 (NVRTC compiles on access)
    return len(groups)


def cuda_case(op: str, dtype: str) -> int:
    """The case whose CUDA kernels are compiled: the first with a symbolic dim, else the first."""
    test = REGISTRY[op].test
    assert test is not None
    cases = test.cases(dtype)
    for k, case in enumerate(cases):
        program, _ = build_case(op, dtype, case)
        if program.symbols:
            return k
    return 0
