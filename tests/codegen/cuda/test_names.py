"""Identifiers in generated CUDA C: user names are sanitised through one IdentifierMap per kernel.

Function, tensor, buffer and variable names reach the printer from users; a name that is a safe
C identifier prints as is, anything else gets a readable, hashed, collision-free spelling, and
`GeneratedCode.kernel_name` is the symbol the PTX/CUBIN exports (what PyCUDA's `get_function`
must load). Every source here is compiled with NVRTC.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import CompileError
from cinn_py.ir import Evaluate, LoweredFunc, Var
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.sanitize import is_safe_identifier
from codegen.cuda import BucketDispatch, generate_cuda
from codegen.cuda import kernel as kernel_mod
from codegen.cuda.lowering import lower_for_cuda
from schedules import IRSchedule
from tests.codegen.cuda.gpu_programs import bound_scale
from tests.codegen.cuda.test_kernel_host import fake_pycuda
from tests.reliability.renaming import rename

INJECTION = 'fn(float* p) { p[0] = 42.0f; }\nextern "C" __global__ void injected'


def _scaled(func_name: str = "fn", a: str = "A", b: str = "B") -> LoweredFunc:
    A = cp.placeholder((256,), "float32", a)
    B = cp.compute((256,), lambda i: A[i] * 2.0, b)
    s = IRSchedule(cp.lower(func_name, [A, B]))
    outer, inner = s.split(s.get_loops(b)[0], [-1, 64])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    return s.func


def _entries(ptx: str) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)\(", ptx)


@pytest.mark.parametrize("name", ["a.b", "int", "threadIdx", "0abc", "my kernel", INJECTION])
def test_hostile_function_name_is_sanitised_and_is_the_exported_symbol(nvrtc_compile, name: str) -> None:
    code = generate_cuda(rename(_scaled(), {}, func_name=name))
    assert is_safe_identifier(code.kernel_name) and code.kernel_name != name
    assert f" {code.kernel_name}(const float* __restrict__ A" in code.source
    assert "42.0f" not in code.source and "injected" not in code.source.replace(code.kernel_name, "")
    assert _entries(nvrtc_compile(code.source).ptx) == [code.kernel_name] == _entries(code.ptx)


def test_safe_names_print_unchanged() -> None:
    code = generate_cuda(_scaled("my_fn", "X", "Y"))
    assert code.kernel_name == "my_fn"
    assert "my_fn(const float* __restrict__ X, float* __restrict__ Y)" in code.source


@pytest.mark.parametrize("name", ["int", "float", "threadIdx", "half", "expf", "cinn_dyn_shared", "__x"])
def test_keyword_tensor_names_compile(nvrtc_compile, name: str) -> None:
    """Keywords, builtins, the printer's own names and reserved spellings as tensor names."""
    code = generate_cuda(rename(_scaled(), {"A": name, "B": f"{name}_out"}))
    params = code.source.split("fn(", 1)[1].split(")", 1)[0]
    assert f"* __restrict__ {name}," not in params
    nvrtc_compile(code.source)


def test_names_that_sanitise_alike_stay_distinct(nvrtc_compile) -> None:
    A = cp.placeholder((64,), "float32", "A")
    B = cp.placeholder((64,), "float32", "B")
    C = cp.compute((64,), lambda i: A[i] - B[i], "C")
    s = IRSchedule(cp.lower("fn", [A, B, C]))
    s.bind(s.get_loops("C")[0], "threadIdx.x")
    code = generate_cuda(rename(s.func, {"A": "a b", "B": "a_b", "C": "a-b"}))
    a, b, c = re.findall(r"__restrict__ (\w+)", code.source)
    assert len({a, b, c}) == 3 and b == "a_b"
    assert f"  {c}[(int)threadIdx.x] = ({a}[(int)threadIdx.x] - {b}[(int)threadIdx.x]);" in code.source
    nvrtc_compile(code.source)


def test_tensor_and_loop_variable_with_the_same_name(nvrtc_compile) -> None:
    """A tensor called `i` and the serial loop var `i`: one C scope, two identifiers."""
    A = cp.placeholder((4, 64), "float32", "i")
    k = cp.reduce_axis(64, "k")
    B = cp.compute((4,), lambda r: cp.reduce_sum(A[r, k], k), "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    s.bind(s.get_loops("B")[0], "threadIdx.x")
    code = generate_cuda(s.func)
    loop_var = re.search(r"for \(int32_t (\w+) = 0;", code.source).group(1)
    params = re.findall(r"__restrict__ (\w+)", code.source)
    assert loop_var not in params and "i" in params + [loop_var]
    nvrtc_compile(code.source)


def test_hostile_symbolic_dim_name(nvrtc_compile) -> None:
    func = _scaled()
    S0 = cp.sym("S0")
    A = cp.placeholder((S0,), "float32", "A")
    B = cp.compute((S0,), lambda i: A[i] + 1.0, "B")
    s = IRSchedule(cp.lower("fn", [A, B]))
    outer, inner = s.split(s.get_loops("B")[0], [-1, 64])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    from cinn_py.ir.visitor import substitute  # noqa: PLC0415

    evil = Var("int", S0.dtype, is_symbolic_constant=True, lower_bound=S0.lower_bound)
    func = s.func
    args = tuple(dataclasses.replace(a, var=evil) if a.var is not None else a for a in func.args)
    func = dataclasses.replace(func, args=args, body=substitute(func.body, {S0: evil}))
    code = generate_cuda(func)
    assert "int64_t int)" not in code.source and "int64_t int_" in code.source
    nvrtc_compile(code.source)


def test_unknown_call_name_is_refused_before_nvrtc() -> None:
    func = _scaled()
    evil = E.Call('system("rm -rf /")', (), E.dt.int32)
    body = S.Block((*func.body.stmts, Evaluate(evil)))
    with pytest.raises(CompileError, match="unknown function 'system"):
        generate_cuda(dataclasses.replace(func, body=body))


def test_pycuda_loads_the_sanitised_symbol(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list = []
    drv, gpuarray = fake_pycuda(log)
    requested: list[str] = []
    module = drv.module_from_buffer(b"")
    drv.module_from_buffer = lambda cubin: type("M", (), {
        "get_function": staticmethod(lambda name: requested.append(name) or module.get_function(name))})()
    monkeypatch.setattr(kernel_mod, "_pycuda", lambda: (drv, gpuarray))
    func = rename(_scaled(), {}, func_name="a.b")
    code = generate_cuda(func)
    kernel = kernel_mod.Kernel(code, func)
    assert requested == [code.kernel_name] and _entries(code.ptx) == requested
    assert kernel(np.ones(256, np.float32)).shape == (256,)


def test_bucket_kernels_of_a_hostile_function(nvrtc_compile) -> None:
    S0, bound = bound_scale(128)
    func = lower_for_cuda(rename(bound, {}, func_name="my.fn"))
    dispatch = BucketDispatch([(S0 <= 1024, func), (S0 > 1024, func)])
    names = [c.kernel_name for c in dispatch.codes]
    assert all(is_safe_identifier(n) and n.endswith("_BPA___kernel") for n in names) and len(set(names)) == 2
    for code in dispatch.codes:
        assert _entries(nvrtc_compile(code.source).ptx) == [code.kernel_name]


def test_source_without_nvrtc_and_a_clear_error_on_first_compile() -> None:
    """`codegen(.., 'cuda')` prints CUDA C without the optional `nvrtc` extra; `.ptx`/`.cubin`
    compile on first access and name the missing extra."""
    import sys  # noqa: PLC0415

    from codegen.cuda import nvrtc  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "cuda.bindings", None)  # `from cuda.bindings import nvrtc` fails
        nvrtc.clear_cache()
        code = cp.codegen(_scaled("nonvrtc"), target="cuda")
        assert "__global__" in code.source and code.launch.launch_dims() == ((4, 1, 1), (64, 1, 1), 0)
        assert not code.is_compiled
        missing = r"(?s)NVRTC is not available.*'nvrtc' extra.*cinn-py\[nvrtc\]"
        with pytest.raises(CompileError, match=missing):
            code.cubin  # noqa: B018
    assert _entries(code.ptx) == ["nonvrtc"] and code.is_compiled and code.cubin[:4] == b"\x7fELF"
