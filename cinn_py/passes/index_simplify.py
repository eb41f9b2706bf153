"""`simplify_indices`: the last GPU post-lowering pass (a CUDA target's passes are
`cross_thread_reduce` -> `gpu_bind` -> `simplify_indices`, CINN's `PostProcess`:
`ReplaceCrossThreadReduction`, `OptimizeExprGPU`, then `Simplify`).

It runs the symbolic simplifier over every integer index, loop bound and guard
with the ranges of the enclosing loops and of `threadIdx.*`/`blockIdx.*` (from the launch
dims), so `(((blockIdx.x * 256) + threadIdx.x) / 64) * 64 + ... % 64` folds back and guards that
always hold (`threadIdx.x < 256` with 256 threads) disappear.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cinn_py.ir import (
    Block, Call, Cast, CudaAxisInfo, Expr, FloatImm, For, IfThenElse, IntImm, Load, LoweredFunc, Mutator,
    Stmt, Store, Tensor, UIntImm, Var, int32, int64, walk,
)
from cinn_py.passes.flatten import flatten_index, flatten_numel
from cinn_py.passes.gpu_bind import AXES
from cinn_py.symbolic import Analyzer


def _launch_ranges(info: CudaAxisInfo) -> dict[Var, tuple[Expr, Expr]]:
    ranges: dict[Var, tuple[Expr, Expr]] = {}
    for prefix, dims in (("blockIdx", info.grid_dims), ("threadIdx", info.block_dims)):
        for axis, dim in zip(AXES, dims):
            for dtype in (int32, int64):
                zero = IntImm(dtype, 0)
                extent = IntImm(dtype, dim.value) if isinstance(dim, IntImm) else dim
                ranges[Var(f"{prefix}.{axis}", dtype)] = (zero, extent)
    return ranges


def _is_index(e: Expr) -> bool:
    """Integer/bool expressions without loads or calls: what the simplifier may rewrite."""
    if not (e.dtype.is_int or e.dtype.is_bool or e.dtype.is_uint) or e.dtype.lanes != 1:
        return False
    return not any(isinstance(n, (Load, Call, FloatImm, Cast)) for n in walk(e))


class _IndexSimplifier(Mutator):
    def __init__(self, ranges: dict[Var, tuple[Expr, Expr]]) -> None:
        self.ranges = dict(ranges)
        self._analyzer: Analyzer | None = None

    @property
    def analyzer(self) -> Analyzer:
        if self._analyzer is None:
            self._analyzer = Analyzer(self.ranges)
        return self._analyzer

    def simplify(self, e: Expr) -> Expr:
        if isinstance(e, Load):
            return self.visit_load(e)
        if not _is_index(e):
            return self.generic_visit(e)
        result = self.analyzer.simplify(e)
        return e if result == e else result

    def visit(self, node: Any) -> Any:
        if isinstance(node, Expr):
            return self.simplify(node)
        return super().visit(node)

    def generic_visit(self, node: Any) -> Any:
        if isinstance(node, Load):
            return self.visit_load(node)
        return super().generic_visit(node)

    def _flat(self, tensor: Tensor, indices: tuple[Expr, ...]) -> tuple[Tensor, tuple[Expr, ...]]:
        """The 1-D view of `tensor` and the simplified row-major offset (CINN flattens in codegen)."""
        flat = flatten_index(tuple(self.visit(i) for i in indices), tensor.buffer.shape)
        buf = tensor.buffer
        numel = flatten_numel(buf.shape)
        flat_buf = dataclasses.replace(buf, shape=(numel,))
        return Tensor(tensor.name, (numel,), tensor.dtype, flat_buf), (self.simplify(flat),)

    def visit_load(self, node: Load) -> Expr:
        tensor, indices = self._flat(node.tensor, node.indices)
        return Load(tensor, indices)

    def visit_store(self, node: Store) -> Stmt:
        tensor, indices = self._flat(node.tensor, node.indices)
        return dataclasses.replace(node, tensor=tensor, indices=indices, value=self.visit(node.value))

    def visit_for(self, node: For) -> Stmt:
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

    def visit_if_then_else(self, node: IfThenElse) -> Stmt:
        cond = self.simplify(node.condition)
        true_case = self.visit(node.true_case)
        false_case = self.visit(node.false_case) if node.false_case is not None else None
        if isinstance(cond, UIntImm) and cond.dtype.is_bool:
            chosen = true_case if cond.value else false_case
            return chosen if chosen is not None else Block(())
        return dataclasses.replace(node, condition=cond, true_case=true_case, false_case=false_case)


def simplify_indices(func: LoweredFunc) -> LoweredFunc:
    """Flatten and simplify indices, simplify loop bounds and guards of a GPU-bound function."""
    ranges = _launch_ranges(func.cuda_axis_info) if func.cuda_axis_info is not None else {}
    body = _IndexSimplifier(ranges).visit(func.body)
    return dataclasses.replace(func, body=body)
