"""CINN's mod, max, floor_divide, isclose, logical_and/not and shift op tests, transcribed as data
(see `suites_unary`)."""

from __future__ import annotations

from typing import Any

from cinn_py.tools.cinn_cases.suite import Suite, suite
from cinn_py.tools.cinn_cases.suites_binary import ADD_SHAPES, xy

_FD_RANGES = [
    {"x_low": -10, "x_high": 10, "y_low": -10, "y_high": -1},
    {"x_low": -10, "x_high": 10, "y_low": 1, "y_high": 10},
]

_FD_SHAPES = ADD_SHAPES


_ISCLOSE = {"rtol": 1e-5, "atol": 1e-8, "equal_nan": False, "nan_as_input": False}

_BASE5 = xy(
    ([32], [32]),
    ([32, 64], [32, 64]),
    ([2, 3, 4], [2, 3, 4]),
    ([16, 8, 4, 2], [16, 8, 4, 2]),
    ([16, 8, 4, 2, 1], [16, 8, 4, 2, 1]),
)

_MAX_BASE5 = [{"x_shape": [1], "y_shape": [1]}, *_BASE5[1:]]

_PM100 = [{"x_low": -100, "x_high": 100, "y_low": -100, "y_high": 100}]

_XY_F32 = [{"x_dtype": "float32", "y_dtype": "float32"}]

# the broadcast shapes CINN's divide, mod and max tests share (checked against each file)
_BROADCAST21 = xy(
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
)

_MOD_SHAPES = xy(
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
)

_MAX_SHAPES = xy(
    ([1], [1]),
    ([1024], [1024]),
    ([2048], [2048]),
    ([32, 64], [32, 64]),
    ([2, 3, 4], [2, 3, 4]),
    ([16, 8, 4, 2], [16, 8, 4, 2]),
    ([16, 8, 4, 1024], [16, 8, 4, 1024]),
    ([16, 8, 4, 2, 1], [16, 8, 4, 2, 1]),
    ([1, 1, 1, 1, 1], [1, 1, 1, 1, 1]),
)

_SHIFT: dict[str, Any] = {"x_low": -100, "x_high": 100, "y_low": 0, "y_high": 16}

_I32 = [{"x_dtype": "int32", "y_dtype": "int32"}]

_MUL_BASE = [
    {"x_shape": x, "y_shape": x, "axis": 0}
    for x in ([1], [1024], [512, 256], [128, 64, 32], [16, 8, 4, 2], [16, 8, 4, 2, 1])
]

SUITES: list[Suite] = [
    suite(
        "test_mod_op.py",
        "TestModOpShapeTest",
        "binary",
        _MOD_SHAPES,
        _XY_F32,
        _PM100,
        op="mod",
        nonzero_y=True,
    ),
    suite(
        "test_mod_op.py",
        "TestModOpDtypeTest",
        "binary",
        _BASE5,
        [
            {"x_dtype": d, "y_dtype": d, **({"max_relative_error": 1e-3} if d == "float16" else {})}
            for d in ("float16", "int32", "int64", "float32", "float64")
        ],
        _PM100,
        op="mod",
        nonzero_y=True,
    ),
    suite(
        "test_mod_op.py",
        "TestModOpPolarityTest",
        "binary",
        _BASE5,
        _XY_F32,
        [
            {"x_low": -100, "x_high": 100, "y_low": -100, "y_high": -1},
            {"x_low": -100, "x_high": 100, "y_low": 1, "y_high": 100},
        ],
        op="mod",
        nonzero_y=True,
    ),
    suite(
        "test_mod_op.py",
        "TestModOpBroadcastTest",
        "binary",
        _BROADCAST21,
        _XY_F32,
        _PM100,
        op="mod",
        nonzero_y=True,
    ),
    suite("test_max_op.py", "TestMaxOpShapeTest", "binary", _MAX_SHAPES, _XY_F32, _PM100, op="max"),
    suite(
        "test_max_op.py",
        "TestMaxOpDtypeTest",
        "binary",
        _MAX_BASE5,
        [{"x_dtype": d, "y_dtype": d} for d in ("int32", "int64", "float32", "float64")],
        _PM100,
        op="max",
    ),
    suite("test_max_op.py", "TestMaxOpPolarityTest", "binary", _MAX_BASE5, _XY_F32, _PM100, op="max"),
    suite("test_max_op.py", "TestMaxOpBroadcastTest", "binary", _BROADCAST21, _XY_F32, _PM100, op="max"),
    suite(
        "test_right_shift_op.py",
        "TestRightShiftAll",
        "binary",
        xy(*[(s, s) for s in ADD_SHAPES]),
        _I32,
        op="right_shift",
        **_SHIFT,
    ),
    suite(
        "test_right_shift_op.py",
        "TestRightShiftAllWithBroadcast",
        "binary",
        xy(*[(s, [1] * len(s)) for s in ADD_SHAPES]),
        _I32,
        op="right_shift",
        **_SHIFT,
    ),
    suite(
        "test_isclose_op.py",
        "TestIsCloseShape",
        "isclose",
        [{"shape": s} for s in ADD_SHAPES],
        [{"dtype": "float32"}],
        [_ISCLOSE],
    ),
    suite(
        "test_isclose_op.py",
        "TestIsCloseDtype",
        "isclose",
        [{"shape": [1024]}],
        [{"dtype": "float32"}, {"dtype": "float64"}],
        [_ISCLOSE],
    ),
    suite(
        "test_isclose_op.py",
        "TestIsCloseAttr",
        "isclose",
        [{"shape": [1024]}],
        [{"dtype": "float32"}],
        [
            {**_ISCLOSE, "rtol": 1e-3, "atol": 1e-3},
            {**_ISCLOSE, "atol": 1e-5},
            {**_ISCLOSE, "rtol": 1e-8},
            {**_ISCLOSE, "equal_nan": True},
        ],
    ),
    suite(
        "test_isclose_op.py",
        "TestIsCloseNAN",
        "isclose",
        [{"shape": [1024]}],
        [{"dtype": "float64"}],
        [{**_ISCLOSE, "equal_nan": True, "nan_as_input": True}],
    ),
    suite(
        "test_floor_divide_op.py",
        "TestFloorDivideShape",
        "binary",
        xy(*[(s, s) for s in _FD_SHAPES]),
        [{"x_dtype": "int32", "y_dtype": "int32"}],
        _FD_RANGES,
        op="floor_divide",
        program_name="pow",
    ),
    suite(
        "test_floor_divide_op.py",
        "TestFloorDivideBroadcast",
        "binary",
        xy(*[(s, [1] * len(s)) for s in _FD_SHAPES]),
        [{"x_dtype": "int32", "y_dtype": "int32"}],
        _FD_RANGES,
        op="floor_divide",
        program_name="pow",
    ),
    suite(
        "test_floor_divide_op.py",
        "TestFloorDivideDtype",
        "binary",
        xy(([1024], [1024])),
        [
            {"x_dtype": d, "y_dtype": d, **({"max_relative_error": 1} if d == "float16" else {})}
            for d in ("int8", "int16", "int32", "int64", "float16", "float32", "float64")
        ],
        _FD_RANGES,
        op="floor_divide",
        program_name="pow",
    ),
    suite(
        "test_floor_divide_op.py",
        "TestFloorDivideUINT",
        "binary",
        xy(([1024], [1024])),
        [{"x_dtype": "uint8", "y_dtype": "uint8"}],
        [{"x_low": 1, "x_high": 10, "y_low": 1, "y_high": 10}],
        op="floor_divide",
        program_name="pow",
    ),
    suite(
        "test_left_shift_op.py",
        "TestLeftShiftAll",
        "binary",
        xy(*[(s, s) for s in ADD_SHAPES]),
        [{"x_dtype": "int32", "y_dtype": "int32"}],
        op="left_shift",
        x_low=-100,
        x_high=100,
        y_low=0,
        y_high=16,
    ),
    suite(
        "test_left_shift_op.py",
        "TestLeftShiftAllWithBroadcast",
        "binary",
        xy(*[(s, [1] * len(s)) for s in ADD_SHAPES]),
        [{"x_dtype": "int32", "y_dtype": "int32"}],
        op="left_shift",
        x_low=-100,
        x_high=100,
        y_low=0,
        y_high=16,
    ),
    suite("test_min_op.py", "TestMinOpShapeTest", "binary", _MAX_SHAPES, _XY_F32, _PM100, op="min"),
    suite(
        "test_min_op.py",
        "TestMinOpDtypeTest",
        "binary",
        _MAX_BASE5,
        [{"x_dtype": d, "y_dtype": d} for d in ("int32", "int64", "float32", "float64")],
        _PM100,
        op="min",
    ),
    suite("test_min_op.py", "TestMinOpPolarityTest", "binary", _MAX_BASE5, _XY_F32, _PM100, op="min"),
    suite("test_min_op.py", "TestMinOpBroadcastTest", "binary", _BROADCAST21, _XY_F32, _PM100, op="min"),
    suite(
        "test_multiply_op.py",
        "TestElementwiseMulOpShapeTest",
        "binary",
        [
            {"x_shape": x, "y_shape": x, "axis": a}
            for x, a in (
                ([1], 0),
                ([1024], -1),
                ([2048], 0),
                ([512, 256], 0),
                ([128, 64, 32], -1),
                ([16, 8, 4, 2], 0),
                ([16, 8, 4, 2, 1], -1),
                ([1, 1, 1, 1, 1], 0),
            )
        ],
        _XY_F32,
        _PM100,
        op="multiply",
    ),
    suite(
        "test_multiply_op.py",
        "TestElementwiseMulOpDtypeTest",
        "binary",
        _MUL_BASE,
        [{"x_dtype": d, "y_dtype": d} for d in ("bool", "int32", "int64", "float32", "float64")],
        _PM100,
        op="multiply",
    ),
    suite(
        "test_multiply_op.py",
        "TestElementwiseMulOpPolarityTest",
        "binary",
        _MUL_BASE,
        _XY_F32,
        _PM100,
        op="multiply",
    ),
    suite(
        "test_multiply_op.py",
        "TestElementwiseMulOpBroadcast",
        "binary",
        [
            {"x_shape": x, "y_shape": [1] * len(x), "axis": a}
            for x, a in (
                ([1], 0),
                ([1024], -1),
                ([512, 256], 0),
                ([128, 64, 32], -1),
                ([16, 8, 4, 2], 0),
                ([16, 8, 4, 2, 1], -1),
            )
        ],
        _XY_F32,
        _PM100,
        op="multiply",
    ),
]
