"""Malformed IR text: exact error messages with line:col, and a fuzz test that random mutations
of valid text raise only ParseError (never another exception from inside the parser)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cinn_py.diagnostics import CinnError, ParseError
from cinn_py.ir.text.parser import parse_expr, parse_func, parse_ir, parse_stmt

FUNC = """function fn (_A, _B)
{
  ScheduleBlock(root)
  {
    serial for (i, 0, 32)
    {
      ScheduleBlock(B)
      {
        i0 = axis.bind(i)
        B[i0] = (A[i0] * 2.00000000f)
      }
    }
  }
}"""

MALFORMED = [
    ("function fn (_A, _B)\n{\n  B[i] = A[i]\n}", 3, 5, "undefined variable 'i'"),
    ("(a + )", 1, 6, "expected an expression, found ')'"),
    ("serial for (i, 0, 32) {\n  B[i] = 1.0f", 2, 14, "expected '}' to close the block, found end of input"),
    ("ScheduleBlock(B) { i0, i1 = axis.bind(i) B[i0] = 1.0f }", 1, 34,
     "axis.bind arity mismatch: 2 iter vars (i0, i1) but 1 values"),
    ("select(a, b)", 1, 1, "select takes 3 arguments, got 2"),
    ("(true and 1)", 1, 7, "invalid And: And needs bool operands, got bool, int32"),
    ("x = 3", 1, 3, "only a tensor element 'T[...]' can be assigned"),
    ("vectorize[0] for (i, 0, 4) { }", 1, 1, "vectorize factor must be positive"),
    ("thread_bind[blockIdx.w] for (i, 0, 4) { }", 1, 22, "expected 'x', 'y' or 'z', found identifier 'w'"),
    ("// decl tensor A : float32[4]\nB[0] = A[0]", 2, 1, "undefined tensor 'B'"),
    ("// decl frob x\n1", 1, 9, "expected a decl kind"),
    ("Reduce(avg, a,0.0f)", 1, 8, "expected a reduce kind (sum, sub, Div, Mul, Max, Min, &&, ||)"),
    ("(int8_t)1.5f", 1, 1, "invalid literal: '(int8_t)' needs a plain integer literal"),
    ("7q", 1, 1, "malformed number '7q'"),
    ('"abc', 1, 1, "unterminated string literal"),
    ("a $ b", 1, 3, "unexpected character '$'"),
    ("1 2", 1, 3, "expected end of input, found number '2'"),
    ("// decl func f(input A)\nfunction g (_A) { }", 2, 1, "function 'g' does not match its decl 'func f'"),
    ("a[0, 1] + a[0]", 1, 11, "tensor 'a' is indexed with 1 indices here but 2 elsewhere"),
    ("cinn::common::raw_uint16_to_float16(0x1ffff)", 1, 37,
     "invalid literal: 0x1ffff is not a 16-bit pattern"),
    ("", 1, 1, "expected IR text, found end of input"),
    ("B[0] = 1.0f\n// decl exact", 2, 1, "'// decl' lines must come before the IR text"),
]


@pytest.mark.parametrize(("text", "line", "col", "message"), MALFORMED)
def test_malformed_input(text: str, line: int, col: int, message: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_ir(text)
    err = info.value
    assert (err.line, err.col) == (line, col)
    assert err.message.startswith(f"{line}:{col}: {message}"), err.message
    assert isinstance(err, CinnError)


def test_error_has_caret_line() -> None:
    with pytest.raises(ParseError) as info:
        parse_ir("serial for (i, 0, 32) {\n  B[i] = (A[i] +* 2.0f)\n}")
    assert str(info.value) == ("2:17: expected an expression, found '*'\n"
                               "    B[i] = (A[i] +* 2.0f)\n"
                               "                  ^")


def test_kind_specific_entry_points() -> None:
    with pytest.raises(ParseError, match="expected 'function'"):
        parse_func("B[0] = 1.0f")
    with pytest.raises(ParseError, match="expected end of input, found '='"):
        parse_expr("B[0] = 1.0f")
    assert type(parse_stmt("__syncthreads()")).__name__ == "Evaluate"
    with pytest.raises(TypeError):
        parse_ir(42)  # type: ignore[arg-type]


_PIECES = ("(", ")", "{", "}", "[", "]", ",", "=", "+", "-", "*", "0", "1ll", "2.5f", "i", "B", "for",
           "serial", "axis.bind", "ScheduleBlock", "// decl ", "\n", " ", "\"", ":", "#", "<", ">",
           "(float16)", "(int8_t)", "Reduce(", "select(", "function", "Module", "if", "else", "0x", ".")


def _mutate(text: str, rng: random.Random, edits: int) -> str:
    for _ in range(edits):
        pos = rng.randrange(len(text) + 1)
        action = rng.randrange(3)
        if action == 0:
            text = text[:pos] + text[pos + rng.randrange(1, 6):]
        elif action == 1:
            text = text[:pos] + rng.choice(_PIECES) + text[pos:]
        else:
            end = min(len(text), pos + rng.randrange(1, 20))
            chunk = text[pos:end]
            other = rng.randrange(len(text) + 1)
            text = text[:other] + chunk + text[other:]
    return text


@settings(max_examples=150, deadline=None, database=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_fuzz_mutations_raise_only_parse_error(seed: int, edits: int) -> None:
    from cinn_py import ir

    text = _mutate(FUNC if seed % 2 else ir.print_ir(parse_ir(FUNC), decls=True), random.Random(seed), edits)
    try:
        parse_ir(text)
    except ParseError as err:
        # The parser's last-resort net (an internal exception turned into a ParseError) must
        # never fire: every error is a targeted message.
        assert "malformed IR:" not in err.message, err.message
