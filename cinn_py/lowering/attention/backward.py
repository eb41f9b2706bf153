"""The fused attention backward kernel: `flash_attention_grad` as one function (FlashAttention-2's
loop order: key blocks outside, so dK and dV of a key block accumulate in local tiles).

    D[bh, i] = rowsum(dout * out) - dlse                    a parallel nest per query head
    dq = 0
    for bhk in B * Hk                                       parallel: a key/value head and its group
      for jo in key blocks
        dk, dv = 0
        for g in the group's query heads; for io in query blocks (causal: from the diagonal on)
          p  = exp(score(Q K^T) - lse)                      probabilities recomputed from the lse
          dp = dO V^T;  ds = scale * p * (dp - D)
          dv += p^T dO;  dk += ds^T Q;  dq[io] += ds K      five micro-kernels on the tile
        dK[jo], dV[jo] = dk, dv

As in the forward, only tiles are stored (br x bc probabilities and their gradient, bc x E
accumulators), K and V are first copied transposed and padded (`kt`, `vt`), and every product
is the register-tiled micro-kernel of `tiles.gemm`. The whole group of a key/value head is one
task, so the dK/dV sums over grouped query heads and the dq rows of its heads need no atomics.
"""

from __future__ import annotations

from collections.abc import Sequence

from cinn_py.ir import Block, Call, Expr, Load, LoweredFunc, Select, Stmt, Tensor, make_tensor
from cinn_py.lowering.attention.forward import kernel_func, key_panel, local_tensor, transposed_keys
from cinn_py.lowering.attention.nest import PARALLEL, Loop, block, nest
from cinn_py.lowering.attention.tiles import Geometry, Index, fill, gemm, i32

__all__ = ["backward_kernel"]


class _Backward:
    def __init__(self, g: Geometry, name: str, ins: Sequence[Tensor], mask: Tensor | None, grads: Tensor,
                 args: Sequence[Tensor]) -> None:
        self.g, self.name, self.mask, self.grads, self.args = g, name, mask, grads, args
        self.q, self.k, self.v, self.packed, self.dpacked = ins
        heads = g.b * g.hk
        self.kt, self.k_copy = transposed_keys(g, f"{name}_kt", self.k, g.e)
        self.vt, self.v_copy = transposed_keys(g, f"{name}_vt", self.v, g.ev)
        self.dd = make_tensor(f"{name}_delta", (i32(g.b * g.hq), i32(g.l)), g.dtype)
        self.p = local_tensor(g, f"{name}_p", heads, g.br, g.bc)
        self.dp = local_tensor(g, f"{name}_dp", heads, g.br, g.bc)
        self.dk = local_tensor(g, f"{name}_dk", heads, g.bc, g.e)
        self.dv = local_tensor(g, f"{name}_dv", heads, g.bc, g.ev)
        self.dq = local_tensor(g, f"{name}_dq", heads, g.br, g.e)
        self.out_size = g.out_size
        self.dq_size = g.b * g.hq * g.l * g.e
        self.dk_size = g.b * g.hk * g.s * g.e

    # flat offsets in the packed buffers
    def dout(self, bh: Expr, i: Expr, d: Expr) -> Expr:
        return Load(self.dpacked, ((bh * i32(self.g.l) + i) * i32(self.g.ev) + d,))

    def lse(self, bh: Expr, i: Expr) -> Expr:
        return Load(self.packed, (i32(self.out_size) + bh * i32(self.g.l) + i,))

    def build(self) -> LoweredFunc:
        body = Block((self.k_copy, self.v_copy, self._delta(), self._zero_dq(), self._main()))
        temps = (self.kt, self.vt, self.dd, self.p, self.dp, self.dk, self.dv, self.dq)
        return kernel_func(self.name, self.args, self.grads, body, temps)

    def _delta(self) -> Stmt:
        """D[bh, i] = sum_d dout * out - dlse (the softmax backward's row term, d_lse folded in)."""
        g = self.g
        bh = Loop.new("bh", g.b * g.hq, PARALLEL)
        i = Loop.new("i", g.l)
        d = Loop.new("d", g.ev, reduce=True)
        out = Load(self.packed, ((bh.var * i32(g.l) + i.var) * i32(g.ev) + d.var,))
        row = (bh.var, i.var)
        init = block(f"{self.name}_delta_init", [bh, i], self.dd, row,
                     g.c(0.0) - Load(self.dpacked, (i32(self.out_size) + bh.var * i32(g.l) + i.var,)))
        update = block(f"{self.name}_delta", [bh, i, d], self.dd, row,
                       Load(self.dd, row) + self.dout(bh.var, i.var, d.var) * out)
        return nest([bh, i], [init, nest([d], [update])])

    def _zero_dq(self) -> Stmt:
        g = self.g
        bh = Loop.new("bh", g.b * g.hq, PARALLEL)
        return nest([bh], [fill(f"{self.name}_dq_zero", [bh], g.l, g.e,
                                lambda i, e: (self.grads, ((bh.var * i32(g.l) + i) * i32(g.e) + e,)),
                                lambda i, e: g.c(0.0))])

    def _main(self) -> Stmt:
        g, name = self.g, self.name
        bhk = Loop.new("bhk", g.b * g.hk, PARALLEL)
        jo = Loop.new("jo", g.key_blocks)
        outer = [bhk, jo]
        grp = Loop.new("g", g.group)
        start = g.first_query_block(jo.var)
        io = Loop.new("io", i32(g.query_blocks) - start, start=start)
        zero = [fill(f"{name}_{t}_init", outer, g.bc, w, lambda c, e, t_=t_: (t_, (bhk.var, c, e)),
                     lambda c, e: g.c(0.0)) for t, t_, w in (("dk", self.dk, g.e), ("dv", self.dv, g.ev))]
        return nest(outer[:1], [nest(outer[1:], [*zero, nest([grp, io], self._tile([*outer, grp, io])),
                                                 *self._store_kv(outer)])])

    def _tile(self, loops: list[Loop]) -> list[Stmt]:
        g, name = self.g, self.name
        bhk, jo, grp, io = (lp.var for lp in loops)
        bh = bhk * i32(g.group) + grp
        b, h = bh // i32(g.hq), bh % i32(g.hq)
        kb, kh = bhk // i32(g.hk), bhk % i32(g.hk)
        key0 = jo * i32(g.bc)

        def row(r: Expr) -> Expr:
            return g.query_row(io, r)

        def q(r: Expr, e: Expr) -> Expr:
            return Load(self.q, (b, h, row(r), e))

        def tile(t: Tensor) -> Index:
            return lambda r, c: (t, (bhk, r, c))

        p_of = lambda r, c: Load(self.p, (bhk, r, c))  # noqa: E731
        dp_of = lambda r, c: Load(self.dp, (bhk, r, c))  # noqa: E731

        def prob(r: Expr, c: Expr) -> Expr:
            i = io * i32(g.br) + r
            value: Expr = Call("exp",
                               (g.score(p_of(r, c), bh, i, key0 + c, self.mask) - self.lse(bh, row(r)),),
                               g.dtype)
            return value if g.l % g.br == 0 else Select(i < i32(g.l), value, g.c(0.0))

        def ds(r: Expr, c: Expr) -> Expr:
            return p_of(r, c) * (dp_of(r, c) - Load(self.dd, (bh, row(r)))) * g.c(g.scale)

        return [
            fill(f"{name}_s_init", loops, g.br, g.bc, tile(self.p), lambda r, c: g.c(0.0)),
            gemm(f"{name}_qk", loops, g.br, g.bc, g.e, tile(self.p), q,
                 key_panel(self.kt, bhk, jo), panels=True),
            fill(f"{name}_p", loops, g.br, g.bc, tile(self.p), prob),
            fill(f"{name}_dp_init", loops, g.br, g.bc, tile(self.dp), lambda r, c: g.c(0.0)),
            gemm(f"{name}_dov", loops, g.br, g.bc, g.ev, tile(self.dp), lambda r, d: self.dout(bh, row(r), d),
                 key_panel(self.vt, bhk, jo), panels=True),
            fill(f"{name}_ds", loops, g.br, g.bc, tile(self.dp), ds),
            gemm(f"{name}_dv_acc", loops, g.bc, g.ev, g.br, tile(self.dv), lambda c, r: p_of(r, c),
                 lambda r, d: self.dout(bh, row(r), d)),
            gemm(f"{name}_dk_acc", loops, g.bc, g.e, g.br, tile(self.dk), lambda c, r: dp_of(r, c), q),
            fill(f"{name}_dq_init", loops, g.br, g.e, tile(self.dq), lambda r, e: g.c(0.0)),
            gemm(f"{name}_dq_acc", loops, g.br, g.e, g.bc, tile(self.dq), dp_of,
                 lambda c, e: Load(self.k, (kb, kh, g.key_row(key0 + c), e))),
            self._add_dq(loops, bh),
        ]

    def _add_dq(self, loops: list[Loop], bh: Expr) -> Stmt:
        g = self.g
        bhk, io = loops[0].var, loops[3].var

        def at(r: Expr, e: Expr) -> tuple[Tensor, tuple[Expr, ...]]:
            return self.grads, ((bh * i32(g.l) + io * i32(g.br) + r) * i32(g.e) + e,)

        return fill(f"{self.name}_dq", loops, g.rows_in(io), g.e, at,
                    lambda r, e: Load(*at(r, e)) + Load(self.dq, (bhk, r, e)))

    def _store_kv(self, outer: list[Loop]) -> list[Stmt]:
        g = self.g
        bhk, jo = (lp.var for lp in outer)
        key = lambda c: bhk * i32(g.s) + jo * i32(g.bc) + c  # noqa: E731
        dk = fill(f"{self.name}_dk_out", outer, g.keys_in(jo), g.e,
                  lambda c, e: (self.grads, (i32(self.dq_size) + key(c) * i32(g.e) + e,)),
                  lambda c, e: Load(self.dk, (bhk, c, e)))
        dv = fill(f"{self.name}_dv_out", outer, g.keys_in(jo), g.ev,
                  lambda c, d: (self.grads, (i32(self.dq_size + self.dk_size) + key(c) * i32(g.ev) + d,)),
                  lambda c, d: Load(self.dv, (bhk, c, d)))
        return [dk, dv]



def backward_kernel(g: Geometry, name: str, ins: Sequence[Tensor], mask: Tensor | None, grads: Tensor,
                    args: Sequence[Tensor]) -> LoweredFunc:
    """The kernel of `flash_attention_grad` (module docstring): q, k, v, the forward's packed
    output and its cotangent, the optional mask, the packed gradients, the function's inputs."""
    return _Backward(g, name, ins, mask, grads, args).build()
