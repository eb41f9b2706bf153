"""The fused attention forward kernel: `flash_attention` as one function.

    for bh in B * Hq                                   parallel: one (batch, query head) a task
      for io in query blocks                           br rows of Q
        m, l = -inf, 0; acc = 0                        running max, sum, output (online softmax)
        for jo in key blocks (causal: up to the diagonal)
          st = Q[io] K[jo]^T                           micro-kernel, K read transposed (kt)
          st = score(st); m' = max(m, rowmax st)       scale, mask, causality, key padding
          st = exp(st - m'); alpha = exp(m - m')
          l = l * alpha + rowsum st; acc *= alpha
          acc += st V[jo]                              micro-kernel
        out[io] = acc / l; lse[io] = m + log(l)        a fully masked row: 0 and 0 (torch's)

Only tiles live in the nest's local buffers (br x bc scores, br x Ev accumulators): no L x S
matrix is ever stored. Row maxima and sums go through `lanes`-wide partial vectors, so every
pass over a tile is vectorised. Before the nest, a parallel nest copies K transposed and padded
to whole key blocks and packed in panels (`kt`, zeros past S), the contiguous B operand of the
score micro-kernel.

The output is the packed buffer of `cinn_py.frontend.ops.attention`: out [B, Hq, L, Ev]
flattened, then lse [B, Hq, L] (float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cinn_py.ir import (
    ArgIO, Argument, Block, Call, EQ, Expr, Load, LoweredFunc, Max, MemoryType, ScheduleBlock,
    ScheduleBlockRealize,
    Select, Stmt, Tensor, make_tensor,
)
from cinn_py.lowering.attention.nest import PARALLEL, VECTOR, Loop, block, nest
from cinn_py.lowering.attention.tiles import LANES, NR, Geometry, Panel, fill, gemm, i32

__all__ = ["forward_kernel", "kernel_func", "key_panel", "local_tensor", "transposed_keys"]

Lanes = Callable[[Expr, Expr], Expr]
"""(column, lane) -> the value a lanes pass stores."""


def local_tensor(g: Geometry, name: str, *shape: int) -> Tensor:
    """A task-private temporary (the x86 backend gives each task its own, shrunk to the tile)."""
    return make_tensor(name, tuple(i32(d) for d in shape), g.dtype, MemoryType.GPU_LOCAL)


def transposed_keys(g: Geometry, name: str, src: Tensor, width: int) -> tuple[Tensor, Stmt]:
    """K (or V) transposed into the packed B operand of the score micro-kernel, and the parallel
    nest that makes it: `name`[bhk, jo, p, e, w] = src[b, hk, j, e] for key j = jo * bc + p * NR + w
    (0 past S). A key block's panel of NR keys is one contiguous E x NR slab: read in place from a
    plain [E, S] transpose, the micro-kernel's rows would be S floats apart, which for S = 2048
    puts every row of the panel in the same few L1 sets (a third slower)."""
    heads = g.b * g.hk
    shape = (heads, g.key_blocks, g.bc // NR, width, NR)
    dst = make_tensor(name, tuple(i32(d) for d in shape), g.dtype)
    bhk = Loop.new("bhk", heads, PARALLEL)
    jo = Loop.new("jo", g.key_blocks)
    pn = Loop.new("p", g.bc // NR)
    e = Loop.new("e", width)
    w = Loop.new("w", NR, VECTOR)
    j = jo.var * i32(g.bc) + pn.var * i32(NR) + w.var
    hk = i32(g.hk)
    value: Expr = Load(src, (bhk.var // hk, bhk.var % hk, g.key_row(j), e.var))
    if g.s % g.bc:
        value = Select(j < i32(g.s), value, g.c(0.0))
    loops = [bhk, jo, pn, e, w]
    return dst, nest(loops, [block(name, loops, dst, (bhk.var, jo.var, pn.var, e.var, w.var), value)])


def key_panel(packed: Tensor, bhk: Expr, jo: Expr) -> Panel:
    """The packed operand of `transposed_keys` for key block `jo`, as a micro-kernel's B panels."""
    return lambda e, p, w: Load(packed, (bhk, jo, p, e, w))


class _Forward:
    def __init__(self, g: Geometry, name: str, qkv: Sequence[Tensor], mask: Tensor | None, packed: Tensor,
                 args: Sequence[Tensor]) -> None:
        self.g, self.name, self.mask, self.packed, self.args = g, name, mask, packed, args
        self.q, self.k, self.v = qkv
        k = self.k
        bh = g.b * g.hq
        self.st = local_tensor(g, f"{name}_scores", bh, g.br, g.bc)
        self.part = local_tensor(g, f"{name}_partial", bh, g.br, LANES)
        self.acc = local_tensor(g, f"{name}_acc", bh, g.br, g.ev)
        self.m, self.mn, self.ms, self.alpha, self.lsum = (
            local_tensor(g, f"{name}_{t}", bh, g.br) for t in ("max", "new_max", "safe_max", "alpha", "sum"))
        self.kt, self.transpose = transposed_keys(g, f"{name}_kt", k, g.e)

    def kv_head(self, bh: Expr) -> tuple[Expr, Expr]:
        bhk = bh // i32(self.g.group)
        return bhk // i32(self.g.hk), bhk % i32(self.g.hk)

    def build(self) -> LoweredFunc:
        g = self.g
        bh = Loop.new("bh", g.b * g.hq, PARALLEL)
        io = Loop.new("io", g.query_blocks)
        outer = [bh, io]
        jo = Loop.new("jo", g.causal_key_blocks(io.var))
        main = nest([bh, io],
                    [*self._init(outer), nest([jo], self._key_block([*outer, jo])), *self._finish(outer)])
        return self._func(Block((self.transpose, main)))

    def _init(self, outer: list[Loop]) -> list[Stmt]:
        g = self.g
        bh = outer[0].var
        r = Loop.new("r", self.g.br)
        state = nest([r], [block(f"{self.name}_state_max", [*outer, r], self.m, (bh, r.var), g.neg_inf),
                           block(f"{self.name}_state_sum", [*outer, r], self.lsum, (bh, r.var), g.c(0.0))])
        zero = fill(f"{self.name}_acc_init", outer, self.g.br, self.g.ev,
                    lambda r_, c: (self.acc, (bh, r_, c)), lambda r_, c: g.c(0.0))
        return [state, zero]

    def _key_block(self, outer: list[Loop]) -> list[Stmt]:
        g, name = self.g, self.name
        bh, io, jo = (lp.var for lp in outer)
        b, h = bh // i32(g.hq), bh % i32(g.hq)
        kb = bh // i32(g.group)
        zero = fill(f"{name}_scores_init", outer, g.br, g.bc, lambda r, c: (self.st, (bh, r, c)),
                    lambda r, c: g.c(0.0))
        qk = gemm(f"{name}_qk", outer, g.br, g.bc, g.e, lambda r, c: (self.st, (bh, r, c)),
                  lambda r, e: Load(self.q, (b, h, g.query_row(io, r), e)),
                  key_panel(self.kt, kb, jo), panels=True)
        kh_b, kh_h = self.kv_head(bh)
        pv = gemm(f"{name}_pv", outer, g.br, g.ev, g.bc, lambda r, d: (self.acc, (bh, r, d)),
                  lambda r, c: Load(self.st, (bh, r, c)),
                  lambda c, d: Load(self.v, (kh_b, kh_h, g.key_row(jo * i32(g.bc) + c), d)))
        r = Loop.new("r", g.br)
        return [zero, qk, nest([r], self._softmax_row([*outer, r])), pv]

    def _softmax_row(self, loops: list[Loop]) -> list[Stmt]:
        """One row of the tile: score, the new running max, exp, the running sum, rescaling."""
        g, name = self.g, self.name
        bh, io, jo, r = (lp.var for lp in loops)
        row = (bh, r)
        i = io * i32(g.br) + r

        def lanes_pass(label: str, tile: Lanes, partial: Lanes) -> Stmt:
            """Over the tile's row in vectors: st[c] = tile(c), then part[lane] = partial(c, lane)."""
            jc = Loop.new("jc", g.bc // LANES, reduce=True)
            ln = Loop.new("l", LANES, VECTOR)
            c = jc.var * i32(LANES) + ln.var
            loops_c = [*loops, jc, ln]
            return nest([jc, ln], [block(f"{name}_{label}", loops_c, self.st, (bh, r, c), tile(c, ln.var)),
                                   block(f"{name}_{label}_part", loops_c, self.part, (bh, r, ln.var),
                                         partial(c, ln.var))])

        def part_init(label: str, value: Expr) -> Stmt:
            ln = Loop.new("l", LANES, VECTOR)
            return nest([ln], [block(f"{name}_{label}", [*loops, ln], self.part, (bh, r, ln.var), value)])

        def part_reduce(label: str, tensor: Tensor, init: Expr, combine: str) -> list[Stmt]:
            ln = Loop.new("l", LANES, reduce=True)
            part = Load(self.part, (bh, r, ln.var))
            acc = Load(tensor, row)
            value = Max(acc, part) if combine == "max" else acc + part
            return [block(f"{name}_{label}_init", loops, tensor, row, init),
                    nest([ln], [block(f"{name}_{label}", [*loops, ln], tensor, row, value)])]

        def st(c: Expr) -> Expr:
            return Load(self.st, (bh, r, c))

        def part(lane: Expr) -> Expr:
            return Load(self.part, (bh, r, lane))

        ms = Load(self.ms, row)
        return [
            part_init("max_part_init", g.neg_inf),
            lanes_pass("score", lambda c, _: g.score(st(c), bh, i, jo * i32(g.bc) + c, self.mask),
                       lambda c, lane: Max(part(lane), st(c))),
            *part_reduce("new_max", self.mn, Load(self.m, row), "max"),
            block(f"{name}_safe_max", loops, self.ms, row,
                  Select(EQ(Load(self.mn, row), g.neg_inf), g.c(0.0), Load(self.mn, row))),
            block(f"{name}_alpha", loops, self.alpha, row, Call("exp", (Load(self.m, row) - ms,), g.dtype)),
            block(f"{name}_max", loops, self.m, row, Load(self.mn, row)),
            part_init("sum_part_init", g.c(0.0)),
            lanes_pass("exp", lambda c, _: Call("exp", (st(c) - ms,), g.dtype),
                       lambda c, lane: part(lane) + st(c)),
            *part_reduce("sum", self.lsum, Load(self.lsum, row) * Load(self.alpha, row), "sum"),
            fill(f"{name}_rescale", loops, 1, g.ev, lambda _r, d: (self.acc, (bh, r, d)),
                 lambda _r, d: Load(self.acc, (bh, r, d)) * Load(self.alpha, row)),
        ]

    def _finish(self, outer: list[Loop]) -> list[Stmt]:
        g, name = self.g, self.name
        bh, io = (lp.var for lp in outer)
        total = lambda r: Load(self.lsum, (bh, r))  # noqa: E731
        empty = lambda r: EQ(total(r), g.c(0.0))  # noqa: E731
        base = lambda r: bh * i32(g.l) + io * i32(g.br) + r  # noqa: E731
        out = fill(f"{name}_out", outer, g.rows_in(io), g.ev,
                   lambda r, d: (self.packed, (base(r) * i32(g.ev) + d,)),
                   lambda r, d: Select(empty(r), g.c(0.0), Load(self.acc, (bh, r, d)) / total(r)))
        r = Loop.new("r", g.rows_in(io))
        lse = Select(empty(r.var), g.c(0.0),
                     Load(self.ms, (bh, r.var)) + Call("log", (total(r.var),), g.dtype))
        lse_block = nest([r], [block(f"{name}_lse", [*outer, r], self.packed,
                                     (i32(g.out_size) + base(r.var),), lse)])
        return [out, lse_block]

    def _func(self, body: Stmt) -> LoweredFunc:
        temps = (self.kt, self.st, self.part, self.acc, self.m, self.mn, self.ms, self.alpha, self.lsum)
        return kernel_func(self.name, self.args, self.packed, body, temps)


def kernel_func(name: str, args: Sequence[Tensor], out: Tensor, body: Stmt,
                temps: Sequence[Tensor]) -> LoweredFunc:
    """The LoweredFunc of a template: inputs `args`, output `out`, the temps' buffers."""
    arguments = tuple([Argument(ArgIO.INPUT, t) for t in args] + [Argument(ArgIO.OUTPUT, out)])
    root = ScheduleBlockRealize((), ScheduleBlock("root", (), body))
    return LoweredFunc(name, arguments, Block((root,)), tuple(t.buffer for t in temps))


def forward_kernel(g: Geometry, name: str, qkv: Sequence[Tensor], mask: Tensor | None, packed: Tensor,
                   args: Sequence[Tensor]) -> LoweredFunc:
    """The forward kernel of `flash_attention` (module docstring): q, k, v, the optional mask,
    the packed output, the function's input arguments (the distinct tensors among them)."""
    return _Forward(g, name, qkv, mask, packed, args).build()
