"""CINN's layout and bitwise op tests (transpose, concat, bitwise), transcribed as data (see
`suites_unary`)."""

from __future__ import annotations

from typing import Any

from cinn_py.tools.cinn_cases.suite import Suite, suite


def _sa(*pairs: tuple[list[int], list[int]]) -> list[dict[str, Any]]:
    return [{"shape": list(s), "axes": list(a)} for s, a in pairs]


def _cat(*pairs: tuple[list[list[int]], int]) -> list[dict[str, Any]]:
    return [{"shapes": [list(s) for s in shapes], "axis": axis} for shapes, axis in pairs]


_BIT_OPS = [{"op_type": op} for op in ("and", "or", "xor", "not")]
_BIT_DTYPES = [{"dtype": d} for d in ("bool", "uint8", "int8", "int16", "int32", "int64")]
_F32 = [{"dtype": "float32"}]

_CONCAT_SHAPES = [[[10], [6]], [[8, 5], [8, 5]], [[10, 3, 5], [4, 3, 5]], [[80, 40, 5, 7], [20, 40, 5, 7]]]

SUITES: list[Suite] = [
    suite(
        "test_transpose_op.py",
        "TestTransposeOpShapeTest",
        "transpose",
        _sa(
            ([512], [0]),
            ([1024], [-1]),
            ([1200], [0]),
            ([64, 16], [1, 0]),
            ([4, 32, 8], [1, 0, 2]),
            ([16, 8, 4, 2], [0, 2, 1, 3]),
            ([2, 8, 4, 2, 5], [0, 2, 3, 1, 4]),
            ([4, 8, 1, 2, 16], [0, 2, 4, 1, 3]),
            ([1], [0]),
            ([1, 1, 1, 1], [0, 2, 3, 1]),
            ([1, 1, 1, 1, 1], [0, 2, 3, 1, 4]),
        ),
        _F32,
    ),
    suite(
        "test_transpose_op.py",
        "TestTransposeOpOnesTest",
        "transpose",
        _sa(
            ([1], [0]),
            ([1, 1, 1, 1], [0, 2, 3, 1]),
            ([1, 1, 1, 1, 1], [0, 2, 3, 1, 4]),
            ([1, 1, 512, 1, 1], [0, 2, 3, 1, 4]),
            ([1, 2048, 1, 1], [0, 2, 3, 1]),
        ),
        _F32,
    ),
    suite(
        "test_transpose_op.py",
        "TestTransposeOpLargeTest",
        "transpose",
        _sa(
            ([2048], [0]),
            ([1, 1, 65536, 1], [0, 2, 3, 1]),
            ([1, 1, 131072, 1, 1], [0, 2, 3, 1, 4]),
            ([1, 1048576, 1, 1], [0, 2, 3, 1]),
            ([16, 32, 64, 32], [0, 2, 3, 1]),
        ),
        _F32,
    ),
    suite(
        "test_transpose_op.py",
        "TestTransposeOpDtypeTest",
        "transpose",
        _sa(([1024], [0]), ([64, 16], [1, 0]), ([4, 32, 8], [0, 2, 1]), ([16, 8, 4, 2], [1, 2, 3, 0])),
        [{"dtype": d} for d in ("float16", "float32", "float64", "bool", "int32", "int64")],
    ),
    suite(
        "test_transpose_op.py",
        "TestTransposeOpAttributeAxes",
        "transpose",
        _sa(
            ([1024], [0]),
            ([1024], [-1]),
            ([64, 16], [1, 0]),
            ([64, 16], [0, -1]),
            ([4, 32, 8], [0, 2, 1]),
            ([4, 32, 8], [-3, -1, 1]),
            ([16, 8, 4, 2], [1, 2, 3, 0]),
            ([16, 8, 4, 2], [1, -2, -1, -4]),
        ),
        _F32,
    ),
    suite(
        "test_concat_op.py",
        "TestConcatOpShape",
        "concat",
        [
            {"shapes": s}
            for s in (
                [[10], [6]],
                [[8, 5], [8, 5]],
                [[10, 3, 5], [4, 3, 5]],
                [[80, 40, 5, 7], [20, 40, 5, 7]],
                [[80, 1, 5, 7], [8, 1, 5, 7]],
                [[80, 3, 1024, 7], [100, 3, 1024, 7]],
                [[1, 5, 1024, 2048], [2, 5, 1024, 2048]],
                [[1], [1]],
                [[512], [512]],
                [[1024], [512]],
                [[2048], [4096]],
                [[1, 1, 1, 1], [1, 1, 1, 1]],
            )
        ],
        _F32,
        [{"axis": 0}],
    ),
    suite(
        "test_concat_op.py",
        "TestConcatOpDtype",
        "concat",
        [{"shapes": s} for s in _CONCAT_SHAPES],
        [{"dtype": d} for d in ("float16", "float32", "float64", "bool", "uint8", "int8", "int32", "int64")],
        [{"axis": 0}],
    ),
    suite(
        "test_concat_op.py",
        "TestConcatOpMultipleInputs",
        "concat",
        _cat(
            ([[10]], 0),
            ([[10], [6]], 0),
            ([[10], [6], [8]], 0),
            ([[10], [6], [10], [6]], 0),
            ([[8, 5]], 1),
            ([[8, 5], [8, 8]], 1),
            ([[8, 5], [8, 5], [16, 5]], 0),
            ([[8, 5], [8, 5], [8, 5], [8, 5]], 0),
            ([[10, 3, 5]], 0),
            ([[10, 3, 5], [10, 7, 5]], 1),
            ([[10, 3, 5], [10, 3, 6], [10, 3, 7]], 2),
            ([[10, 3, 5], [4, 3, 5], [2, 3, 5]], 0),
            ([[80, 1, 5, 7]], 0),
            ([[80, 1, 5, 7], [80, 79, 5, 7]], 1),
            ([[80, 1, 50, 7], [80, 1, 5, 7], [80, 1, 10, 7]], 2),
            ([[80, 1, 5, 17], [80, 1, 5, 27], [80, 1, 5, 37], [80, 1, 5, 47]], 3),
        ),
        _F32,
    ),
    suite(
        "test_concat_op.py",
        "TestConcatOpAttrs",
        "concat",
        _cat(
            ([[10], [8]], 0),
            ([[10], [6]], -1),
            ([[8, 5], [10, 5]], 0),
            ([[8, 5], [8, 8]], 1),
            ([[10, 3, 5], [10, 3, 5]], 0),
            ([[10, 3, 5], [10, 7, 5]], 1),
            ([[10, 3, 15], [10, 3, 5]], 2),
            ([[10, 3, 7], [10, 3, 5]], -1),
            ([[10, 3, 5], [10, 7, 5]], -2),
            ([[10, 7, 5], [20, 7, 5]], -3),
            ([[80, 1, 5, 7], [80, 1, 5, 7]], 0),
            ([[80, 1, 5, 7], [80, 79, 5, 7]], 1),
            ([[80, 1, 5, 7], [80, 1, 10, 7]], 2),
            ([[80, 1, 5, 7], [80, 1, 5, 7]], 3),
            ([[80, 1, 5, 7], [80, 1, 5, 13]], -1),
            ([[80, 1, 5, 7], [80, 1, 5, 7]], -2),
            ([[80, 15, 5, 7], [80, 5, 5, 7]], -3),
            ([[80, 1, 5, 7], [20, 1, 5, 7]], -4),
        ),
        _F32,
    ),
    suite(
        "test_bitwise_op.py",
        "TestBitwiseOpShape",
        "bitwise",
        [
            {"x_shape": s, "y_shape": s}
            for s in (
                [1],
                [1024],
                [512, 256],
                [128, 64, 32],
                [16, 8, 4, 2],
                [16, 8, 4, 2, 1],
                [1, 1, 1, 1, 1],
            )
        ],
        [{"dtype": "int32"}],
        _BIT_OPS,
    ),
    suite(
        "test_bitwise_op.py",
        "TestBitwiseOpDtype",
        "bitwise",
        [{"x_shape": [32, 64], "y_shape": [32, 64]}],
        _BIT_DTYPES,
        _BIT_OPS,
    ),
    suite(
        "test_bitwise_op.py",
        "TestBitwiseOpBroadcast",
        "bitwise",
        [
            {"x_shape": s, "y_shape": [1] * len(s)}
            for s in ([1024], [512, 256], [128, 64, 32], [16, 8, 4, 2], [16, 8, 4, 2, 1])
        ],
        [{"dtype": "int32"}],
        _BIT_OPS,
    ),
    suite(
        "test_bitwise_op.py",
        "TestBitwiseWithINF",
        "bitwise",
        [{"x_shape": [16], "y_shape": [16], "with_inf": True}],
        _BIT_DTYPES,
        _BIT_OPS,
    ),
    suite(
        "test_bitwise_op.py",
        "TestBitwiseWithNAN",
        "bitwise",
        [{"x_shape": [16], "y_shape": [16], "with_nan": True}],
        _BIT_DTYPES,
        _BIT_OPS,
    ),
    suite(
        "test_argmax_op.py",
        "TestArgMaxOpShapeTest",
        "arg",
        [
            {"shape": x}
            for x in (
                [512],
                [1024],
                [1200],
                [64, 16],
                [4, 32, 8],
                [16, 8, 4, 2],
                [2, 8, 4, 2, 5],
                [4, 8, 1, 2, 16],
                [1],
                [1, 1, 1, 1],
                [1, 1, 1, 1, 1],
            )
        ],
        [{"dtype": "float32"}],
        [{"axis": 0, "keepdim": False}],
        op="argmax",
        low=0,
        high=10,
    ),
    suite(
        "test_argmax_op.py",
        "TestArgMaxOpDtypeTest",
        "arg",
        [{"shape": [1024]}],
        [{"dtype": d} for d in ("float16", "float32", "float64", "uint8", "int16", "int32", "int64")],
        [{"axis": 0, "keepdim": False}],
        op="argmax",
        low=0,
        high=10,
    ),
    suite(
        "test_argmax_op.py",
        "TestArgMaxOpAxisTest",
        "arg",
        [{"shape": [16, 8, 4, 2]}],
        [{"dtype": "float32"}],
        [{"axis": a, "keepdim": False} for a in range(4)],
        op="argmax",
        low=0,
        high=10,
    ),
    suite(
        "test_argmax_op.py",
        "TestArgMaxOpKeepdimTest",
        "arg",
        [{"shape": [16, 8, 4, 2]}],
        [{"dtype": "float32"}],
        [{"axis": a, "keepdim": True} for a in range(4)],
        op="argmax",
        low=0,
        high=10,
    ),
    suite(
        "test_reshape_op.py",
        "TestReshapeOpShape",
        "reshape",
        [
            {"shape": a, "target_shape": b}
            for a, b in (
                ([100], [100]),
                ([100], [10, 10]),
                ([125], [5, 5, 5]),
                ([256], [4, 4, 4, 4]),
                ([1024], [8, 8, 4, 4]),
                ([5, 5], [25]),
                ([6, 8], [4, 12]),
                ([10, 20], [5, 10, 4]),
                ([4, 8], [2, 2, 2, 4]),
                ([16, 16], [4, 2, 2, 1, 16]),
                ([1, 1, 1], [1]),
                ([1, 2, 3], [6, 1]),
                ([4, 8, 16], [16, 8, 4]),
                ([6, 6, 6], [4, 9, 2, 3]),
                ([8, 1, 8], [2, 2, 2, 2, 4]),
                ([4, 1, 2, 1], [8]),
                ([2, 2, 4, 8], [4, 32]),
                ([6, 7, 8, 9], [42, 36, 2]),
                ([1024, 1, 1, 1], [4, 4, 8, 8]),
                ([10, 20, 30, 40], [8, 6, 4, 2, 625]),
                ([1, 1024, 4], [1, 2048, 2]),
                ([2048, 2, 2], [256, 8, 4]),
                ([1, 1, 256], [16, 1, 16]),
                ([1, 1, 1, 1], [1, 1]),
                ([1, 1, 1], [1]),
                ([1], [1, 1, 1, 1]),
            )
        ],
        [{"dtype": "float32"}],
    ),
    suite(
        "test_reshape_op.py",
        "TestReshapeOpDtype",
        "reshape",
        [{"shape": [2, 3, 4], "target_shape": [4, 6]}],
        [{"dtype": d} for d in ("float16", "float32", "float64", "bool", "uint8", "int8", "int32", "int64")],
    ),
    suite(
        "test_gather_op.py",
        "TestGatherOpAll",
        "gather",
        [
            {"x": x, "index": i, "axis": a}
            for x, i, a in (
                ([128], [64], 0),
                ([16, 32], [32], 0),
                ([16, 32], [32], 1),
                ([8, 16, 32], [16], -3),
                ([8, 16, 32], [8], -2),
                ([8, 16, 32], [8], -1),
                ([8, 16, 32], [4], 2),
                ([16, 8, 4, 64], [4], 2),
                ([16, 8, 4, 1024], [4], 2),
                ([16, 8, 4, 1], [4], 2),
                ([1, 1, 1, 1], [4], 2),
            )
        ],
        [{"x_dtype": d, "y_dtype": "int64"} for d in ("int16", "int32", "int64", "float32", "float64")],
    ),
]
