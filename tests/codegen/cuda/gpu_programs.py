"""Small bound GPU programs shared by the CUDA codegen, kernel-host, dispatch and GPU pass tests."""

from __future__ import annotations

import cinn_py as cp
from cinn_py.ir import LoweredFunc, Var
from cinn_py.ir import stmt as S
from cinn_py.ir.visitor import Mutator
from schedules import IRSchedule


def bound_scale(threads: int = 128, name: str = "fn") -> tuple[Var, LoweredFunc]:
    """`B[i] = A[i] * 2` over a symbolic `S0`, split by `threads` and bound to blockIdx.x /
    threadIdx.x; returns `(S0, func)`."""
    S0 = cp.sym("S0")
    A = cp.placeholder((S0,), "float32", "A")
    B = cp.compute((S0,), lambda i: A[i] * 2.0, "B")
    s = IRSchedule(cp.lower(name, [A, B]))
    outer, inner = s.split(s.get_loops("B")[0], [-1, threads])
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")
    return S0, s.func


def symbolic_with_temp(lower: int = 1) -> LoweredFunc:
    """Row sums `B` of a `(S0, 64)` input, then `C = B * 2`: B is a global temporary (a temp
    space of the kernel), both stages bound 64 threads a block."""
    S0 = cp.sym("S0", lower=lower)
    A = cp.placeholder((S0, 64), "float32", "A")
    k = cp.reduce_axis(64, "k")
    B = cp.compute((S0,), lambda i: cp.reduce_sum(A[i, k], k), "B")
    C = cp.compute((S0,), lambda i: B[i] * 2.0, "C")
    s = IRSchedule(cp.lower("fn", [A, C]))
    for name in ("B", "C"):
        outer, inner = s.split(s.get_loops(name)[0], [-1, 64])
        s.bind(outer, "blockIdx.x")
        s.bind(inner, "threadIdx.x")
    return s.func


class _DropReduceInit(Mutator):
    def visit_block(self, node: S.Block) -> S.Stmt:
        node = self.generic_visit(node)
        keep = tuple(st for st in node.stmts if not _is_init(st))
        return node if len(keep) == len(node.stmts) else S.Block(keep)


def _is_init(st: S.Stmt) -> bool:
    return isinstance(st, S.ScheduleBlockRealize) and st.schedule_block.name.endswith("__reduce_init")


def drop_reduce_init(func: LoweredFunc) -> LoweredFunc:
    """Remove the `*__reduce_init` blocks: the reductions then accumulate without being initialised."""
    return _DropReduceInit().visit(func)
