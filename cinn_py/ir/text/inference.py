"""Defaults for IR text without a `// decl` header: tensor shapes, buffers, stored tensors.

While parsing, every undeclared tensor gets a *provisional* Tensor (float32, no shape) and every
access records, per dimension, how large the tensor must be: the largest constant value the index
can take (+1, by interval arithmetic over the enclosing loops) or, for an index that is a loop
var (directly or through `axis.bind`) running from 0, that loop's extent (which may be symbolic).
`finish` then swaps the provisional tensors for final ones (a fresh symbolic dim `T_d<k>` where
nothing is known). `T__reduce_init` views the buffer `_T` (CINN's reduce-init convention).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cinn_py.ir import dtype as dt
from cinn_py.ir import expr as E
from cinn_py.ir import stmt as S
from cinn_py.ir.buffer import Buffer, Tensor
from cinn_py.ir.intervals import int_interval
from cinn_py.ir.text.lexer import Token
from cinn_py.ir.visitor import Mutator

if TYPE_CHECKING:
    from cinn_py.ir.text.scope import Scope

_REDUCE_INIT = "__reduce_init"
Interval = tuple[int, int]


def buffer_name_of(tensor_name: str) -> str:
    """`_T` for tensor `T`; `T__reduce_init` shares `_T`."""
    if tensor_name.endswith(_REDUCE_INIT) and len(tensor_name) > len(_REDUCE_INIT):
        return "_" + tensor_name[: -len(_REDUCE_INIT)]
    return "_" + tensor_name


class TensorInference:
    """Provisional tensors of one function (or one bare statement) and what accesses need."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.provisionals: dict[str, Tensor] = {}
        self.arity: dict[str, int] = {}
        self.const_sizes: dict[str, list[int | None]] = {}
        self.sym_sizes: dict[str, list[E.Expr | None]] = {}
        self.index_dtypes: dict[str, list[E.DType]] = {}
        self.loops: dict[str, list[tuple[E.Expr, E.Expr]]] = {}
        self.iters: dict[str, list[E.Expr]] = {}
        self.stored_names: list[str] = []
        self.stored_buffers: set[str] = set()
        self.finals: dict[str, Tensor] | None = None
        self.guards = 0
        """How many ifs / selects enclose the text being parsed: an access under one may be
        out of range on iterations the condition excludes (split tails, padding), so it is not
        checked against its tensor's shape."""

    # -- recording ------------------------------------------------------------------------------
    def provisional(self, name: str) -> Tensor:
        tensor = self.provisionals.get(name)
        if tensor is None:
            buffer = Buffer(buffer_name_of(name), (), dt.float32)
            tensor = Tensor(name, (), dt.float32, buffer)
            self.provisionals[name] = tensor
        return tensor

    def is_provisional(self, tensor: Tensor) -> bool:
        return self.provisionals.get(tensor.name) is tensor

    def push_loop(self, var: E.Var, lo: E.Expr, extent: E.Expr) -> None:
        self.loops.setdefault(var.name, []).append((lo, extent))

    def push_iter(self, var: E.Var, value: E.Expr) -> None:
        self.iters.setdefault(var.name, []).append(value)

    def pop_binding(self, var: E.Var) -> None:
        for table in (self.iters, self.loops):
            stack = table.get(var.name)
            if stack:
                stack.pop()
                return

    def note_store(self, tensor: Tensor) -> None:
        if tensor.name not in self.stored_names:
            self.stored_names.append(tensor.name)
        self.stored_buffers.add(tensor.buffer.name)

    def note_access(self, tensor: Tensor, indices: tuple[E.Expr, ...], tok: Token) -> None:
        if not self.is_provisional(tensor):
            self.check_in_shape(tensor, indices, tok)
            return
        self.check_not_negative(tensor, indices, tok)
        name = tensor.name
        known = self.arity.setdefault(name, len(indices))
        if known != len(indices):
            self.scope.error(f"tensor '{name}' is indexed with {len(indices)} indices here but "
                              f"{known} elsewhere", tok)
        consts = self.const_sizes.setdefault(name, [None] * known)
        syms = self.sym_sizes.setdefault(name, [None] * known)
        dtypes = self.index_dtypes.setdefault(name, [idx.dtype.element_of() for idx in indices])
        for k, index in enumerate(indices):
            if not index.dtype.element_of().is_integral:
                continue
            dtypes[k] = index.dtype.element_of()
            interval = self.interval(index)
            if interval is not None:
                known_size = consts[k]
                consts[k] = max(known_size if known_size is not None else 0, interval[1] + 1)
            elif syms[k] is None:
                syms[k] = self.loop_extent(index)

    # -- bounds ---------------------------------------------------------------------------------
    def check_in_shape(self, tensor: Tensor, indices: tuple[E.Expr, ...], tok: Token) -> None:
        """In a function, an unguarded access whose index provably leaves a constant dimension of
        its declared tensor on some iteration is an error (it would read or write memory it does
        not own). Interval arithmetic over affine indices of independent loops is exact, and
        accesses under an `if` or `select` are left alone, so valid IR is never refused."""
        if (self.guards or not (self.scope.in_function and self.scope.check_bounds) or len(indices)
            != len(tensor.shape)):
            return  # a bare statement is a fragment: its loops need not be all that runs it
        for k, (index, dim) in enumerate(zip(indices, tensor.shape)):
            size = dim.value if isinstance(dim, (E.IntImm, E.UIntImm)) else None
            interval = self.interval(index) if index.dtype.element_of().is_integral else None
            if size is None or interval is None or 0 <= interval[0] and interval[1] < size:
                continue
            self.scope.error(f"index {k} of '{tensor.name}' takes values in [{interval[0]}, {interval[1]}] "
                             "over the "
                             f"enclosing loops, outside its dimension [0, {size}) (shape "
                             f"[{', '.join(str(getattr(d, 'value', d)) for d in tensor.shape)}])", tok)

    def check_not_negative(self, tensor: Tensor, indices: tuple[E.Expr, ...], tok: Token) -> None:
        """Header-less text: a shape is inferred to cover the largest index, but no shape covers
        an unguarded negative one."""
        if self.guards or not (self.scope.in_function and self.scope.check_bounds):
            return
        for k, index in enumerate(indices):
            interval = self.interval(index) if index.dtype.element_of().is_integral else None
            if interval is not None and interval[0] < 0:
                self.scope.error(f"index {k} of '{tensor.name}' takes values down to {interval[0]} over the "
                                 f"enclosing loops; an index must be >= 0", tok)

    def interval(self, e: E.Expr, depth: int = 0) -> Interval | None:
        """Constant [lo, hi] of an integer index over the enclosing loops, if computable."""
        if depth > 64:
            return None
        return int_interval(e, lambda var: self.var_interval(var, depth + 1))

    def var_interval(self, var: E.Var, depth: int) -> Interval | None:
        if self.iters.get(var.name):
            return self.interval(self.iters[var.name][-1], depth + 1)
        if self.loops.get(var.name):
            lo, extent = self.loops[var.name][-1]
            lo_i, ext_i = self.interval(lo, depth + 1), self.interval(extent, depth + 1)
            if lo_i is None or ext_i is None or ext_i[1] < 1:
                return None
            return (lo_i[0], lo_i[1] + ext_i[1] - 1)
        return None

    def loop_extent(self, index: E.Expr) -> E.Expr | None:
        """The extent of the loop an index walks from 0 (through iter var bindings)."""
        seen = 0
        while isinstance(index, E.Var) and self.iters.get(index.name) and seen < 64:
            index, seen = self.iters[index.name][-1], seen + 1
        if isinstance(index, E.Var) and self.loops.get(index.name):
            lo, extent = self.loops[index.name][-1]
            if isinstance(lo, (E.IntImm, E.UIntImm)) and lo.value == 0:
                return extent
        return None

    # -- finishing ------------------------------------------------------------------------------
    def final_shape(self, name: str) -> tuple[E.Expr, ...]:
        shape: list[E.Expr] = []
        consts = self.const_sizes.get(name, [])
        for k, const in enumerate(consts):
            sym = self.sym_sizes[name][k]
            dtype = self.index_dtypes[name][k]
            if sym is not None:
                shape.append(sym)
            elif const is not None:
                shape.append(E.const(const, dtype))
            else:
                shape.append(E.Var(f"{name}_d{k}", dtype, is_symbolic_constant=True))
        return tuple(shape)

    def compute_finals(self) -> dict[str, Tensor]:
        if self.finals is not None:
            return self.finals
        shapes = {name: self.final_shape(name) for name in self.provisionals}
        buffers: dict[str, Buffer] = {}
        # Base tensors first, so `T__reduce_init` finds the buffer of `T`.
        for name in sorted(self.provisionals, key=lambda n: n.endswith(_REDUCE_INIT)):
            buf_name = buffer_name_of(name)
            if buf_name not in buffers:
                base = buf_name[1:]
                shape = shapes.get(base, shapes[name])
                buffers[buf_name] = Buffer(buf_name, shape, dt.float32)
        self.finals = {name: Tensor(name, shapes[name], dt.float32, buffers[buffer_name_of(name)])
                       for name in self.provisionals}
        return self.finals

    def finish(self, node: Any) -> Any:
        """`node` with every provisional tensor (and its buffer) replaced by the final one."""
        if not self.provisionals:
            return node
        finals = self.compute_finals()
        return _Replace(self, finals).visit(node)

    def final_tensor(self, name: str) -> Tensor:
        finals = self.compute_finals()
        if name not in finals:
            self.provisional(name)
            self.finals = None
            finals = self.compute_finals()
        return finals[name]

    def final_tensor_for_buffer(self, buffer_name: str) -> Tensor | None:
        finals = self.compute_finals()
        named = finals.get(buffer_name[1:])
        if named is not None and named.buffer.name == buffer_name:
            return named
        return next((t for t in finals.values() if t.buffer.name == buffer_name), None)

    def stored_buffer_objects(self) -> list[Buffer]:
        finals = self.compute_finals()
        out = []
        for name in self.stored_names:
            tensor = finals.get(name) or self.scope.section.tensors.get(name) \
                or self.scope.decls.global_section.tensors.get(name)
            if tensor is not None:
                out.append(tensor.buffer)
        return out


class _Replace(Mutator):
    def __init__(self, inference: TensorInference, finals: dict[str, Tensor]) -> None:
        self.inference, self.finals = inference, finals
        self.buffers = {t.buffer.name: t.buffer for t in finals.values()}

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        if self.inference.is_provisional(tensor):
            return self.finals[tensor.name]
        return tensor

    def _buffer(self, buffer: Buffer) -> Buffer:
        if not buffer.shape and buffer.name in self.buffers:
            return self.buffers[buffer.name]
        return buffer

    def visit_alloc(self, node: S.Alloc) -> S.Alloc:
        node = self.generic_visit(node)
        new = self._buffer(node.buffer)
        return node if new is node.buffer else _replace(node, buffer=new)

    def visit_free(self, node: S.Free) -> S.Free:
        new = self._buffer(node.buffer)
        return node if new is node.buffer else _replace(node, buffer=new)


def _replace(node: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(node, **changes)
