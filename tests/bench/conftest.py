"""Benchmark tests never touch the user's compile cache: one temporary cache dir per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cinn_py.runtime import cache


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    cache.set_cache_dir(tmp_path_factory.mktemp("cinn-py-cache"))
    yield
    cache.set_cache_dir(None)
