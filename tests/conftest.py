"""Shared fixtures: a fresh name context per test (CINN's ResetNameId), no tuning database unless a
test asks for one (the user's tuned parameters must not change what tests see), the torch
backend in strict mode (internal errors raise, never fall back silently), a fresh on-disk
kernel cache (`cache_dir`), the `cuda` marker (a GPU when there is one, else the CPU emulator), and checked
builds (bounds-checked kernels: an
out-of-bounds access in any test is an OutOfBoundsAccessError, not silent garbage or a crash)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cinn_py.ir import reset_name_ids


@pytest.fixture(autouse=True)
def _fresh_names() -> None:
    reset_name_ids()


@pytest.fixture(autouse=True, scope="session")
def _checked_builds() -> Iterator[None]:
    from cinn_py.runtime import checked  # noqa: PLC0415

    checked.set_default_checked(True)
    yield
    checked.set_default_checked(None)


@pytest.fixture(autouse=True)
def _strict_torch_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch backend raises an internal error of a partition instead of running it eagerly
    (`CINN_PY_TORCH_STRICT`): no test passes by hiding a converter bug behind the eager fallback.
    A test of the fallback itself opts out (`monkeypatch.delenv` or `options={"strict": False}`)."""
    monkeypatch.setenv("CINN_PY_TORCH_STRICT", "1")


@pytest.fixture(autouse=True)
def _no_tuning_db(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CINN_PY_TUNING_DB", "off")


@pytest.fixture()
def cache_dir(tmp_path: Path) -> Iterator[Path]:
    """The kernel disk cache moved under `tmp_path`, x86 memory cache empty before and after;
    yields the x86 backend's cache folder."""
    import codegen.llvm as x86  # noqa: PLC0415 - only the cache tests need the backend
    from cinn_py.runtime import cache  # noqa: PLC0415

    cache.set_cache_dir(tmp_path)
    x86.CACHE.clear_memory()
    yield tmp_path / "x86"
    x86.CACHE.clear_memory()


def _has_gpu() -> bool:
    try:
        import pycuda.driver as drv  # noqa: PLC0415

        drv.init()
        return drv.Device.count() > 0
    except Exception:
        return False


_GPU = pytest.StashKey[bool]()


LONG_FIRST = ("tests/torch/", "tests/test_pyright.py", "tests/autodiff/test_train_example.py",
              "tests/reliability/test_fuzz", "tests/tactics/test_tune.py",
              "tests/autodiff/test_grad_compiled.py", "tests/reliability/test_deep_", "docs/")
"""Where the long tests (5-60 s each) live: on xdist workers they are handed out first, so that the
run does not end on one worker finishing a long test while the other waits (collection order put
tests/torch/ and the docs last)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a GPU, every `cuda` test runs its kernels in the CPU emulator (`cuda_emulated`);
    on xdist workers the long tests come first (LONG_FIRST; a stable sort, so each file keeps
    its order)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))
    # get_closest_marker, not `"cuda" in item.keywords`: keywords also hold path segments, so
    # every test under tests/codegen/cuda/ would count as marked.
    cuda_items = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not cuda_items:
        return
    config.stash[_GPU] = _has_gpu()
    if config.stash[_GPU]:
        return
    for item in cuda_items:
        item.add_marker(pytest.mark.cuda_emulated)


@pytest.fixture(autouse=True)
def _cuda_emulation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cuda_emulated` tests build CUDA kernels for the CPU emulator (`CINN_PY_CUDA=emulate`)."""
    if request.node.get_closest_marker("cuda_emulated") is not None:
        monkeypatch.setenv("CINN_PY_CUDA", "emulate")


def has_gpu(config: pytest.Config) -> bool:
    """Whether this session launches `cuda` tests on a GPU (False: in the emulator)."""
    return config.stash.get(_GPU, False)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Workers for `-n auto` (in addopts): one per usable CPU (`sched_getaffinity`, not psutil's
    physical cores: a 2-vCPU runner has 1) for the suite or a directory; none (the tests run in
    this process) when only files or test ids are named, where two workers' start-up (each imports
    torch and the compiler, ~5 s) costs more than parallelism saves. `-n N` or
    PYTEST_XDIST_AUTO_NUM_WORKERS overrides it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        paths = [Path(arg.split("::")[0]) for arg in config.args]
        if paths and all(path.is_file() for path in paths):
            return 0
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite the CHECK lines of golden .ir cases from the actual output")
