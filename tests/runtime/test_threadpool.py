"""Thread-count settings of parallel loops (the pool itself: tests/codegen/llvm/test_native_pool.py)."""

from __future__ import annotations

import pytest

from cinn_py.runtime import threadpool


def test_thread_count_settings_are_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert threadpool.available_cores() >= 1
    with pytest.raises(ValueError, match="positive"):
        threadpool.set_num_threads(0)
    with pytest.raises(TypeError, match="positive int"):
        threadpool.set_num_threads(2.5)  # type: ignore[arg-type]
    monkeypatch.setattr(threadpool, "_num_threads", None)
    monkeypatch.setenv("CINN_PY_NUM_THREADS", "5")
    assert threadpool.get_num_threads() == 5
    monkeypatch.setattr(threadpool, "_num_threads", None)
    monkeypatch.setenv("CINN_PY_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="CINN_PY_NUM_THREADS"):
        threadpool.get_num_threads()
    monkeypatch.setattr(threadpool, "_num_threads", None)


def test_override_applies_to_the_calling_thread_only() -> None:
    base = threadpool.get_num_threads()
    with threadpool.num_threads_override(3):
        assert threadpool.get_num_threads() == 3
        with threadpool.num_threads_override(None):
            assert threadpool.get_num_threads() == 3
    assert threadpool.get_num_threads() == base
