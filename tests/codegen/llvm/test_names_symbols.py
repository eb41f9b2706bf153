"""x86 robustness: hostile user names in LLVM symbols/values, libm in the first build of a
process, external-symbol checking, and cache keys that follow the codegen sources."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import codegen.llvm as x86
from cinn_py import ir
from cinn_py.diagnostics import CompileError
from cinn_py.ir import dtype as dt
from cinn_py.ir.sanitize import is_safe_identifier
from codegen.llvm import build_x86, generate_x86
from codegen.llvm.jit import LoadedObject, object_code_problem, optimize_and_compile, undefined_symbols
from codegen.llvm.module import build_module
from codegen.llvm.names import RESERVED_SYMBOLS, symbol_name, value_name
from tests.codegen.llvm.llvm_helpers import func, loop, tensor

LONG = "L" * 2000


def _sub_func(a_name: str, c_name: str, out_name: str, fn_name: str = "fn", var: str = "i",
              kind: ir.ForType = ir.ForType.SERIAL) -> ir.LoweredFunc:
    """out[i] = a[i] - c[i] over 64 elements, every name chosen by the caller."""
    a, c, out = tensor(a_name, (64,)), tensor(c_name, (64,)), tensor(out_name, (64,))
    i = ir.Var(var, dt.int32)
    body = loop(i, 64, ir.Store(out, ir.Load(a, (i,)) - ir.Load(c, (i,)), (i,)), kind=kind)
    return func(fn_name, [a, c], [out], body)


@pytest.mark.parametrize("kind", [ir.ForType.SERIAL, ir.ForType.PARALLEL])
def test_names_equal_in_their_first_1024_characters_stay_distinct(kind: ir.ForType) -> None:
    # LLVM truncates local names at 1024 characters: raw names would collide ("redefinition").
    f = _sub_func(LONG + "a", LONG + "c", LONG + "o", fn_name=LONG + "f", var=LONG + "i", kind=kind)
    kernel = build_x86(f, cache=False)
    x, y = np.arange(64, dtype=np.float32), np.full(64, 3, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x, y), x - y)
    np.testing.assert_array_equal(kernel(y, x), y - x)
    assert LONG not in kernel.llvm_ir and len(kernel.symbol) <= 96


@pytest.mark.parametrize("name",
                         ['a"b', "a\nb", "%x", "@g", "ünï", "x y", "a.b", "0abc", "\\", "int", "expf"])
def test_hostile_value_and_function_names(name: str) -> None:
    f = _sub_func(name, name + "2", name + "3", fn_name=name, var=name + "v", kind=ir.ForType.PARALLEL)
    kernel = build_x86(f, cache=False)
    assert is_safe_identifier(kernel.symbol, RESERVED_SYMBOLS)
    x, y = np.arange(64, dtype=np.float32), np.ones(64, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x, y), x - y)


def test_kernel_symbols_are_deterministic_and_collision_free() -> None:
    names = ["a b", "a_b", "a-b", "a.b", "exp", "exp_", "tanhf", "free", "fn", LONG, LONG + "x"]
    symbols = [symbol_name(n) for n in names]
    assert len(set(symbols)) == len(names)
    assert symbols == [symbol_name(n) for n in names]
    assert symbol_name("fn") == "fn" and symbol_name("a_b") == "a_b"  # plain names are kept
    assert all(s not in RESERVED_SYMBOLS for s in symbols)
    # the generated helpers derive from the symbol
    code = generate_x86(_sub_func("A", "C", "B", fn_name="a b", kind=ir.ForType.PARALLEL))
    sym = symbol_name("a b")
    defined = set(re.findall(r'define \w+ @"?([^"(]+)"?\(', code.unoptimized_ir))
    assert defined == {sym, f"{sym}_infer_shape", f"{sym}__parallel_0"}


def test_value_names_keep_plain_names_readable() -> None:
    assert value_name("_A") == "_A" and value_name("i.j") == "i.j"
    assert value_name("a b") != value_name("a_b") and " " not in value_name("a b")
    assert len(value_name(LONG)) <= 96 and value_name(LONG) != value_name(LONG + "x")


LIBM_FIRST_BUILD = textwrap.dedent("""
    import os
    os.environ["CINN_PY_DISABLE_DISK_CACHE"] = "1"
    import numpy as np
    from cinn_py import ir
    from cinn_py.ir import dtype as dt
    from codegen.llvm import build_x86
    from tests.codegen.llvm.llvm_helpers import func, loop, tensor

    a32, b32 = tensor("A", (8,)), tensor("B", (8,))
    a64, b64 = tensor("C", (8,), dt.float64), tensor("D", (8,), dt.float64)
    i = ir.Var("i", dt.int32)
    call = lambda name, x, d: ir.Call(name, (x,), d)
    v32 = call("tanh", call("erf", call("log", call("exp", ir.Load(a32, (i,)), dt.float32), dt.float32),
                            dt.float32), dt.float32)
    v64 = call("tanh", ir.Load(a64, (i,)), dt.float64)
    body = ir.Block((loop(i, 8, ir.Store(b32, v32, (i,))), loop(i, 8, ir.Store(b64, v64, (i,)))))
    kernel = build_x86(func("first", [a32, a64], [b32, b64], body))   # the first build of the process
    x = np.linspace(0.5, 2.0, 8)
    y32, y64 = kernel(x.astype(np.float32), x)
    np.testing.assert_allclose(y32, np.tanh([__import__("math").erf(v) for v in x]), rtol=1e-6)
    np.testing.assert_allclose(y64, np.tanh(x), rtol=1e-15)
    print("ok")
""")


def test_first_build_of_a_process_calling_libm() -> None:
    proc = subprocess.run([sys.executable, "-c", LIBM_FIRST_BUILD], capture_output=True, text=True,
                          timeout=120,
                          cwd=str(__import__("pathlib").Path(__file__).parents[3]))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_unresolvable_external_symbol_is_a_compile_error() -> None:
    text = textwrap.dedent("""
        declare float @cinn_py_no_such_function(float)
        define float @f(float %x) {
          %y = call float @cinn_py_no_such_function(float %x)
          ret float %y
        }
    """)
    with pytest.raises(CompileError, match="cinn_py_no_such_function"):
        optimize_and_compile(text)


def test_unresolvable_symbol_is_found_without_emitting_assembly() -> None:
    text = textwrap.dedent("""
        declare float @cinn_py_no_such_function(float)
        declare float @expf(float)
        define float @f(float %x) {
          %y = call float @cinn_py_no_such_function(float %x)
          %z = call float @expf(float %y)
          ret float %z
        }
    """)
    with pytest.raises(CompileError, match="cinn_py_no_such_function"):
        optimize_and_compile(text, want_asm=False)
    ok = text.replace("cinn_py_no_such_function", "sinf")
    compiled = optimize_and_compile(ok, want_asm=False)
    assert compiled.asm == "" and undefined_symbols(compiled.object_code) == {"sinf", "expf"}


def test_kernel_assembly_is_emitted_when_first_read() -> None:
    kernel = build_x86(_sub_func("A", "C", "B", fn_name="lazy_asm"))
    assert kernel._asm is None  # not emitted by the compile
    assert "lazy_asm" in kernel.asm and "ret" in kernel.asm
    x86.CACHE.clear_memory()
    again = build_x86(_sub_func("A", "C", "B", fn_name="lazy_asm"))  # from disk, asm not stored
    assert again.from_cache and again.asm == kernel.asm


def test_cache_key_follows_project_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    f = _sub_func("A", "C", "B", fn_name="keyed")
    assert not build_x86(f).from_cache
    x86.CACHE.clear_memory()
    assert build_x86(f).from_cache  # from disk
    x86.CACHE.clear_memory()
    monkeypatch.setattr(x86, "project_digest", lambda: "a different project")
    assert not build_x86(f).from_cache


def test_object_code_is_checked_before_mcjit_loads_it() -> None:
    compiled = optimize_and_compile(str(build_module(_sub_func("A", "C", "B"), False).module))
    blob = compiled.object_code
    assert object_code_problem(blob) is None
    LoadedObject(blob)  # loads
    damaged = [b"", b"not an object file", blob[:63], blob[: len(blob) // 2], blob[:-1],
               blob[:18] + b"\x03\x00" + blob[20:]]  # e_machine: i386
    for bad in damaged:
        assert object_code_problem(bad) is not None
        with pytest.raises(CompileError, match="cannot load object code"):
            LoadedObject(bad)
