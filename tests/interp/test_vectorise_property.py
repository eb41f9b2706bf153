"""Property: vectorised evaluation of random loop nests equals forced-serial evaluation.

The programs mix injective and non-injective store indices, loads of the stored buffer at the
same or another index (carried dependences), guards, selects and integer arithmetic, so every
planning outcome (flattened nest, inner loop only, reduction, serial) is exercised.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cinn_py import ir
from cinn_py.interp import InterpError, run_ir
from cinn_py.ir import Load, Store
from tests.interp.irb import func, loop, tensor, var

R, C = 4, 6
Iv, Jv = var("i"), var("j")
INDEX_PATTERNS = {
    "row_major": Iv * C + Jv,
    "col_major": Jv * R + Iv,
    "reversed": Iv * C + (C - 1 - Jv),
    "overlapping_rows": Iv * (C - 1) + Jv,
    "halved": ir.Div(Iv * C + Jv, ir.const(2)),
    "mod5": ir.Mod(Iv * C + Jv, ir.const(5)),
    "row_only": Iv,
    "constant": ir.const(3),
}

_leaf = st.sampled_from(["a", "a_t", "c", "i", "j"])


def _expr(draw: st.DrawFn, depth: int) -> ir.Expr:
    A = _A
    if depth == 0 or draw(st.booleans()):
        leaf = draw(_leaf)
        if leaf == "a":
            return Load(A, (Iv, Jv))
        if leaf == "a_t":
            return Load(A, (ir.Mod(Jv, ir.const(R)), ir.Mod(Iv + Jv, ir.const(C))))
        if leaf == "c":
            return ir.const(draw(st.integers(-20, 20)))
        return Iv if leaf == "i" else Jv
    a, b = _expr(draw, depth - 1), _expr(draw, depth - 1)
    op = draw(st.sampled_from(["add", "sub", "mul", "div", "mod", "min", "max", "select"]))
    if op in ("div", "mod"):
        divisor = ir.const(draw(st.sampled_from([-3, -1, 2, 7])))
        return ir.Div(a, divisor) if op == "div" else ir.Mod(a, divisor)
    if op == "select":
        return ir.Select(a < b, a, b * 2)
    return {"add": ir.Add, "sub": ir.Sub, "mul": ir.Mul, "min": ir.Min, "max": ir.Max}[op](a, b)


_A = tensor("A", (R, C), "int32")
_B = tensor("B", (R * C,), "int32")


@st.composite
def programs(draw: st.DrawFn) -> ir.LoweredFunc:
    idx = INDEX_PATTERNS[draw(st.sampled_from(sorted(INDEX_PATTERNS)))]
    value = _expr(draw, 3)
    reads_b = draw(st.sampled_from(["none", "same", "shifted"]))
    if reads_b == "same":
        value = value + Load(_B, (idx,))
    elif reads_b == "shifted":
        value = value + Load(_B, (ir.Mod(idx + 1, ir.const(R * C)),))
    stmt: ir.Stmt = Store(_B, value, (idx,))
    if draw(st.booleans()):
        stmt = ir.IfThenElse(ir.ne(ir.Mod(Iv + Jv, ir.const(3)), 0),
                             ir.Block((stmt,)))
    second = draw(st.booleans())
    body = [stmt]
    if second:
        body.append(Store(_B, Load(_B, (idx,)) * 3, (idx,)))
    init = loop(Iv, R, loop(Jv, C, Store(_B, ir.const(1), (Iv * C + Jv,))))
    return func("prop", [_A], [_B], init, loop(Iv, R, loop(Jv, C, *body)))


@settings(max_examples=60, deadline=None)
@given(programs(), st.integers(0, 2**32 - 1))
def test_vectorised_equals_serial(f: ir.LoweredFunc, seed: int) -> None:
    a = np.random.default_rng(seed).integers(-100, 100, (R, C), dtype=np.int32)
    outcomes = []
    for vectorize in (False, True):
        try:
            outcomes.append(run_ir(f, {"A": a}, vectorize=vectorize)["B"])
        except InterpError as err:
            outcomes.append(type(err).__name__)
    if isinstance(outcomes[0], str) or isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        np.testing.assert_array_equal(outcomes[1], outcomes[0])
