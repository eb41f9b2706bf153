"""The compute DSL (TVM te / CINN lang style): symbolic dims, placeholders, computes, reductions.

    S = sym("S")
    X = placeholder((S, 768), "float32", "X")
    k = reduce_axis(768, "k")
    SS = compute((S,), lambda i: reduce_sum(X[i, k] * X[i, k], [k]), "SS")
    func = cinn_py.lower("fn", [X, SS])

A `compute` calls `fcompute` once with its axis Vars (`i j k a b ...`, CINN's default axis names)
and keeps the resulting expression; `cinn_py.lower` turns the tensors into a ScheduleBlock AST.
Shapes with a symbolic dim use int64 indices (as CINN's dynamic-shape lowering does), static
shapes int32. Python numbers promote to the dtype of the other operand; mixing dtypes otherwise
needs an explicit `cast` (a `LoweringError` names the op and both dtypes).
"""

from __future__ import annotations

import dataclasses
import inspect
import weakref
from collections.abc import Callable, Sequence
from typing import Union


from cinn_py.diagnostics import LoweringError
from cinn_py.frontend import checks
from cinn_py.frontend.math_ops import (  # noqa: F401 - re-exported DSL functions
    abs, acos, acosh, asin, asinh, atan, atan2, atanh, cast, cbrt, ceil, cos, cosh, erf, exp, exp2,
    expm1, floor, fmod, isfinite, isinf, isnan, log, log1p, log2, log10, maximum, minimum, pow, round,
    rsqrt, select, sigmoid, sin, sinh, sqrt, tan, tanh, trunc,
)
from cinn_py.frontend.reduce_axes import _reduce_axes, identity
from cinn_py.ir import (
    ALL_SCALAR_DTYPES, MAX_EXPR_DEPTH, DType, Expr, IntImm, Load, Reduce, ReduceType, Tensor, Var, as_expr,
    child_fields, const, default_axis_name, dtype_of, expr_depth, int32, int64, make_tensor, unique_name,
    walk,
)

Index = Union[Expr, int]

# ir.Tensor (by identity) -> the ComputeTensor that owns it, to find a body's producers.
_OWNERS: weakref.WeakValueDictionary[int, ComputeTensor] = weakref.WeakValueDictionary()


class ComputeTensor:
    """A placeholder or computed tensor of the DSL. `X[i, j]` builds a `Load`.

    Attributes:
        tensor: the IR tensor (buffer `_<name>`).
        axis: the loop Vars `fcompute` was called with (empty for placeholders).
        body: the computed expression (a `Reduce` for reductions); None for placeholders.
        producers: the tensors `body` reads, in first-read order.
    """

    __slots__ = ("tensor", "axis", "body", "producers", "__weakref__")

    def __init__(self, tensor: Tensor, axis: tuple[Var, ...] = (), body: Expr | None = None,
                 producers: tuple[ComputeTensor, ...] = ()) -> None:
        self.tensor = tensor
        self.axis = axis
        self.body = body
        self.producers = producers
        _OWNERS[id(tensor)] = self

    @property
    def name(self) -> str:
        return self.tensor.name

    @property
    def shape(self) -> tuple[Expr, ...]:
        return self.tensor.shape

    @property
    def dtype(self) -> DType:
        return self.tensor.dtype

    @property
    def ndim(self) -> int:
        return len(self.tensor.shape)

    @property
    def is_placeholder(self) -> bool:
        return self.body is None

    @property
    def is_reduction(self) -> bool:
        return isinstance(self.body, Reduce)

    def __getitem__(self, indices: Index | tuple[Index, ...]) -> Load:
        idx = indices if isinstance(indices, tuple) else (indices,)
        if len(idx) != self.ndim:
            raise LoweringError(f"tensor '{self.name}' has rank {self.ndim} but was indexed with "
                                f"{len(idx)} index(es)")
        index_dtype = int64 if any(d.dtype == int64 for d in self.shape) else int32
        return Load(self.tensor, tuple(self._index(k, i, index_dtype) for k, i in enumerate(idx)))

    def _index(self, k: int, value: object, index_dtype: DType) -> Expr:
        if isinstance(value, slice):
            raise TypeError(f"tensor '{self.name}': slicing is not supported; index each element")
        if isinstance(value, bool) or not isinstance(value, (int, Expr)):
            raise TypeError(f"tensor '{self.name}': index {k} must be an int or an integer "
                            f"expression, got {type(value).__name__}")
        expr = const(value, index_dtype) if isinstance(value, int) else value
        if not expr.dtype.is_integral or expr.dtype.lanes != 1:
            raise LoweringError(f"tensor '{self.name}': index {k} must be an integer expression, "
                                f"got dtype {expr.dtype}", checks.excerpt(expr))
        self._check_constant_in_bounds(k, expr)
        return expr

    def _check_constant_in_bounds(self, k: int, expr: Expr) -> None:
        dim = self.shape[k]
        if not isinstance(expr, IntImm):
            return
        upper = dim.value if isinstance(dim, IntImm) else None
        if expr.value < 0 or (upper is not None and expr.value >= upper):
            bound = f"[0, {upper})" if upper is not None else f"[0, {dim})"
            raise LoweringError(f"tensor '{self.name}': constant index {expr.value} is out of bounds "
                                f"{bound} in dimension {k}")

    def __repr__(self) -> str:
        kind = "placeholder" if self.is_placeholder else "compute"
        dims = ", ".join(str(d) for d in self.shape)
        return f"<{kind} {self.name}[{dims}] {self.dtype}>"


def owner_of(tensor: Tensor) -> ComputeTensor | None:
    """The ComputeTensor that created `tensor` (None if it was built by hand)."""
    owner = _OWNERS.get(id(tensor))
    return owner if owner is not None and owner.tensor is tensor else None


def sym(name: str, lower: int = 1, upper: int | None = None) -> Var:
    """A symbolic dim: `Var(name, int64, is_symbolic_constant=True)` in [lower, upper).

    Args:
        name: printed name (`S0`); becomes a trailing int64 argument of lowered functions.
        lower: inclusive lower bound (default 1: dims are non-empty).
        upper: exclusive upper bound, or None when unbounded (`Var.upper_bound` semantics).
    """
    checks.check_name(name, "symbolic dim")
    for label, value in (("lower", lower), ("upper", upper)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"sym '{name}': {label} must be an int, got {type(value).__name__}")
    if lower < 0:
        raise ValueError(f"sym '{name}': lower bound must be >= 0, got {lower}")
    if upper is not None and upper <= lower:
        raise ValueError(f"sym '{name}': upper bound {upper} (exclusive) must exceed lower bound {lower}")
    return Var(name, int64, lower_bound=const(lower, int64),
               upper_bound=None if upper is None else const(upper, int64), is_symbolic_constant=True)


def placeholder(shape: Sequence[int | Expr], dtype: str | DType, name: str) -> ComputeTensor:
    """An input tensor of `shape` (ints, syms or expressions of syms) and `dtype`."""
    checks.check_name(name, "placeholder")
    dims, _ = checks.normalize_shape(shape, f"placeholder '{name}'")
    elem = _element_dtype(dtype, f"placeholder '{name}'")
    _check_element_count(dims, elem, f"placeholder '{name}'")
    return ComputeTensor(make_tensor(name, dims, elem))


def _check_element_count(dims: tuple[Expr, ...], dtype: DType, what: str) -> None:
    message = checks.element_count_error(dims, dtype, what)
    if message is not None:
        raise LoweringError(message)


def _element_dtype(dtype: str | DType, what: str) -> DType:
    resolved = dtype_of(dtype)
    if resolved not in ALL_SCALAR_DTYPES:
        raise TypeError(f"{what}: dtype must be a scalar bool/int/uint/float dtype, got {resolved}")
    return resolved


def reduce_axis(extent: int | Expr | tuple[int | Expr, int | Expr], name: str | None = None) -> Var:
    """A reduction axis over [0, extent) (or [lo, hi) given a pair), named `name` or `reduce_k`,
    `reduce_k_0`, ... Use it inside one `reduce_*` call of a compute body."""
    name = unique_name("reduce_k") if name is None else checks.check_name(name, "reduce axis")
    lo, hi = extent if isinstance(extent, tuple) else (0, extent)
    (lo_e, hi_e), index = checks.normalize_shape((lo, hi), f"reduce axis '{name}'")
    if isinstance(lo_e, IntImm) and isinstance(hi_e, IntImm) and hi_e.value < lo_e.value:
        raise LoweringError(f"reduce axis '{name}': empty range [{lo_e.value}, {hi_e.value})")
    return Var(name, index, lower_bound=lo_e, upper_bound=hi_e, is_reduce_axis=True)


def compute(shape: Sequence[int | Expr], fcompute: Callable[..., Expr | int | float | bool],
            name: str) -> ComputeTensor:
    """The tensor `name[i, j, ...] = fcompute(i, j, ...)` over `shape`.

    `fcompute` receives one index Var per dimension (`i, j, k, a, ...`) and returns an
    expression (a `reduce_*` call for a reduction) or a Python number.
    """
    checks.check_name(name, "compute")
    what = f"compute '{name}'"
    dims, index = checks.normalize_shape(shape, what)
    if not callable(fcompute):
        raise TypeError(f"{what}: fcompute must be callable, got {type(fcompute).__name__}")
    _check_arity(fcompute, len(dims), what)
    axis = tuple(Var(default_axis_name(d), index, lower_bound=const(0, index), upper_bound=extent)
                 for d, extent in enumerate(dims))
    body = _as_body(fcompute(*axis), what)
    body, parts = _split_deep_body(body, axis, dims, name)
    checks.check_reduce_placement(body, what, [v.name for v in axis])
    checks.check_operand_dtypes(body, what)
    elem = _element_dtype(body.dtype, what)
    _check_element_count(dims, elem, what)
    result = ComputeTensor(make_tensor(name, dims, elem), axis, body, _producers(body, what))
    del parts  # the split-off temporaries are alive through `result.producers` from here on
    return result


def _split_deep_body(body: Expr, axis: tuple[Var, ...], dims: tuple[Expr, ...], name: str
                     ) -> tuple[Expr, list[ComputeTensor]]:
    """A body deeper than MAX_EXPR_DEPTH, with every subtree that reaches half that depth computed
    into a temporary tensor `<name>_part_k[i, j, ...]` of the same shape (same values: each op
    already rounds to its dtype), so no expression the compiler handles grows past the bound."""
    parts: list[ComputeTensor] = []  # owners are weakly registered: keep them alive for the caller
    if expr_depth(body) <= MAX_EXPR_DEPTH:
        return body, parts
    if isinstance(body, Reduce) or any(isinstance(n, Reduce) for n in walk(body)):
        raise LoweringError(f"compute '{name}': the reduction body is {expr_depth(body)} levels deep, more "
                            "than "
                            f"MAX_EXPR_DEPTH = {MAX_EXPR_DEPTH}; compute parts of it into their own tensors")
    limit = MAX_EXPR_DEPTH // 2
    new: dict[int, tuple[Expr, int]] = {}  # id(node) -> (rewritten node, its depth)
    stack: list[tuple[Expr, bool]] = [(body, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in new:
            continue
        kids = [v for v in _child_exprs(node) if id(v) not in new]
        if kids and not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
            continue
        rebuilt, depth = _rebuilt(node, new)
        if depth >= limit and node is not body and rebuilt.dtype in ALL_SCALAR_DTYPES:
            part = ComputeTensor(make_tensor(unique_name(f"{name}_part"), dims, rebuilt.dtype), axis, rebuilt,
                                 _producers(rebuilt, f"compute '{name}'"))
            parts.append(part)
            rebuilt, depth = part[axis], 2 if axis else 1
        new[id(node)] = (rebuilt, depth)
    return new[id(body)][0], parts


def _child_exprs(node: Expr) -> list[Expr]:
    out: list[Expr] = []
    if isinstance(node, Var):
        return out  # its bounds are metadata, not operands
    for _, value in child_fields(node):
        out.extend(v for v in (value if isinstance(value, tuple) else (value,)) if isinstance(v, Expr))
    return out


def _rebuilt(node: Expr, new: dict[int, tuple[Expr, int]]) -> tuple[Expr, int]:
    changes: dict[str, object] = {}
    depth = 1
    if isinstance(node, Var):
        return node, depth
    for field_name, value in child_fields(node):
        items = value if isinstance(value, tuple) else (value,)
        if not any(isinstance(v, Expr) for v in items):
            continue
        done = [new[id(v)] if isinstance(v, Expr) else (v, 0) for v in items]
        depth = max([depth, *(d + 1 for _, d in done)])
        parts = tuple(n for n, _ in done)
        replacement = parts if isinstance(value, tuple) else parts[0]
        if any(a is not b for a, b in zip(parts, items)):
            changes[field_name] = replacement
    return (dataclasses.replace(node, **changes) if changes else node), depth  # type: ignore[type-var]


def _check_arity(fcompute: Callable[..., object], ndim: int, what: str) -> None:
    try:
        signature = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return  # builtins without a signature: let the call decide
    try:
        signature.bind(*range(ndim))
    except TypeError:
        raise TypeError(f"{what}: fcompute must take {ndim} index argument(s) (one per dimension), "
                        f"but its signature is {signature}") from None


def _as_body(value: object, what: str) -> Expr:
    if isinstance(value, ComputeTensor):
        raise TypeError(f"{what}: fcompute returned the tensor '{value.name}' itself; index it "
                        f"({value.name}[i, ...])")
    if isinstance(value, bool):
        # `X[i] == 0` is structural equality on IR nodes (a Python bool), not a comparison node.
        raise TypeError(f"{what}: fcompute returned a Python bool; for an elementwise comparison use "
                        "ir.eq(a, b) / ir.ne(a, b) instead of == / !=, and for a constant use ir.const(True)")
    if isinstance(value, (int, float)):
        return as_expr(value)
    if not isinstance(value, Expr):
        raise TypeError(f"{what}: fcompute must return an IR expression or a number, "
                        f"got {type(value).__name__}")
    return value


def _producers(body: Expr, what: str) -> tuple[ComputeTensor, ...]:
    found: dict[int, ComputeTensor] = {}
    for node in walk(body):
        if isinstance(node, Load) and id(node.tensor) not in found:
            owner = owner_of(node.tensor)
            if owner is None:
                raise LoweringError(f"{what}: reads tensor '{node.tensor.name}', which was not created "
                                    "by placeholder() or compute()", checks.excerpt(node))
            found[id(node.tensor)] = owner
    return tuple(found.values())


# --------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------
def reduce_sum(expr: Expr, axes: Var | Sequence[Var]) -> Reduce:
    """Sum of `expr` over `axes` (identity 0)."""
    return _reduce(ReduceType.SUM, "reduce_sum", expr, axes)


def reduce_prod(expr: Expr, axes: Var | Sequence[Var]) -> Reduce:
    """Product of `expr` over `axes` (identity 1)."""
    return _reduce(ReduceType.MUL, "reduce_prod", expr, axes)


def reduce_max(expr: Expr, axes: Var | Sequence[Var]) -> Reduce:
    """Max of `expr` over `axes` (identity -inf for floats, the lowest value for integers)."""
    return _reduce(ReduceType.MAX, "reduce_max", expr, axes)


def reduce_min(expr: Expr, axes: Var | Sequence[Var]) -> Reduce:
    """Min of `expr` over `axes` (identity +inf for floats, the highest value for integers)."""
    return _reduce(ReduceType.MIN, "reduce_min", expr, axes)


def reduce_all(expr: Expr, axes: Var | Sequence[Var]) -> Reduce:
    """Logical and of a bool `expr` over `axes` (identity true)."""
    return _reduce(ReduceType.ALL, "reduce_all", expr, axes)


def reduce_any(expr: Expr, axes: Var | Sequence[Var]) -> Reduce:
    """Logical or of a bool `expr` over `axes` (identity false)."""
    return _reduce(ReduceType.ANY, "reduce_any", expr, axes)


def _reduce(kind: ReduceType, fn: str, expr: object, axes: object) -> Reduce:
    if isinstance(expr, ComputeTensor):
        raise TypeError(f"{fn}: got the tensor '{expr.name}' itself; reduce an element expression "
                        f"such as {expr.name}[i, k]")
    if not isinstance(expr, Expr):
        raise TypeError(f"{fn}: expected an IR expression to reduce, got {type(expr).__name__}")
    axis_tuple = _reduce_axes(axes, fn)
    if any(isinstance(n, Reduce) for n in walk(expr)):
        raise LoweringError(f"{fn}: reductions cannot be nested; reduce over all axes at once "
                            "(axes=[k0, k1]) or compute the inner reduction into its own tensor",
                            checks.excerpt(expr))
    return Reduce(kind, expr, identity(kind, expr.dtype, fn), axis_tuple)
