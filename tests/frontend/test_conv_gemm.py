"""conv2d as a matmul on x86 (cinn_py/frontend/conv_gemm.py): the rewrite takes NCHW convolutions
with a real matmul in them (float32/float64: the tiled template `conv2d_tiled`; float16/bfloat16:
im2col + matmul, ops/nn_gemm.py) and leaves depthwise, NHWC and symbolic ones to the direct
kernel; compiled with schedule="auto" (and None) the results match numpy and torch for random
strides, paddings, dilations, groups, batches and epilogues (bias, residual, relu)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.frontend.conv_gemm import COLUMN_MULTIPLE, conv_to_gemm, padding
from cinn_py.pipeline import compile_program


def _program(x_shape: tuple[Any, ...], w_shape: tuple[int, ...], epilogue: str = "relu",
             dtype: str = "float32", **conv: Any) -> Any:
    nb = NetBuilder("conv_gemm")
    x = nb.create_input(dtype, list(x_shape), "X")
    w = nb.create_input(dtype, list(w_shape), "W")
    y = nb.conv2d(x, w, **conv)
    if epilogue in ("bias", "residual"):
        o = w_shape[0]
        bias = nb.create_input(dtype, [1, o, 1, 1], "B")
        y = nb.add(y, nb.broadcast_to(bias, list(y.shape)))
    if epilogue == "residual":
        y = nb.add(y, nb.create_input(dtype, list(y.shape), "R"))
    if epilogue != "none":
        y = nb.relu(y)
    return nb.build([y])


def _run(program: Any, schedule: str | None = "auto", batch: int = 2) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    dtype = program.inputs[0].dtype.to_numpy()
    arrays = [rng.uniform(-1, 1, [batch if not isinstance(d, int) else d for d in v.shape]).astype(dtype)
              for v in program.inputs]
    compiled = compile_program(program, "x86", schedule=schedule)
    got = np.asarray(compiled(*arrays), np.float32)
    tol = 1e-4 if dtype in (np.float32, np.float64) else 2e-2
    np.testing.assert_allclose(got, np.asarray(program.run_numpy(*arrays), np.float32), rtol=tol, atol=tol)
    return compiled, arrays


def _types(compiled: Any) -> list[str]:
    return [o.type for g in compiled.groups for o in g.ops]


@pytest.mark.parametrize("schedule", ["auto", None])
@pytest.mark.parametrize("epilogue", ["relu", "bias", "residual", "none"])
def test_rewritten_conv_matches_numpy(epilogue: str, schedule: str | None) -> None:
    program = _program((2, 6, 9, 7), (16, 6, 3, 3), epilogue, strides=[1, 1], paddings=[1, 1])
    compiled, _ = _run(program, schedule)
    types = _types(compiled)
    assert "conv2d_tiled" in types and "conv2d" not in types and "im2col" not in types, types


@pytest.mark.parametrize("epilogue", ["relu", "residual"])
def test_half_precision_conv_is_im2col_and_matmul(epilogue: str) -> None:
    compiled, _ = _run(_program((2, 6, 9, 7), (16, 6, 3, 3), epilogue, "bfloat16", paddings=[1, 1]))
    types = _types(compiled)
    assert "im2col" in types and "matmul" in types and "conv2d" not in types, types


def test_the_epilogue_fuses_with_the_output_reshape() -> None:
    compiled, _ = _run(_program((2, 6, 9, 7), (16, 6, 3, 3), "residual", "float16", paddings=[1, 1]))
    last = [o.type for o in compiled.groups[-1].ops]
    assert last[-1] == "relu" and "transpose" in last and "add" in last, last


CASES = [  # x shape, w shape, conv attributes
    ((1, 8, 7, 7), (16, 8, 3, 3), {"paddings": [1, 1]}),
    ((3, 4, 11, 6), (8, 4, 3, 2), {"strides": [2, 1], "paddings": [1, 0, 2, 1]}),
    ((2, 8, 10, 10), (16, 4, 3, 3), {"groups": 2, "dilations": [2, 1], "paddings": [2, 1]}),
    ((2, 16, 9, 9), (32, 16, 1, 1), {"strides": [2, 2]}),
    ((1, 5, 12, 13), (9, 5, 5, 4), {"strides": [3, 2], "dilations": [1, 2], "padding_algorithm": "SAME"}),
    ((2, 12, 6, 6), (24, 4, 3, 3), {"groups": 3, "padding_algorithm": "VALID"}),
]


@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_geometry_against_torch(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                attrs: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    program = _program(x_shape, w_shape, "none", **attrs)
    compiled, (x, w) = _run(program)
    assert "conv2d_tiled" in _types(compiled)
    if "padding_algorithm" in attrs:
        return  # SAME/VALID: numpy's reference is the check (torch pads SAME symmetrically)
    pads = attrs.get("paddings", [0, 0])
    xt = torch.from_numpy(x)
    if len(pads) == 4:
        xt = torch.nn.functional.pad(xt, (pads[2], pads[3], pads[0], pads[1]))
        pads = [0, 0]
    ref = torch.nn.functional.conv2d(xt, torch.from_numpy(w), stride=attrs.get("strides", 1), padding=pads,
                                     dilation=attrs.get("dilations", 1), groups=attrs.get("groups", 1))
    np.testing.assert_allclose(compiled(x, w), ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seed", range(6))
def test_random_geometry(seed: int) -> None:
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 1, 2]))
    cin, kh, kw = groups * int(rng.integers(2, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    cout = groups * int(rng.integers(8, 12))
    h, w = int(rng.integers(kh + 2, 12)), int(rng.integers(kw + 2, 12))
    attrs = {"strides": [int(rng.integers(1, 3)), int(rng.integers(1, 3))],
             "paddings": [int(v) for v in rng.integers(0, 3, 4)],
             "dilations": [int(rng.integers(1, 3)), 1], "groups": groups}
    program = _program((int(rng.integers(1, 4)), cin, h, w), (cout, cin // groups, kh, kw), "relu", **attrs)
    _run(program)


@pytest.mark.parametrize("x_shape, w_shape, attrs, why", [
    ((1, 8, 6, 6), (8, 1, 3, 3), {"groups": 8}, "depthwise"),
    ((1, 6, 6, 8), (16, 8, 3, 3), {"data_format": "NHWC", "dtype": "float16"}, "NHWC half (float32: tiled)"),
    (("N", 8, 6, 6), (16, 8, 3, 3), {}, "symbolic batch"),
    ((1, 2, 6, 6), (16, 2, 2, 2), {}, "8 products per output"),
    ((1, 8, 6, 6), (4, 8, 3, 3), {}, "4 output channels"),
])
def test_thin_or_other_convs_stay_direct(x_shape: tuple[Any, ...], w_shape: tuple[int, ...],
                                         attrs: dict[str, Any],
                                         why: str) -> None:
    conv = dict(attrs)
    program = _program(x_shape, w_shape, "relu", conv.pop("dtype", "float32"), **conv)
    assert [o.type for o in conv_to_gemm(program).ops].count("conv2d") == 1, why
    compiled, _ = _run(program)
    assert "conv2d" in _types(compiled), why


@pytest.mark.parametrize("n, oh, ow, expected", [
    (1, 56, 56, (56, 3136)), (1, 14, 14, (16, 224)), (1, 7, 7, (7, 64)), (8, 7, 7, (8, 448)),
    (3, 5, 9, (9, 160)),
])
def test_padding_fills_whole_register_tiles(n: int, oh: int, ow: int, expected: tuple[int, int]) -> None:
    assert padding(n, oh, ow) == expected and expected[1] % COLUMN_MULTIPLE == 0


@pytest.mark.parametrize("x_shape, im2col_shape", [
    ((1, 8, 7, 7), (72, 64)),                 # 49 pixels + 15 zero columns
    ((1, 8, 14, 14), (8, 3, 3, 1, 14, 16)),   # each row widened to 16 pixels
    ((2, 8, 4, 4), (8, 3, 3, 2, 4, 4)),       # 32 pixels: no padding
])
def test_columns_are_padded_to_whole_register_tiles(x_shape: tuple[int, ...],
                                                    im2col_shape: tuple[int, ...]) -> None:
    program = conv_to_gemm(_program(x_shape, (16, 8, 3, 3), dtype="float16", paddings=[1, 1]))
    (col,) = [o for o in program.ops if o.type == "im2col"]
    assert col.output.shape == im2col_shape
    _run(program, batch=x_shape[0])


def test_gpu_targets_keep_the_direct_conv() -> None:
    from cinn_py.pipeline import trace_program
    from cinn_py.target import Target

    program = _program((1, 8, 6, 6), (16, 8, 3, 3))
    (cuda,) = [o.value for o in trace_program(program, until="optimize", target=Target.parse("cuda"))
               if o.step == "optimize"]
    (x86,) = [o.value for o in trace_program(program, until="optimize", target=Target.parse("x86"))
              if o.step == "optimize"]
    assert "conv2d" in [o.type for o in cuda.ops] and "conv2d_tiled" in [o.type for o in x86.ops]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_accumulates_in_float32(dtype: str) -> None:
    nb = NetBuilder("conv_half")
    x = nb.create_input(dtype, [1, 16, 6, 6], "X")
    w = nb.create_input(dtype, [16, 16, 3, 3], "W")
    program = nb.build([nb.relu(nb.conv2d(x, w, paddings=[1, 1]))])
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, v.shape).astype(v.dtype.to_numpy()) for v in program.inputs]
    compiled = compile_program(program, "x86", schedule="auto")
    got = np.asarray(compiled(*arrays), np.float32)
    ref = np.asarray(program.run_numpy(*arrays), np.float32)
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)
    assert "matmul" in _types(compiled)
