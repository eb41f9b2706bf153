"""CINN's unary elementwise op tests (test/cinn/ops/test_<op>_op.py), transcribed as data:
each `suite(...)` is one of CINN's `TestCaseHelper` classes with its inputs, dtypes and attrs
lists, and the constants of its test class (`low`/`high` of `self.random`)."""

from __future__ import annotations

from typing import Any

from cinn_py.tools.cinn_cases.suite import Suite, dtypes, shapes, suite

# the shape lists several CINN unary tests share (each use below checked against its file)
_SEVEN = ([1], [1024], [1, 2048], [1, 1, 1], [32, 64], [16, 8, 4, 2], [16, 8, 4, 2, 1])
_SIX = ([1], [1024], [1, 2048], [32, 64], [16, 8, 4, 2], [16, 8, 4, 2, 1])
_ACOS = (
    [1],
    [1024],
    [512, 256],
    [128, 64, 32],
    [128, 2048, 32],
    [16, 8, 4, 2],
    [1, 1, 1, 1],
    [16, 8, 4, 2, 1],
)
_TWELVE = (
    [10],
    [8, 5],
    [10, 3, 5],
    [80, 40, 5, 7],
    [80, 1, 5, 7],
    [80, 3, 1024, 7],
    [10, 5, 1024, 2048],
    [1],
    [512],
    [1024],
    [2048],
    [1, 1, 1, 1],
)
_LOG = ([1], [1024], [512, 256], [128, 64, 32], [16, 8, 4, 2], [16, 8, 4, 2, 1])


def _shape_and_dtype(
    file: str,
    stem: str,
    op: str,
    shape_list: tuple[list[int], ...],
    dtype_names: tuple[str, ...],
    **fixed: Any,
) -> list[Suite]:
    """CINN's usual pair: `Test<Op>OpShape` (the shapes, float32) and `Test<Op>OpDtype` ([32, 64],
    the dtypes; float16 with max_relative_error 1e-3)."""
    return [
        suite(
            file,
            f"{stem}Shape",
            "unary",
            shapes("x_shape", *shape_list),
            dtypes("x_dtype", "float32"),
            op=op,
            **fixed,
        ),
        suite(
            file,
            f"{stem}Dtype",
            "unary",
            shapes("x_shape", [32, 64]),
            dtypes("x_dtype", *dtype_names),
            op=op,
            **fixed,
        ),
    ]


_F = ("float16", "float32", "float64")

SUITES: list[Suite] = [
    *_shape_and_dtype(
        "test_abs_op.py", "TestAbsOp", "abs", _SEVEN, ("int32", "int64", *_F), low=-100, high=100
    ),
    *_shape_and_dtype("test_asin_op.py", "TestAsinOp", "asin", _SEVEN, _F, low=-1.0, high=1.0),
    *_shape_and_dtype("test_sin_op.py", "TestSinOp", "sin", _SEVEN, _F),
    *_shape_and_dtype("test_cos_op.py", "TestCosOp", "cos", _SEVEN, _F),
    *_shape_and_dtype("test_tanh_op.py", "TestTanhOp", "tanh", _SEVEN, _F),
    *_shape_and_dtype("test_erf_op.py", "TestErfOp", "erf", _SEVEN, _F),
    *_shape_and_dtype("test_exp_op.py", "TestExpOp", "exp", _SIX, _F),
    *_shape_and_dtype("test_sqrt_op.py", "TestSqrtOp", "sqrt", _SIX, _F, low=0.01, high=10000),
    *_shape_and_dtype("test_rsqrt_op.py", "TestRsqrtOp", "rsqrt", _SEVEN, _F, low=0.01, high=10000),
    *_shape_and_dtype("test_floor_op.py", "TestFloorOp", "floor", _SEVEN, _F, low=-1000.0, high=1000.0),
    *_shape_and_dtype(
        "test_is_nan_op.py",
        "TestIsNanOp",
        "is_nan",
        _SEVEN,
        ("int32", "int64", *_F),
        low=-100,
        high=100,
        inject="nan",
    ),
    suite(
        "test_acos_op.py",
        "TestAcosCase1",
        "unary",
        shapes("x_shape", [512, 256]),
        dtypes("x_dtype", "float32", "float64"),
        op="acos",
        low=-1,
        high=1,
    ),
    suite(
        "test_acos_op.py",
        "TestAcosCase2",
        "unary",
        shapes("x_shape", *_ACOS),
        dtypes("x_dtype", "float32"),
        op="acos",
        low=-1,
        high=1,
    ),
    suite(
        "test_acosh_op.py",
        "TestAcoshCase1",
        "unary",
        shapes("x_shape", [512, 256]),
        dtypes("x_dtype", "float32", "float64"),
        op="acosh",
        low=2,
        high=100,
    ),
    suite(
        "test_acosh_op.py",
        "TestAcoshCase2",
        "unary",
        shapes("x_shape", *_ACOS),
        dtypes("x_dtype", "float32"),
        op="acosh",
        low=2,
        high=100,
    ),
    suite(
        "test_relu_op.py",
        "TestReluOpShape",
        "unary",
        shapes("shape", *_TWELVE),
        dtypes("dtype", "float32"),
        op="relu",
        low=-1.0,
        high=1.0,
        relu_grad=True,
    ),
    suite(
        "test_relu_op.py",
        "TestReluOpDtype",
        "unary",
        shapes("shape", [1], [5], [80, 40, 5, 7]),
        dtypes("dtype", *_F, fp16_error=None),
        op="relu",
        low=-1.0,
        high=1.0,
        relu_grad=True,
    ),
    suite(
        "test_sigmoid_op.py",
        "TestSigmoidOpShape",
        "unary",
        shapes("shape", *_TWELVE),
        dtypes("dtype", "float32"),
        op="sigmoid",
        low=-1.0,
        high=1.0,
    ),
    suite(
        "test_sigmoid_op.py",
        "TestSigmoidOpDtype",
        "unary",
        shapes("shape", [1], [5], [80, 40, 5, 7]),
        dtypes("dtype", *_F, fp16_error=None),
        op="sigmoid",
        low=-1.0,
        high=1.0,
    ),
    suite(
        "test_sign_op.py",
        "TestSignOpShape",
        "unary",
        shapes(
            "shape",
            [10],
            [8, 5],
            [10, 3, 5],
            [80, 40, 5, 7],
            [80, 1, 5, 7],
            [80, 3, 32, 7],
            [10, 5, 32, 32],
            [1],
            [512],
            [1024],
            [2048],
            [1, 1, 1, 1],
        ),
        dtypes("dtype", "float32"),
        op="sign",
        low=-10,
        high=10,
    ),
    suite(
        "test_sign_op.py",
        "TestSignOpDtype",
        "unary",
        shapes("shape", [1], [5], [80, 40, 5, 7]),
        dtypes("dtype", *_F, fp16_error=None),
        op="sign",
        low=-10,
        high=10,
    ),
    suite(
        "test_log_op.py",
        "TestLogOpShape",
        "unary",
        shapes("shape", *_LOG),
        dtypes("dtype", "float32"),
        [{"base": "e"}, {"base": "2"}, {"base": "10"}],
    ),
    suite(
        "test_log_op.py",
        "TestLogOpDtype",
        "unary",
        shapes("shape", [1024]),
        dtypes("dtype", "float32", "float64"),
        [{"base": "e"}, {"base": "2"}, {"base": "10"}],
    ),
    suite(
        "test_round_op.py",
        "TestRoundOpShape",
        "unary",
        shapes("shape", *_LOG),
        dtypes("dtype", "float32"),
        op="round",
    ),
    suite(
        "test_round_op.py",
        "TestRoundOpDtype",
        "unary",
        shapes("shape", [1024]),
        dtypes("dtype", "float16", "bfloat16", "float32", "float64", fp16_error=None),
        op="round",
    ),
]
