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
   `(int)threadIdx.x`), wrapped in `if (threadIdx.x < extent)` when the loop's extent may be
   smaller than the launch dim;
4. shared buffers: block variables become 0 in their indices (a shared buffer is per block);
   local buffers: every bound variable becomes 0 (a local buffer is per thread); then each such
   buffer is shrunk to the index range actually used (when that range has constant bounds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from cinn_py.diagnostics import CompileError
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, MemoryType, Tensor
from cinn_py.ir.dtype import int32
from cinn_py.ir.func import CudaAxisInfo, LoweredFunc
from cinn_py.ir.printer import print_ir_marked
from cinn_py.ir.visitor import Mutator, substitute, walk

AXES = ("x", "y", "z")
BOUND_VAR_PREFIXES = ("threadIdx.", "blockIdx.")
Interval = tuple[int, int]


# ---------------------------------------------------------------------------------------------
# Schedule block inlining
# ---------------------------------------------------------------------------------------------
class _BlockInliner(Mutator):
    def visit_schedule_block_realize(self, node: S.ScheduleBlockRealize) -> S.Stmt:
        block = node.schedule_block
        mapping = dict(zip(block.iter_vars, (self.visit(v) for v in node.iter_values)))
        return substitute(self.visit(block.body), mapping)


def inline_schedule_blocks(stmt: S.Stmt) -> S.Stmt:
    """Replace every ScheduleBlockRealize by its body with the iter vars substituted."""
    return _BlockInliner().visit(stmt)


def is_bound_var(var: E.Var) -> bool:
    """True for the `threadIdx.*` / `blockIdx.*` variables this pass introduces."""
    return var.name.startswith(BOUND_VAR_PREFIXES)


# ---------------------------------------------------------------------------------------------
# Launch dims
# ---------------------------------------------------------------------------------------------
def bound_loops(root: object) -> list[S.For]:
    """Every loop bound to a GPU axis, in pre-order."""
    return [n for n in walk(root) if isinstance(n, S.For) and n.bind_axis is not None]


def _combine_extents(extents: list[E.Expr]) -> E.Expr:
    """The maximum of the extents; constant if all are constant, else a `cinn_max` chain."""
    if not extents:
        return E.IntImm(int32, 1)
    if all(isinstance(e, E.IntImm) for e in extents):
        return E.IntImm(int32, max(e.value for e in extents))  # type: ignore[attr-defined]
    distinct: list[E.Expr] = []
    for e in extents:
        if e not in distinct:
            distinct.append(e)
    dims = [_as_int64(e) for e in distinct]
    result = dims[0]
    for e in dims[1:]:
        result = E.Max(result, e)
    return result


def _as_int64(e: E.Expr) -> E.Expr:
    if isinstance(e, E.IntImm):
        return E.IntImm(E.dt.int64, e.value)
    return e if e.dtype == E.dt.int64 else E.Cast(E.dt.int64, e)


def compute_axis_info(func: LoweredFunc, root: object | None = None) -> CudaAxisInfo:
    """Grid and block dims of `func` (max extent of the loops bound to each axis)."""
    root = func.body if root is None else root
    grid: list[list[E.Expr]] = [[], [], []]
    block: list[list[E.Expr]] = [[], [], []]
    for loop in bound_loops(root):
        if not E.is_const_int(loop.min, 0):
            raise CompileError(
                f"gpu_bind: loop '{loop.loop_var.name}' bound to {loop.bind_axis} must start at 0, "
                f"got min {loop.min}", print_ir_marked(func, loop))
        target = grid if loop.for_type is S.ForType.GPU_BLOCK else block
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
        self.active: dict[str, S.For] = {}

    def visit_for(self, node: S.For) -> S.Stmt:
        axis = node.bind_axis
        if axis is None:
            return self.generic_visit(node)
        if axis in self.active:
            raise CompileError(
                f"gpu_bind: loop '{node.loop_var.name}' is bound to {axis} inside loop "
                f"'{self.active[axis].loop_var.name}' bound to the same axis; nested loops need distinct axes",
                print_ir_marked(self.func, node))
        dims = self.info.grid_dims if node.for_type is S.ForType.GPU_BLOCK else self.info.block_dims
        launch_dim = dims[node.bind_offset]
        var = E.Var(axis, node.loop_var.dtype)
        self.active[axis] = node
        body = self.visit(substitute(node.body, {node.loop_var: var}))
        del self.active[axis]
        if _same_value(node.extent, launch_dim):
            return body
        return S.IfThenElse(E.LT(var, _like(node.extent, var)), body)


def _same_value(extent: E.Expr, dim: E.Expr) -> bool:
    if isinstance(extent, E.IntImm) and isinstance(dim, E.IntImm):
        return extent.value == dim.value
    return extent == dim or _as_int64(extent) == dim


def _like(e: E.Expr, var: E.Var) -> E.Expr:
    if isinstance(e, E.IntImm) and e.dtype != var.dtype:
        return E.IntImm(var.dtype, e.value)
    return e


# ---------------------------------------------------------------------------------------------
# Shared / local buffers: index zeroing and resizing
# ---------------------------------------------------------------------------------------------
class _ScopeIndexRewriter(Mutator):
    """Zero block vars in shared-buffer indices and every bound var in local-buffer indices."""

    def visit_load(self, node: E.Load) -> E.Expr:
        node = self.generic_visit(node)
        indices = _zeroed(node.tensor.buffer, node.indices)
        return node if indices is node.indices else dataclasses.replace(node, indices=indices)

    def visit_store(self, node: S.Store) -> S.Stmt:
        node = self.generic_visit(node)
        indices = _zeroed(node.tensor.buffer, node.indices)
        return node if indices is node.indices else dataclasses.replace(node, indices=indices)


def _zeroed(buffer: Buffer, indices: tuple[E.Expr, ...]) -> tuple[E.Expr, ...]:
    if buffer.memory_type is MemoryType.GPU_SHARED:
        keep: Callable[[str], bool] = lambda name: not name.startswith("blockIdx.")  # noqa: E731
    elif buffer.memory_type is MemoryType.GPU_LOCAL:
        keep = lambda name: False  # noqa: E731
    else:
        return indices
    mapping: dict[E.Var, E.Expr] = {}
    for index in indices:
        for node in walk(index):
            if isinstance(node, E.Var) and is_bound_var(node) and not keep(node.name):
                mapping[node] = E.IntImm(node.dtype, 0) if node.dtype.is_int else E.IntImm(int32, 0)
    if not mapping:
        return indices
    return tuple(substitute(i, mapping) for i in indices)


def interval(e: E.Expr, env: dict[str, Interval]) -> Interval | None:
    """Constant [lo, hi] of an integer index expression given variable ranges, or None."""
    if isinstance(e, (E.IntImm, E.UIntImm)):
        return (e.value, e.value)
    if isinstance(e, E.Var):
        return env.get(e.name)
    if isinstance(e, E.Cast):
        return interval(e.v, env)
    if isinstance(e, (E.Add, E.Sub, E.Mul, E.Min, E.Max)):
        a, b = interval(e.a, env), interval(e.b, env)
        if a is None or b is None:
            return None
        if isinstance(e, E.Add):
            return (a[0] + b[0], a[1] + b[1])
        if isinstance(e, E.Sub):
            return (a[0] - b[1], a[1] - b[0])
        if isinstance(e, E.Min):
            return (min(a[0], b[0]), min(a[1], b[1]))
        if isinstance(e, E.Max):
            return (max(a[0], b[0]), max(a[1], b[1]))
        corners = [x * y for x in a for y in b]
        return (min(corners), max(corners))
    if isinstance(e, (E.Div, E.Mod)) and isinstance(e.b, E.IntImm) and e.b.value > 0:
        a = interval(e.a, env)
        if a is None or a[0] < 0:
            return None
        c = e.b.value
        if isinstance(e, E.Div):
            return (a[0] // c, a[1] // c)
        return (a[0] % c, a[1] % c) if a[0] // c == a[1] // c else (0, min(a[1], c - 1))
    if isinstance(e, E.Select):
        t, f = interval(e.true_value, env), interval(e.false_value, env)
        return None if t is None or f is None else (min(t[0], f[0]), max(t[1], f[1]))
    return None


class _RangeCollector:
    """Per scoped buffer, the [lo, hi] of each index dim over all accesses (None: unknown)."""

    def __init__(self, info: CudaAxisInfo) -> None:
        self.env: dict[str, Interval] = {}
        for prefix, dims in (("blockIdx", info.grid_dims), ("threadIdx", info.block_dims)):
            for axis, dim in zip(AXES, dims):
                if isinstance(dim, E.IntImm):
                    self.env[f"{prefix}.{axis}"] = (0, dim.value - 1)
        self.ranges: dict[str, list[Interval | None]] = {}

    def visit(self, node: S.Stmt | E.Expr) -> None:
        if isinstance(node, S.For):
            saved = self.env.get(node.loop_var.name)
            lo, ext = interval(node.min, self.env), interval(node.extent, self.env)
            if lo is not None and ext is not None:
                self.env[node.loop_var.name] = (lo[0], lo[1] + ext[1] - 1)
            else:
                self.env.pop(node.loop_var.name, None)
            self.visit(node.body)
            if saved is None:
                self.env.pop(node.loop_var.name, None)
            else:
                self.env[node.loop_var.name] = saved
            return
        if isinstance(node, (E.Load, S.Store)):
            self._record(node.tensor, node.indices)
        for child in _children(node):
            self.visit(child)

    def _record(self, tensor: Tensor, indices: tuple[E.Expr, ...]) -> None:
        if tensor.buffer.memory_type not in (MemoryType.GPU_SHARED, MemoryType.GPU_LOCAL):
            return
        found = [interval(i, self.env) for i in indices]
        known = self.ranges.get(tensor.buffer.name)
        if known is None:
            self.ranges[tensor.buffer.name] = found
            return
        self.ranges[tensor.buffer.name] = [
            None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(known, found)]


def _children(node: object) -> list[S.Stmt | E.Expr]:
    out: list[S.Stmt | E.Expr] = []
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        if f.name in ("loop_var", "symbol", "uid", "tensor", "dtype"):
            continue
        value = getattr(node, f.name)
        items = value if isinstance(value, tuple) else (value,)
        out.extend(v for v in items if isinstance(v, (S.Stmt, E.Expr)))
    return out


def _resized(buffer: Buffer, ranges: list[Interval | None]) -> Buffer:
    shape: list[E.Expr] = []
    for dim, rng in zip(buffer.shape, ranges):
        if rng is None or rng[0] < 0:
            shape.append(dim)
            continue
        size = rng[1] + 1
        if isinstance(dim, E.IntImm):
            size = min(size, dim.value)
        shape.append(E.IntImm(dim.dtype if isinstance(dim, E.IntImm) else int32, size))
    new_shape = tuple(shape)
    return buffer if new_shape == buffer.shape else dataclasses.replace(buffer, shape=new_shape)


class _BufferRebinder(Mutator):
    def __init__(self, buffers: dict[str, Buffer]) -> None:
        self.buffers = buffers

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        new = self.buffers.get(tensor.buffer.name)
        return tensor if new is None or new is tensor.buffer else tensor.with_buffer(new)


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------
def gpu_bind(func: LoweredFunc) -> LoweredFunc:
    """Lower GPU-bound loops of `func` to thread/block variables; sets `cuda_axis_info`.

    Raises:
        CompileError: a bound loop does not start at 0, or two nested loops bind one axis.
    """
    body = inline_schedule_blocks(func.body)
    info = compute_axis_info(func, body)
    body = _Binder(func, info).visit(body)
    body = _ScopeIndexRewriter().visit(body)
    collector = _RangeCollector(info)
    collector.visit(body)
    resized: dict[str, Buffer] = {}
    scoped = {n.tensor.buffer.name: n.tensor.buffer for n in walk(body) if isinstance(n, (E.Load, S.Store))}
    for name, ranges in collector.ranges.items():
        resized[name] = _resized(scoped[name], ranges)
    if resized:
        body = _BufferRebinder(resized).visit(body)
    temp_bufs = tuple(resized.get(b.name, b) for b in func.temp_bufs)
    return dataclasses.replace(func, body=body, temp_bufs=temp_bufs, cuda_axis_info=info)
