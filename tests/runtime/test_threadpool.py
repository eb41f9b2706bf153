"""The CPU thread pool of parallel loops."""

from __future__ import annotations

import threading

import pytest

from cinn_py.runtime import threadpool


def test_tasks_cover_every_id_once_and_run_concurrently() -> None:
    seen: list[tuple[int, int, str]] = []
    lock = threading.Lock()

    def task(task_id: int, num_tasks: int) -> None:
        with lock:
            seen.append((task_id, num_tasks, threading.current_thread().name))

    with threadpool.num_threads_override(3):
        threadpool.parallel_for(task, extent=100)
    assert sorted(t for t, _, _ in seen) == [0, 1, 2] and {n for _, n, _ in seen} == {3}
    assert any(name.startswith("cinn-py-worker") for _, _, name in seen)
    seen.clear()
    with threadpool.num_threads_override(8):
        threadpool.parallel_for(task, extent=2)  # never more tasks than iterations
    assert sorted(t for t, _, _ in seen) == [0, 1]


def test_errors_propagate_after_all_tasks_finished() -> None:
    done = []

    def task(task_id: int, num_tasks: int) -> None:
        done.append(task_id)
        if task_id == 1:
            raise RuntimeError("boom")

    with threadpool.num_threads_override(2), pytest.raises(RuntimeError, match="boom"):
        threadpool.parallel_for(task, extent=2)
    assert sorted(done) == [0, 1]


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
