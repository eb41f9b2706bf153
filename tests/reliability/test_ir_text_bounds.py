"""IR text whose loops cannot run as written, or whose accesses leave their tensors, is refused
with line:col (issue 23 item 7): `for (i, 0, -8)` over a buffer of 8 compiled to a kernel that
returned uninitialised memory."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.diagnostics import ParseError, VerifyError
from cinn_py.frontend.compute import compute, placeholder
from cinn_py.ir import parse_ir, print_ir
from cinn_py.ir.verifier import verify


def _scale_func(n: int = 8) -> ir.LoweredFunc:
    a = placeholder((n,), "float32", "A")
    return cp.lower("fn", [a, compute((n,), lambda i: a[i] * 2.0, name="B")])


@pytest.mark.parametrize("decls", [True, False])
def test_a_negative_loop_extent_is_a_parse_error(decls: bool) -> None:
    text = print_ir(_scale_func(), decls=decls).replace("for (i, 0, 8)", "for (i, 0, -8)")
    with pytest.raises(ParseError, match="loop 'i' has extent -8; a loop extent must be >= 0") as err:
        parse_ir(text)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "-8" in s)
    assert (err.value.line, err.value.col) == (line, text.splitlines()[line - 1].index("-8") + 1)


@pytest.mark.parametrize(("old", "new", "tensor", "message"), [
    ("for (i, 0, 8)", "for (i, 0, 9)", "B",
     r"index 0 of 'B' takes values in \[0, 8\].*outside its dimension \[0, 8\)"),
    ("A[i0]", "A[(i0 + 1)]", "A", r"index 0 of 'A' takes values in \[1, 8\]"),
    ("A[i0]", "A[(7 - (i0 * 2))]", "A", r"index 0 of 'A' takes values in \[-7, 7\]"),
])
def test_an_access_outside_its_declared_tensor_is_a_parse_error(old: str, new: str, tensor: str,
                                                                 message: str) -> None:
    text = print_ir(_scale_func(), decls=True).replace(old, new)
    with pytest.raises(ParseError, match=message) as err:
        parse_ir(text)
    source = text.splitlines()[err.value.line - 1]
    assert source[err.value.col - 1:].startswith(f"{tensor}[")


def test_guarded_and_in_range_accesses_are_accepted() -> None:
    text = print_ir(_scale_func(), decls=True)
    assert isinstance(parse_ir(text), ir.LoweredFunc)
    # a split tail: the guard keeps the out-of-range iterations from running
    guarded = text.replace("for (i, 0, 8)", "for (i, 0, 12)").replace(
        "B[i0] = (A[i0] * 2.00000000f)", "if ((i0 < 8)) {\n B[i0] = (A[i0] * 2.00000000f)\n }")
    func = parse_ir(guarded)
    assert isinstance(func, ir.LoweredFunc)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(cp.build(func, "x86")(x), x * 2)
    padded = text.replace("(A[i0] * 2.00000000f)", "select((i0 >= 1), A[(i0 - 1)], 0.00000000f)")
    assert isinstance(parse_ir(padded), ir.LoweredFunc)
    # runs nothing
    assert isinstance(parse_ir(text.replace("for (i, 0, 8)", "for (i, 0, 0)")), ir.LoweredFunc)


def test_header_less_text_cannot_index_below_zero() -> None:
    text = print_ir(_scale_func()).replace("A[i0]", "A[(i0 - 1)]")
    with pytest.raises(ParseError, match="index 0 of 'A' takes values down to -1"):
        parse_ir(text)
    assert parse_ir(print_ir(_scale_func()).replace("for (i, 0, 8)", "for (i, 0, 9)"))  # shapes grow to fit


def test_the_verifier_refuses_a_negative_extent() -> None:
    func = _scale_func()
    loop = next(n for n in ir.walk(func.body) if isinstance(n, ir.For))
    bad = dataclasses.replace(func, body=ir.replace_stmt(func.body, loop, dataclasses.replace(
        loop, extent=ir.IntImm(loop.extent.dtype, -8))))
    with pytest.raises(VerifyError, match=r"verifier \[loop-extent\].*loop 'i' has extent -8"):
        verify(bad)
