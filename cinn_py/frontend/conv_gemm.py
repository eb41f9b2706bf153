"""conv2d as a matmul on x86: the graph rewrite `conv_to_gemm` (a pass of the x86 targets' program
steps, after the graph passes).

A direct convolution loop nest reads its input through clamped, padded window indices that move
with the output pixel: its vector loads are gathers, and the output plane of a late CNN layer
(7x7, 14x14) is shorter than the register tile. As a matmul the work is the packed,
register-tiled micro-kernel of `schedules.tactics.matmul` (mr x 2 vectors of FMAs per step):

    col  = im2col(x)                          [K, Q]       (K = Cg * KH * KW, Q >= N * OH * OW)
    out2 = matmul(reshape(w, [O, K]), col)    [O, Q]       (per group: a batched matmul)
    y    = transpose(reshape(out2[:, :N*P], [O, N, OH, OW]), [1, 0, 2, 3])   (N = 1: a reshape)

The column count Q is a whole number of register tiles (`COLUMN_MULTIPLE`), so the micro-kernel
has no tail guard: `padding` widens each output row a little (14 -> 16 pixels: the extra columns
are dropped) or, when no width within `MAX_ROW_WASTE` does, rounds Q up with zero columns. The
elementwise ops after the conv (bias, batch
norm, residual add, activation) fuse with the final reshape/transpose into one injective kernel,
which reads `out2` once.

float32 and float64 convolutions the rewrite takes become `conv2d_tiled` instead (`CONV_TILED`):
the same matmul with the column panels packed inside one kernel (`cinn_py.lowering.conv`), so
the column matrix (9x the input for a 3x3 filter) is never stored and the output is written in
place; float16/bfloat16 ones keep im2col + the matmul (which widens its operands in registers).
Likewise `conv2d_grad_data` and `conv2d_grad_filter` become `conv2d_grad_data_tiled` /
`conv2d_grad_filter_tiled` (`CONV_GRAD_TILED`, static NCHW float32/float64, `tiled_grad`). The
elementwise ops after a `conv2d_tiled` (bias, folded batch norm, residual add, relu) fuse into
its store (`cinn_py.frontend.conv_epilogue`).

`conv2d_tiled` takes NHWC convolutions too (its channels-last template); kept as a direct
convolution (the x86 window tactic): NHWC in half precision, symbolic shapes, and convolutions
whose matmul would be thin: depthwise ones (one channel per group) and any with fewer than
`MIN_DEPTH` products per output or `MIN_CHANNELS` output channels per group.
"""

from __future__ import annotations

from collections.abc import Callable

from cinn_py.frontend.conv_epilogue import EPILOGUE_RULES
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.nn_gemm import im2col_matrix, im2col_shape
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.frontend.rewrite import Match, Rewrite, apply_rewrites, op, var

__all__ = ["CONV_GEMM", "CONV_GRAD_TILED", "CONV_TILED", "conv_to_gemm", "gemm_conv", "padding", "tiled_conv",
           "tiled_grad"]

COLUMN_MULTIPLE = 32
"""Columns of the matmul are padded to a multiple of this: the 2 x 16-lane register tile of the
AVX-512 matmul (a 16-wide tile has half the accumulators: 256x2304x208 ran at 71 GF/s, x224 at 87)."""
MAX_ROW_WASTE = 0.15
"""Widen output rows by at most this fraction to fill whole register tiles."""
MIN_DEPTH = 16
MIN_CHANNELS = 8


def _real_matmul(conv: Operator) -> bool:
    """A static conv2d that is a real matmul: not depthwise, at least `MIN_DEPTH` products per
    output and `MIN_CHANNELS` output channels per group."""
    x, w = conv.inputs
    if not all(isinstance(d, int) for d in (*x.shape, *w.shape)):
        return False
    k = w.shape[1] * w.shape[2] * w.shape[3]
    return w.shape[1] > 1 and k >= MIN_DEPTH and w.shape[0] // conv.attrs["groups"] >= MIN_CHANNELS


def gemm_conv(conv: Operator) -> bool:
    """Whether the im2col rewrite could take this conv2d (NCHW, a real matmul)."""
    return conv.attrs["data_format"] == "NCHW" and _real_matmul(conv)


def tiled_conv(conv: Operator) -> bool:
    """Whether the conv2d becomes `conv2d_tiled`: a real matmul in float32/float64, NCHW or NHWC."""
    return _real_matmul(conv) and str(conv.inputs[0].dtype) in ("float32", "float64")


def padding(n: int, oh: int, ow: int) -> tuple[int, int]:
    """(row_width, columns) of the column matrix: N * OH * OW columns when they fill whole
    register tiles; else each output row widened to the narrowest width (within
    `MAX_ROW_WASTE`) that fills them; else the columns rounded up (see `im2col`)."""
    pixels = n * oh * ow
    if pixels % COLUMN_MULTIPLE == 0:
        return ow, pixels
    for width in range(ow + 1, int(ow * (1 + MAX_ROW_WASTE)) + 1):
        if n * oh * width % COLUMN_MULTIPLE == 0:
            return width, n * oh * width
    return ow, -(-pixels // COLUMN_MULTIPLE) * COLUMN_MULTIPLE


def _build(nb: NetBuilder, m: Match) -> Variable:
    x, w = m["x"], m["w"]
    attrs = dict(m.op("conv").attrs)
    n, (oh, ow), g, o = x.shape[0], attrs["out_hw"], attrs["groups"], w.shape[0]
    rw, cols = padding(n, oh, ow)
    attrs["row_width"], attrs["columns"] = rw, cols
    matrix = im2col_matrix(x.shape, attrs)
    col = nb.emit("im2col", [x], attrs)
    if im2col_shape(x.shape, attrs) != matrix:
        col = nb.reshape(col, list(matrix))
    k = matrix[-2]
    if g == 1:
        out2 = nb.matmul(nb.reshape(w, [o, k]), col)
    else:
        out2 = nb.reshape(nb.matmul(nb.reshape(w, [g, o // g, k]), col), [o, cols])
    if rw > ow:  # [O, N, OH, RW] -> the first OW pixels of each row
        rows = nb.reshape(out2, [o, n, oh, rw])
        planes = nb.slice(rows, axes=[3], starts=[0], ends=[ow])
    else:
        planes = out2 if cols == n * oh * ow else nb.slice(out2, axes=[1], starts=[0], ends=[n * oh * ow])
    if n == 1:
        return nb.emit("reshape", [planes], {"shape": (1, o, oh, ow)}, name=m.name)
    if rw == ow:
        planes = nb.reshape(planes, [o, n, oh, ow])
    return nb.emit("transpose", [planes], {"perm": (1, 0, 2, 3)}, name=m.name)


def _build_tiled(nb: NetBuilder, m: Match) -> Variable:
    return nb.emit("conv2d_tiled", [m["x"], m["w"]], dict(m.op("conv").attrs), name=m.name)


CONV_TILED = Rewrite("conv_tiled", op("conv2d", var("x"), var("w"), where=tiled_conv, name="conv"),
                     _build_tiled)
CONV_GEMM = Rewrite("conv_gemm", op("conv2d", var("x"), var("w"),
                                    where=lambda c: gemm_conv(c) and not tiled_conv(c), name="conv"), _build)


def _static_nchw_float(*values: Variable, layout: str) -> bool:
    return (layout == "NCHW" and all(isinstance(d, int) for v in values for d in v.shape)
            and all(str(v.dtype) in ("float32", "float64") for v in values))


def tiled_grad(op_: Operator) -> bool:
    """Whether a conv2d backward op becomes its tiled template: static NCHW float32/float64 with
    at least `MIN_CHANNELS` rows (input channels per group for the data gradient, output channels
    per group for the filter's) and `MIN_DEPTH` products per output."""
    a, b = op_.inputs
    at = op_.attrs
    if not _static_nchw_float(a, b, layout=at["data_format"]):
        return False
    taps = at["kernel"][0] * at["kernel"][1]
    if op_.type == "conv2d_grad_data":  # (dy, w): rows Cg, depth Og * taps
        w = b
        rows, depth, channels = w.shape[1], (w.shape[0] // at["groups"]) * taps, w.shape[1]
    else:  # (x, dy): rows Og, columns Cg * taps, depth N * P
        rows, depth, channels = b.shape[1] // at["groups"], (a.shape[1] // at["groups"]) * taps, \
            a.shape[1] // at["groups"]
    return channels > 1 and rows >= MIN_CHANNELS and depth >= MIN_DEPTH


def _build_grad(kind: str) -> Callable[[NetBuilder, Match], Variable]:
    def build(nb: NetBuilder, m: Match) -> Variable:
        return nb.emit(f"{kind}_tiled", [m["a"], m["b"]], dict(m.op("conv").attrs), name=m.name)
    return build


CONV_GRAD_TILED = tuple(Rewrite(f"{kind}_tiled", op(kind, var("a"), var("b"), where=tiled_grad, name="conv"),
                                _build_grad(kind)) for kind in ("conv2d_grad_data", "conv2d_grad_filter"))

_CONVS = ("conv2d", "conv2d_grad_data", "conv2d_grad_filter")


def conv_to_gemm(program: Program) -> Program:
    """`program` with every conv2d the rewrites take as `conv2d_tiled` or im2col + matmul, and
    every backward op they take as its tiled template (module docstring)."""
    if not any(o.type in _CONVS for o in program.ops):
        return program
    return apply_rewrites(program, [CONV_TILED, CONV_GEMM, *CONV_GRAD_TILED, *EPILOGUE_RULES])
