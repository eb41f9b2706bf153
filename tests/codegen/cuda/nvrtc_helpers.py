"""The one NVRTC check every CUDA test applies to the source it generates.

`generate_cuda` already compiles its source with NVRTC (a failure raises CompileError); this
helper additionally checks the products: PTX with an `.entry`, and an ELF CUBIN for `sm_XX`.
Tests under tests/codegen/cuda use it through the `nvrtc_compile` fixture (conftest.py), other
test directories import `nvrtc_check` directly.
"""

from __future__ import annotations

from codegen.cuda.nvrtc import CompiledCuda, compile_cuda


def nvrtc_check(source: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> CompiledCuda:
    """Compile `source` with NVRTC and check that a CUBIN and PTX came out."""
    compiled = compile_cuda(source, arch=arch, options=options)
    assert compiled.ptx.startswith("//") and ".entry" in compiled.ptx
    if arch.startswith("sm_"):
        assert compiled.cubin is not None and compiled.cubin[:4] == b"\x7fELF"
    return compiled
