"""The one NVRTC check every CUDA test applies to the source it generates.

`generate_cuda` prints CUDA C without NVRTC; `.ptx`/`.cubin` compile it on first access. So that
CI still compiles every CUDA source the tests generate, `every_generated_source_compiles`
(autouse in tests/codegen/cuda/conftest.py, used by tests/passes/test_gpu_*.py) records each
`GeneratedCode` a test creates and compiles it at teardown with its own arch and options (an NVRTC
cache hit when the test compiled it already). `nvrtc_check` additionally checks the products:
PTX with an `.entry`, and an ELF CUBIN for `sm_XX`; tests use it through the `nvrtc_compile`
fixture, other test directories import it directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from codegen.cuda import generate
from codegen.cuda.nvrtc import CompiledCuda, compile_cuda


def nvrtc_check(source: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> CompiledCuda:
    """Compile `source` with NVRTC and check that a CUBIN and PTX came out."""
    compiled = compile_cuda(source, arch=arch, options=options)
    _check_products(compiled)
    return compiled


def _check_products(compiled: CompiledCuda) -> None:
    assert compiled.ptx.startswith("//") and ".entry" in compiled.ptx
    if compiled.arch.startswith("sm_"):
        assert compiled.cubin is not None and compiled.cubin[:4] == b"\x7fELF"


@pytest.fixture
def every_generated_source_compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Compile (and check) every GeneratedCode created during the test, at teardown."""
    made: list[Any] = []

    class Recorded(generate.GeneratedCode):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(generate, "GeneratedCode", Recorded)
    yield made
    for code in made:
        _check_products(code.compiled)
        assert f".entry {code.kernel_name}(" in code.ptx
