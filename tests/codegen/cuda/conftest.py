"""Shared helpers for CUDA codegen tests: every generated CUDA source goes through NVRTC."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from codegen.cuda.nvrtc import CompiledCuda, compile_cuda


def nvrtc_check(source: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> CompiledCuda:
    """Compile `source` with NVRTC and check that a CUBIN and PTX came out."""
    compiled = compile_cuda(source, arch=arch, options=options)
    assert compiled.ptx.startswith("//") and ".entry" in compiled.ptx
    if arch.startswith("sm_"):
        assert compiled.cubin is not None and compiled.cubin[:4] == b"\x7fELF"
    return compiled


@pytest.fixture
def nvrtc_compile() -> Callable[..., CompiledCuda]:
    """The NVRTC check every CUDA test runs on the source it generates."""
    return nvrtc_check
