"""Shape algebra of the NetBuilder frontend: dims that are ints or symbolic int64 expressions.

Static dims stay Python ints; a symbolic dim is a `cp.sym` Var or an int64 expression of them,
kept simplified by `cinn_py.symbolic.simplify`. Equality of symbolic dims is decided by
`cinn_py.symbolic.prove_eq` (rule based, sympy as the fallback), so `S0 * 768` and
`(S0 * 12) * 64` are the same dim. "Not proven equal" is treated as different: shape inference
never guesses (CINN's `DimExpr` inference adds a constraint instead; we ask the user to be exact).
The one exception is a fact the caller vouches for with `assumed_dims` (the torch backend passes
the equalities torch's guards check before every call, `s0*s1 == 20`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from cinn_py.frontend.ops.base import Dim, FrontendError, Shape, SymbolEnv
from cinn_py.ir import Expr, IntImm, Var, const, int64, walk
from cinn_py.symbolic.integer import eval_int

if TYPE_CHECKING:
    import numpy as np


def sym_var(name: str) -> Var:
    from cinn_py.frontend.compute import sym  # noqa: PLC0415 - keep the registry import light

    return sym(name)


def to_dim(value: object, what: str) -> Dim:
    """A shape entry from user input: int >= 0, a symbolic-dim name, a `cp.sym` Var or an int64
    expression of symbolic dims."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int or a symbolic dim, got bool")
    if isinstance(value, (int, _np_int())):
        if int(value) < 0:
            raise FrontendError(f"{what} must be non-negative, got {int(value)}")
        return int(value)
    if isinstance(value, str):
        return sym_var(value)
    if isinstance(value, Expr):
        return simplify_dim(value, what)
    raise TypeError(f"{what} must be an int, a symbolic dim name or cp.sym(...), got {type(value).__name__}")


def _np_int() -> type[np.integer[Any]]:
    import numpy as np  # noqa: PLC0415

    return np.integer


def simplify_dim(value: Expr, what: str = "dim") -> Dim:
    if isinstance(value, IntImm):
        return value.value
    bad = [n.name for n in walk(value) if isinstance(n, Var) and not n.is_symbolic_constant]
    if bad or not value.dtype.is_int:
        raise FrontendError(f"{what} must be an integer expression of symbolic dims (cp.sym), got {value}")
    if value.dtype != int64:
        raise FrontendError(f"{what}: symbolic dims are int64, got a {value.dtype} expression {value}")
    from cinn_py.symbolic import simplify  # noqa: PLC0415

    out = simplify(value)
    return out.value if isinstance(out, IntImm) else out


def as_expr(d: Dim) -> Expr:
    return const(d, int64) if isinstance(d, int) else d


def fmt_dim(d: Dim) -> str:
    if isinstance(d, int):
        return str(d)
    if isinstance(d, Var):
        return d.name
    from cinn_py.symbolic import to_sympy  # noqa: PLC0415

    return str(to_sympy(d)).replace("**", "^")


def fmt_shape(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(fmt_dim(d) for d in shape) + "]"


DimFact = tuple[Expr, int]
"""An expression of symbolic dims and the int it equals on every run (`s0*s1`, 20)."""

_ASSUMED: ContextVar[tuple[DimFact, ...]] = ContextVar("cinn_py_assumed_dims", default=())


@contextmanager
def assumed_dims(facts: Sequence[DimFact]) -> Iterator[None]:
    """Within the block, `dims_equal` also uses `facts`: equalities that no range of the symbols
    implies but that the caller guarantees for every run of the Program being built. Torch pins a
    product without pinning its factors (`flat.expand(20)` of a `[s0*s1]` tensor guards
    `s0*s1 == 20`); a reshape of `[s0, s1]` to `[20]` is then valid, and provable only so."""
    token = _ASSUMED.set(tuple(facts))
    try:
        yield
    finally:
        _ASSUMED.reset(token)


def dims_equal(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    from cinn_py.symbolic import prove_eq  # noqa: PLC0415

    if prove_eq(as_expr(a), as_expr(b)):
        return True
    facts = _ASSUMED.get()
    return bool(facts) and _equal_given(a, b, facts)


def _equal_given(a: Dim, b: Dim, facts: Sequence[DimFact]) -> bool:
    """Whether `a - b` becomes 0 once each fact's expression is replaced by its value (sympy
    replaces products inside products: `3*s0*s1` -> 60 given `s0*s1 == 20`)."""
    import sympy  # noqa: PLC0415 - slow to import, needed only with facts

    from cinn_py.symbolic import to_sympy  # noqa: PLC0415

    diff = sympy.expand(to_sympy(as_expr(a)) - to_sympy(as_expr(b)))
    for _ in range(len(facts)):  # a fact may apply only after another one did
        before = diff
        for expr, value in facts:
            diff = sympy.expand(diff.subs(to_sympy(expr), value))
        if diff == 0 or diff == before:
            break
    return diff == 0


def shapes_equal(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b))


def mul_dims(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return simplify_dim(as_expr(a) * as_expr(b))


def add_dims(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return simplify_dim(as_expr(a) + as_expr(b))


def div_dims(a: Dim, b: Dim) -> Dim | None:
    """`a / b` when it is provably a dim (an int, or a polynomial of symbolic dims with integer
    coefficients: `(6 * S0) / 3` is `2 * S0`); None when it may not divide evenly (`S0 / 2`)."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b if b != 0 and a % b == 0 else None
    import sympy  # noqa: PLC0415

    from cinn_py.symbolic import from_sympy, to_sympy  # noqa: PLC0415

    q = sympy.cancel(to_sympy(as_expr(a)) / to_sympy(as_expr(b)))
    _, den = sympy.fraction(q)
    coeffs = sympy.Poly(q, *q.free_symbols).coeffs() if q.free_symbols else [q]
    if den != 1 or not q.is_polynomial() or not all(c.is_integer for c in coeffs):
        return None
    syms = {v.name: v for v in symbols_of((a, b))}
    return simplify_dim(from_sympy(q, variables=syms))


def numel(shape: Sequence[Dim]) -> Dim:
    total: Dim = 1
    for d in shape:
        total = mul_dims(total, d)
    return total


def symbols_of(shape: Sequence[Dim]) -> list[Var]:
    """Symbolic dims used in `shape`, in first-use order."""
    found: dict[str, Var] = {}
    for d in shape:
        if isinstance(d, Expr):
            for n in walk(d):
                if isinstance(n, Var) and n.is_symbolic_constant:
                    found.setdefault(n.name, n)
    return list(found.values())


def eval_dim(d: Dim, env: SymbolEnv) -> int:
    if isinstance(d, int):
        return d
    return eval_int(d, env)


def eval_shape(shape: Sequence[Dim], env: SymbolEnv) -> tuple[int, ...]:
    return tuple(eval_dim(d, env) for d in shape)


def broadcast_shapes(a: Shape, b: Shape, op: str) -> Shape:
    """numpy broadcasting (right-aligned); a dim pairs with an equal dim or with 1 — symbolic dims
    included, so `[S0, 768]` and `[1, 768]` give `[S0, 768]` but `[S0, 768]` and `[4, 768]` fail."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[Dim] = []
    for x, y in zip(pa, pb):
        if isinstance(x, int) and x == 1:
            out.append(y)
        elif isinstance(y, int) and y == 1 or dims_equal(x, y):
            out.append(x)
        else:
            raise FrontendError(f"{op}: shapes {fmt_shape(a)} and {fmt_shape(b)} are not broadcastable: "
                                f"{fmt_dim(x)} vs {fmt_dim(y)}")
    return tuple(out)


def normalize_axis(axis: object, ndim: int, op: str, what: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, _np_int())):
        raise TypeError(f"{op}: {what} must be an int, got {type(axis).__name__}")
    a = int(axis)
    if not -ndim <= a < max(ndim, 1) or (ndim == 0):
        raise FrontendError(f"{op}: {what} {a} is out of range for a tensor of rank {ndim}")
    return a % ndim


def normalize_axes(axes: object, ndim: int, op: str) -> tuple[int, ...]:
    """Sorted, de-duplicated non-negative axes; None means all axes."""
    if axes is None:
        return tuple(range(ndim))
    items = [axes] if isinstance(axes, (int, _np_int())) and not isinstance(axes, bool) else axes
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{op}: axes must be an int, a list of ints or None, got {type(axes).__name__}")
    out = [normalize_axis(a, ndim, op) for a in items]
    if len(set(out)) != len(out):
        raise FrontendError(f"{op}: axes {list(items)} name the same axis twice")
    return tuple(sorted(out))


def index_dim(dim: Any, like: Expr) -> Expr:
    """A tensor dim (int, IntImm or symbolic int64 expression) as an expression in the dtype of the
    index `like` (a tensor's static dims are int32 even where other tensors' symbolic dims make
    the loop indices int64, and the reverse)."""
    if isinstance(dim, IntImm):
        return const(dim.value, like.dtype)
    return const(dim, like.dtype) if isinstance(dim, int) else dim
