"""GPU bind lowering: bound loops become `threadIdx`/`blockIdx` variables (CINN `OptimizeExprGPU`).

`gpu_bind(func)` does what CINN's `optim::OptimizeExprGPU` + `ir::SetCudaAxisInfo` +
`RemoveGpuForloopsAxis` (`transform_gpu_forloop.cc`) do:

1. schedule blocks are inlined (iter vars replaced by their bound values), so indices are
   expressions of loop variables;
2. grid/block dims: for each axis, the maximum extent of all loops bound to it (min must be 0);
   constant extents fold to an integer, symbolic ones give a host-side `cinn_max` expression of
   the symbolic dims (`CudaAxisInfo`);
3. every bound `For` is replaced by its body with the loop variable replaced by the variable
   `threadIdx.x` / `blockIdx.y` ... (same dtype as the loop var; the CUDA printer prints it as
   `(int)threadIdx.x`; by 0 when that launch dim is 1), wrapped in `if (threadIdx.x < extent)` when the loop's
   extent may be
   smaller than the launch dim; the variable of a serial loop of extent 1 is replaced by its min;
4. shared and local buffers get the storage one block / one thread needs
   (`gpu_buffers.scope_buffers`: per-iteration privatisation of local buffers, thread/block
   variables removed from scoped indices where provably separable, resizing to the used index
   range);
5. race checks (`gpu_sync.check_races`): a global temporary read across blocks, or a shared
   element read/overwritten by another thread without `__syncthreads()`, is a `CompileError`.
"""

from __future__ import annotations

import dataclasses

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    Cast, CudaAxisInfo, Expr, For, ForType, IfThenElse, IntImm, LT, LoweredFunc, Max, Mutator,
    Stmt, Var, int32, int64, is_const_int, print_ir_marked, substitute, walk,
)
from cinn_py.passes.gpu_buffers import AXES, BOUND_VAR_PREFIXES, interval, is_bound_var, scope_buffers
from cinn_py.passes.gpu_sync import check_races
from cinn_py.passes.inline_blocks import inline_schedule_blocks

__all__ = ["AXES", "BOUND_VAR_PREFIXES", "bound_loops", "compute_axis_info", "gpu_bind", "interval",
           "is_bound_var"]


# ---------------------------------------------------------------------------------------------
# Launch dims
# ---------------------------------------------------------------------------------------------
def bound_loops(root: object) -> list[For]:
    """Every loop bound to a GPU axis, in pre-order."""
    return [n for n in walk(root) if isinstance(n, For) and n.bind_axis is not None]


def _combine_extents(extents: list[Expr]) -> Expr:
    """The maximum of the extents; constant if all are constant, else a `cinn_max` chain."""
    if not extents:
        return IntImm(int32, 1)
    if all(isinstance(e, IntImm) for e in extents):
        return IntImm(int32, max(e.value for e in extents))  # type: ignore[attr-defined]
    distinct: list[Expr] = []
    for e in extents:
        if e not in distinct:
            distinct.append(e)
    dims = [_as_int64(e) for e in distinct]
    result = dims[0]
    for e in dims[1:]:
        result = Max(result, e)
    return result


def _as_int64(e: Expr) -> Expr:
    if isinstance(e, IntImm):
        return IntImm(int64, e.value)
    return e if e.dtype == int64 else Cast(int64, e)


def compute_axis_info(func: LoweredFunc, root: object | None = None) -> CudaAxisInfo:
    """Grid and block dims of `func` (max extent of the loops bound to each axis)."""
    root = func.body if root is None else root
    grid: list[list[Expr]] = [[], [], []]
    block: list[list[Expr]] = [[], [], []]
    for loop in bound_loops(root):
        if not is_const_int(loop.min, 0):
            raise CompileError(
                f"gpu_bind: loop '{loop.loop_var.name}' bound to {loop.bind_axis} must start at 0, "
                f"got min {loop.min}", print_ir_marked(func, loop))
        target = grid if loop.for_type is ForType.GPU_BLOCK else block
        target[loop.bind_offset].append(loop.extent)
    return CudaAxisInfo(tuple(_combine_extents(g) for g in grid),  # type: ignore[arg-type]
                        tuple(_combine_extents(b) for b in block))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Bound loops -> variables and guards
# ---------------------------------------------------------------------------------------------
class _Binder(Mutator):
    def __init__(self, func: LoweredFunc, info: CudaAxisInfo) -> None:
        self.func = func
        self.info = info
        self.active: dict[str, For] = {}

    def visit_for(self, node: For) -> Stmt:
        axis = node.bind_axis
        if axis is None and is_const_int(node.extent, 1):
            # a unit loop's variable is its min: an index through it (a reduce over an axis of
            # extent 1 read at `[i, rb, j]`, written at `[i, 0, j]`) is then the same index
            # tuple at every access, which the buffer scoping needs to privatise a local buffer
            body = self.visit(substitute(node.body, {node.loop_var: node.min}))
            return node if body is node.body else dataclasses.replace(node, body=body)
        if axis is None:
            return self.generic_visit(node)
        if axis in self.active:
            raise CompileError(
                f"gpu_bind: loop '{node.loop_var.name}' is bound to {axis} inside loop "
                f"'{self.active[axis].loop_var.name}' bound to the same axis; nested loops need distinct "
                "axes",
                print_ir_marked(self.func, node))
        dims = self.info.grid_dims if node.for_type is ForType.GPU_BLOCK else self.info.block_dims
        launch_dim = dims[node.bind_offset]
        var = Var(axis, node.loop_var.dtype)
        # a launch dim of 1: the variable is always 0, and says so to the buffer scoping (a row
        # statistic written at index 0 and read at `blockIdx.x` of a one-block grid is one element)
        value: Expr = IntImm(var.dtype, 0) if is_const_int(launch_dim, 1) else var
        self.active[axis] = node
        body = self.visit(substitute(node.body, {node.loop_var: value}))
        del self.active[axis]
        if _same_value(node.extent, launch_dim):
            return body
        return IfThenElse(LT(var, _like(node.extent, var)), body)


def _same_value(extent: Expr, dim: Expr) -> bool:
    if isinstance(extent, IntImm) and isinstance(dim, IntImm):
        return extent.value == dim.value
    return extent == dim or _as_int64(extent) == dim


def _like(e: Expr, var: Var) -> Expr:
    if isinstance(e, IntImm) and e.dtype != var.dtype:
        return IntImm(var.dtype, e.value)
    return e


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------
def gpu_bind(func: LoweredFunc, strict: bool = False) -> LoweredFunc:
    """Lower GPU-bound loops of `func` to thread/block variables; sets `cuda_axis_info`.

    `strict`: the race checks also reject what they cannot prove race-free (`check_races`).

    Raises:
        CompileError: a bound loop does not start at 0, or two nested loops bind one axis.
    """
    body = inline_schedule_blocks(func.body)
    info = compute_axis_info(func, body)
    body = _Binder(func, info).visit(body)
    body, resized = scope_buffers(body, info, {v.name for v in func.scalar_args})
    check_races(func, body, info, strict)
    temp_bufs = tuple(resized.get(b.name, b) for b in func.temp_bufs)
    return dataclasses.replace(func, body=body, temp_bufs=temp_bufs, cuda_axis_info=info)
