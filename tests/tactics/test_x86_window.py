"""The x86 window tactic (schedules/tactics/x86_window.py): conv2d, conv2d_grad_data, pool2d and
pool2d_grad take the strip plan (reduce loops outside a vector strip of the output row),
conv2d_grad_filter the rfactor plan (a strip along the innermost reduce loop); row sums keep the
row tactic and bias gradients the column tactic. Every schedule runs compiled against numpy at
the 16- and 8-lane widths, on odd sizes (strip tails) and a symbolic batch."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend import NetBuilder
from cinn_py.ir import For, walk
from cinn_py.pipeline import program_steps
from schedules.tactics import analyze_group, auto_schedule, build_schedule_config


def _scheduled(program: Any, bits: int) -> tuple[Any, Any]:
    (func,) = program_steps(program)[1]
    cfg = replace(build_schedule_config(analyze_group(func)), vector_width_bits=bits)
    return func, auto_schedule(func, target="x86", config=cfg)


def _vector_loops(sch: Any) -> list[int]:
    return [n.vectorize_factor for n in walk(sch.func.body) if isinstance(n, For) and n.vectorize_factor]


def _check(program: Any, bits: int, batch: int = 2, vectorized: bool = True) -> str:
    """The auto schedule's note for the program's one reduction; its kernel against numpy."""
    func, sch = _scheduled(program, bits)
    rng = np.random.default_rng(1)
    arrays = [rng.uniform(-1, 1, [batch if not isinstance(d, int) else d for d in v.shape]).astype(np.float32)
              for v in program.inputs]
    got = cp.build(sch, target="x86")(*arrays)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(got, program.run_numpy(*arrays), rtol=1e-4, atol=1e-4)
    assert bool(_vector_loops(sch)) or not vectorized, sch.auto_report.nests
    return " ".join(sch.auto_report.nests.values())


def _conv_like(op: str, batch: Any = 2) -> Any:
    nb = NetBuilder(op)

    def x() -> Any:
        return nb.create_input("float32", [batch, 6, 13, 11], "X")

    def w() -> Any:
        return nb.create_input("float32", [4, 3, 3, 3], "W")

    def dy() -> Any:
        return nb.create_input("float32", [batch, 4, 7, 11], "DY")

    args = {"strides": [2, 1], "paddings": [1, 1], "groups": 2}
    if op == "conv2d":
        return nb.build([nb.conv2d(x(), w(), **args)])
    if op == "conv2d_grad_data":
        return nb.build([nb.conv2d_grad_data(dy(), w(), [13, 11], **args)])
    if op == "conv2d_grad_filter":
        return nb.build([nb.conv2d_grad_filter(x(), dy(), [3, 3], **args)])
    kind, pool = op.split("_")[0], {"kernel_size": [3, 3], "padding": [1, 1]}
    if op.endswith("grad"):
        return nb.build([nb.pool2d_grad(x(), nb.create_input("float32", [batch, 6, 13, 11], "DY"),
                                        kind, **pool)])
    return nb.build([nb.pool2d(x(), kind, **pool)])


@pytest.mark.parametrize("bits", [512, 256])
@pytest.mark.parametrize("op", ["conv2d", "conv2d_grad_data", "max_pool", "avg_pool", "max_pool_grad",
                                "avg_pool_grad"])
def test_window_ops_take_the_strip_plan(op: str, bits: int) -> None:
    note = _check(_conv_like(op), bits)
    assert "window reduction" in note and "outside vectorize" in note, note


@pytest.mark.parametrize("bits", [512, 256])
def test_filter_gradient_takes_the_rfactor_plan(bits: int) -> None:
    note = _check(_conv_like("conv2d_grad_filter"), bits)
    assert "rfactor over the innermost reduce loop" in note, note


def test_symbolic_batch_keeps_the_window_plans() -> None:
    for op in ("conv2d", "conv2d_grad_data", "conv2d_grad_filter"):
        assert "window reduction" in _check(_conv_like(op, "N"), 512, batch=3), op


def test_short_rows_use_fewer_lanes() -> None:
    """A 5-wide output row: 4-lane strips (with a tail of 1) instead of none."""
    nb = NetBuilder("narrow")
    x = nb.create_input("float32", [2, 3, 7, 5], "X")
    program = nb.build([nb.conv2d(x, nb.create_input("float32", [4, 3, 3, 3], "W"), paddings=[1, 1])])
    assert "vectorize[4] strips of 5" in _check(program, 512)


def test_middle_axis_sum_takes_the_strip_plan_and_row_sums_do_not() -> None:
    nb = NetBuilder("sums")
    x = nb.create_input("float32", [3, 9, 37], "X")
    middle = nb.build([nb.reduce_sum(x, [1])])
    assert "window reduction" in _check(middle, 512)
    nb = NetBuilder("rows")
    x = nb.create_input("float32", [3, 9, 37], "X")
    assert "window reduction" not in _check(nb.build([nb.reduce_sum(x, [2])]), 512, vectorized=False)
