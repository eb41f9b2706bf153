"""Shared fixtures for CUDA codegen tests: every generated CUDA source goes through NVRTC."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from codegen.cuda.nvrtc import CompiledCuda
from tests.codegen.cuda.nvrtc_helpers import every_generated_source_compiles, nvrtc_check

__all__ = ["every_generated_source_compiles", "nvrtc_compile"]


@pytest.fixture(autouse=True)
def _compile_generated_sources(every_generated_source_compiles: list) -> None:
    """CI compiles every CUDA source a test here generates (generate_cuda itself is lazy)."""


@pytest.fixture
def nvrtc_compile() -> Callable[..., CompiledCuda]:
    """The NVRTC check every CUDA test runs on the source it generates."""
    return nvrtc_check
