"""conv2d as a matmul on x86: the graph rewrite `conv_to_gemm` (a pass of the x86 targets' program
steps, after the graph passes).

A direct convolution loop nest reads its input through clamped, padded window indices that move
with the output pixel: its vector loads are gathers, and the output plane of a late CNN layer
(7x7, 14x14) is shorter than the register tile. As a matmul the work is the packed,
register-tiled micro-kernel of `schedules.tactics.matmul` (mr x 2 vectors of FMAs per step):

    col  = im2col(x)                          [K, Q]       (K = Cg * KH * KW, Q >= N * OH * OW)
    out2 = matmul(reshape(w, [O, K]), col)    [O, Q]       (per group: a batched matmul)
    y    = transpose(reshape(out2[:, :N*P], [O, N, OH, OW]), [1, 0, 2, 3])   (N = 1: a reshape)

The column count Q is rounded up to a whole vector (`COLUMN_MULTIPLE`: the padding columns are
zero), so the register tile needs no tail guard. The elementwise ops after the conv (bias, batch
norm, residual add, activation) fuse with the final reshape/transpose into one injective kernel,
which reads `out2` once.

Kept as a direct convolution (the x86 window tactic): NHWC, symbolic shapes, and convolutions
whose matmul would be thin: depthwise ones (one channel per group) and any with fewer than
`MIN_DEPTH` products per output or `MIN_CHANNELS` output channels per group.
"""

from __future__ import annotations

from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops.nn_gemm import im2col_shape
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.frontend.rewrite import Match, Rewrite, apply_rewrites, op, var

__all__ = ["CONV_GEMM", "conv_to_gemm", "gemm_conv"]

COLUMN_MULTIPLE = 16
"""Columns of the matmul are padded to a multiple of this (16 float32 lanes: one AVX-512 vector)."""
MIN_DEPTH = 16
MIN_CHANNELS = 8


def gemm_conv(conv: Operator) -> bool:
    """Whether the rewrite takes this conv2d (module docstring)."""
    x, w = conv.inputs
    at = conv.attrs
    if at["data_format"] != "NCHW" or not all(isinstance(d, int) for d in (*x.shape, *w.shape)):
        return False
    k = w.shape[1] * w.shape[2] * w.shape[3]
    return w.shape[1] > 1 and k >= MIN_DEPTH and w.shape[0] // at["groups"] >= MIN_CHANNELS


def _build(nb: NetBuilder, m: Match) -> Variable:
    x, w = m["x"], m["w"]
    attrs = dict(m.op("conv").attrs)
    n, (oh, ow), g, o = x.shape[0], attrs["out_hw"], attrs["groups"], w.shape[0]
    pixels = n * oh * ow
    attrs["columns"] = -(-pixels // COLUMN_MULTIPLE) * COLUMN_MULTIPLE
    shape = im2col_shape(x.shape, attrs)
    col = nb.emit("im2col", [x], attrs)
    k, cols = shape[-2], shape[-1]
    if g == 1:
        out2 = nb.matmul(nb.reshape(w, [o, k]), col)
    else:
        out2 = nb.reshape(nb.matmul(nb.reshape(w, [g, o // g, k]), col), [o, cols])
    if cols != pixels:
        out2 = nb.slice(out2, axes=[1], starts=[0], ends=[pixels])
    if n == 1:
        return nb.emit("reshape", [out2], {"shape": (1, o, oh, ow)}, name=m.name)
    planes = nb.reshape(out2, [o, n, oh, ow])
    return nb.emit("transpose", [planes], {"perm": (1, 0, 2, 3)}, name=m.name)


CONV_GEMM = Rewrite("conv_gemm", op("conv2d", var("x"), var("w"), where=gemm_conv, name="conv"), _build)


def conv_to_gemm(program: Program) -> Program:
    """`program` with every conv2d the rewrite takes as im2col + matmul (module docstring)."""
    if not any(o.type == "conv2d" for o in program.ops):
        return program
    return apply_rewrites(program, [CONV_GEMM])
