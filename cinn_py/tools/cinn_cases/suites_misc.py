"""CINN's reduction and other op tests, transcribed as data (see `suites_unary`)."""

from __future__ import annotations

from typing import Any

from cinn_py.tools.cinn_cases.suite import Suite, dtypes, shapes, suite


def _reduce(
    name: str,
    op: str,
    shape: list[int],
    dtype: str,
    low: float,
    high: float,
    dim: list[int],
    keep_dim: bool = False,
    **extra: Any,
) -> Suite:
    """One of CINN's hand-written reduce test classes (test_reduce_op.py): a single case."""
    return suite(
        "test_reduce_op.py",
        name,
        "reduce",
        [{"shape": shape, "dim": dim, "keep_dim": keep_dim}],
        [{"dtype": dtype}],
        op=op,
        low=low,
        high=high,
        **extra,
    )


_F32 = ("float32", -1.0, 1.0)
_T = [10, 10, 10]

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
_CAST_DTYPES = ("bool", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
_SCALE_SHAPES = ([1], [1024], [512, 256], [128, 64, 32], [16, 8, 4, 2], [16, 8, 4, 2, 1])
_SCALE_ATTR = [{"scale": -0.1, "bias": 10, "bias_after_scale": False}]

_REVERSE_APIS = [{"net_builder_api": "reverse"}, {"net_builder_api": "flip"}]

SUITES: list[Suite] = [
    suite(
        "test_cast_op.py",
        "TestCastShape",
        "cast",
        shapes("x_shape", [1], [1024], [32, 64], [16, 8, 4, 2]),
        [{"x_dtype": "float32"}],
        [{"d_dtype": "float64"}],
    ),
    suite(
        "test_cast_op.py",
        "TestCastDtype",
        "cast",
        shapes("x_shape", [32, 64]),
        dtypes("x_dtype", *_CAST_DTYPES),
        dtypes("d_dtype", *_CAST_DTYPES),
    ),
    suite(
        "test_select_op.py", "TestSelectOpShape", "select", shapes("shape", *_TWELVE), [{"dtype": "float32"}]
    ),
    suite(
        "test_select_op.py",
        "TestSelectOpDtype",
        "select",
        shapes("shape", [1], [5], [80, 40, 5, 7]),
        [{"dtype": d} for d in ("float32", "float64", "int32", "int64")],
    ),
    suite(
        "test_scale_op.py",
        "TestScaleShape",
        "scale",
        shapes("x_shape", *_SCALE_SHAPES),
        [{"x_dtype": "float32"}],
        _SCALE_ATTR,
    ),
    suite(
        "test_scale_op.py",
        "TestScaleDtype",
        "scale",
        shapes("x_shape", [32, 64]),
        dtypes("x_dtype", "int8", "int16", "int32", "int64", "float16", "float32", "float64"),
        _SCALE_ATTR,
    ),
    suite(
        "test_scale_op.py",
        "TestScaleAttr",
        "scale",
        shapes("x_shape", [32, 64]),
        [{"x_dtype": "float32"}],
        [
            {"scale": s, "bias": b, "bias_after_scale": a}
            for s, b, a in (
                (0, 0, True),
                (0, 0, False),
                (0.1, 10, True),
                (-0.1, 10, False),
                (1, 0, True),
                (-1, 0, False),
                (0, 10, True),
                (0, 10, False),
            )
        ],
    ),
    _reduce("TestReduceSumCase1", "reduce_sum", _T, *_F32, [1]),
    _reduce("TestReduceSumCase2", "reduce_sum", _T, *_F32, [0, 1]),
    _reduce("TestReduceSumCase3", "reduce_sum", _T, *_F32, [0, 2]),
    _reduce("TestReduceSumCase4", "reduce_sum", _T, *_F32, [0], True),
    _reduce("TestReduceSumCase5", "reduce_sum", [1, 16, 256], *_F32, [0]),
    _reduce("TestReduceSumCase6", "reduce_sum", [1, 12, 9, 9], *_F32, [-1]),
    _reduce("TestReduceSumCase7", "reduce_sum", [1, 1, 10, 10, 10], *_F32, [0]),
    _reduce("TestReduceSumCase8", "reduce_sum", [1, 10, 1, 10, 10], *_F32, [0, 2]),
    _reduce("TestReduceSumCase9", "reduce_sum", [1, 1, 10], *_F32, [0, 2]),
    _reduce("TestReduceSumCase10", "reduce_sum", [1, 1, 10], *_F32, [0, 2], True),
    _reduce(
        "TestReduceSumCase11",
        "reduce_sum",
        [32, 32, 32, 32],
        "float32",
        -0.1,
        0.1,
        [0, 2, 3],
        max_relative_error=1e-4,
    ),
    _reduce("TestReduceSumCase12", "reduce_sum", [10, 1024], *_F32, []),
    _reduce("TestReduceSumCase13", "reduce_sum", [10, 1024], *_F32, [0]),
    _reduce("TestReduceSumCase14", "reduce_sum", [10, 1024], *_F32, [1]),
    _reduce(
        "TestReduceSumCase15",
        "reduce_sum",
        [32, 64, 56, 56],
        "float32",
        -0.1,
        0.1,
        [0, 2, 3],
        max_relative_error=1e-4,
    ),
    _reduce(
        "TestReduceSumCase16",
        "reduce_sum",
        [32, 56, 56, 64],
        "float32",
        -0.1,
        0.1,
        [0, 1, 2],
        max_relative_error=1e-3,
    ),
    _reduce(
        "TestReduceSumCase17",
        "reduce_sum",
        [1, 64, 56, 56],
        "float32",
        -0.1,
        0.1,
        [0, 2, 3],
        max_relative_error=1e-4,
    ),
    _reduce(
        "TestReduceSumCase18",
        "reduce_sum",
        [1, 56, 56, 64],
        "float32",
        -0.1,
        0.1,
        [0, 1, 2],
        max_relative_error=1e-4,
    ),
    _reduce("TestReduceSumFP64", "reduce_sum", _T, "float64", -1.0, 1.0, []),
    _reduce("TestReduceSumINT32", "reduce_sum", [10], "int32", -100, 100, []),
    _reduce("TestReduceSumINT32Case1", "reduce_sum", [10, 1024], "int32", -100, 100, [1]),
    _reduce("TestReduceSumINT32Case2", "reduce_sum", _T, "int32", -100, 100, []),
    _reduce("TestReduceSumINT32Case3", "reduce_sum", [1, 56, 56, 64], "int32", -100, 100, [0, 1, 2]),
    _reduce("TestReduceSumINT64", "reduce_sum", [10], "int64", -100, 100, []),
    _reduce("TestReduceSumINT64Case1", "reduce_sum", [10, 1024], "int64", -100, 100, [1]),
    _reduce("TestReduceSumINT64Case2", "reduce_sum", _T, "int64", -100, 100, []),
    _reduce("TestReduceSumINT64Case3", "reduce_sum", [1, 56, 56, 64], "int64", -100, 100, [0, 1, 2]),
    _reduce("TestReduceProdCase1", "reduce_prod", _T, *_F32, [0, 1]),
    _reduce("TestReduceProdCase2", "reduce_prod", _T, *_F32, [0, 1], True),
    _reduce("TestReduceProdCase3", "reduce_prod", _T, *_F32, [0]),
    _reduce("TestReduceProdCase4", "reduce_prod", _T, *_F32, []),
    _reduce("TestReduceProdFP64", "reduce_prod", _T, "float64", -1.0, 1.0, []),
    _reduce("TestReduceProdINT32", "reduce_prod", [10], "int32", -10, 10, []),
    _reduce("TestReduceProdINT64", "reduce_prod", [10, 1024], "int64", -10, 10, []),
    _reduce("TestReduceProdINT64Case1", "reduce_prod", [1, 56, 56, 64], "int64", -10, 10, [0, 1, 2]),
    _reduce("TestReduceMaxCase1", "reduce_max", _T, *_F32, [0, 1]),
    _reduce("TestReduceMaxCase2", "reduce_max", _T, *_F32, [0, 1], True),
    _reduce("TestReduceMaxCase3", "reduce_max", _T, *_F32, [0]),
    _reduce("TestReduceMaxCase4", "reduce_max", _T, "float32", -10.0, -1.0, []),
    _reduce("TestReduceMaxFP64", "reduce_max", _T, "float64", -1.0, 1.0, []),
    _reduce("TestReduceMaxFP64Case1", "reduce_max", [2, 3, 4, 5], "float64", -1.0, 1.0, [0, 1]),
    _reduce("TestReduceMaxINT32", "reduce_max", [10], "int32", -100, 100, []),
    _reduce("TestReduceMaxINT64", "reduce_max", [10, 10], "int64", -100, 100, []),
    _reduce("TestReduceMaxINT64Case1", "reduce_max", [1, 56, 56, 64], "int64", -100, 100, [0, 1, 2]),
    _reduce("TestReduceMinCase1", "reduce_min", _T, *_F32, [0, 1]),
    _reduce("TestReduceMinCase2", "reduce_min", _T, *_F32, [0, 1], True),
    _reduce("TestReduceMinCase3", "reduce_min", _T, *_F32, [0]),
    _reduce("TestReduceMinCase4", "reduce_min", _T, "float32", 1.0, 10.0, []),
    _reduce("TestReduceMinFP64", "reduce_min", _T, "float64", -1.0, 1.0, []),
    suite(
        "test_reverse_op.py",
        "TestReverseOpShape",
        "reverse",
        [
            {"shape": x}
            for x in (
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
                [65536],
                [131072],
                [1, 1, 1, 1],
            )
        ],
        [{"dtype": "float32"}],
        [{"axes": [0]}],
        custom=[_REVERSE_APIS],
    ),
    suite(
        "test_reverse_op.py",
        "TestReverseOpDtype",
        "reverse",
        [{"shape": x} for x in ([1], [5, 10], [80, 40, 5, 7])],
        [{"dtype": d} for d in ("bool", "int32", "int64", "float16", "float32", "float64")],
        [{"axes": [0]}],
        custom=[_REVERSE_APIS],
    ),
    suite(
        "test_reverse_op.py",
        "TestReverseOpAxis",
        "reverse",
        [{"shape": [8, 4, 2, 16]}, {"shape": [1, 1, 1, 1]}],
        [{"dtype": "float32"}],
        [{"axes": [a]} for a in (0, 1, 2, 3, -1, -2, -3, -4)],
        custom=[_REVERSE_APIS],
    ),
    suite(
        "test_reverse_op.py",
        "TestReverseOpMultiAxis",
        "reverse",
        [{"shape": [8, 4, 2, 16]}, {"shape": [1, 1, 1, 1]}],
        [{"dtype": "float32"}],
        [
            {"axes": a}
            for a in ([], [0], [1, 2], [2, -1, 3], [0, -3, 3, 1], [-1], [-2, -1], [-3, -2, 3], [0, 3, -3, -2])
        ],
        custom=[_REVERSE_APIS],
    ),
    suite(
        "test_one_hot_op.py",
        "TestOneHotOpTest",
        "one_hot",
        [
            {"x_shape": x, "depth": 10, "axis": -1}
            for x in ([1], [1024], [32, 64], [16, 8, 4], [16, 8, 4, 2], [16, 8, 4, 2, 1])
        ],
        [{"x_dtype": "int32"}, {"x_dtype": "int64"}],
    ),
    suite(
        "test_expand_dims.py",
        "TestExpandDimsAll",
        "expand_dims",
        [
            {"x_shape": x, "axes_shape": a}
            for x, a in (
                ([1], [0]),
                ([1024], [0, 1]),
                ([32, 64], [0, 2]),
                ([32, 64], [0, 1, 2]),
                ([32, 64, 128], [0, 1, 2]),
                ([32, 64, 128], [1, 2, 3]),
                ([128, 64, 32, 16], [0, 1]),
                ([128, 64, 32, 16], [3, 4]),
                ([16, 8, 4, 2, 1], [2]),
                ([16, 8, 4, 2, 1], [5]),
            )
        ],
        [{"x_dtype": "float32"}],
    ),
    suite(
        "test_matmul_op.py",
        "TestMatmulOpShapeDtype",
        "matmul",
        [
            {"x_shape": x, "y_shape": y}
            for x, y in (
                ([1024], [1024]),
                ([4, 4], [4, 4]),
                ([4, 16], [16, 32]),
                ([5, 4, 16], [5, 16, 32]),
                ([4, 16], [16]),
                ([4, 16], [16, 1]),
                ([8, 16, 4], [1, 4, 16]),
                ([1, 1, 1, 1], [1, 1, 1, 1]),
            )
        ],
        [{"dtype": d} for d in ("float16", "float32", "float64")],
        [{"transx": False, "transy": False}],
    ),
    suite(
        "test_matmul_op.py",
        "TestMatmulOpTrans",
        "matmul",
        [
            {"x_shape": x, "y_shape": y, "transx": tx, "transy": ty}
            for x, y, tx, ty in (
                ([16, 4], [16, 32], True, False),
                ([5, 16, 4], [5, 16, 32], True, False),
                ([8, 4, 16], [4, 16], True, False),
                ([4, 16], [32, 16], False, True),
                ([10, 12, 128, 64], [10, 12, 128, 64], False, True),
                ([16, 4], [32, 16], True, True),
                ([10, 12, 64, 128], [10, 12, 128, 64], True, True),
                ([128], [10, 12, 128, 64], True, False),
            )
        ],
        [{"dtype": "float32"}],
    ),
    suite(
        "test_matmul_op.py",
        "TestMatmulTransposePassAll",
        "matmul",
        [
            {"x_shape": [32, 64], "y_shape": [64, 128], "perm": [1, 0], "transx": False, "transy": False},
            {
                "x_shape": [10, 1, 128, 64],
                "y_shape": [10, 12, 64, 128],
                "perm": [0, 1, 3, 2],
                "transx": False,
                "transy": False,
            },
        ],
        [{"dtype": "float32"}],
    ),
]
