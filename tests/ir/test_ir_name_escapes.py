"""Names the IR text format uses as words (`select`, `true`, `axis`, `float32`) or that are not plain
identifiers (`my prog`, `x@GRAD`, unicode) print escaped in backquotes and parse back as names
(issue 23 item 9: NetBuilder refused the program name `select`, 36 of CINN's op cases; item 10: a
unicode name in IR text was 'malformed IR: AssertionError')."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.diagnostics import ParseError
from cinn_py.ir import parse_ir, print_ir
from cinn_py.ir.text.names import KEYWORDS, format_name
from cinn_py.tools.testing.golden import assert_roundtrip
from tests.reliability.renaming import rename

WORDS = ["select", "true", "false", "axis", "root", "function", "float32", "inf", "and", "Reduce", "cinn_max"]
HOSTILE = ["my prog", "x@GRAD", "a.b", "ünï", "名前", "a`b", "back\\slash", "new\nline", "0abc"]


def _program() -> cp.ir.LoweredFunc:
    a = cp.placeholder((4, 8), "float32", "A")
    b = cp.compute((4, 8), lambda i, j: a[i, j] * 2.0, "B")
    k = cp.reduce_axis(8)
    c = cp.compute((4,), lambda i: cp.reduce_sum(b[i, k], [k]), "C")
    return cp.lower("fn", [a, c])


@pytest.mark.parametrize("name", WORDS + HOSTILE)
@pytest.mark.parametrize("position", ["A", "B", "C", "func"])
def test_any_name_round_trips_through_the_text_format(name: str, position: str) -> None:
    if position == "func":
        func = rename(_program(), {}, func_name=name)
    else:
        func = rename(_program(), {position: name})
    assert_roundtrip(func, f"{position}={name!r}: ")
    assert format_name(name) in print_ir(func)


def test_plain_names_print_bare_as_cinn_prints_them() -> None:
    assert format_name("A") == "A" and format_name("i_j_fused") == "i_j_fused"
    assert format_name("select") == "`select`" and format_name("a`b") == "`a\\`b`"
    assert {"select", "true", "axis", "float32"} <= KEYWORDS


@pytest.mark.parametrize("name", ["select", "true", "axis", "root", "function", "cinn_x", "float32"])
def test_net_builder_accepts_names_of_the_text_format(name: str) -> None:
    builder = cp.NetBuilder(name)
    x = builder.create_input("float32", [4, 8], name)
    y = builder.create_input("float32", [4, 8], "y")
    out = builder.add(builder.relu(x), y)
    X, Y = np.random.default_rng(0).standard_normal((2, 4, 8)).astype("float32")
    (got,) = cp.build_and_get_output(builder.build(), cp.DefaultHostTarget(), [x, y], [X, Y], [out])
    np.testing.assert_allclose(got, np.maximum(X, 0) + Y, rtol=1e-6)


@pytest.mark.parametrize("name", ["my prog", "x@GRAD", "名前", "int"])
def test_net_builder_accepts_any_program_name(name: str) -> None:
    builder = cp.NetBuilder(name)
    x = builder.create_input("float32", [3], "x")
    out = builder.exp(x)
    X = np.arange(3, dtype="float32")
    (got,) = cp.build_and_get_output(builder.build(), cp.DefaultHostTarget(), [x], [X], [out])
    np.testing.assert_allclose(got, np.exp(X), rtol=1e-6)


@pytest.mark.parametrize("bad", ["", "a\0b"])
def test_program_name_must_be_a_non_empty_string(bad: str) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        cp.NetBuilder(bad)


@pytest.mark.parametrize(("text", "message"), [
    ("ünï[0]", "unexpected character 'ü'.*backquotes"),
    ("a + 名前", "unexpected character '名'"),
    ("`abc", "unterminated backquoted name"),
    ("`` + 1", "empty name"),
    ("`a\\qb`", "invalid escape"),
])
def test_bad_names_in_text_are_parse_errors_with_a_position(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        parse_ir(text)
    assert info.value.line == 1 and info.value.col >= 1


def test_an_escaped_keyword_is_a_name_not_the_keyword() -> None:
    func = rename(_program(), {"B": "select"})
    text = print_ir(func, decls=True)
    assert "`select`[" in text and "select(" not in text
    assert print_ir(parse_ir(text), decls=True) == text


def test_gpu_axis_vars_print_as_cinn_prints_them() -> None:
    assert format_name("threadIdx.x") == "threadIdx.x" and format_name("blockIdx.z") == "blockIdx.z"
    assert format_name("threadIdx.w") == "`threadIdx.w`"
