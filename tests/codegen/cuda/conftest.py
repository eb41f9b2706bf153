"""Shared fixtures for CUDA codegen tests: every generated CUDA source goes through NVRTC."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from codegen.cuda.nvrtc import CompiledCuda
from tests.codegen.cuda.nvrtc_helpers import nvrtc_check


@pytest.fixture
def nvrtc_compile() -> Callable[..., CompiledCuda]:
    """The NVRTC check every CUDA test runs on the source it generates."""
    return nvrtc_check
