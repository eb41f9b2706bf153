"""`schedules.analysis.dependence.is_injective`: the mixed-radix test behind the syntactic
same-iteration check of compute_at / simple_compute_at / reverse_compute_at."""

from __future__ import annotations

import pytest

from cinn_py import ir
from cinn_py.ir import Block, For, Var
from cinn_py.ir import dtype as dt
from schedules.analysis.dependence import is_injective

I32 = dt.int32
N = Var("N", I32, lower_bound=ir.const(1, I32), is_symbolic_constant=True)


def loop(name: str, extent: int | ir.Expr) -> For:
    ext = ir.const(extent, I32) if isinstance(extent, int) else extent
    return For(Var(name, I32), ir.const(0, I32), ext, Block(()))


@pytest.mark.parametrize(("index", "extents", "expected"), [
    (lambda v: (v["i"] * 8 + v["j"],), {"i": 4, "j": 8}, True),
    (lambda v: (v["i"] * 7 + v["j"],), {"i": 4, "j": 8}, False),
    # Equal coefficients: fine when one of the loops has a single iteration (a split by 1) ...
    (lambda v: (v["i"] + v["i_0"],), {"i": 5, "i_0": 1}, True),
    (lambda v: (v["i_0"] + v["i"],), {"i": 1, "i_0": 5}, True),
    # ... and a collision otherwise, whichever var sorts first.
    (lambda v: (v["i"] + v["i_0"],), {"i": 5, "i_0": 2}, False),
    (lambda v: (v["b"] + v["a"],), {"a": 3, "b": 3}, False),
    # A symbolic extent is allowed only on the largest coefficient.
    (lambda v: (v["i"] * 8 + v["j"],), {"i": N, "j": 8}, True),
    (lambda v: (v["i"] + v["j"],), {"i": N, "j": N}, False),
    (lambda v: (v["i"] + v["i_0"],), {"i": N, "i_0": 1}, True),
])
def test_is_injective(index, extents, expected) -> None:  # type: ignore[no-untyped-def]
    loops = [loop(name, ext) for name, ext in extents.items()]
    env = {lp.loop_var.name: lp.loop_var for lp in loops}
    assert is_injective(index(env), loops) is expected
