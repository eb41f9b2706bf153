"""The tiled conv2d kernel template (`conv2d_tiled`): a convolution as an implicit GEMM whose B
panels are packed from the input inside the kernel.

For NCHW input x [N, C, H, W], filter w [O, Cg, KH, KW] (G groups, Cg = C / G input and
Og = O / G output channels per group), each image and group is the matmul

    out[n, g, o, p] = sum_k W[g, o, k] * col(n, g, k, p)     k = (c, i, j) < K = Cg*KH*KW, p < P = OH*OW

with W the filter as it is stored (row o of the group is K contiguous floats) and
`col(k, p) = x[n, g*Cg + c, oh*sh + i*dh - pad_top, ow*sw + j*dw - pad_left]` (0 in the padding).
The kernel never stores the column matrix (9x the input for a 3x3 filter):

    xp = x zero-padded                       parallel, masked vector loads (only with padding)
    for task in N * G * (Og / OB) * (P / PB)  parallel: one OB x PB output tile a task
      acc = 0                                 task-private OB x PB tile
      for ko in K / KC
        pack[k, c] = col(ko*KC + k, p0 + c)   KC x PB panel, vector gathers (L1/L2-resident)
        acc += W[o0.., ko*KC..] @ pack        the matmul micro-kernel: MR rows x 2 x 16 lanes
      out[n, o0 + r, p0 + c] = acc[r, c]      (the output as its [N, O, P] view)

The micro-kernel (`cinn_py.lowering.attention.tiles.gemm`) is the x86 matmul schedule's: an
MR x (2 x 16) register tile, the depth loop outside it, one broadcast of W and two vector loads
of the packed panel per step. Each packed element serves OB / MR register tiles; the gathers cost
a fraction of the FMAs. Tails cost nothing extra: output rows past Og read W's last row of the
group and columns past P read pixel P - 1; neither is stored. KC is a whole number of input
channels dividing K, so the depth has no tail.
"""

from __future__ import annotations

from dataclasses import dataclass

from cinn_py.ir import (
    GE, LT, And, Block, DType, Expr, FloatImm, Load, LoweredFunc, Max, MemoryType, Min, Select, Stmt, Tensor,
    make_tensor,
)
from cinn_py.lowering.attention.forward import kernel_func
from cinn_py.lowering.attention.nest import PARALLEL, VECTOR, Loop, block, nest
from cinn_py.lowering.attention.tiles import LANES, MR, NR, fill, gemm, i32

__all__ = ["ConvGeometry", "conv_forward_kernel"]

KC_MAX = 512
"""Deepest packed panel: 512 x 32 float32 = 64 KiB (L2-resident, reused by every row tile)."""
MIN_TASKS = 8
"""Output-channel blocks are halved (down to MIN_ROWS) until there are this many tasks: a late
layer (7x7 pixels, 512 channels) has two pixel tiles only."""
MIN_ROWS = 32


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class ConvGeometry:
    """The problem (NCHW, static) and its tiles."""

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

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def og(self) -> int:
        return self.o // self.groups

    @property
    def depth(self) -> int:
        return self.cg * self.kh * self.kw

    @property
    def pixels(self) -> int:
        return self.out_hw[0] * self.out_hw[1]

    @property
    def pb(self) -> int:
        """Pixels of a tile: the register tile's width (16 for a plane of at most 16)."""
        return NR if self.pixels > LANES else LANES

    @property
    def pixel_tiles(self) -> int:
        return -(-self.pixels // self.pb)

    @property
    def ob(self) -> int:
        """Output channels of a tile (a multiple of MR dividing Og rounded up to MR)."""
        rows = _round_up(self.og, MR)
        while (self.n * self.groups * (_round_up(self.og, MR) // rows) * self.pixel_tiles < MIN_TASKS
               and rows % (2 * MR) == 0 and rows // 2 >= MIN_ROWS):
            rows //= 2
        return rows

    @property
    def row_blocks(self) -> int:
        return _round_up(self.og, MR) // self.ob

    @property
    def tasks(self) -> int:
        return self.n * self.groups * self.row_blocks * self.pixel_tiles

    @property
    def kc(self) -> int:
        """Depth of a packed panel: whole input channels, dividing K, at most KC_MAX (or one channel)."""
        taps = self.kh * self.kw
        per = max(1, KC_MAX // taps)
        return taps * max(d for d in range(1, self.cg + 1) if self.cg % d == 0 and d <= per)

    @property
    def padded(self) -> bool:
        return any(self.pads)


class _Forward:
    def __init__(self, g: ConvGeometry, name: str, x: Tensor, w: Tensor, out: Tensor,
                 args: list[Tensor]) -> None:
        self.g, self.name, self.x, self.args = g, name, x, args
        top, bottom, left, right = g.pads
        self.xp = make_tensor(f"{name}_xpad", (i32(g.n), i32(g.c), i32(g.h + top + bottom),
                                               i32(g.w + left + right)), g.dtype) if g.padded else x
        # the filter and the output as the matrices they are (views of their buffers)
        self.wm = Tensor(f"{w.name}_matrix", (i32(g.o), i32(g.depth)), w.dtype, w.buffer)
        self.om = Tensor(f"{out.name}_matrix", (i32(g.n), i32(g.o), i32(g.pixels)), out.dtype, out.buffer)
        self.out = out
        self.acc = _local(g, f"{name}_acc", g.tasks, g.ob, g.pb)
        self.pack = _local(g, f"{name}_pack", g.tasks, g.kc, g.pb)

    def build(self) -> LoweredFunc:
        g = self.g
        t = Loop.new("task", g.tasks, PARALLEL)
        ko = Loop.new("ko", g.depth // g.kc)
        outer = [t, ko]
        zero = fill(f"{self.name}_acc_init", [t], g.ob, g.pb, lambda r, c: (self.acc, (t.var, r, c)),
                    lambda r, c: _zero(g))
        body = nest([ko], [self._pack(outer), self._gemm(outer)])
        main = nest([t], [zero, body, self._store([t])])
        stmts = [self._pad()] if g.padded else []
        temps = ([self.xp] if g.padded else []) + [self.acc, self.pack]
        return kernel_func(self.name, self.args, self.out, _seq([*stmts, main]), temps)

    # -- task decoding -------------------------------------------------------------------------------
    def _task(self, t: Expr) -> tuple[Expr, Expr, Expr, Expr]:
        """(image, group, row block, pixel tile) of task t."""
        g = self.g
        pt = t % i32(g.pixel_tiles)
        rest = t // i32(g.pixel_tiles)
        rb = rest % i32(g.row_blocks)
        rest = rest // i32(g.row_blocks)
        return rest // i32(g.groups), rest % i32(g.groups), rb, pt

    def _pad(self) -> Stmt:
        """xp = x with its zero border (one masked vector load per row strip)."""
        g = self.g
        top, _, left, _ = g.pads
        nc = Loop.new("nc", g.n * g.c, PARALLEL)
        r = Loop.new("r", g.h + sum(g.pads[:2]))
        col = Loop.new("q", g.w + sum(g.pads[2:]), VECTOR)
        ih, iw = r.var - i32(top), col.var - i32(left)
        inside = And(And(GE(ih, i32(0)), LT(ih, i32(g.h))), And(GE(iw, i32(0)), LT(iw, i32(g.w))))
        n, c = nc.var // i32(g.c), nc.var % i32(g.c)
        value = Select(inside, Load(self.x, (n, c, _clamp(ih, g.h), _clamp(iw, g.w))), _zero(g))
        loops = [nc, r, col]
        return nest(loops, [block(f"{self.name}_xpad", loops, self.xp, (n, c, r.var, col.var), value)])

    def _pack(self, outer: list[Loop]) -> Stmt:
        """pack[k, c] = col(ko*KC + k, p0 + c): the panel's pixels (clamped to P - 1) at its taps."""
        g = self.g
        t, ko = (lp.var for lp in outer)
        n, grp, _, pt = self._task(t)
        k = Loop.new("k", g.kc)
        lane = Loop.new("c", g.pb, VECTOR)
        kk = ko * i32(g.kc) + k.var
        taps = g.kh * g.kw
        ch, i, j = kk // i32(taps), (kk // i32(g.kw)) % i32(g.kh), kk % i32(g.kw)
        p = Min(pt * i32(g.pb) + lane.var, i32(g.pixels - 1))
        oh, ow = p // i32(g.out_hw[1]), p % i32(g.out_hw[1])
        (sh, sw), (dh, dw) = g.strides, g.dilations
        ih, iw = oh * i32(sh) + i * i32(dh), ow * i32(sw) + j * i32(dw)
        value = Load(self.xp, (n, grp * i32(g.cg) + ch, ih, iw))
        loops = [*outer, k, lane]
        return nest([k, lane], [block(f"{self.name}_pack", loops, self.pack, (t, k.var, lane.var), value)])

    def _gemm(self, outer: list[Loop]) -> Stmt:
        g = self.g
        t, ko = (lp.var for lp in outer)
        _, grp, rb, _ = self._task(t)

        def weight(r: Expr, k: Expr) -> Expr:
            row = Min(rb * i32(g.ob) + r, i32(g.og - 1)) if g.og % MR else rb * i32(g.ob) + r
            return Load(self.wm, (grp * i32(g.og) + row, ko * i32(g.kc) + k))

        return gemm(f"{self.name}_mac", outer, g.ob, g.pb, g.kc, lambda r, c: (self.acc, (t, r, c)),
                    weight, lambda k, c: Load(self.pack, (t, k, c)))

    def _store(self, outer: list[Loop]) -> Stmt:
        """out[n, o0 + r, p0 + c] = acc[r, c] for the rows and pixels that exist."""
        g = self.g
        t = outer[0].var
        n, grp, rb, pt = self._task(t)
        rows: Expr = i32(g.ob)
        if g.og % g.ob:
            rows = Min(rows, i32(g.og) - rb * i32(g.ob))
        r = Loop.new("r", rows)
        full = g.pixels % g.pb == 0
        cols = i32(g.pb) if full else Min(i32(g.pb), i32(g.pixels) - pt * i32(g.pb))
        c = Loop.new("c", cols, VECTOR if full else "ser")
        o = grp * i32(g.og) + rb * i32(g.ob) + r.var
        loops = [*outer, r, c]
        return nest([r, c], [block(f"{self.name}_store", loops, self.om, (n, o, pt * i32(g.pb) + c.var),
                                   Load(self.acc, (t, r.var, c.var)))])


def _local(g: ConvGeometry, name: str, *shape: int) -> Tensor:
    """A task-private tile (the x86 backend gives each task its own, shrunk to the tile)."""
    return make_tensor(name, tuple(i32(d) for d in shape), g.dtype, MemoryType.GPU_LOCAL)


def _zero(g: ConvGeometry) -> Expr:
    return FloatImm(g.dtype, 0.0)


def _clamp(e: Expr, size: int) -> Expr:
    return Min(Max(e, i32(0)), i32(size - 1))


def _seq(stmts: list[Stmt]) -> Stmt:
    return stmts[0] if len(stmts) == 1 else Block(tuple(stmts))


def conv_forward_kernel(g: ConvGeometry, name: str, x: Tensor, w: Tensor, out: Tensor,
                        args: list[Tensor]) -> LoweredFunc:
    """The `conv2d_tiled` kernel (module docstring)."""
    return _Forward(g, name, x, w, out, args).build()
