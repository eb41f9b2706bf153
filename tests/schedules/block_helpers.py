"""Shared helpers of the block-primitive tests: schedule, print, check (replay + differential)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cinn_py.frontend.compute import compute, placeholder
from cinn_py.ir import LoweredFunc, ScheduleBlockRealize, print_ir
from cinn_py.lowering import lower
from schedules import IRSchedule
from schedules.analysis.loops import find_block
from schedules.testing import check_schedule

SYM2 = ({"S1": 1, "S2": 1}, {"S1": 3, "S2": 5}, {"S1": 4, "S2": 7})
"""Bindings of the seed's symbolic dims (unit, odd and non-dividing values)."""


def lowered_two_stage(shape: tuple) -> LoweredFunc:
    """`B = A * 2; C = B + 1` over a 2-D `shape`, lowered from the compute DSL."""
    a = placeholder(shape, "float32", "A")
    b = compute(shape, lambda i, j: a[i, j] * 2.0, "B")
    c = compute(shape, lambda i, j: b[i, j] + 1.0, "C")
    return lower("fn", [a, c])


def root_text(func: LoweredFunc) -> str:
    """The printed statements under the root block, dedented to column 0."""
    lines = print_ir(func).splitlines()[5:-3]
    return "\n".join(line[6:] for line in lines) + "\n"


def block(sch: IRSchedule, name: str) -> ScheduleBlockRealize:
    """The current realize of block `name`."""
    return find_block(sch.func, name)


def iter_values(sch: IRSchedule, name: str) -> list[str]:
    return [print_ir(v) for v in block(sch, name).iter_values]


def loop_names(sch: IRSchedule, name: str) -> list[str]:
    return [lp.var_name for lp in sch.get_loops(name)]


def check(before: LoweredFunc, sch: IRSchedule, bindings: Sequence[Mapping[str, int]] | None = None) -> None:
    """Trace replay through JSON and Python gives the same IR, and before/after interpret equal
    on random inputs for every binding of the symbolic dims."""
    check_schedule(before, sch, sym_bindings=bindings)
