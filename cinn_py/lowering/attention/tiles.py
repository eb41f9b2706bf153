"""What the attention templates share: the problem's geometry and tiles, reads of the operands
with the padding rules, the score (scale, mask, causality) and the register-tiled matmul
micro-kernel the templates use for all their products.

Tiles. Queries go in blocks of `br` rows, keys in blocks of `bc`; the last block of each may be
partial. A partial key block is padded: the transposed copies of K (and V) hold zeros past S,
its scores are -inf (probability 0) and V's rows past S are read clamped to row S - 1 (finite
values times 0). Rows of a partial query block past L read Q's row L - 1 and are never stored.
So the micro-kernels have no tail guards and the paddings cost nothing when L and S are
multiples of the tiles.

Micro-kernel (`gemm`): `C[r, c] += A(r, k) * B(k, c)` over a rows x cols tile, in the loop order
of the x86 matmul schedule (`schedules.tactics.matmul`): row panels of `mr`, column panels of
`nv x lanes`, the depth loop outside the mr x nv register tile (unrolled) of `lanes`-wide vectors
(vectorised), so the accumulators stay in registers over the depth loop, A is one broadcast per
row and B `nv` contiguous vector loads per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cinn_py.ir import (
    FP_CONTRACT_ATTR, And, DType, Expr, FloatImm, IntImm, LE, LT, Load, Min, Select, Stmt, Tensor,
    float32, int32,
)
from cinn_py.lowering.attention.nest import UNROLL, VECTOR, Loop, block, nest

__all__ = ["LANES", "MR", "NR", "NV", "Geometry", "Index", "Panel", "fill", "gemm", "i32"]

MR = 8
"""Rows of the register tile (the x86 matmul default with AVX-512: 8 x 2 vectors of 16)."""
LANES = 16
NV = 2
NR = NV * LANES
MAX_QUERY_TILE = 64
MAX_KEY_TILE = 128
Index = Callable[[Expr, Expr], tuple[Tensor, tuple[Expr, ...]]]
"""(r, c) of a tile -> the tensor and indices of its element."""


def i32(v: int) -> Expr:
    return IntImm(int32, v)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class Geometry:
    """q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev], an optional mask broadcastable to
    [B, Hq, L, S] (bool: True keeps a key; float: added to the score), the tiles."""

    b: int
    hq: int
    hk: int
    l: int
    s: int
    e: int
    ev: int
    scale: float
    causal: bool
    mask_shape: tuple[int, ...] | None = None
    mask_bool: bool = False
    dtype: DType = float32
    """Of q, k, v, the mask (float), the packed outputs and every temporary (float32 or float64)."""

    def c(self, v: float) -> Expr:
        """The constant `v` in the kernel's dtype."""
        return FloatImm(self.dtype, v)

    @property
    def neg_inf(self) -> Expr:
        return self.c(-math.inf)

    @property
    def group(self) -> int:
        """Query heads per key/value head (grouped-query attention; 1 for plain attention)."""
        return self.hq // self.hk

    @property
    def br(self) -> int:
        return min(MAX_QUERY_TILE, _round_up(self.l, MR))

    @property
    def bc(self) -> int:
        return min(MAX_KEY_TILE, _round_up(self.s, NR))

    @property
    def query_blocks(self) -> int:
        return -(-self.l // self.br)

    @property
    def key_blocks(self) -> int:
        return -(-self.s // self.bc)

    @property
    def padded_keys(self) -> int:
        return self.key_blocks * self.bc

    # -- the packed layouts of the ops' outputs (cinn_py.frontend.ops.attention) ---------------------
    @property
    def out_size(self) -> int:
        return self.b * self.hq * self.l * self.ev

    def query_row(self, io: Expr, r: Expr) -> Expr:
        """Row `io * br + r` of Q, clamped to L - 1 when the last query block is partial."""
        i = io * i32(self.br) + r
        return i if self.l % self.br == 0 else Min(i, i32(self.l - 1))

    def key_row(self, j: Expr) -> Expr:
        """Row `j` of K/V, clamped to S - 1 when the last key block is partial."""
        return j if self.s % self.bc == 0 else Min(j, i32(self.s - 1))

    def rows_in(self, io: Expr) -> Expr:
        """Rows of query block `io` that exist (br but for a partial last block)."""
        if self.l % self.br == 0:
            return i32(self.br)
        return Min(i32(self.br), i32(self.l) - io * i32(self.br))

    def keys_in(self, jo: Expr) -> Expr:
        if self.s % self.bc == 0:
            return i32(self.bc)
        return Min(i32(self.bc), i32(self.s) - jo * i32(self.bc))

    def score(self, raw: Expr, bh: Expr, i: Expr, j: Expr, mask: Tensor | None) -> Expr:
        """`raw * scale` plus a float mask, -inf where a bool mask, causality or the key padding
        excludes key j from query row i (i unclamped: the caller stores no row past L). The
        exclusion is added as `select(keep, 0, -inf)`: a select whose branches load nothing,
        which the x86 backend emits with vector instructions."""
        value: Expr = raw * self.c(self.scale)
        keep: Expr | None = None
        if mask is not None:
            row = i if self.l % self.br == 0 else Min(i, i32(self.l - 1))
            at = Load(mask, self._mask_index(bh, row, self.key_row(j)))
            if self.mask_bool:
                keep = at
            else:
                value = value + at
        if self.causal:
            keep = LE(j, i) if keep is None else And(keep, LE(j, i))
        if self.s % self.bc:
            keep = LT(j, i32(self.s)) if keep is None else And(keep, LT(j, i32(self.s)))
        return value if keep is None else value + Select(keep, self.c(0.0), self.neg_inf)

    def _mask_index(self, bh: Expr, i: Expr, j: Expr) -> tuple[Expr, ...]:
        assert self.mask_shape is not None
        full = (bh // i32(self.hq), bh % i32(self.hq), i, j)
        dims = self.mask_shape
        lead = full[4 - len(dims):]
        return tuple(i32(0) if d == 1 else x for d, x in zip(dims, lead))

    def causal_key_blocks(self, io: Expr) -> Expr:
        """Key blocks query block `io` sees: all, or (causal) those up to its last row."""
        if not self.causal:
            return i32(self.key_blocks)
        last_row = io * i32(self.br) + i32(self.br - 1)
        return Min(i32(self.key_blocks), last_row // i32(self.bc) + i32(1))

    def first_query_block(self, jo: Expr) -> Expr:
        """The first query block that sees key block `jo` (0, or causal: the one holding row jo * bc)."""
        return (jo * i32(self.bc)) // i32(self.br) if self.causal else i32(0)


def column_tile(cols: int) -> tuple[int, int]:
    """(nv, lanes) of the register tile over `cols` columns: 2 x 16 or 1 x 16 when they divide,
    else one vector of the whole width (tiny head dims: the lanes loop gets a tail)."""
    if cols % NR == 0:
        return NV, LANES
    if cols % LANES == 0:
        return 1, LANES
    return 1, cols


Panel = Callable[[Expr, Expr, Expr], Expr]
"""(k, column panel, column in the panel) -> an element of a packed B operand."""


def gemm(name: str, outer: Sequence[Loop], rows: int, cols: int, depth: int,
         acc: Index, a: Callable[[Expr, Expr], Expr], b: Callable[[Expr, Expr], Expr] | Panel,
         panels: bool = False) -> Stmt:
    """`acc(r, c) += a(r, k) * b(k, c)` for r < rows, c < cols, k < depth (module docstring);
    `outer` are the enclosing loops the block depends on. rows must be a multiple of MR. With
    `panels`, B is packed in column panels of the register tile's width (`b(k, panel, column)`:
    a panel's depth x width elements contiguous, as the matmul tactic packs B)."""
    nv, lanes = column_tile(cols)
    rt = Loop.new("rt", rows // MR)
    ct = Loop.new("ct", cols // (nv * lanes))
    k = Loop.new("k", depth, reduce=True)
    ii = Loop.new("ii", MR, UNROLL)
    cv = Loop.new("cv", nv, UNROLL)
    cl = Loop.new("cl", lanes, VECTOR)
    r = rt.var * i32(MR) + ii.var
    c = ct.var * i32(nv * lanes) + cv.var * i32(lanes) + cl.var
    tensor, idx = acc(r, c)
    b_kc = b(k.var, ct.var, cv.var * i32(lanes) + cl.var) if panels else b(k.var, c)  # type: ignore[call-arg]
    update = block(name, [*outer, rt, ct, k, ii, cv, cl], tensor, idx,
                   Load(tensor, idx) + a(r, k.var) * b_kc, attrs=((FP_CONTRACT_ATTR, True),))
    return nest([rt, ct, k, ii, cv, cl], [update])


def fill(name: str, outer: Sequence[Loop], rows: Expr | int, cols: int, tensor: Index,
         value: Callable[[Expr, Expr], Expr]) -> Stmt:
    """`tensor(r, c) = value(r, c)` over rows x cols, the columns vectorised."""
    r = Loop.new("r", rows)
    c = Loop.new("c", cols, VECTOR)
    t, idx = tensor(r.var, c.var)
    return nest([r, c], [block(name, [*outer, r, c], t, idx, value(r.var, c.var))])

