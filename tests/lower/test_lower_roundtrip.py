"""Every lowered program passes the IR verifier and survives the IR text format:
`parse_ir(print_ir(f, decls=True))` is structurally equal to `f` and prints the same CINN text
(0-d stores `T[]`, `-inf` inits, int64 immediates, float16/bfloat16 literals included)."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.ir import LoweredFunc, structural_equal
from cinn_py.ir.text.parser import parse_ir
from cinn_py.ir.text.printer import print_ir
from cinn_py.ir.verifier import verify
from tests.lower import programs
from tests.lower.test_seed_example import build_seed

BUILDERS = ["elementwise", "broadcast", "multi_axis_keepdims", "full_reduction", "half", "ints_bool",
            "symbolic_mixed", "rms_norm", "two_outputs"]


def _round_trip(func: LoweredFunc) -> None:
    verify(func)
    parsed = parse_ir(print_ir(func, decls=True))
    assert isinstance(parsed, LoweredFunc)
    assert structural_equal(parsed, func)
    assert print_ir(parsed) == print_ir(func)


@pytest.mark.parametrize("builder", BUILDERS)
def test_lowered_programs_round_trip(builder: str) -> None:
    _round_trip(getattr(programs, builder)())


def test_every_reduction_kind_round_trips() -> None:
    for func in programs.reductions().values():
        _round_trip(func)


def test_seed_example_round_trips() -> None:
    X, F = build_seed()
    _round_trip(cp.lower("fn", [X, F]))
