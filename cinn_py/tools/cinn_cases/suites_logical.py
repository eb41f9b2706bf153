"""CINN's logical_and/or/xor/not and atan2 op tests, transcribed as data (see `suites_unary`)."""

from __future__ import annotations

from cinn_py.tools.cinn_cases.suite import Suite, dtypes, shapes, suite
from cinn_py.tools.cinn_cases.suites_binary import xy

_LOGIC_DTYPES = [
    {"x_dtype": d, "y_dtype": d} for d in ("bool", "int8", "int16", "int32", "int64", "float32", "float64")
]
_BOOL_XY = [{"x_dtype": "bool", "y_dtype": "bool"}]

_ATAN2_RANGE = {"x_low": -10, "x_high": 10, "y_low": -10, "y_high": 10}

SUITES: list[Suite] = [
    suite(
        "test_logical_and_op.py",
        "TestLogicalAndCase1",
        "binary",
        xy(([512, 256], [512, 256])),
        _LOGIC_DTYPES,
        [{"axis": -1}],
        op="logical_and",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_and_op.py",
        "TestLogicalAndCase2",
        "binary",
        xy(
            *[
                (s, s)
                for s in (
                    [1],
                    [1024],
                    [512, 256],
                    [128, 64, 32],
                    [128, 2048, 32],
                    [16, 8, 4, 2],
                    [1, 1, 1, 1],
                    [16, 8, 4, 2, 1],
                )
            ]
        ),
        _BOOL_XY,
        [{"axis": -1}],
        op="logical_and",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_and_op.py",
        "TestLogicalAndCaseWithBroadcast1",
        "binary",
        xy(([56], [1])),
        _LOGIC_DTYPES,
        [{"axis": -1}],
        op="logical_and",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_and_op.py",
        "TestLogicalAndCaseWithBroadcast2",
        "binary",
        xy(
            ([56], [1]),
            ([1024], [1]),
            ([512, 256], [512, 1]),
            ([128, 64, 32], [128, 64, 1]),
            ([16, 1, 1, 2], [16, 8, 4, 2]),
            ([16, 1, 1, 2, 1], [16, 8, 4, 2, 1]),
        ),
        _BOOL_XY,
        [{"axis": -1}],
        op="logical_and",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_not_op.py",
        "TestLogicalNotCase1",
        "unary",
        shapes("x_shape", [512, 256]),
        dtypes("x_dtype", "bool", "int8", "int16", "int32", "int64", "float32", "float64"),
        op="logical_not",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_not_op.py",
        "TestLogicalNotCase2",
        "unary",
        shapes(
            "x_shape",
            [1],
            [1024],
            [512, 256],
            [128, 64, 32],
            [128, 2048, 32],
            [16, 8, 4, 2],
            [1, 1, 1, 1],
            [16, 8, 4, 2, 1],
        ),
        dtypes("x_dtype", "bool"),
        op="logical_not",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_not_op.py",
        "TestLogicalNotCaseWithBroadcast1",
        "unary",
        shapes("x_shape", [56]),
        dtypes("x_dtype", "bool", "int8", "int16", "int32", "int64", "float32", "float64"),
        op="logical_not",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_not_op.py",
        "TestLogicalNotCaseWithBroadcast2",
        "unary",
        shapes("x_shape", [56], [1024], [512, 256], [128, 64, 32], [16, 1, 1, 2], [16, 1, 1, 2, 1]),
        dtypes("x_dtype", "bool"),
        op="logical_not",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_or_op.py",
        "TestLogicalOrCase",
        "binary",
        xy(
            *[
                (x, x)
                for x in (
                    [1],
                    [1024],
                    [512, 256],
                    [128, 64, 32],
                    [128, 2048, 32],
                    [16, 8, 4, 2],
                    [1, 1, 1, 1],
                    [16, 8, 4, 2, 1],
                )
            ]
        ),
        _LOGIC_DTYPES,
        [{"axis": -1}],
        op="logical_or",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_or_op.py",
        "TestLogicalOrCaseWithBroadcast",
        "binary",
        xy(
            ([1], [1]),
            ([1024], [1]),
            ([512, 256], [512, 1]),
            ([128, 64, 32], [128, 64, 1]),
            ([16, 1, 1, 2], [16, 8, 4, 2]),
            ([16, 1, 1, 2, 1], [16, 8, 4, 2, 1]),
        ),
        _LOGIC_DTYPES,
        [{"axis": -1}],
        op="logical_or",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_xor_op.py",
        "TestLogicalXorCase1",
        "binary",
        xy(([512, 256], [512, 256])),
        _LOGIC_DTYPES,
        [{"axis": -1}],
        op="logical_xor",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_xor_op.py",
        "TestLogicalXorCase2",
        "binary",
        xy(
            *[
                (x, x)
                for x in (
                    [1],
                    [1024],
                    [512, 256],
                    [128, 64, 32],
                    [128, 2048, 32],
                    [16, 8, 4, 2],
                    [1, 1, 1, 1],
                    [16, 8, 4, 2, 1],
                )
            ]
        ),
        _BOOL_XY,
        [{"axis": -1}],
        op="logical_xor",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_xor_op.py",
        "TestLogicalXorCaseWithBroadcast1",
        "binary",
        xy(([56], [1])),
        _LOGIC_DTYPES,
        [{"axis": -1}],
        op="logical_xor",
        low=-10,
        high=100,
    ),
    suite(
        "test_logical_xor_op.py",
        "TestLogicalXorCaseWithBroadcast2",
        "binary",
        xy(
            ([56], [1]),
            ([1024], [1]),
            ([512, 256], [512, 1]),
            ([128, 64, 32], [128, 64, 1]),
            ([16, 1, 1, 2], [16, 8, 4, 2]),
            ([16, 1, 1, 2, 1], [16, 8, 4, 2, 1]),
        ),
        _BOOL_XY,
        [{"axis": -1}],
        op="logical_xor",
        low=-10,
        high=100,
    ),
    suite(
        "test_atan2_op.py",
        "TestAtan2OpShapes",
        "binary",
        xy(*[(x, x) for x in ([1], [1024], [512, 256], [128, 64, 32], [16, 8, 4, 2], [16, 8, 4, 2, 1])]),
        [{"x_dtype": "float32", "y_dtype": "float32"}],
        [_ATAN2_RANGE],
        op="atan2",
    ),
    suite(
        "test_atan2_op.py",
        "TestAtan2OpDtypes",
        "binary",
        xy(([128], [128])),
        [
            {"x_dtype": "float16", "y_dtype": "float16", "max_relative_error": 1e-2},
            {"x_dtype": "float32", "y_dtype": "float32"},
            {"x_dtype": "float64", "y_dtype": "float64"},
        ],
        [_ATAN2_RANGE],
        op="atan2",
    ),
]
