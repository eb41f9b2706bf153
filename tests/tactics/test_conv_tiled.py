"""The tiled conv2d templates (`conv2d_tiled`, `conv2d_grad_data_tiled`, `conv2d_grad_filter_tiled`,
cinn_py/lowering/conv): their tiles, and their results (forward, dx, dw) against torch for strides,
paddings (asymmetric too), dilations, groups, batches, output channels that are not a multiple of
the register tile's rows, pixel planes that are not a multiple of its columns, float32 and float64,
through NetBuilder with schedule=None (the template's serial nest), schedule="auto" (the loop
roles as parallel / unroll / vectorize) and the IR interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cinn_py.frontend import NetBuilder
from cinn_py.ir import float32
from cinn_py.lowering.attention.tiles import MR
from cinn_py.lowering.conv.forward import KC_MAX, ConvGeometry
from cinn_py.lowering.conv.gemm import GemmShape
from cinn_py.pipeline import compile_program, run_interpreted

torch = pytest.importorskip("torch")


def _geometry(n: int, c: int, o: int, hw: int, k: int, groups: int = 1) -> ConvGeometry:
    return ConvGeometry(n, c, hw, hw, o, groups, k, k, (1, 1), (1, 1), (k // 2,) * 4, (hw, hw), float32)


@pytest.mark.parametrize("s, ob, cb, kc, tasks", [
    (_geometry(1, 64, 64, 56, 3).forward(), 64, 32, 288, 98),        # one row block: 98 pixel tiles
    (_geometry(1, 512, 512, 7, 3).forward(), 128, 32, 288, 8),       # 2 pixel tiles: rows split to 8 tasks
    (_geometry(1, 8, 12, 3, 3).forward(), 16, 16, 72, 1),            # 12 rows -> 16 (tail rows), 9 px -> 16
    (_geometry(2, 12, 24, 5, 3, groups=3).forward(), 8, 32, 36, 6),  # Og 8, Cg 4
    (_geometry(1, 64, 64, 56, 3).grad_filter(), 64, 32, 448, 18),    # depth N*P = 3136: panels of 448
    (_geometry(1, 64, 64, 56, 3).grad_data(), 64, 32, 288, 98),      # rows Cg, depth Og * 9
])
def test_tiles(s: GemmShape, ob: int, cb: int, kc: int, tasks: int) -> None:
    assert (s.ob, s.cb, s.kc, s.tasks) == (ob, cb, kc, tasks)
    assert s.ob % MR == 0 and s.depth % s.kc == 0 and s.kc <= KC_MAX


CASES = [  # x shape, w shape, conv attributes
    ((1, 16, 9, 10), (16, 16, 3, 3), {"paddings": [1, 1]}),
    ((2, 8, 7, 7), (12, 8, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}),           # 12 rows, 16 px
    ((1, 12, 10, 11), (16, 6, 3, 3), {"groups": 2, "dilations": [2, 2], "paddings": [2, 2]}),
    ((1, 16, 6, 6), (24, 16, 1, 1), {}),                                                # 1x1, 36 px
    ((2, 16, 9, 9), (32, 16, 1, 1), {"strides": [2, 2]}),                               # 1x1 stride 2
    ((1, 6, 11, 9), (8, 6, 5, 3), {"strides": [2, 1], "paddings": [0, 2, 1, 0]}),       # asymmetric
    ((3, 24, 5, 5), (48, 8, 3, 3), {"groups": 3, "paddings": [1, 1]}),
]


def _conv_program(x_shape: tuple[int, ...], w_shape: tuple[int, ...], dtype: str, attrs: dict[str, Any],
                  relu: bool = False) -> Any:
    nb = NetBuilder("tiled")
    x = nb.create_input(dtype, list(x_shape), "X")
    w = nb.create_input(dtype, list(w_shape), "W")
    y = nb.conv2d(x, w, **attrs)
    return nb.build([nb.relu(y) if relu else y])


def _torch_conv(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    pads = list(attrs.get("paddings", [0, 0]))
    xt = torch.from_numpy(x)
    if len(pads) == 4:
        xt = torch.nn.functional.pad(xt, (pads[2], pads[3], pads[0], pads[1]))
        pads = [0, 0]
    out = torch.nn.functional.conv2d(xt, torch.from_numpy(w), stride=attrs.get("strides", 1), padding=pads,
                                     dilation=attrs.get("dilations", 1), groups=attrs.get("groups", 1))
    return out.numpy()


def _arrays(x_shape: tuple[int, ...], w_shape: tuple[int, ...], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(len(x_shape) + sum(x_shape))
    return rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)


@pytest.mark.parametrize("schedule", ["auto", None])
@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_against_torch(x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any],
                       schedule: str | None) -> None:
    program = _conv_program(x_shape, w_shape, "float32", attrs)
    compiled = compile_program(program, "x86", schedule=schedule)
    assert [o.type for g in compiled.groups for o in g.ops] == ["conv2d_tiled"]
    x, w = _arrays(x_shape, w_shape, "float32")
    np.testing.assert_allclose(compiled(x, w), _torch_conv(x, w, attrs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("schedule", ["auto", None])
@pytest.mark.parametrize("x_shape, w_shape, attrs", [CASES[1], CASES[2], CASES[5]])
def test_channels_last_against_torch(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                     attrs: dict[str, Any], schedule: str | None) -> None:
    n, c, h, w_ = x_shape
    program = _conv_program((n, h, w_, c), w_shape, "float32", {**attrs, "data_format": "NHWC"}, relu=True)
    compiled = compile_program(program, "x86", schedule=schedule)
    (conv,) = [o for g in compiled.groups for o in g.ops]
    assert conv.type == "conv2d_tiled" and conv.attrs["epilogue"] == ("relu",)  # relu fused
    x, w = _arrays(x_shape, w_shape, "float32")
    want = np.maximum(_torch_conv(x, w, attrs), 0).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(compiled(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), w), want, rtol=1e-4,
                               atol=1e-4)


def test_float64_is_exact_to_double_precision() -> None:
    x_shape, w_shape, attrs = CASES[2]
    compiled = compile_program(_conv_program(x_shape, w_shape, "float64", attrs), "x86", schedule="auto")
    x, w = _arrays(x_shape, w_shape, "float64")
    np.testing.assert_allclose(compiled(x, w), _torch_conv(x, w, attrs), rtol=1e-12, atol=1e-12)


def test_interpreter_runs_the_template() -> None:
    x_shape, w_shape, attrs = CASES[1]
    program = _conv_program(x_shape, w_shape, "float32", attrs, relu=True)
    x, w = _arrays(x_shape, w_shape, "float32")
    want = np.maximum(_torch_conv(x, w, attrs), 0)
    # the interpreter runs the program's own conv2d (no CPU rewrite); the template (with its fused
    # relu) run by the interpreter agrees
    np.testing.assert_allclose(run_interpreted(program, [x, w]), want, rtol=1e-4, atol=1e-4)
    from cinn_py.frontend.conv_gemm import conv_to_gemm
    from cinn_py.interp import run_ir
    from cinn_py.pipeline import program_steps

    _, funcs = program_steps(conv_to_gemm(program))
    (tiled,) = [f for f in funcs if "task_par" in str(f)]
    out = run_ir(tiled, {"X": x, "W": w}, {})
    (conv,) = [v for k, v in out.items() if k not in ("X", "W")]
    np.testing.assert_allclose(conv, want, rtol=1e-4, atol=1e-4)  # the relu is fused into the template


def test_auto_schedule_maps_the_roles() -> None:
    from cinn_py.frontend.conv_gemm import conv_to_gemm
    from cinn_py.pipeline import program_steps
    from schedules.tactics import auto_schedule

    x_shape, w_shape, attrs = CASES[0]
    _, (func,) = program_steps(conv_to_gemm(_conv_program(x_shape, w_shape, "float32", attrs)))
    sch = auto_schedule(func, "x86")
    text = str(sch.func)
    assert "parallel for (task_par" in text and "unroll for (ii_unr" in text and "vectorize[16]" in text
    assert not sch.report.fallbacks and not any("stays serial" in n for n in sch.report.notes), sch.report


def _grad_program(x_shape: tuple[int, ...], w_shape: tuple[int, ...], dtype: str,
                  attrs: dict[str, Any]) -> Any:
    nb = NetBuilder("tiled_grad")
    x = nb.create_input(dtype, list(x_shape), "X")
    w = nb.create_input(dtype, list(w_shape), "W")
    y = nb.conv2d(x, w, **attrs)
    dy = nb.create_input(dtype, [int(d) for d in y.shape], "DY")
    return nb.build(nb.conv2d_grad(dy, x, w, **attrs))


def _torch_grads(x: np.ndarray, w: np.ndarray, dy: np.ndarray, attrs: dict[str, Any]) -> tuple[Any, Any]:
    tx, tw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    pads = list(attrs.get("paddings", [0, 0]))
    xt = tx
    if len(pads) == 4:
        xt = torch.nn.functional.pad(tx, (pads[2], pads[3], pads[0], pads[1]))
        pads = [0, 0]
    y = torch.nn.functional.conv2d(xt, tw, stride=attrs.get("strides", 1), padding=pads,
                                   dilation=attrs.get("dilations", 1), groups=attrs.get("groups", 1))
    y.backward(torch.from_numpy(dy))
    return tx.grad.numpy(), tw.grad.numpy()  # type: ignore[union-attr]


@pytest.mark.parametrize("schedule", ["auto", None])
@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_gradients_against_torch(x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any],
                                 schedule: str | None) -> None:
    program = _grad_program(x_shape, w_shape, "float32", attrs)
    compiled = compile_program(program, "x86", schedule=schedule)
    types = [o.type for g in compiled.groups for o in g.ops]
    assert "conv2d_grad_filter_tiled" in types, types
    cg = w_shape[1]
    assert ("conv2d_grad_data_tiled" in types) == (cg >= 8), types  # fewer rows: the direct kernel
    x, w = _arrays(x_shape, w_shape, "float32")
    dy = np.random.default_rng(7).standard_normal(_torch_conv(x, w, attrs).shape).astype(np.float32)
    arrays = {"X": x, "W": w, "DY": dy}
    dx, dw = compiled(*[arrays[v.name] for v in program.inputs])
    want_dx, want_dw = _torch_grads(x, w, dy, attrs)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=2e-4)


def test_gradients_float64() -> None:
    x_shape, w_shape, attrs = CASES[1]
    program = _grad_program(x_shape, w_shape, "float64", attrs)
    compiled = compile_program(program, "x86", schedule="auto")
    x, w = _arrays(x_shape, w_shape, "float64")
    dy = np.random.default_rng(7).standard_normal(_torch_conv(x, w, attrs).shape)
    arrays = {"X": x, "W": w, "DY": dy}
    for got, want in zip(compiled(*[arrays[v.name] for v in program.inputs]), _torch_grads(x, w, dy, attrs)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def _epilogue_program(layout: str, bias_axis: str = "channel") -> Any:
    """relu(conv * scale + shift + residual) (a folded batch norm and a residual block's add)."""
    nb = NetBuilder("epilogue")
    x = nb.create_input("float32", [2, 16, 9, 10] if layout == "NCHW" else [2, 9, 10, 16], "X")
    w = nb.create_input("float32", [24, 16, 3, 3], "W")
    y = nb.conv2d(x, w, paddings=[1, 1], data_format=layout)
    shape = [int(d) for d in y.shape]
    channel = [1] if layout == "NCHW" else [3]
    scale = nb.broadcast_to(nb.create_input("float32", [24], "SCALE"), shape, channel)
    if bias_axis == "channel":
        vector = nb.create_input("float32", [1, 24, 1, 1] if layout == "NCHW" else [24], "SHIFT")
        shift = nb.broadcast_to(vector, shape, [0, 1, 2, 3] if layout == "NCHW" else channel)
    else:  # a vector along the rows: not per channel
        shift = nb.broadcast_to(nb.create_input("float32", [shape[2]], "SHIFT"), shape, [2])
    z = nb.add(nb.add(nb.multiply(y, scale), shift), nb.create_input("float32", shape, "RES"))
    return nb.build([nb.relu(z)])


@pytest.mark.parametrize("schedule", ["auto", None])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_epilogue_fuses_into_the_conv(layout: str, schedule: str | None) -> None:
    program = _epilogue_program(layout)
    compiled = compile_program(program, "x86", schedule=schedule)
    convs = [o for g in compiled.groups for o in g.ops if o.type == "conv2d_tiled"]
    assert len(convs) == 1
    assert convs[0].attrs["epilogue"] == ("channel_mul:2", "channel_add:3", "add:4", "relu")
    assert all(o.type in ("conv2d_tiled", "reshape") for g in compiled.groups for o in g.ops)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal([int(d) for d in v.shape]).astype(np.float32) for v in program.inputs]
    np.testing.assert_allclose(compiled(*arrays), program.run_numpy(*arrays), rtol=1e-4, atol=1e-4)


def test_a_vector_along_the_rows_is_not_a_channel_epilogue() -> None:
    program = _epilogue_program("NCHW", bias_axis="rows")
    compiled = compile_program(program, "x86", schedule="auto")
    (conv,) = [o for g in compiled.groups for o in g.ops if o.type == "conv2d_tiled"]
    # scale fuses per channel; the row vector's broadcast is materialised and added as a residual
    assert conv.attrs["epilogue"][0] == "channel_mul:2" and "channel_add:3" not in conv.attrs["epilogue"]
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal([int(d) for d in v.shape]).astype(np.float32) for v in program.inputs]
    np.testing.assert_allclose(compiled(*arrays), program.run_numpy(*arrays), rtol=1e-4, atol=1e-4)


def test_bad_epilogue_steps_are_refused() -> None:
    from cinn_py.frontend.ops.base import FrontendError

    nb = NetBuilder("bad")
    x = nb.create_input("float32", [1, 16, 5, 5], "X")
    w = nb.create_input("float32", [16, 16, 3, 3], "W")
    conv = nb.build([nb.conv2d(x, w)]).ops[0].attrs
    with pytest.raises(FrontendError, match="epilogue step 'gelu'"):
        nb.emit("conv2d_tiled", [x, w], {**conv, "epilogue": ("gelu",)})
    with pytest.raises(FrontendError, match=r"'channel_add:2' needs input 2 of float32\[1, 16, 1, 1\]"):
        nb.emit("conv2d_tiled", [x, w, nb.create_input("float32", [16, 1, 1, 1], "V")],
                {**conv, "epilogue": ("channel_add:2",)})
