"""Regression tests for bugs the fuzzer found (minimal reproducers, shrunk by hand)."""

from __future__ import annotations

import re

import numpy as np

import cinn_py as cp
from schedules import IRSchedule


def test_parallel_loop_reading_a_symbolic_strided_tensor() -> None:
    s = cp.sym("S0")
    a = cp.placeholder((2, s), "float32", "A")
    k = cp.reduce_axis(2)
    b = cp.compute((s,), lambda i: cp.reduce_sum(a[k, i], [k]), "B")
    sch = IRSchedule(cp.lower("f", [a, b]))
    sch.parallel(sch.get_loops("B")[0])
    kernel = cp.build(sch, "x86")
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(kernel(x), x.sum(axis=0))


def test_cuda_auto_softmax_over_a_unit_axis_keeps_its_row_max_in_a_register() -> None:
    """fuzz --net seed 2024 case 876: the reduce over an axis of extent 1 is read back through
    its unit reduce loop (`reduce_max[i, rb, j]`, written at `[i, 0, j]`); the local buffer the
    CUDA auto scheduler chose kept the symbolic size `S0 * 12` (a CompileError) until the unit
    loop's variable is replaced by its min in bind lowering (the unit reduce now folds away)."""
    from cinn_py.frontend.fusion import plan
    from cinn_py.lowering.group import lower_group
    from cinn_py.tools.testing.cuda import run_cuda_emulated
    from schedules.tactics import auto_schedule_buckets

    nb = cp.NetBuilder("unit_axis_softmax")
    x = nb.create_input("float32", ["S0", 1, 12], "x")
    program = nb.build([nb.softmax(x, axes=(-2,))])
    (group,) = plan(program).groups
    for _, sch in auto_schedule_buckets(lower_group(group), target="cuda"):
        source = cp.codegen(sch.func, target="cuda").source
        # (a reduce over one element now folds into its body: no local buffer at all; where one is
        # kept it must be of constant size)
        assert not re.search(r"temp_buffer\[[^\]]*S0", source), source
    data = np.random.default_rng(0).uniform(-2, 2, (5, 1, 12)).astype(np.float32)
    got = run_cuda_emulated(program, data, race_check=True)
    np.testing.assert_allclose(got, np.ones_like(data), rtol=1e-6)
