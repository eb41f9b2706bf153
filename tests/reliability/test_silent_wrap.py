"""No silent wrap: Python int constants that do not fit the dtype they are converted to, and
shapes whose size overflows int64 offsets, are clear errors (they used to wrap silently)."""

from __future__ import annotations

import pytest

import cinn_py as cp
from cinn_py.diagnostics import ConstantRangeError, LoweringError
from cinn_py.frontend.ops.base import FrontendError


@pytest.mark.parametrize(("dtype", "value"), [
    ("int8", 1000), ("int8", -129), ("uint8", 256), ("uint8", -1), ("int16", 40000),
    ("int32", 2**31), ("int64", 2**63), ("uint32", 2**32),
])
def test_out_of_range_int_constant_raises(dtype: str, value: int) -> None:
    X = cp.placeholder((4,), dtype, "X")
    with pytest.raises(ConstantRangeError, match=f"{value} is out of range for {dtype}"):
        cp.compute((4,), lambda i: X[i] + value, "Y")


@pytest.mark.parametrize(("dtype", "value"),
                         [("int8", 127), ("int8", -128), ("uint8", 255), ("int64", 2**63 - 1)])
def test_in_range_int_constant_is_kept(dtype: str, value: int) -> None:
    X = cp.placeholder((4,), dtype, "X")
    Y = cp.compute((4,), lambda i: X[i] * value, "Y")
    assert Y.body.b.value == value and str(Y.body.b.dtype) == dtype


def test_select_and_maximum_check_constants() -> None:
    X = cp.placeholder((4,), "int8", "X")
    with pytest.raises(ConstantRangeError):
        cp.compute((4,), lambda i: cp.select(X[i] > 0, X[i], 300), "Y")
    with pytest.raises(ConstantRangeError):
        cp.compute((4,), lambda i: cp.maximum(X[i], -300), "Y")


def test_out_of_range_index_constant_raises() -> None:
    X = cp.placeholder((4,), "float32", "X")
    with pytest.raises(ConstantRangeError, match="out of range for int32"):
        cp.compute((4,), lambda i: X[i + 10**10], "Y")


def test_constant_range_error_is_a_lowering_error() -> None:
    assert issubclass(ConstantRangeError, LoweringError) and issubclass(ConstantRangeError, OverflowError)


def test_shape_overflowing_int64_is_rejected_by_the_dsl() -> None:
    with pytest.raises(LoweringError, match=r"placeholder 'X': shape \(1099511627776, 1099511627776\) has "
                                            r"1208925819614629174706176 elements"):
        cp.placeholder((2**40, 2**40), "int8", "X")
    X = cp.placeholder((2**31, 2**29), "float32", "X")  # 2**60 elements: fits as elements, not as bytes
    with pytest.raises(LoweringError, match="more than int64 offsets can address"):
        cp.compute((2**31, 2**31, 4), lambda i, j, k: X[i, 0], "Y")


def test_shape_overflowing_int64_is_rejected_by_net_builder() -> None:
    b = cp.NetBuilder("nb")
    with pytest.raises(FrontendError, match="variable 'x': shape .* more than int64 offsets"):
        b.create_input("float32", [2**40, 2**40], "x")
    x = b.create_input("float32", [2**31, 2**20], "x")
    with pytest.raises(FrontendError, match="more than int64 offsets can address"):
        b.broadcast_to(x, [2**12, 2**31, 2**20])


@pytest.mark.parametrize(("text", "message"), [
    ("(int8_t)300", "300 is out of range for int8 [-128, 127]"),
    ("(uint8_t)-1", "-1 is out of range for uint8 [0, 255]"),
    ("(int16_t)40000", "40000 is out of range for int16"),
    ("2147483648", "2147483648 is out of range for int32"),
    ("9223372036854775808ll", "9223372036854775808 is out of range for int64"),
    ("(i + (int8_t)-129)", "-129 is out of range for int8"),
])
def test_parser_rejects_literals_outside_their_dtype(text: str, message: str) -> None:
    with pytest.raises(cp.ParseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cp.parse_ir(text)


@pytest.mark.parametrize("text", ["(int8_t)127", "(int8_t)-128", "(uint8_t)255", "-2147483648",
                                  "-9223372036854775808ll", "18446744073709551615ull"])
def test_parser_keeps_literals_at_the_ends_of_their_range(text: str) -> None:
    assert cp.print_ir(cp.parse_ir(text)) == text
