"""Compile time: compiled programs cached on disk (a warm start skips every step before `load`),
groups compiled in worker processes, identical groups compiled once, progress on stderr
(cinn_py/runtime/graph_cache.py, cinn_py/runtime/compile_jobs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cinn_py import pipeline
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.program import Program
from cinn_py.runtime import cache, compile_jobs, graph_cache


def _branches(dtypes: tuple[str, ...] = ("float32",) * 4, fn: str = "exp") -> Program:
    """One input per dtype, each through `fn` and a row sum: one group per input."""
    nb = NetBuilder("branches")
    outs = []
    for k, dtype in enumerate(dtypes):
        x = nb.create_input(dtype, [4, 8], f"x{k}")
        outs.append(nb.reduce_sum(getattr(nb, fn)(x), [1], True))
    return nb.build(outs)


def _chain(scale: float = 0.5) -> Program:
    """Four distinct groups: matmul, softmax, matmul, row sum."""
    nb = NetBuilder("chain")
    x = nb.create_input("float32", [16, 8], "x")
    w = nb.create_input("float32", [8, 8], "w")
    h = nb.softmax(nb.matmul(x, w), [1])
    h = nb.scale(nb.matmul(h, w), scale)
    return nb.build([nb.reduce_sum(nb.exp(h), [1], False)])


def _chain_numpy(x: np.ndarray, w: np.ndarray, scale: float = 0.5) -> np.ndarray:
    h = x @ w
    h = np.exp(h - h.max(1, keepdims=True))
    h = (h / h.sum(1, keepdims=True)) @ w * scale
    return np.exp(h).sum(1)


@pytest.fixture()
def fresh_cache(tmp_path: Path) -> Iterator[Path]:
    import codegen.llvm as x86

    cache.set_cache_dir(tmp_path)
    x86.CACHE.clear_memory()
    graph_cache.CACHE.clear_memory()
    yield tmp_path
    x86.CACHE.clear_memory()
    graph_cache.CACHE.clear_memory()
    cache.set_cache_dir(None)


def test_workers_compile_and_a_warm_start_skips_the_steps(fresh_cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import codegen.llvm as x86

    monkeypatch.setenv("CINN_PY_COMPILE_JOBS", "2")
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8, 8), dtype=np.float32)
    compiled = pipeline.compile_program(_chain(), "x86", schedule="auto", fast_math=False)
    assert len(compiled.kernels) >= compile_jobs.MIN_PARALLEL_GROUPS
    np.testing.assert_allclose(compiled(x, w), _chain_numpy(x, w), rtol=1e-4, atol=1e-5)
    assert list((fresh_cache / "graph").iterdir()), "the compiled program is on disk"

    # as a new process: nothing in memory, and the steps before `load` must not run
    x86.CACHE.clear_memory()
    graph_cache.CACHE.clear_memory()
    cache.forget_fingerprints()

    def no_steps(*args: object, **kwargs: object) -> None:
        raise AssertionError("a warm start ran the scheduler or printed a kernel for its key")

    monkeypatch.setattr(pipeline, "schedule_step", no_steps)
    monkeypatch.setattr(pipeline, "trace_program", no_steps)
    monkeypatch.setattr(cache, "ir_text", no_steps)  # the fingerprints come with the cached graph
    warm = pipeline.compile_program(_chain(), "x86", schedule="auto", fast_math=False)
    np.testing.assert_allclose(warm(x, w), _chain_numpy(x, w), rtol=1e-4, atol=1e-5)
    assert [k.from_cache for k in warm.kernels] == [True] * len(warm.kernels)
    # the lowered functions are read only when asked for, and are the cold compile's
    assert isinstance(warm._funcs, graph_cache.PickledFuncs)
    assert [str(f) for f in warm.funcs] == [str(f) for f in compiled.funcs]


def test_identical_groups_share_one_kernel(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CINN_PY_COMPILE_JOBS", "1")
    compiled = pipeline.compile_program(_branches(), "x86", schedule="auto")
    assert len(compiled.kernels) == 4 and len({id(k) for k in compiled.kernels}) == 1
    arrays = [np.random.default_rng(k).standard_normal((4, 8), dtype=np.float32) for k in range(4)]
    for got, a in zip(compiled(*arrays), arrays):
        np.testing.assert_allclose(got, np.exp(a).sum(1, keepdims=True), rtol=1e-5)


def test_shape_key_tells_dtypes_and_ops_apart() -> None:
    funcs = pipeline.program_steps(_branches(("float32", "float32", "float64")))[1]
    funcs += pipeline.program_steps(_branches(("float32",), fn="tanh"))[1]
    keys = [compile_jobs.shape_key(f) for f in funcs]
    assert keys[0] == keys[1] and funcs[0].name != funcs[1].name
    assert len({keys[0], keys[2], keys[3]}) == 3


def test_program_key_sees_every_attribute_digit_and_the_tuning_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def key(program: Program) -> str:
        return graph_cache.graph_key(program, "x86", "auto", False, False)

    def scaled(value: float) -> Program:
        nb = NetBuilder("scaled")
        return nb.build([nb.scale(nb.create_input("float64", [4], "x"), value)])

    assert key(scaled(0.5)) == key(scaled(0.5))
    assert key(scaled(0.5)) != key(scaled(0.5 + 1e-12))  # the listing prints 8 digits: both read 0.5
    assert str(scaled(0.5)) == str(scaled(0.5 + 1e-12))
    db = tmp_path / "tuning_db.json"
    monkeypatch.setenv("CINN_PY_TUNING_DB", str(db))
    before = key(_chain())
    db.write_text("{}")
    assert key(_chain()) != before


def test_program_key_misses_on_another_shape_dtype_option_or_project_version(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def exp(shape: list[int], dtype: str = "float32") -> Program:
        nb = NetBuilder("exp")
        return nb.build([nb.exp(nb.create_input(dtype, shape, "x"))])

    def key(program: Program, **options: object) -> str:
        given = {"target": "x86", "schedule": "auto", "fast_math": False, "checked": False, **options}
        return graph_cache.graph_key(program, **given)  # type: ignore[arg-type]

    base = key(exp([4, 8]))
    assert key(exp([4, 8])) == base
    others = [key(exp([4, 9])), key(exp([8, 4])), key(exp([4, 8], "float64")),
              key(exp([4, 8]), fast_math=True), key(exp([4, 8]), schedule=None),
              key(exp([4, 8]), checked=True)]
    assert base not in others and len(set(others)) == len(others)
    monkeypatch.setattr(graph_cache, "project_digest", lambda: "another project version")
    assert key(exp([4, 8])) != base


def test_progress_lines_on_stderr(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CINN_PY_COMPILE_JOBS", "1")
    monkeypatch.setattr(compile_jobs, "PROGRESS_AFTER_S", 0.0)
    pipeline.compile_program(_branches(("float32", "float64")), "x86", schedule="auto")
    err = capsys.readouterr().err
    assert "cinn_py: compiling branches: 2/2 groups (" in err and err.rstrip().endswith("done")
    graph_cache.CACHE.clear_memory()
    # two identical float32 groups and a float64 one: the first compile finishes two of three
    pipeline.compile_program(_branches(("float32", "float32", "float64")), "x86", schedule="auto")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("cinn_py: compiling branches: 2/3 groups ("), lines
    assert lines[-1].startswith("cinn_py: compiling branches: 3/3 groups (") and lines[-1].endswith("done")
    monkeypatch.setenv("CINN_PY_PROGRESS", "0")
    graph_cache.CACHE.clear_memory()
    pipeline.compile_program(_branches(("float64", "float32")), "x86", schedule="auto")
    assert "cinn_py: compiling" not in capsys.readouterr().err
