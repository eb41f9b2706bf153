"""`split(loop, factors)` (CINN `Split`, `ir_schedule.cc` / `impl/loop_transformation.cc`).

`for (i, 0, N)` becomes `for (i, 0, f0) { for (i_0, 0, f1) { ... } }` with `i` replaced by
`i * f1 + i_0` everywhere below (a split into more than MAX_EXPR_DEPTH loops leaves the variables
of its unit loops, always 0, out: the binding's size follows the factors other than 1, not the
loop count). Rules (CINN's `ValidateFactors` and the dynamic-shape variant):

- the loop starts at 0; factors are non-empty; int factors are > 0 or -1, at most one -1;
- constant extent N: without -1 the product must be >= N, with -1 the others' product must be
  <= N and -1 becomes ceil(N / product); a product > N adds the guard `if (index < N)`;
- symbolic extent: -1 becomes `(N + p - 1) / p` and the guard is always added (unless p == 1);
  without -1, Expr factors must have a product provably equal to N;
- new loop vars come from the name generator seeded with the old name (`i`, then `i_0`...);
- serial / unroll loops keep their kind on every new loop; a parallel loop keeps it on the
  outermost one only (Differs from CINN, which copies it everywhere: nested parallel loops
  cannot run on one thread pool). Bound and vectorized loops cannot be split (bind/vectorize
  after splitting).
"""

from __future__ import annotations

from collections.abc import Sequence

from cinn_py.ir import (
    MAX_EXPR_DEPTH, Block, DType, Expr, For, ForType, IfThenElse, LoweredFunc, Var, const, is_const_int,
    replace_stmt, unique_name,
)
from schedules.analysis.arith import as_int, product, prove_equal, simplify_index
from schedules.analysis.loops import vars_in
from schedules.primitives._tree import substitute_loop_vars
from schedules.errors import (
    ExtentMismatchError, InvalidArgumentError, LoopKindError, LoopStartError, schedule_error,
)
from schedules.registry import primitive

__all__ = ["split"]

_KEEPS_KIND = (ForType.SERIAL, ForType.UNROLLED, ForType.PARALLEL)


@primitive
def split(func: LoweredFunc, loop: For, factors: Sequence[int | Expr]) -> tuple[LoweredFunc, list[For]]:
    """Split `loop` by `factors`; returns the new function and the new loops, outer -> inner."""
    name = loop.loop_var.name
    if not is_const_int(loop.min, 0):
        raise schedule_error(LoopStartError, "split",
                             f"loop '{name}' must start at 0, but starts at {loop.min}",
                             func, loop)
    if loop.for_type not in _KEEPS_KIND:
        raise schedule_error(LoopKindError, "split", f"loop '{name}' is {loop.for_type.value}; only serial, "
                             "parallel or unrolled loops can be split (split before bind/vectorize)", func,
                             loop)
    extents, guarded = _resolve_factors(func, loop, factors)
    new_vars = [Var(unique_name(name), loop.loop_var.dtype) for _ in extents]
    index = _binding(new_vars, extents, loop.loop_var.dtype)
    body = substitute_loop_vars(loop.body, {loop.loop_var: index})
    if guarded:
        body = Block((IfThenElse(simplify_index(index < loop.extent), body),))
    loops: list[For] = []
    for k in reversed(range(len(new_vars))):
        kind = loop.for_type if (loop.for_type is not ForType.PARALLEL or k == 0) else ForType.SERIAL
        new = For(new_vars[k], const(0, loop.loop_var.dtype), extents[k], body, kind)
        loops.insert(0, new)
        body = Block((new,))
    return replace_stmt(func, loop, loops[0]), loops


def _binding(new_vars: list[Var], extents: list[Expr], dtype: DType) -> Expr:
    """The old loop's value `((v0 * e1 + v1) * e2 + v2) ...`. A split into more than
    MAX_EXPR_DEPTH loops leaves out the variables of its unit loops (always 0): of a constant
    extent's factors at most 63 are not 1, so the binding stays within the expression depth bound
    however many unit loops the split adds (a 1,000-way `[1] * 999 + [-1]` binds only its last
    loop). Smaller splits keep every variable: a block then depends on each of its loops (as
    `decompose_reduction` at a unit loop needs), as in CINN."""
    keep = [(var, extent) for var, extent in zip(new_vars, extents)
            if len(new_vars) <= MAX_EXPR_DEPTH or not is_const_int(extent, 1)]
    if not keep:
        return const(0, dtype)
    index: Expr = keep[0][0]
    for var, extent in keep[1:]:
        index = simplify_index(index * extent + var)
    return index


def _resolve_factors(func: LoweredFunc, loop: For, factors: Sequence[int | Expr]) -> tuple[list[Expr], bool]:
    """Validated extents of the new loops (-1 resolved) and whether a guard is needed."""
    name, extent, idt = loop.loop_var.name, loop.extent, loop.loop_var.dtype
    items = _normalise(func, loop, factors)
    ints = [f for f in items if isinstance(f, int)]
    if any(f == 0 or f < -1 for f in ints):
        raise schedule_error(InvalidArgumentError, "split",
                             f"factors must be positive or -1, got {_show(items)}",
                             func, loop)
    if ints.count(-1) > 1:
        raise schedule_error(InvalidArgumentError, "split",
                             f"at most one factor may be -1, got {_show(items)}",
                             func, loop)
    known = ([const(f, idt) if isinstance(f, int) else f for f in items
              if not (isinstance(f, int) and f == -1)])
    prod = product(known, idt)
    n, p = as_int(extent), as_int(prod)
    if -1 in ints:
        return _infer_minus_one(func, loop, items, prod, n, p)
    if n is not None and p is not None:
        if p < n:
            raise schedule_error(ExtentMismatchError, "split",
                                 f"the factors' product {p} is smaller than the extent "
                                 f"{n} of loop '{name}'; use -1 for one factor to cover it", func, loop)
        return known, p > n
    if not prove_equal(prod, extent):
        raise schedule_error(ExtentMismatchError, "split",
                             f"cannot prove the factors' product {prod} equals the "
                             f"extent {extent} of loop '{name}'; use a -1 factor (adds a guard) or factors "
                             "whose product is the extent", func, loop)
    return known, False


def _infer_minus_one(func: LoweredFunc, loop: For, items: list[int | Expr], prod: Expr,
                     n: int | None, p: int | None) -> tuple[list[Expr], bool]:
    idt = loop.loop_var.dtype
    if n is not None and p is not None:
        if p > n:
            raise schedule_error(ExtentMismatchError, "split",
                                 f"the product {p} of the factors other than -1 is larger "
                                 f"than the extent {n} of loop '{loop.loop_var.name}'", func, loop)
        inferred, guarded = const(-(-n // p), idt), n % p != 0
    elif p == 1:
        inferred, guarded = loop.extent, False
    else:
        # Dynamic extent (or factor): ceil-divide and always guard (CINN DyScheduleImpl::Split).
        inferred, guarded = simplify_index((loop.extent + prod - 1) / prod), True
    out = ([inferred if isinstance(f, int) and f == -1 else const(f, idt) if isinstance(f, int) else f
            for f in items])
    return out, guarded


def _normalise(func: LoweredFunc, loop: For, factors: Sequence[int | Expr]) -> list[int | Expr]:
    """Ints stay ints (immediates become ints); Exprs are checked to be symbolic-dim arithmetic."""
    if isinstance(factors, (str, bytes)) or not isinstance(factors, Sequence):
        raise TypeError(f"split: factors must be a list of ints or Exprs, got {factors!r}")
    if not factors:
        raise schedule_error(InvalidArgumentError, "split", "factors must not be empty", func, loop)
    dims = {v.name for v in func.scalar_args}
    out: list[int | Expr] = []
    for f in factors:
        if isinstance(f, bool) or not isinstance(f, (int, Expr)):
            raise TypeError(f"split: a factor must be an int or an integer Expr, got {f!r}")
        if isinstance(f, Expr) and (value := as_int(f)) is not None:
            f = value
        if isinstance(f, Expr):
            if f.dtype != loop.loop_var.dtype:
                raise schedule_error(InvalidArgumentError, "split",
                                     f"factor {f} has dtype {f.dtype}, but loop "
                                     f"'{loop.loop_var.name}' is {loop.loop_var.dtype}", func, loop)
            bad = sorted(v.name for v in vars_in(f) if v.name not in dims)
            if bad:
                raise schedule_error(InvalidArgumentError, "split", f"factor {f} may only use symbolic dims "
                                     f"({', '.join(sorted(dims)) or 'none'}), but uses {', '.join(bad)}",
                                     func, loop)
        out.append(f)
    return out


def _show(items: list[int | Expr]) -> str:
    return "[" + ", ".join(str(f) for f in items) + "]"


