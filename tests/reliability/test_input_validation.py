"""Hostile inputs to annotate, string immediates, num_threads and `cinn-py run --dims` are clear
errors (they used to print IR that does not parse, reach generated code, or end in a traceback)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cinn_py as cp
from cinn_py import ir
from cinn_py.cli import main
from cinn_py.runtime import threadpool
from schedules import IRSchedule

SEED = str(Path(__file__).resolve().parents[2] / "examples/seed_example.py")


def _func() -> ir.LoweredFunc:
    X = cp.placeholder((4,), "float32", "X")
    Y = cp.compute((4,), lambda i: X[i] * 2.0, "Y")
    return cp.lower("fn", [X, Y])


@pytest.mark.parametrize("key",
                         ["", "a b", "x\n", "k\x00", 'k"', "k:v", "a,b", "1st", "é", "a.", ".a", "a..b"])
def test_annotate_rejects_keys_that_are_not_identifiers(key: str) -> None:
    sch = IRSchedule(_func())
    before = str(sch.func)
    with pytest.raises(ValueError, match="annotate: key must be an identifier"):
        sch.annotate("Y", key, 1)
    assert str(sch.func) == before


@pytest.mark.parametrize(("value", "message"), [
    ("v\x00", "control character '\\\\x00'"), ("a\rb", "control character '\\\\r'"),
    ("\x1b[31m", "control character '\\\\x1b'"), ("a\nb", "control character '\\\\n'"),
    (float("nan"), "must be finite"), (float("inf"), "must be finite"), (2**64, "must fit int64"),
])
def test_annotate_rejects_values_that_do_not_print(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IRSchedule(_func()).annotate("Y", "k", value)


def test_annotate_rejects_other_value_types() -> None:
    with pytest.raises(TypeError, match="value of 'k' must be an int, float, bool or str, got list"):
        IRSchedule(_func()).annotate("Y", "k", [1])


def test_valid_annotations_round_trip_through_the_parser() -> None:
    sch = IRSchedule(_func())
    for key, value in (("x86.nontemporal", 1), ("tile", 4), ("big", -(2**63)), ("ratio", 0.5), ("flag", True),
                       ("note", "x y-z")):
        sch.annotate("Y", key, value)
    back = cp.parse_ir(cp.print_ir(sch.func, decls=True))
    ir.assert_structural_equal(back.functions[0] if hasattr(back, "functions") else back, sch.func)


@pytest.mark.parametrize("text", ["a\x00b", "a\rb", "\x07", "\x7f", "\x85"])
def test_string_immediates_reject_control_characters(text: str) -> None:
    with pytest.raises(ValueError, match="StringImm: .* contains the control character"):
        ir.StringImm(text)


def test_string_immediates_keep_newline_and_tab_escaped() -> None:
    s = ir.StringImm('a\tb\n"c"\\')
    assert cp.print_ir(s) == '"a\\tb\\n\\"c\\"\\\\"'


@pytest.mark.parametrize(("n", "error", "message"), [
    (0, ValueError, "positive"), (10**9, ValueError, "at most 1024 threads"),
    (2**64, ValueError, "at most 1024 threads"), (1.5, TypeError, "positive int"),
    ("4", TypeError, "positive int"),
])
def test_num_threads_is_validated(n: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=f"num_threads: .*{message}"):
        cp.build(_func(), "x86", num_threads=n)
    with pytest.raises(error, match=message):
        threadpool.set_num_threads(n)  # type: ignore[arg-type]


def test_num_threads_in_range_runs() -> None:
    out = cp.build(_func(), "x86", num_threads=threadpool.MAX_THREADS)(np.ones(4, np.float32))
    np.testing.assert_array_equal(out, np.full(4, 2, np.float32))


@pytest.mark.parametrize(("dims", "message"), [
    ("S1=-3", "expected NAME=INT"), ("S1=3x", "expected NAME=INT"), ("S1=\u0663", "expected NAME=INT"),
    ("S1=99999999999999999999999", "expected NAME=INT"), ("S1=9999999999999999999", "does not fit int64"),
    ("S1=3,S1=4", "S1 is given twice"), ("=3", "expected NAME=INT"), ("S1=2,,S2=3", "expected NAME=INT"),
    ("S1=0", "below its lower bound"), ("S9=2", "not symbolic dims"),
    ("S1=10000000000000", "choose smaller --dims"), ("S1=100000,S2=100000", "choose smaller --dims"),
])
def test_run_dims_errors_are_clean(dims: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", SEED, "--dims", dims])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_run_dims_accepts_spaces(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", SEED, "--dims", " S1 = 3 , S2=2"]) == 0
    assert "S1=3, S2=2" in capsys.readouterr().out
