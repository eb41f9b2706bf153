"""CINN's logical_and/or/not op tests, transcribed as data (see `suites_unary`)."""

from __future__ import annotations

from cinn_py.tools.cinn_cases.suite import Suite, dtypes, shapes, suite
from cinn_py.tools.cinn_cases.suites_binary import xy

_LOGIC_DTYPES = [
    {"x_dtype": d, "y_dtype": d} for d in ("bool", "int8", "int16", "int32", "int64", "float32", "float64")
]
_BOOL_XY = [{"x_dtype": "bool", "y_dtype": "bool"}]

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
]
