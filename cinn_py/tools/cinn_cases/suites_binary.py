"""CINN's binary elementwise and comparison op tests, transcribed as data (see `suites_unary`)."""

from __future__ import annotations

from typing import Any

from cinn_py.tools.cinn_cases.suite import Suite, suite


def xy(*pairs: tuple[list[int], list[int]], **extra: Any) -> list[dict[str, Any]]:
    return [{"x_shape": list(x), "y_shape": list(y), **extra} for x, y in pairs]


def _xy_dtypes(*names: str, dout: bool = False, fp16_error: float | None = 1e-3) -> list[dict[str, Any]]:
    out = []
    for n in names:
        entry: dict[str, Any] = {"x_dtype": n, "y_dtype": n, **({"dout_dtype": n} if dout else {})}
        if n == "float16" and fp16_error is not None:
            entry["max_relative_error"] = fp16_error
        out.append(entry)
    return out


ADD_SHAPES = ([1], [1024], [512, 256], [128, 64, 32], [16, 8, 4, 2], [16, 8, 4, 2, 1])

_ADD_AXES = (0, -1, 0, -1, 0, -1)

_NUMERIC = ("int32", "int64", "float16", "float32", "float64")

_CMP_OPS = ("equal", "not_equal", "greater_than", "less_than", "greater_equal", "less_equal")


def _cmp_attrs(broadcast: bool) -> list[dict[str, Any]]:
    return [{"operation": op, "broadcast": broadcast} for op in _CMP_OPS]


_REM_RANGE = [{"x_low": -10, "x_high": 10, "y_low": -10, "y_high": 10}]


def _binary_test(
    name: str, op: str, dtype: str = "float32", low: float = -10.0, high: float = 10.0, **extra: Any
) -> Suite:
    """One of test_binary_elementwise_op.py's classes: x, y of [32, 64] in [low, high), axis -1."""
    return suite(
        "test_binary_elementwise_op.py",
        name,
        "binary",
        xy(([32, 64], [32, 64])),
        [{"dtype": dtype}],
        op=op,
        low=low,
        high=high,
        program_name="binary_elementwise_test",
        **extra,
    )


# x, y = random(1, 100) times one random sign each (CINN: no zero divisor)
_SIGNED_NONZERO = {"low": 1, "high": 100, "random_sign": True}

_DIV_SHAPES = xy(
    ([32], [32]),
    ([32, 64], [32, 64]),
    ([2, 3, 4], [2, 3, 4]),
    ([16, 8, 4, 2], [16, 8, 4, 2]),
    ([16, 8, 4, 2, 1], [16, 8, 4, 2, 1]),
)

_DIV_F32 = [{"x_dtype": "float32", "y_dtype": "float32"}]

_DIV_RANGE = [{"x_low": -10, "x_high": 10, "y_low": -10, "y_high": 10}]

_POW_RANGE = [{"base_low": -10, "base_high": 10, "exp_low": -3, "exp_high": 3}]

SUITES: list[Suite] = [
    suite(
        "test_pow_op.py",
        "TestPowOpShape",
        "binary",
        xy(*[(s, s) for s in ADD_SHAPES]),
        [{"dtype": "float32"}],
        _POW_RANGE,
        op="pow",
    ),
    suite(
        "test_pow_op.py",
        "TestPowOpDtype",
        "binary",
        xy(([1024], [1024])),
        [{"dtype": d} for d in _NUMERIC],
        _POW_RANGE,
        op="pow",
    ),
    _binary_test("TestAddOp", "add"),
    _binary_test("TestAddOpFP64", "add", "float64"),
    _binary_test("TestAddOpFP16", "add", "float16"),
    _binary_test("TestAddOpInt32", "add", "int32"),
    _binary_test("TestAddOpInt64", "add", "int64"),
    _binary_test("TestSubtractOp", "subtract"),
    _binary_test("TestDivideOp", "divide"),
    _binary_test("TestMultiplyOp", "multiply"),
    _binary_test("TestFloorDivideOp", "floor_divide", "int32", **_SIGNED_NONZERO),
    _binary_test("TestModOp", "mod"),
    _binary_test("TestModCase1", "mod", "int32", **_SIGNED_NONZERO),
    _binary_test("TestRemainderOp", "mod"),
    _binary_test("TestRemainderCase1", "mod", "int32", **_SIGNED_NONZERO),
    _binary_test("TestMaxOp", "max"),
    _binary_test("TestMinOp", "min"),
    _binary_test("TestLogicalAndOp", "logical_and", "bool"),
    _binary_test("TestLogicalOrOp", "logical_or", "bool"),
    _binary_test("TestLogicalXorOp", "logical_xor", "bool"),
    _binary_test("TestBitwiseAndOp", "bitwise_and", "int32", 1, 10000),
    _binary_test("TestBitwiseOrOp", "bitwise_or", "int32", 1, 10000),
    _binary_test("TestBitwiseXorOp", "bitwise_xor", "int32", 1, 10000),
    _binary_test("TestEqualOp", "equal"),
    _binary_test("TestNotEqualOp", "not_equal"),
    _binary_test("TestGreaterThanOp", "greater_than"),
    _binary_test("TestLessThanOp", "less_than"),
    _binary_test("TestGreaterEqualOp", "greater_equal"),
    _binary_test("TestLessEqualOp", "less_equal"),
    _binary_test("TestAtan2Op", "atan2"),
    suite(
        "test_divide_op.py",
        "TestDivOpShapeTest",
        "binary",
        xy(
            ([32], [32]),
            ([32, 64], [32, 64]),
            ([2, 3, 4], [2, 3, 4]),
            ([16, 8, 4, 2], [16, 8, 4, 2]),
            ([16, 8, 4, 1024], [16, 8, 4, 1024]),
            ([16, 8, 4, 2, 1], [16, 8, 4, 2, 1]),
            ([1, 1, 1, 1, 1], [1, 1, 1, 1, 1]),
            ([1], [1]),
            ([1024], [1024]),
            ([2048], [2048]),
            ([32768], [32768]),
            ([65536], [65536]),
            ([131072], [131072]),
        ),
        _DIV_F32,
        _DIV_RANGE,
        op="divide",
        nonzero_int_y=True,
        program_name="div",
    ),
    suite(
        "test_divide_op.py",
        "TestDivOpDtypeTest",
        "binary",
        _DIV_SHAPES,
        [{"x_dtype": d, "y_dtype": d} for d in ("int32", "int64", "float32", "float64")],
        _DIV_RANGE,
        op="divide",
        nonzero_int_y=True,
        program_name="div",
    ),
    suite(
        "test_divide_op.py",
        "TestDivOpPolarityTest",
        "binary",
        _DIV_SHAPES,
        _DIV_F32,
        [
            {"x_low": -10, "x_high": 10, "y_low": -10, "y_high": -1},
            {"x_low": -10, "x_high": 10, "y_low": 1, "y_high": 10},
        ],
        op="divide",
        nonzero_int_y=True,
        program_name="div",
    ),
    suite(
        "test_divide_op.py",
        "TestDivOpBroadcastTest",
        "binary",
        xy(
            ([32], [1]),
            ([1], [32]),
            ([1, 64], [32, 1]),
            ([1, 64], [32, 64]),
            ([32, 1], [32, 64]),
            ([1, 1], [32, 64]),
            ([1, 3, 4], [2, 3, 4]),
            ([1, 3, 1], [2, 3, 4]),
            ([1, 1, 1], [2, 3, 4]),
            ([2, 1, 1], [1, 3, 4]),
            ([1, 8, 4, 2], [16, 8, 4, 2]),
            ([16, 8, 1, 1], [16, 8, 4, 2]),
            ([1, 8, 1, 1], [16, 8, 4, 2]),
            ([1, 1, 1, 1], [16, 8, 4, 2]),
            ([1, 8, 1, 2], [16, 1, 4, 1]),
            ([1, 8, 4, 2, 32], [16, 8, 4, 2, 32]),
            ([16, 1, 1, 2, 32], [16, 8, 4, 2, 32]),
            ([16, 1, 4, 1, 1], [16, 8, 4, 2, 32]),
            ([1, 1, 1, 1, 32], [16, 8, 4, 2, 32]),
            ([1, 1, 1, 1, 1], [16, 8, 4, 2, 32]),
            ([16, 1, 4, 1, 32], [1, 8, 1, 2, 1]),
        ),
        _DIV_F32,
        _DIV_RANGE,
        op="divide",
        nonzero_int_y=True,
        program_name="div",
    ),
    suite(
        "test_add_op.py",
        "TestAddAll",
        "binary",
        [{"x_shape": s, "y_shape": s, "dout_shape": s, "axis": a} for s, a in zip(ADD_SHAPES, _ADD_AXES)],
        _xy_dtypes(*_NUMERIC, dout=True),
        op="add",
        low=-10,
        high=10,
    ),
    suite(
        "test_add_op.py",
        "TestAddAllWithBroadcast",
        "binary",
        [
            {"x_shape": s, "y_shape": [1] * len(s), "dout_shape": s, "axis": a}
            for s, a in zip(ADD_SHAPES, _ADD_AXES)
        ],
        _xy_dtypes(*_NUMERIC, dout=True),
        op="add",
        low=-10,
        high=10,
    ),
    suite(
        "test_remainder_op.py",
        "TestRemainderOpShape",
        "binary",
        xy(*[(s, s) for s in ADD_SHAPES]),
        [{"dtype": "int32"}],
        _REM_RANGE,
        op="remainder",
        nonzero_y=True,
    ),
    suite(
        "test_remainder_op.py",
        "TestRemainderOpDtype",
        "binary",
        xy(([1024], [1024])),
        [{"dtype": d} for d in _NUMERIC],
        _REM_RANGE,
        op="remainder",
        nonzero_y=True,
    ),
    suite(
        "test_remainder_op.py",
        "TestRemainderOpBroadcast",
        "binary",
        xy(
            ([1], [1]),
            ([1024], [1]),
            ([512, 256], [1, 256]),
            ([128, 64, 32], [128, 1, 32]),
            ([16, 8, 4, 2], [16, 1, 1, 2]),
            ([16, 8, 4, 2, 1], [16, 1, 1, 1, 1]),
        ),
        [{"dtype": "int32"}],
        _REM_RANGE,
        op="remainder",
        nonzero_y=True,
    ),
    suite(
        "test_comparison_op.py",
        "TestComparisonOpShape",
        "compare",
        [
            {"shape": s}
            for s in (
                [64],
                [64, 32],
                [64, 1],
                [64, 32, 128],
                [1, 32, 128],
                [64, 32, 16, 32],
                [64, 32, 1, 32],
                [64, 32, 16, 1, 128],
                [1],
                [1, 1],
                [1, 1, 1],
                [1, 1, 1, 1],
                [1, 1, 1, 1, 1],
                [1, 1, 1024, 1, 1],
                [65536],
                [131072],
                [1048576],
                [64, 32, 16, 8, 4],
            )
        ],
        [{"dtype": "float32"}],
        _cmp_attrs(False),
        program_name="select",
    ),
    suite(
        "test_comparison_op.py",
        "TestComparisonOpDtype",
        "compare",
        [{"shape": [64, 1, 128]}, {"shape": [64, 32, 1]}],
        [{"dtype": d} for d in ("float16", "float32", "float64", "bool", "int32", "int64")],
        _cmp_attrs(False),
        program_name="select",
    ),
    suite(
        "test_comparison_op.py",
        "TestComparisonOpBroadcastTest",
        "compare",
        xy(
            ([64], [1]),
            ([1], [64]),
            ([64, 32], [64, 1]),
            ([1, 1], [64, 32]),
            ([64, 1], [1, 32]),
            ([64, 1, 128], [64, 32, 128]),
            ([64, 32, 128], [64, 32, 1]),
            ([64, 1, 128], [1, 32, 128]),
            ([1, 1, 1], [64, 32, 128]),
            ([64, 1, 16, 32], [64, 32, 16, 32]),
            ([64, 32, 16, 32], [64, 32, 1, 32]),
            ([64, 1, 1, 32], [64, 32, 16, 32]),
            ([64, 32, 16, 1], [64, 1, 16, 32]),
            ([1, 1, 1, 1], [64, 32, 16, 32]),
            ([1, 32, 16, 32], [64, 32, 16, 32]),
            ([64, 32, 16, 32], [64, 32, 16, 32]),
            ([65536], [1]),
        ),
        [{"dtype": "float32"}],
        _cmp_attrs(True),
        program_name="select",
    ),
]
