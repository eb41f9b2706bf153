"""Code-generation safety: hostile names must neither inject code nor break compilation.

Names reach the backends from the compute DSL (which only accepts C identifiers, but those
include C keywords and CUDA builtins) and from IR built by hand or by other frontends (any
string: spaces, quotes, comment openers, newlines, unicode, very long). Each name is put in
every position (input, temporary, output tensor, function) and the function is compiled:

- x86: must build and compute the right result;
- CUDA: must compile with NVRTC, or be refused with a `CompileError` *before* NVRTC runs (a
  clean rejection naming the identifier); NVRTC errors or injected code are bugs.

Failures of the current backends are strict xfails with the reproducer in the reason.
`cinn_py.ir.sanitize` is the helper the backends can adopt.
"""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.ir import LoweredFunc
from schedules import IRSchedule
from tests.reliability.renaming import rename

HOSTILE = {
    "space": "my tensor", "quote": 'a"b', "comment_close": "x*/y", "line_comment": "a//b", "newline": "a\nb",
    "unicode": "ünï", "cjk": "名前", "c_keyword": "int", "cuda_builtin": "threadIdx", "digit": "0abc",
    "dot": "a.b", "llvm_local": "%x", "llvm_global": "@g", "backslash": "\\",
    "statement": 'a; system("rm -rf /"); //', "long_100": "L" * 100, "long_3000": "L" * 3000,
}
POSITIONS = ("A", "B", "C", "func")   # input, temporary, output, function name


@pytest.fixture(autouse=True, scope="module")
def _jit_started() -> None:
    """Build one libm-free kernel first: see LIBM_FIRST (tested on its own below)."""
    a = cp.placeholder((2,), "float32", "warm")
    cp.build(cp.lower("warm", [a, cp.compute((2,), lambda i: a[i] + 1.0, "warm_out")]), "x86")


def _program() -> LoweredFunc:
    a = cp.placeholder((4, 8), "float32", "A")
    b = cp.compute((4, 8), lambda i, j: a[i, j] * 2.0, "B")
    k = cp.reduce_axis(8)
    c = cp.compute((4,), lambda i: cp.reduce_sum(b[i, k], [k]), "C")
    return cp.lower("fn", [a, c])


def _hostile(name: str, position: str) -> LoweredFunc:
    if position == "func":
        return rename(_program(), {}, func_name=name)
    return rename(_program(), {position: name})


def _cases(expect_fail: object, reason_for: object) -> list[object]:
    out = []
    for key in HOSTILE:
        for position in POSITIONS:
            marks = [pytest.mark.xfail(strict=True, reason=reason_for(key, position))] \
                if expect_fail(key, position) else []  # type: ignore[operator]
            out.append(pytest.param(key, position, marks=marks, id=f"{key}-{position}"))
    return out


@pytest.mark.parametrize(("key", "position"), _cases(lambda k, p: False, lambda k, p: ""))
def test_x86_builds_and_runs_hostile_names(key: str, position: str) -> None:
    func = _hostile(HOSTILE[key], position)
    kernel = cp.build(func, target="x86")
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), (2 * x).sum(axis=1), rtol=1e-5)


def _bind(func: LoweredFunc) -> LoweredFunc:
    sch = IRSchedule(func)
    done = set()
    for block in sch.get_all_blocks():
        outer = sch.get_loops(block)[0]
        if outer.uid not in done:
            sch.bind(outer, "blockIdx.x")
            done.add(outer.uid)
    return sch.func


@pytest.mark.parametrize(("key", "position"), _cases(lambda k, p: False, lambda k, p: ""))
def test_cuda_compiles_or_cleanly_rejects_hostile_names(key: str, position: str) -> None:
    func = _bind(_hostile(HOSTILE[key], position))
    try:
        code = cp.codegen(func, target="cuda")
    except CompileError as exc:
        # a clean refusal before NVRTC is acceptable; an NVRTC failure means broken source
        assert "NVRTC" not in str(exc), str(exc)
        assert "identifier" in str(exc)
        return
    assert code.ptx or code.cubin


def test_cuda_function_name_cannot_inject_code() -> None:
    evil = "fn(float* p) { p[0] = 42.0f; }\nextern \"C\" __global__ void injected"
    func = _bind(rename(_program(), {}, func_name=evil))
    try:
        code = cp.codegen(func, target="cuda")
    except (CompileError, ValueError):
        return   # refused: fine
    assert ("p[0] = 42.0f"
            not in code.source), "the function name was pasted into the CUDA source:\n" + code.source


@pytest.mark.parametrize("name", ["int", "float", "threadIdx", "blockIdx", "half", "main", "free", "malloc",
                                  "expf", "printf", "x", "return", "void", "while"])
def test_dsl_keyword_names_on_x86(name: str) -> None:
    """DSL-legal names that are C keywords, CUDA builtins or libc/libm symbols, everywhere."""
    a = cp.placeholder((8,), "float32", name)
    b = cp.compute((8,), lambda i: cp.exp(a[i]) + 1.0, f"{name}_out")
    func = cp.lower(name, [a, b])
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    kernel = cp.build(func, target="x86")
    np.testing.assert_allclose(kernel(x), np.exp(x) + 1.0, rtol=1e-6)


def test_names_colliding_after_naive_sanitising_stay_distinct_on_x86() -> None:
    a = cp.placeholder((4,), "float32", "A")
    b = cp.placeholder((4,), "float32", "B")
    c = cp.compute((4,), lambda i: a[i] - b[i], "C")
    func = rename(cp.lower("fn", [a, b, c]), {"A": "a b", "B": "a_b", "C": "a-b"})
    x, y = np.arange(4, dtype=np.float32), np.full(4, 10, dtype=np.float32)
    np.testing.assert_array_equal(cp.build(func, "x86")(x, y), x - y)
    np.testing.assert_array_equal(cp.build(func, "x86")(y, x), y - x)


LIBM_FIRST = ("x86: the first kernel built in a process that calls libm (expf, tanhf, erff, logf, tanh) "
              "fails with CompileError 'generated code needs the external symbol expf, which this process "
              "does not provide'; later builds work once any MCJIT engine exists (libm is not registered "
              "before). Reproducer: fresh interpreter, a = placeholder((8,), 'float32', 'A'); "
              "build(lower('fn', [a, compute((8,), lambda i: exp(a[i]), 'B')]), 'x86') — owner: codegen/llvm")


def test_first_libm_kernel_in_a_fresh_process() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = ("import os; os.environ['CINN_PY_DISABLE_DISK_CACHE'] = '1'\n"
            "import numpy as np, cinn_py as cp\n"
            "a = cp.placeholder((8,), 'float32', 'A')\n"
            "f = cp.lower('fn', [a, cp.compute((8,), lambda i: cp.exp(a[i]), 'B')])\n"
            "k = cp.build(f, 'x86'); x = np.ones(8, np.float32); assert np.allclose(k(x), np.e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-500:]
