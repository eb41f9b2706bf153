"""Storage of GPU shared and local buffers after bind lowering (CINN `UpdateBufferAxisPass`,
`ResizeBufferPass` and the scope handling of `OptimizeExprGPU`).

A `local` buffer exists once per thread and a `shared` buffer once per block, but the IR still
indexes them like global tensors (`C_rf[(sp / S2), (sp % S2), threadIdx.x]` over all of
`[S1, S2, 32]`). `scope_buffers` gives each the storage that one thread / block needs:

1. **per-iteration privatisation** (local buffers): when every access uses the same index tuple
   and that tuple is built only from thread/block variables, symbolic dims and the variables of
   loops enclosing *all* accesses, then in one iteration of those loops each thread touches a
   single element. If, in addition, the first access is a store that every later access is
   guarded by (the same enclosing conditions, loops that run at least once), the buffer is dead
   at the start of every iteration: no value crosses iterations, so all iterations can share one
   register. Indices become 0 and the buffer shrinks to one element. This turns the seed's
   `C_rf`/`C` inside the serial `sp_5` loop into `float C_rf[1]` (CINN: UpdateBufferAxisPass
   zeroes axes that are equal in all accesses, ResizeBufferPass sizes them to 1; differs from
   CINN in checking the write-before-read liveness explicitly);
2. **thread/block variables**: block variables become 0 in shared-buffer indices and every bound
   variable in local-buffer indices (one copy per block / per thread);
3. **resizing**: each scoped buffer shrinks to the index range actually used, when that range
   has constant bounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, MemoryType, Tensor
from cinn_py.ir.dtype import int32
from cinn_py.ir.func import CudaAxisInfo
from cinn_py.ir.visitor import Mutator, substitute, walk

AXES = ("x", "y", "z")
BOUND_VAR_PREFIXES = ("threadIdx.", "blockIdx.")
Interval = tuple[int, int]
_SCOPED = (MemoryType.GPU_SHARED, MemoryType.GPU_LOCAL)


def is_bound_var(var: E.Var) -> bool:
    """True for the `threadIdx.*` / `blockIdx.*` variables bind lowering introduces."""
    return var.name.startswith(BOUND_VAR_PREFIXES)


# ---------------------------------------------------------------------------------------------
# Accesses in program order, with their enclosing loops and branches
# ---------------------------------------------------------------------------------------------
Context = tuple[object, ...]
"""Enclosing statements, outermost first: a `For`, or `(IfThenElse, branch)`."""


@dataclass(frozen=True)
class Access:
    """One Load or Store of a buffer."""

    indices: tuple[E.Expr, ...]
    is_store: bool
    context: Context


class _AccessCollector:
    """Accesses of the buffers named in `names`, in execution order within a statement (the loads
    of a Store's value and indices come before the Store itself)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.accesses: dict[str, list[Access]] = {n: [] for n in names}
        self.context: list[object] = []

    def stmt(self, node: S.Stmt) -> None:
        if isinstance(node, S.For):
            self.exprs(node.min, node.extent)
            self._nested(node, node.body)
        elif isinstance(node, S.IfThenElse):
            self.exprs(node.condition)
            self._nested((node, True), node.true_case)
            if node.false_case is not None:
                self._nested((node, False), node.false_case)
        elif isinstance(node, S.Store):
            self.exprs(node.value, *node.indices)
            self._record(node.tensor, node.indices, True)
        else:
            for child in _children(node):
                if isinstance(child, S.Stmt):
                    self.stmt(child)
                else:
                    self.exprs(child)

    def _nested(self, entry: object, body: S.Stmt) -> None:
        self.context.append(entry)
        self.stmt(body)
        self.context.pop()

    def exprs(self, *nodes: E.Expr) -> None:
        for node in nodes:
            for sub in walk(node):
                if isinstance(sub, E.Load):
                    self._record(sub.tensor, sub.indices, False)

    def _record(self, tensor: Tensor, indices: tuple[E.Expr, ...], is_store: bool) -> None:
        found = self.accesses.get(tensor.buffer.name)
        if found is not None:
            found.append(Access(indices, is_store, tuple(self.context)))


def collect_accesses(root: S.Stmt, names: Iterable[str]) -> dict[str, list[Access]]:
    """Every access of the named buffers under `root`, in program order."""
    collector = _AccessCollector(names)
    collector.stmt(root)
    return collector.accesses


# ---------------------------------------------------------------------------------------------
# Per-iteration privatisation of local buffers
# ---------------------------------------------------------------------------------------------
def _same_entry(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a[0] is b[0] and a[1] == b[1]
    return a is b


def _common_prefix(contexts: list[Context]) -> Context:
    prefix = contexts[0]
    for ctx in contexts[1:]:
        n = 0
        while n < min(len(prefix), len(ctx)) and _same_entry(prefix[n], ctx[n]):
            n += 1
        prefix = prefix[:n]
    return prefix


def _free_vars(nodes: Iterable[E.Expr]) -> set[str]:
    return {n.name for e in nodes for n in walk(e) if isinstance(n, E.Var)}


def _runs_at_least_once(loop: S.For) -> bool:
    return isinstance(loop.extent, E.IntImm) and loop.extent.value >= 1


def _guarded_alike(entry: tuple[S.IfThenElse, bool], context: Context) -> bool:
    """Whether `context` sits in a branch of an `if` with the same condition and branch."""
    node, branch = entry
    return any(isinstance(o, tuple) and o[1] == branch and o[0].condition == node.condition for o in context)


def _is_invariant(cond: E.Expr, allowed: set[str]) -> bool:
    """A condition that has one value per iteration: only allowed variables, no memory reads
    (a load could see a store made between the two `if`s)."""
    return _free_vars((cond,)) <= allowed and not any(isinstance(n, (E.Load, E.Call)) for n in walk(cond))


def _dominates(store: Context, access: Context, allowed: set[str]) -> bool:
    """Whether a store at `store` (earlier in program order) runs whenever `access` runs; both
    contexts are relative to the loops enclosing every access."""
    for entry in store:
        if any(_same_entry(entry, o) for o in access):
            continue
        if isinstance(entry, S.For):
            if not _runs_at_least_once(entry):
                return False
        elif not (_is_invariant(entry[0].condition, allowed) and _guarded_alike(entry, access)):  # type: ignore[index]
            return False
    return True


def privatizable(accesses: list[Access], symbols: set[str]) -> bool:
    """Whether a local buffer with these accesses needs one element per thread (see module doc)."""
    if not accesses or not accesses[0].is_store:
        return False
    first = accesses[0]
    if any(a.indices != first.indices for a in accesses):
        return False
    if all(E.is_const_int(i, 0) for i in first.indices):
        return False  # already a single element
    prefix = _common_prefix([a.context for a in accesses])
    common_loops = {c.loop_var.name for c in prefix if isinstance(c, S.For)}
    index_vars = _free_vars(first.indices)
    if not all(name in common_loops or name in symbols or name.startswith(BOUND_VAR_PREFIXES)
               for name in index_vars):
        return False
    allowed = common_loops | symbols | {n for n in index_vars if n.startswith(BOUND_VAR_PREFIXES)}
    allowed |= {n for a in accesses for c in a.context if isinstance(c, tuple)
                for n in _free_vars((c[0].condition,)) if n.startswith(BOUND_VAR_PREFIXES)}
    start = len(prefix)
    return all(_dominates(first.context[start:], a.context[start:], allowed) for a in accesses[1:])


class _Privatizer(Mutator):
    """Indices of the privatised buffers become 0; their buffers have one element."""

    def __init__(self, buffers: dict[str, Buffer]) -> None:
        self.buffers = buffers

    def _zero(self, tensor: Tensor, indices: tuple[E.Expr, ...]) -> tuple[Tensor, tuple[E.Expr, ...]] | None:
        new = self.buffers.get(tensor.buffer.name)
        if new is None:
            return None
        zeros = tuple(E.IntImm(i.dtype if i.dtype.is_int else int32, 0) for i in indices)
        return tensor.with_buffer(new), zeros

    def visit_load(self, node: E.Load) -> E.Expr:
        node = self.generic_visit(node)
        done = self._zero(node.tensor, node.indices)
        return node if done is None else E.Load(*done)

    def visit_store(self, node: S.Store) -> S.Stmt:
        node = self.generic_visit(node)
        done = self._zero(node.tensor, node.indices)
        return node if done is None else dataclasses.replace(node, tensor=done[0], indices=done[1])


def _one_element(buffer: Buffer) -> Buffer:
    shape = tuple(E.IntImm(d.dtype if isinstance(d, E.IntImm) else int32, 1) for d in buffer.shape)
    return dataclasses.replace(buffer, shape=shape)


def privatize_local_buffers(body: S.Stmt, symbols: set[str]) -> tuple[S.Stmt, dict[str, Buffer]]:
    """Shrink each privatisable local buffer to one element per thread (module doc, step 1)."""
    local = {n.tensor.buffer.name: n.tensor.buffer for n in walk(body)
             if isinstance(n, (E.Load, S.Store)) and n.tensor.buffer.memory_type is MemoryType.GPU_LOCAL}
    if not local:
        return body, {}
    accesses = collect_accesses(body, local)
    chosen = {name: _one_element(buf) for name, buf in local.items() if privatizable(accesses[name], symbols)}
    if not chosen:
        return body, {}
    return _Privatizer(chosen).visit(body), chosen


# ---------------------------------------------------------------------------------------------
# Thread/block variables in scoped indices; resizing
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
# The entry point
# ---------------------------------------------------------------------------------------------
def scope_buffers(body: S.Stmt, info: CudaAxisInfo, symbols: set[str]) -> tuple[S.Stmt, dict[str, Buffer]]:
    """Privatise, re-index and resize the shared/local buffers of a bind-lowered body.

    Returns the new body and the new Buffer of every scoped buffer whose shape changed.
    """
    body, resized = privatize_local_buffers(body, symbols)
    body = _ScopeIndexRewriter().visit(body)
    collector = _RangeCollector(info)
    collector.visit(body)
    scoped = {n.tensor.buffer.name: n.tensor.buffer for n in walk(body) if isinstance(n, (E.Load, S.Store))}
    for name, ranges in collector.ranges.items():
        new = _resized(scoped[name], ranges)
        if new is not scoped[name]:
            resized[name] = new
    if resized:
        body = _BufferRebinder(resized).visit(body)
    return body, resized
