"""The conv2d kernel templates as implicit GEMMs (`cinn_py.lowering.conv.gemm`), NCHW, static:

For x [N, C, H, W], filter w [O, Cg, KH, KW] (G groups of Cg = C / G input and Og = O / G output
channels), output y [N, O, OH, OW], with taps (c, i, j) and K = Cg*KH*KW, P = OH*OW:

- forward (`conv2d_tiled`): per image and group, `y[o, p] = sum_k w[o, k] * col(k, p)`: A is the
  filter as stored (a row of K floats), B the column matrix `col(k, p) = xp[c, oh*sh + i*dh,
  ow*sw + j*dw]` of the zero-padded input, packed panel by panel (never stored whole: 9x the
  input for a 3x3 filter); y written through its [N, O, P] view. Channels-last (NHWC) x and y:
  the same product, the pack gathering from the NHWC input and y stored through its [N, P, O]
  view (strided across a tile's columns: O*P stores against O*P*K FMAs);
- filter gradient (`conv2d_grad_filter_tiled`): per group, `dw[o, k] = sum_(n,p) dy[n, o, p] *
  col(n, k, p)`: A is dy (a row of P floats per image), B the transposed column matrix;
- data gradient (`conv2d_grad_data_tiled`): per image and group, `dx[c, q] = sum_(o,i,j)
  w[o, c, i, j] * dyz(o, ih + (KH-1)*dh - i*dh, iw + (KW-1)*dw - j*dw)` over input pixels
  q = (ih, iw): dyz is dy with strides - 1 zeros between its elements and its border padded
  (a prologue nest), so the packed B reads it without a condition (the transposed convolution).

The depth panel is a whole number of channels dividing the depth (the filter gradient: a
divisor of N*P), at most KC_MAX deep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cinn_py.ir import (
    EQ, GE, LT, And, Block, DType, Expr, FloatImm, Load, LoweredFunc, Max, Min, Select, Stmt, Tensor,
    make_tensor,
)
from cinn_py.lowering.attention.forward import kernel_func
from cinn_py.lowering.attention.nest import PARALLEL, VECTOR, Loop, block, nest
from cinn_py.lowering.attention.tiles import i32
from cinn_py.lowering.conv.gemm import GemmShape, ImplicitGemm, Task

__all__ = ["KC_MAX", "ConvGeometry", "clamp", "conv_forward_kernel", "conv_grad_data_kernel",
           "conv_grad_filter_kernel", "finish", "view", "zero"]

KC_MAX = 512
"""Deepest packed panel: 512 x 32 float32 = 64 KiB (L2-resident, reused by every row tile)."""


@dataclass(frozen=True)
class ConvGeometry:
    """The problem (NCHW, static): x [n, c, h, w], filter [o, c / groups, kh, kw]."""

    n: int
    c: int
    h: int
    w: int
    o: int
    groups: int
    kh: int
    kw: int
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]
    """top, bottom, left, right."""
    out_hw: tuple[int, int]
    dtype: DType
    channels_last: bool = False
    """x and the output are NHWC (the filter is [O, Cg, KH, KW] in both layouts)."""

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def og(self) -> int:
        return self.o // self.groups

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def depth(self) -> int:
        return self.cg * self.taps

    @property
    def pixels(self) -> int:
        return self.out_hw[0] * self.out_hw[1]

    def forward(self) -> GemmShape:
        return GemmShape(self.n * self.groups, self.og, self.pixels, self.depth,
                         _channel_panel(self.cg, self.taps))

    def grad_filter(self) -> GemmShape:
        total = self.n * self.pixels
        return GemmShape(self.groups, self.og, self.depth, total, _channel_panel(total, 1))

    def grad_data(self) -> GemmShape:
        return GemmShape(self.n * self.groups, self.cg, self.h * self.w, self.og * self.taps,
                         _channel_panel(self.og, self.taps))


def _channel_panel(channels: int, taps: int) -> int:
    """taps x the most channels dividing `channels` with at most KC_MAX rows (one channel at least)."""
    per = max(1, KC_MAX // taps)
    return taps * max(d for d in range(1, min(channels, per) + 1) if channels % d == 0)


def zero(dtype: DType) -> Expr:
    return FloatImm(dtype, 0.0)


def clamp(e: Expr, size: int) -> Expr:
    return Min(Max(e, i32(0)), i32(size - 1))


def view(t: Tensor, *shape: int) -> Tensor:
    """`t` as a tensor of `shape` over the same buffer (row-major: a reshape of its elements)."""
    return Tensor(f"{t.name}_as_{'x'.join(map(str, shape))}", tuple(i32(d) for d in shape), t.dtype, t.buffer)


def _split_tap(g: ConvGeometry, k: Expr) -> tuple[Expr, Expr, Expr]:
    """(channel, i, j) of a depth index over (channel, KH, KW)."""
    return k // i32(g.taps), (k // i32(g.kw)) % i32(g.kh), k % i32(g.kw)


def _padded_input(g: ConvGeometry, name: str, x: Tensor) -> tuple[Tensor, list[Stmt]]:
    """x zero-padded (the innermost loop vectorised: rows of NCHW, channels of NHWC, masked vector
    loads), or x itself without padding."""
    if not any(g.pads):
        return x, []
    top, bottom, left, right = g.pads
    rows, cols = g.h + top + bottom, g.w + left + right
    outer = Loop.new("img", g.n * (rows if g.channels_last else g.c), PARALLEL)
    if g.channels_last:
        n, r = outer.var // i32(rows), outer.var % i32(rows)
        q, ch = Loop.new("q", cols), Loop.new("ch", g.c, VECTOR)
        loops = [outer, q, ch]
        row, col, c = r, q.var, ch.var
    else:
        n, c = outer.var // i32(g.c), outer.var % i32(g.c)
        rl, q = Loop.new("r", rows), Loop.new("q", cols, VECTOR)
        loops = [outer, rl, q]
        row, col = rl.var, q.var
    ih, iw = row - i32(top), col - i32(left)
    inside = And(And(GE(ih, i32(0)), LT(ih, i32(g.h))), And(GE(iw, i32(0)), LT(iw, i32(g.w))))
    padded = (i32(g.n), i32(rows), i32(cols), i32(g.c)) if g.channels_last else \
        (i32(g.n), i32(g.c), i32(rows), i32(cols))
    xp = make_tensor(f"{name}_xpad", padded, g.dtype)
    value = Select(inside, Load(x, _nchw_index(g, n, c, clamp(ih, g.h), clamp(iw, g.w))), zero(g.dtype))
    return xp, [nest(loops, [block(f"{name}_xpad", loops, xp, _nchw_index(g, n, c, row, col), value)])]


def _nchw_index(g: ConvGeometry, n: Expr, c: Expr, h: Expr, w: Expr) -> tuple[Expr, ...]:
    """The indices of (n, c, h, w) in x's layout."""
    return (n, h, w, c) if g.channels_last else (n, c, h, w)


def _column(g: ConvGeometry, xp: Tensor, n: Expr, group: Expr, k: Expr, p: Expr) -> Expr:
    """col(k, p) of image n: the padded input at output pixel p's tap k."""
    ch, i, j = _split_tap(g, k)
    (sh, sw), (dh, dw), ow = g.strides, g.dilations, g.out_hw[1]
    return Load(xp, _nchw_index(g, n, group * i32(g.cg) + ch, (p // i32(ow)) * i32(sh) + i * i32(dh),
                                (p % i32(ow)) * i32(sw) + j * i32(dw)))


def finish(name: str, args: list[Tensor], out: Tensor, gemm: ImplicitGemm, prologue: list[Stmt],
          temps: list[Tensor]) -> LoweredFunc:
    acc, pack = gemm.locals()
    body = [*prologue, gemm.build(acc, pack)]
    stmt = body[0] if len(body) == 1 else Block(tuple(body))
    return kernel_func(name, args, out, stmt, [*temps, acc, pack])


Epilogue = Sequence[tuple[str, "Tensor | None"]]
"""Fused steps on the result: ("relu", None), ("channel_add" | "channel_mul", a per-channel
tensor with size 1 in its other dims), ("add", a tensor of the output's shape)."""


def conv_forward_kernel(g: ConvGeometry, name: str, x: Tensor, w: Tensor, out: Tensor,
                        args: list[Tensor], epilogue: Epilogue = ()) -> LoweredFunc:
    """`conv2d_tiled` (module docstring), with a fused `epilogue`."""
    xp, prologue = _padded_input(g, name, x)
    # the output as [N, O, P] (NCHW) or [N, P, O] (NHWC: the tile's columns are stored with a stride)
    wm = view(w, g.o, g.depth)
    ym = view(out, g.n, g.pixels, g.o) if g.channels_last else view(out, g.n, g.o, g.pixels)

    def image(t: Task) -> tuple[Expr, Expr]:
        return t.batch // i32(g.groups), t.batch % i32(g.groups)

    def a(t: Task, row: Expr, k: Expr) -> Expr:
        return Load(wm, (image(t)[1] * i32(g.og) + row, k))

    def b(t: Task, k: Expr, p: Expr) -> Expr:
        return _column(g, xp, *image(t), k, p)

    def c(t: Task, row: Expr, p: Expr) -> tuple[Tensor, tuple[Expr, ...]]:
        n, group = image(t)
        o = group * i32(g.og) + row
        return ym, ((n, p, o) if g.channels_last else (n, o, p))

    def fused(t: Task, row: Expr, p: Expr, value: Expr) -> Expr:
        n, group = image(t)
        o = group * i32(g.og) + row
        channel = 3 if g.channels_last else 1
        for kind, tensor in epilogue:
            if tensor is None:  # relu
                value = Max(value, zero(g.dtype))
            elif kind == "add":
                rv = view(tensor, g.n, g.pixels, g.o) if g.channels_last else view(tensor, g.n, g.o, g.pixels)
                value = value + Load(rv, (n, p, o) if g.channels_last else (n, o, p))
            else:
                at = Load(tensor, tuple(o if a == channel else i32(0) for a in range(4)))
                value = value + at if kind == "channel_add" else value * at
        return value

    gemm = ImplicitGemm(name, g.forward(), g.dtype, a, b, c, fused if epilogue else None)
    return finish(name, args, out, gemm, prologue, [xp] if prologue else [])


def conv_grad_filter_kernel(g: ConvGeometry, name: str, x: Tensor, dy: Tensor, out: Tensor,
                            args: list[Tensor]) -> LoweredFunc:
    """`conv2d_grad_filter_tiled` (module docstring)."""
    xp, prologue = _padded_input(g, name, x)
    dym, dwm = view(dy, g.n, g.o, g.pixels), view(out, g.o, g.depth)

    def a(t: Task, row: Expr, d: Expr) -> Expr:
        return Load(dym, (d // i32(g.pixels), t.batch * i32(g.og) + row, d % i32(g.pixels)))

    def b(t: Task, d: Expr, k: Expr) -> Expr:
        return _column(g, xp, d // i32(g.pixels), t.batch, k, d % i32(g.pixels))

    def c(t: Task, row: Expr, k: Expr) -> tuple[Tensor, tuple[Expr, ...]]:
        return dwm, (t.batch * i32(g.og) + row, k)

    gemm = ImplicitGemm(name, g.grad_filter(), g.dtype, a, b, c)
    return finish(name, args, out, gemm, prologue, [xp] if prologue else [])


def _spread_dy(g: ConvGeometry, name: str, dy: Tensor) -> tuple[Tensor, Stmt]:
    """dyz[n, o, u, v] = dy[n, o, oh, ow] where u = oh*sh - pad_top + (KH-1)*dh (likewise v), 0
    elsewhere: dx[ih, iw] then sums dyz[ih + (KH-1)*dh - i*dh, iw + (KW-1)*dw - j*dw] * w[i, j]."""
    (sh, sw), (dh, dw), (oh, ow) = g.strides, g.dilations, g.out_hw
    top, _, left, _ = g.pads
    rows, cols = g.h + (g.kh - 1) * dh, g.w + (g.kw - 1) * dw
    dyz = make_tensor(f"{name}_dyz", (i32(g.n), i32(g.o), i32(rows), i32(cols)), g.dtype)
    no = Loop.new("no", g.n * g.o, PARALLEL)
    u = Loop.new("u", rows)
    v = Loop.new("v", cols, VECTOR)
    a, b = u.var - i32((g.kh - 1) * dh - top), v.var - i32((g.kw - 1) * dw - left)  # oh*sh, ow*sw

    def tap(e: Expr, stride: int, size: int) -> tuple[Expr, Expr]:
        ok = And(GE(e, i32(0)), LT(e, i32(size * stride)))
        if stride > 1:
            ok = And(ok, EQ(e % i32(stride), i32(0)))
        return clamp(e // i32(stride) if stride > 1 else e, size), ok

    (ph, ok_h), (pw, ok_w) = tap(a, sh, oh), tap(b, sw, ow)
    n, o = no.var // i32(g.o), no.var % i32(g.o)
    value = Select(And(ok_h, ok_w), Load(dy, (n, o, ph, pw)), zero(g.dtype))
    loops = [no, u, v]
    return dyz, nest(loops, [block(f"{name}_dyz", loops, dyz, (n, o, u.var, v.var), value)])


def conv_grad_data_kernel(g: ConvGeometry, name: str, dy: Tensor, w: Tensor, out: Tensor,
                          args: list[Tensor]) -> LoweredFunc:
    """`conv2d_grad_data_tiled` (module docstring)."""
    dyz, prologue = _spread_dy(g, name, dy)
    w3, dxm = view(w, g.o, g.cg, g.taps), view(out, g.n, g.c, g.h * g.w)
    (dh, dw) = g.dilations

    def image(t: Task) -> tuple[Expr, Expr]:
        return t.batch // i32(g.groups), t.batch % i32(g.groups)

    def a(t: Task, row: Expr, d: Expr) -> Expr:
        return Load(w3, (image(t)[1] * i32(g.og) + d // i32(g.taps), row, d % i32(g.taps)))

    def b(t: Task, d: Expr, q: Expr) -> Expr:
        n, group = image(t)
        o, i, j = _split_tap(g, d)
        return Load(dyz, (n, group * i32(g.og) + o, q // i32(g.w) + i32((g.kh - 1) * dh) - i * i32(dh),
                          q % i32(g.w) + i32((g.kw - 1) * dw) - j * i32(dw)))

    def c(t: Task, row: Expr, q: Expr) -> tuple[Tensor, tuple[Expr, ...]]:
        n, group = image(t)
        return dxm, (n, group * i32(g.cg) + row, q)

    gemm = ImplicitGemm(name, g.grad_data(), g.dtype, a, b, c)
    return finish(name, args, out, gemm, [prologue], [dyz])
