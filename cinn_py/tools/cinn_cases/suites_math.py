"""CINN's hyperbolic, reciprocal, cube-root and is_finite op tests, transcribed as data (see
`suites_unary`)."""

from __future__ import annotations

from cinn_py.tools.cinn_cases.suite import Suite, dtypes, shapes, suite
from cinn_py.tools.cinn_cases.suites_unary import ACOS, SEVEN, TWELVE, F, shape_and_dtype

SUITES: list[Suite] = [
    *shape_and_dtype("test_cosh_op.py", "TestCoshOp", "cosh", SEVEN, F),
    *shape_and_dtype("test_tan_op.py", "TestTanOp", "tan", SEVEN, F),
    suite(
        "test_reciprocal_op.py",
        "TestReciprocalShape",
        "unary",
        shapes(
            "x_shape",
            [1024],
            [512, 256],
            [128, 64, 32],
            [16, 8, 4, 2],
            [16, 8, 4, 2, 1],
            [1],
            [1, 1, 1, 1, 1],
        ),
        dtypes("x_dtype", "float64", "float32", "float16", fp16_error=None),
        op="reciprocal",
    ),
    suite(
        "test_cbrt_op.py",
        "TestCbrtOpShape",
        "unary",
        shapes("shape", *TWELVE),
        dtypes("dtype", "float32"),
        op="cbrt",
        low=-100.0,
        high=100.0,
        max_relative_error=1e-3,
        max_absolute_error=1e-3,
    ),
    suite(
        "test_cbrt_op.py",
        "TestCbrtOpDtype",
        "unary",
        shapes("shape", [1], [5], [80, 40, 5, 7]),
        dtypes("dtype", *F, fp16_error=None),
        op="cbrt",
        low=-100.0,
        high=100.0,
        max_relative_error=1e-3,
        max_absolute_error=1e-3,
    ),
    *shape_and_dtype("test_sinh_op.py", "TestSinhOp", "sinh", SEVEN, F),
    *shape_and_dtype(
        "test_is_finite_op.py",
        "TestIsFiniteOp",
        "is_finite",
        SEVEN,
        ("int32", "int64", *F),
        low=-100,
        high=100,
        inject="inf_or_nan",
    ),
    suite(
        "test_asinh_op.py",
        "TestAsinhCase1",
        "unary",
        shapes("x_shape", [512, 256]),
        dtypes("x_dtype", "float32", "float64"),
        op="asinh",
    ),
    suite(
        "test_asinh_op.py",
        "TestAsinhCase2",
        "unary",
        shapes("x_shape", *ACOS),
        dtypes("x_dtype", "float32"),
        op="asinh",
    ),
    suite(
        "test_atanh_op.py",
        "TestAtanhCase1",
        "unary",
        shapes("x_shape", [512, 256]),
        dtypes("x_dtype", "float32", "float64"),
        op="atanh",
    ),
    suite(
        "test_atanh_op.py",
        "TestAtanhCase2",
        "unary",
        shapes("x_shape", *ACOS),
        dtypes("x_dtype", "float32"),
        op="atanh",
    ),
]
