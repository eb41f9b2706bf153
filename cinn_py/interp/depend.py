"""When may a loop nest run as one vectorised numpy evaluation? (conservative dependence test)

The body of a perfect loop nest is straight-line (stores, ifs, lets, schedule blocks; no inner
loops or allocations). Evaluating it once over all iterations runs it statement by statement
instead of iteration by iteration, which is the serial result when

- *parallel*: every buffer the body writes is accessed (stored and loaded) at one and the same
  index tuple, after substituting block iter vars and lets, and that tuple is injective over the
  vectorised iterations, so each iteration touches only its own elements. Injectivity is proved
  per dimension from affine coefficients with the mixed-radix rule (|a_1| > sum |a_j| (e_j - 1)
  for coefficients sorted by size); coefficients may be symbolic and are evaluated at run time;
- *reduction*: the body's only store is `T[idx] = T[idx] OP e` (OP one of + * cinn_max cinn_min
  && ||) and nothing else reads `T`; then `e` is evaluated for all iterations and folded into
  `T` in iteration order (if `idx` varies with the vectorised loops, only where `ufunc.at` is an
  exact fold: not for float cinn_max/cinn_min or bfloat16).

Anything else runs serially.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cinn_py.ir import (
    Add, Alloc, And, BinaryOp, Block, Evaluate, Expr, For, Free, IfThenElse, IntImm, Let, Load, Max, Min, Mul,
    Or, ScheduleBlock, ScheduleBlockRealize, Stmt, Store, Var, substitute, walk,
)
from cinn_py.symbolic.linear import affine_coefficients, mixed_radix

CoefFn = Callable[[dict[str, Any]], int]
Coefs = dict[str, CoefFn]
LANE = "__lane__"

_REDUCE_OPS: dict[type, str] = {Add: "sum", Mul: "prod", Max: "max", Min: "min", And: "all", Or: "any"}


@dataclass
class ReducePattern:
    """`store` is `T[idx] = load OP operand` with `load` reading `T[idx]`."""

    store: Store
    kind: str
    operand: Expr
    index_vars: frozenset[str]


@dataclass
class BodyAccesses:
    """Accesses of a straight-line body, with indices in terms of loop and outer variables."""

    stores: list[tuple[Store, tuple[Expr, ...]]] = field(default_factory=list)
    loads: list[tuple[Load, tuple[Expr, ...]]] = field(default_factory=list)
    mapping: dict[Var, Expr] = field(default_factory=dict)


def is_straight_line(stmt: Stmt) -> bool:
    """No loops, allocations or frees below `stmt`."""
    return not any(isinstance(n, (For, Alloc, Free)) for n in walk(stmt))


def collect_accesses(body: Stmt) -> BodyAccesses:
    acc = BodyAccesses()
    _collect(body, acc)
    return acc


def _collect_expr(e: Expr, acc: BodyAccesses) -> None:
    for node in walk(e):
        if isinstance(node, Load):
            acc.loads.append((node, tuple(substitute(i, acc.mapping) for i in node.indices)))


def _collect(node: Stmt, acc: BodyAccesses) -> None:
    if isinstance(node, Block):
        for s in node.stmts:
            _collect(s, acc)
    elif isinstance(node, Store):
        _collect_expr(node.value, acc)
        for i in node.indices:
            _collect_expr(i, acc)
        acc.stores.append((node, tuple(substitute(i, acc.mapping) for i in node.indices)))
    elif isinstance(node, IfThenElse):
        _collect_expr(node.condition, acc)
        _collect(node.true_case, acc)
        if node.false_case is not None:
            _collect(node.false_case, acc)
    elif isinstance(node, ScheduleBlockRealize):
        for var, value in zip(node.schedule_block.iter_vars, node.iter_values):
            _collect_expr(value, acc)
            acc.mapping[var] = substitute(value, acc.mapping)
        _collect(node.schedule_block.body, acc)
    elif isinstance(node, ScheduleBlock):
        _collect(node.body, acc)
    elif isinstance(node, Let):
        if node.body is not None:
            _collect_expr(node.body, acc)
            acc.mapping[node.symbol] = substitute(node.body, acc.mapping)
    elif isinstance(node, Evaluate):
        _collect_expr(node.value, acc)


def same_index_everywhere(acc: BodyAccesses) -> bool:
    """Every written buffer is stored and loaded through one tensor shape and one index tuple."""
    keys: dict[str, tuple[Any, ...]] = {}
    for store, idx in acc.stores:
        key = (store.tensor.shape, idx)
        if keys.setdefault(store.tensor.buffer.name, key) != key:
            return False
    for load, idx in acc.loads:
        name = load.tensor.buffer.name
        if name in keys and keys[name] != (load.tensor.shape, idx):
            return False
    return True


def free_vars(e: Expr) -> set[str]:
    return {n.name for n in walk(e) if isinstance(n, Var)}


class AffineAnalyzer:
    """Affine coefficients of index expressions in a set of loop variables, as run-time closures.

    The coefficients come from `cinn_py.symbolic.linear.affine_coefficients` (the vector lane of
    a `Ramp` under the key `LANE`); `compile_int(expr)` turns each loop-invariant coefficient into
    a closure over the environment, or returns None if it cannot (it reads memory or a variable
    bound inside the body). `lanes` is the widest vector index seen.
    """

    def __init__(self, loop_vars: frozenset[str], compile_int: Callable[[Expr], CoefFn | None]) -> None:
        self.loop_vars = loop_vars
        self.compile_int = compile_int
        self.lanes = 1

    def coefs(self, e: Expr) -> Coefs | None:
        """{var: coefficient} with e == sum(coef * var) + (invariant), or None if not affine."""
        found = affine_coefficients(e, self.loop_vars, lane=LANE)
        if found is None:
            return None
        out: Coefs = {}
        for name, coef in found.items():
            fn = _const(int(coef.value)) if isinstance(coef, IntImm) else self.compile_int(coef)
            if fn is None:
                return None
            out[name] = fn
        if LANE in out:
            self.lanes = max(self.lanes, e.dtype.lanes)
        return out


def _const(value: int) -> CoefFn:
    return lambda env: value


def injective(dims: list[Coefs | None], extents: dict[str, int], env: dict[str, Any]) -> bool:
    """Whether the index tuple with per-dimension coefficients `dims` takes distinct values for
    distinct points of the box `extents` (mixed-radix rule, applied until no dimension helps)."""
    unresolved = {v for v, n in extents.items() if n > 1}
    progress = True
    while unresolved and progress:
        progress = False
        for dim in dims:
            if dim is None:
                continue
            terms = {v: (abs(int(f(env))), extents[v]) for v, f in dim.items() if v in unresolved}
            terms = {v: t for v, t in terms.items() if t[0] != 0}
            if not terms or not mixed_radix(terms.values()):
                continue
            unresolved -= set(terms)
            progress = True
    return not unresolved


def match_reduction(acc: BodyAccesses, loop_vars: frozenset[str]) -> ReducePattern | None:
    """The reduction pattern of the body, if it is one (see module doc)."""
    if len(acc.stores) != 1:
        return None
    store, idx = acc.stores[0]
    value = store.value
    kind = _REDUCE_OPS.get(type(value))
    if kind is None:
        return None
    assert isinstance(value, BinaryOp)
    buffer = store.tensor.buffer.name
    candidates = [(value.a, value.b)]
    # float cinn_max/cinn_min are not commutative (NaN, signed zero): only `T OP e` is a fold of T.
    if not (kind in ("max", "min") and value.dtype.is_float):
        candidates.append((value.b, value.a))
    reads = [(load, lidx) for load, lidx in acc.loads if load.tensor.buffer.name == buffer]
    if len(reads) != 1:
        return None
    load, load_idx = reads[0]
    for acc_side, operand in candidates:
        if acc_side is load and load_idx == idx and load.tensor.shape == store.tensor.shape:
            index_vars = frozenset(set().union(*(free_vars(i) for i in idx)) if idx else set()) & loop_vars
            return ReducePattern(store, kind, operand, index_vars)
    return None
