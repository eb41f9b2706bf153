"""The device runtime header compiles with NVRTC and every reduce helper instantiates."""

from __future__ import annotations

import re

from codegen.cuda.nvrtc import runtime_header

NUMERIC = {"fp32": "float", "fp64": "double", "fp16": "__half", "bf16": "__nv_bfloat16",
           "int32": "int", "int64": "long long int"}
ACC = {"fp16": "float", "bf16": "float"}


def _combos() -> list[tuple[str, str, str, str]]:
    combos = [(op, sfx, ctype, ACC.get(sfx, ctype))
              for sfx, ctype in NUMERIC.items() for op in ("sum", "prod", "max", "min")]
    combos += [(op, "bool", "bool", "int") for op in ("all", "any")]
    return combos


def _instantiate_all() -> str:
    """One kernel per (op, dtype) that calls the warp, block (both modes) and discrete helpers."""
    lines = ['#include "cinn_cuda_runtime.cuh"', 'extern "C" {']
    for op, sfx, ctype, acc in _combos():
        lines.append(
            f"__global__ void k_{op}_{sfx}(const {ctype}* __restrict__ x, {ctype}* __restrict__ y) {{\n"
            f"  __shared__ {acc} shm[1024];\n"
            f"  const {ctype} v = x[threadIdx.x];\n"
            f"  y[0] = cinn_warp_reduce_{op}_{sfx}(v);\n"
            f"  y[1] = cinn_block_reduce_{op}_{sfx}(v, shm, false);\n"
            f"  y[2] = cinn_block_reduce_{op}_{sfx}(v, shm, true);\n"
            f"  y[3] = cinn_discrete_reduce_{op}_{sfx}(v, shm);\n"
            "}")
    lines.append("}")
    return "\n".join(lines)


def test_header_declares_every_helper() -> None:
    text = runtime_header()
    defined = set(re.findall(r"^CINN_RT_DEFINE_NUMERIC\((\w+),", text, re.M))
    assert defined == set(NUMERIC)
    assert "CINN_RT_DEFINE_REDUCE(all, bool" in text and "CINN_RT_DEFINE_REDUCE(any, bool" in text


def test_every_helper_compiles_for_every_dtype(nvrtc_compile) -> None:
    compiled = nvrtc_compile(_instantiate_all())
    for op, sfx, _, _ in _combos():
        assert f".entry k_{op}_{sfx}(" in compiled.ptx
    # The block reduce synchronises (three barriers); the discrete one runs a tree with barriers.
    assert "bar.sync" in compiled.ptx and "shfl.sync.bfly" in compiled.ptx


def test_header_compiles_for_older_arch(nvrtc_compile) -> None:
    nvrtc_compile(_instantiate_all(), arch="sm_80")
