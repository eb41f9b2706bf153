"""The implicit GEMM every convolution template is: `C[b, r, c] = sum_k A(b, r, k) * B(b, k, c)`
where B is never stored: each task packs the panels it needs from the convolution's operands.

    for task in batches * (rows / OB) * (cols / CB)   parallel: one OB x CB tile of C a task
      acc = 0                                          task-private OB x CB tile
      for ko in depth / KC
        pack[k, c] = B(b, ko*KC + k, c0 + c)           KC x CB panel, vectorised over c (gathers)
        acc += A(b, r0.., ko*KC..) @ pack              the matmul micro-kernel (MR x 2 x 16)
      C[b, r0 + r, c0 + c] = acc[r, c]                 the rows and columns that exist

The micro-kernel (`cinn_py.lowering.attention.tiles.gemm`) is the x86 matmul schedule's: an
MR x (2 x 16) register tile, the depth loop outside it, one broadcast of A and two vector loads
of the packed panel per step, so each packed element serves OB / MR register tiles. Tails cost no
guard in the hot loop: rows past `rows` read A's last row and columns past `cols` pack B's last
column (clamped indices); neither is stored. `kc` must divide `depth` (the templates pick whole
channels). Loops carry the attention templates' roles, which the auto-scheduler maps to
parallel / unroll / vectorize.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cinn_py.ir import DType, Expr, FloatImm, Load, MemoryType, Min, Stmt, Tensor, make_tensor
from cinn_py.lowering.attention.nest import PARALLEL, SERIAL, VECTOR, Loop, block, nest
from cinn_py.lowering.attention.tiles import LANES, MR, NR, fill, gemm, i32

__all__ = ["GemmShape", "ImplicitGemm", "Task", "round_up"]

MIN_TASKS = 8
"""Row blocks are halved (down to MIN_ROWS) until there are this many tasks: a late layer (7x7
pixels, 512 channels) has two column tiles only."""
MIN_ROWS = 32


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class GemmShape:
    """`batches` independent rows x cols x depth products, panels `kc` deep."""

    batches: int
    rows: int
    cols: int
    depth: int
    kc: int

    @property
    def cb(self) -> int:
        """Columns of a tile: the register tile's width (16 for at most 16 columns)."""
        return NR if self.cols > LANES else LANES

    @property
    def col_tiles(self) -> int:
        return -(-self.cols // self.cb)

    @property
    def ob(self) -> int:
        """Rows of a tile: a multiple of MR dividing `rows` rounded up to MR."""
        padded = round_up(self.rows, MR)
        ob = padded
        while (self.batches * (padded // ob) * self.col_tiles < MIN_TASKS
               and ob % (2 * MR) == 0 and ob // 2 >= MIN_ROWS):
            ob //= 2
        return ob

    @property
    def row_blocks(self) -> int:
        return round_up(self.rows, MR) // self.ob

    @property
    def tasks(self) -> int:
        return self.batches * self.row_blocks * self.col_tiles


@dataclass(frozen=True)
class Task:
    """Where a task's tile lies: its batch, and its first row and column (Exprs of the task var)."""

    batch: Expr
    row0: Expr
    col0: Expr


Operand = Callable[[Task, Expr, Expr], Expr]
"""(task, row or depth index, depth or column index) -> an element of A or B."""
Target = Callable[[Task, Expr, Expr], tuple[Tensor, tuple[Expr, ...]]]
"""(task, row, column) -> the output tensor and indices of C's element."""
Finish = Callable[[Task, Expr, Expr, Expr], Expr]
"""(task, row, column, C's element) -> the value stored (a fused epilogue)."""


@dataclass(frozen=True)
class ImplicitGemm:
    name: str
    shape: GemmShape
    dtype: DType
    a: Operand
    """A(task, row, k): `row` already clamped to the rows that exist."""
    b: Operand
    """B(task, k, column): `column` already clamped to the columns that exist."""
    c: Target
    finish: Finish | None = None
    """Applied to each element on its way out of the accumulator (bias, activation, residual...)."""

    def locals(self) -> tuple[Tensor, Tensor]:
        """The task-private accumulator and panel (the x86 backend gives each task its own)."""
        s = self.shape
        return (_local(self.dtype, f"{self.name}_acc", s.tasks, s.ob, s.cb),
                _local(self.dtype, f"{self.name}_pack", s.tasks, s.kc, s.cb))

    def task(self, t: Expr) -> Task:
        s = self.shape
        ct = t % i32(s.col_tiles)
        rest = t // i32(s.col_tiles)
        return Task(rest // i32(s.row_blocks), (rest % i32(s.row_blocks)) * i32(s.ob), ct * i32(s.cb))

    def build(self, acc: Tensor, pack: Tensor) -> Stmt:
        s = self.shape
        t = Loop.new("task", s.tasks, PARALLEL)
        ko = Loop.new("ko", s.depth // s.kc)
        zero = fill(f"{self.name}_acc_init", [t], s.ob, s.cb, lambda r, c: (acc, (t.var, r, c)),
                    lambda r, c: FloatImm(self.dtype, 0.0))
        body = nest([ko], [self._pack(pack, [t, ko]), self._gemm(acc, pack, [t, ko])])
        return nest([t], [zero, body, self._store(acc, [t])])

    def _pack(self, pack: Tensor, outer: list[Loop]) -> Stmt:
        s = self.shape
        t, ko = (lp.var for lp in outer)
        task = self.task(t)
        k = Loop.new("k", s.kc)
        lane = Loop.new("c", s.cb, VECTOR)
        col = task.col0 + lane.var
        if s.cols % s.cb:
            col = Min(col, i32(s.cols - 1))
        value = self.b(task, ko * i32(s.kc) + k.var, col)
        loops = [*outer, k, lane]
        return nest([k, lane], [block(f"{self.name}_pack", loops, pack, (t, k.var, lane.var), value)])

    def _gemm(self, acc: Tensor, pack: Tensor, outer: list[Loop]) -> Stmt:
        s = self.shape
        t, ko = (lp.var for lp in outer)
        task = self.task(t)

        def a(r: Expr, k: Expr) -> Expr:
            row = task.row0 + r
            return self.a(task, Min(row, i32(s.rows - 1)) if s.rows % s.ob else row, ko * i32(s.kc) + k)

        return gemm(f"{self.name}_mac", outer, s.ob, s.cb, s.kc, lambda r, c: (acc, (t, r, c)), a,
                    lambda k, c: Load(pack, (t, k, c)))

    def _store(self, acc: Tensor, outer: list[Loop]) -> Stmt:
        s = self.shape
        t = outer[0].var
        task = self.task(t)
        rows: Expr = i32(s.ob) if s.rows % s.ob == 0 else Min(i32(s.ob), i32(s.rows) - task.row0)
        full = s.cols % s.cb == 0
        cols = i32(s.cb) if full else Min(i32(s.cb), i32(s.cols) - task.col0)
        r = Loop.new("r", rows)
        c = Loop.new("c", cols, VECTOR if full else SERIAL)
        row, col = task.row0 + r.var, task.col0 + c.var
        tensor, idx = self.c(task, row, col)
        value: Expr = Load(acc, (t, r.var, c.var))
        if self.finish is not None:
            value = self.finish(task, row, col, value)
        loops = [*outer, r, c]
        return nest([r, c], [block(f"{self.name}_store", loops, tensor, idx, value)])


def _local(dtype: DType, name: str, *shape: int) -> Tensor:
    return make_tensor(name, tuple(i32(d) for d in shape), dtype, MemoryType.GPU_LOCAL)
