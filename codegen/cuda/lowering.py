"""The GPU post-processing pipeline run before printing CUDA C.

`lower_for_cuda(func)` = `cross_thread_reduce` -> `gpu_bind` -> `simplify_indices` (CINN's
`PostProcess`: `ReplaceCrossThreadReduction`, `OptimizeExprGPU`, then `Simplify`).

`simplify_indices` runs the symbolic simplifier over every integer index, loop bound and guard
with the ranges of the enclosing loops and of `threadIdx.*`/`blockIdx.*` (from the launch
dims), so `(((blockIdx.x * 256) + threadIdx.x) / 64) * 64 + ... % 64` folds back and guards that
always hold (`threadIdx.x < 256` with 256 threads) disappear.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import expr as E
from cinn_py.ir.buffer import Tensor
from cinn_py.ir import stmt as S
from cinn_py.ir.func import CudaAxisInfo, LoweredFunc
from cinn_py.ir.visitor import Mutator, walk
from cinn_py.passes.cross_thread_reduce import cross_thread_reduce
from cinn_py.passes.gpu_bind import AXES, gpu_bind
from cinn_py.symbolic import Analyzer
from codegen.c_family import flatten_index, flatten_numel


def _launch_ranges(info: CudaAxisInfo) -> dict[E.Var, tuple[E.Expr, E.Expr]]:
    ranges: dict[E.Var, tuple[E.Expr, E.Expr]] = {}
    for prefix, dims in (("blockIdx", info.grid_dims), ("threadIdx", info.block_dims)):
        for axis, dim in zip(AXES, dims):
            for dtype in (E.dt.int32, E.dt.int64):
                zero = E.IntImm(dtype, 0)
                extent = E.IntImm(dtype, dim.value) if isinstance(dim, E.IntImm) else dim
                ranges[E.Var(f"{prefix}.{axis}", dtype)] = (zero, extent)
    return ranges


def _is_index(e: E.Expr) -> bool:
    """Integer/bool expressions without loads or calls: what the simplifier may rewrite."""
    if not (e.dtype.is_int or e.dtype.is_bool or e.dtype.is_uint) or e.dtype.lanes != 1:
        return False
    return not any(isinstance(n, (E.Load, E.Call, E.FloatImm, E.Cast)) for n in walk(e))


class _IndexSimplifier(Mutator):
    def __init__(self, ranges: dict[E.Var, tuple[E.Expr, E.Expr]]) -> None:
        self.ranges = dict(ranges)
        self._analyzer: Analyzer | None = None

    @property
    def analyzer(self) -> Analyzer:
        if self._analyzer is None:
            self._analyzer = Analyzer(self.ranges)
        return self._analyzer

    def simplify(self, e: E.Expr) -> E.Expr:
        if isinstance(e, E.Load):
            return self.visit_load(e)
        if not _is_index(e):
            return self.generic_visit(e)
        result = self.analyzer.simplify(e)
        return e if result == e else result

    def visit(self, node: object) -> object:  # type: ignore[override]
        if isinstance(node, E.Expr):
            return self.simplify(node)
        return super().visit(node)

    def generic_visit(self, node: object) -> object:
        if isinstance(node, E.Load):
            return self.visit_load(node)
        return super().generic_visit(node)

    def _flat(self, tensor: Tensor, indices: tuple[E.Expr, ...]) -> tuple[Tensor, tuple[E.Expr, ...]]:
        """The 1-D view of `tensor` and the simplified row-major offset (CINN flattens in codegen)."""
        flat = flatten_index(tuple(self.visit(i) for i in indices), tensor.buffer.shape)
        buf = tensor.buffer
        numel = flatten_numel(buf.shape)
        flat_buf = dataclasses.replace(buf, shape=(numel,))
        return Tensor(tensor.name, (numel,), tensor.dtype, flat_buf), (self.simplify(flat),)

    def visit_load(self, node: E.Load) -> E.Expr:
        tensor, indices = self._flat(node.tensor, node.indices)
        return E.Load(tensor, indices)

    def visit_store(self, node: S.Store) -> S.Stmt:
        tensor, indices = self._flat(node.tensor, node.indices)
        return dataclasses.replace(node, tensor=tensor, indices=indices, value=self.visit(node.value))

    def visit_for(self, node: S.For) -> S.Stmt:
        lo, ext = self.simplify(node.min), self.simplify(node.extent)
        saved = self.ranges.get(node.loop_var)
        self.ranges[node.loop_var] = (lo, ext)
        self._analyzer = None
        body = self.visit(node.body)
        if saved is None:
            del self.ranges[node.loop_var]
        else:
            self.ranges[node.loop_var] = saved
        self._analyzer = None
        return dataclasses.replace(node, min=lo, extent=ext, body=body)

    def visit_if_then_else(self, node: S.IfThenElse) -> S.Stmt:
        cond = self.simplify(node.condition)
        true_case = self.visit(node.true_case)
        false_case = self.visit(node.false_case) if node.false_case is not None else None
        if isinstance(cond, E.UIntImm) and cond.dtype.is_bool:
            chosen = true_case if cond.value else false_case
            return chosen if chosen is not None else S.Block(())
        return dataclasses.replace(node, condition=cond, true_case=true_case, false_case=false_case)


def simplify_indices(func: LoweredFunc) -> LoweredFunc:
    """Flatten and simplify indices, simplify loop bounds and guards of a GPU-bound function."""
    ranges = _launch_ranges(func.cuda_axis_info) if func.cuda_axis_info is not None else {}
    body = _IndexSimplifier(ranges).visit(func.body)
    return dataclasses.replace(func, body=body)


def lower_for_cuda(func: LoweredFunc) -> LoweredFunc:
    """Cross-thread reduction, bind lowering and simplification: ready for the CUDA printer."""
    return simplify_indices(gpu_bind(cross_thread_reduce(func)))
