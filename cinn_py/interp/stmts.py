"""Compile IR statements into closures `fn(env) -> None`, with vectorised loop nests.

Every for-kind (serial, parallel, vectorize, unroll, GPU-bound) means "run each iteration";
the interpreter runs them in order. A perfect loop nest with a straight-line body is planned
once at compile time (`depend.py`); each time it runs, the longest innermost sub-nest that is
provably parallel or a reduction (with the extents of this execution) is evaluated as one numpy
evaluation over all its iterations (`flat.py`), the loops outside it in Python.

Vectorised reductions are bitwise equal to serial evaluation: sums and products fold element by
element in iteration order (`ufunc.at`), `cinn_max`/`cinn_min` folds are emulated exactly (NaN and
signed zeros included), and/or are order-free. The one exception is bfloat16 sums/products, which
are reduced in float32 and rounded to bfloat16 once instead of after every step.
"""

from __future__ import annotations


import numpy as np

from cinn_py.interp import depend
from cinn_py.interp import numerics as nm
from cinn_py.interp.errors import InterpError, UnsupportedConstructError
from cinn_py.interp.exprs import Env, ExprCompiler, ExprFn, check_bounds, compress, varying_mask
from cinn_py.interp.flat import (
    _SCATTER, Red, StmtFn, _extents_independent, _fold, _Level, _per_iteration, _run_serial, _scatter_exact,
    _Suffix, _try_flat, _view,
)
from cinn_py.interp.memory import Memory
from cinn_py.ir import (
    Alloc, Block, Call, Evaluate, Expr, For, Free, IfThenElse, Let, Load, ScheduleBlock, ScheduleBlockRealize,
    Stmt, Store, print_ir, walk,
)

def _noop(env: Env) -> None:
    return None


class StmtCompiler:
    """Compiles statements against `mem`; `vectorize=False` forces serial evaluation."""

    def __init__(self, mem: Memory, vectorize: bool) -> None:
        self.mem = mem
        self.vectorize = vectorize
        self.exprs = ExprCompiler(mem)

    def compile(self, s: Stmt, scope: frozenset[str], red: depend.ReducePattern | None = None) -> StmtFn:
        """Closure of `s`; `red` names the store that becomes a vectorised fold."""
        method = getattr(self, "c_" + type(s).__name__, None)
        if method is None:
            raise UnsupportedConstructError(f"interp: cannot execute a {type(s).__name__} statement",
                                            print_ir(s))
        if isinstance(s, (Block, IfThenElse, ScheduleBlockRealize, ScheduleBlock, Store)):
            return method(s, scope, red)
        return method(s, scope)

    # -- sequencing and scoping -------------------------------------------------------------
    def c_Block(self, s: Block, scope: frozenset[str], red: Red) -> StmtFn:
        fns: list[StmtFn] = []
        for child in s.stmts:
            fns.append(self.compile(child, scope, red))
            if isinstance(child, Let):
                scope = scope | {child.symbol.name}  # a Let is visible to the statements after it
        if len(fns) == 1:
            return fns[0]

        def block(env: Env) -> None:
            for fn in fns:
                fn(env)

        return block

    def c_Let(self, s: Let, scope: frozenset[str]) -> StmtFn:
        name = s.symbol.name
        if s.body is None:
            zero = nm.make_const(0, s.symbol.dtype)
            fn: ExprFn = lambda env: zero  # noqa: E731
        else:
            fn = self.exprs.compile_as(s.body, s.symbol.dtype, scope)

        def let(env: Env) -> None:
            env[name] = fn(env)

        return let

    def c_ScheduleBlockRealize(self, s: ScheduleBlockRealize, scope: frozenset[str], red: Red) -> StmtFn:
        block = s.schedule_block
        if len(block.iter_vars) != len(s.iter_values):
            raise InterpError(f"interp: block '{block.name}' binds {len(block.iter_vars)} iter vars to "
                              f"{len(s.iter_values)} values", print_ir(s))
        binds = [(v.name, self.exprs.compile_as(value, v.dtype, scope))
                 for v, value in zip(block.iter_vars, s.iter_values)]
        body = self.compile(block.body, scope | {v.name for v in block.iter_vars}, red)

        def realize(env: Env) -> None:
            for name, fn in binds:
                env[name] = fn(env)
            body(env)

        return realize

    def c_ScheduleBlock(self, s: ScheduleBlock, scope: frozenset[str], red: Red) -> StmtFn:
        return self.compile(s.body, scope | {v.name for v in s.iter_vars}, red)

    def c_IfThenElse(self, s: IfThenElse, scope: frozenset[str], red: Red) -> StmtFn:
        cond = self.exprs.compile(s.condition, scope)
        then = self.compile(s.true_case, scope, red)
        other = self.compile(s.false_case, scope, red) if s.false_case is not None else None

        def if_then_else(env: Env) -> None:
            c = cond(env)
            if not isinstance(c, np.ndarray) or c.ndim == 0:
                if c:
                    then(env)
                elif other is not None:
                    other(env)
                return
            mask = varying_mask(c, "if")
            if mask.any():
                then(compress(env, mask))
            if other is not None:
                inverse = ~mask
                if inverse.any():
                    other(compress(env, inverse))

        return if_then_else

    def c_Evaluate(self, s: Evaluate, scope: frozenset[str]) -> StmtFn:
        v = s.value
        if isinstance(v, Call) and v.name == "__syncthreads":
            return _noop  # every thread's loop iteration already ran to completion
        fn = self.exprs.compile(v, scope)

        def evaluate(env: Env) -> None:
            fn(env)

        return evaluate

    # -- memory -----------------------------------------------------------------------------
    def c_Store(self, s: Store, scope: frozenset[str], red: Red) -> StmtFn:
        views = self.mem.views
        name = s.tensor.name
        index_fns = tuple(self.exprs.compile(i, scope) for i in s.indices)
        if red is not None and s is red.store:
            return self._reduce_store(red, scope)
        value_fn = self.exprs.compile_as(s.value, s.tensor.dtype, scope)

        def store(env: Env) -> None:
            value = value_fn(env)  # the right-hand side is read before the element is written
            arr = _view(views, name, s)
            idx = tuple(f(env) for f in index_fns)
            check_bounds(idx, arr.shape, s, name)
            arr[idx] = value

        return store

    def _reduce_store(self, pattern: depend.ReducePattern, scope: frozenset[str]) -> StmtFn:
        """The update `T[idx] = T[idx] OP e` folded over all active vectorised iterations."""
        s = pattern.store
        views, name, dtype = self.mem.views, s.tensor.name, s.tensor.dtype
        index_fns = tuple(self.exprs.compile(i, scope) for i in s.indices)
        operand = self.exprs.compile_as(pattern.operand, s.value.dtype, scope)
        kind = pattern.kind

        def reduce_store(env: Env) -> None:
            arr = _view(views, name, s)
            idx = tuple(f(env) for f in index_fns)
            check_bounds(idx, arr.shape, s, name)
            lane_shape = np.broadcast_shapes(*(np.shape(i) for i in idx))
            if len(lane_shape) == 2:  # the target element varies: fold into each in order
                _SCATTER[kind].at(arr, tuple(np.broadcast_to(i, lane_shape) for i in idx),
                                  np.broadcast_to(operand(env), lane_shape))
                return
            values = _per_iteration(operand(env), env["__n__"], lane_shape, s)
            arr[idx] = _fold(kind, arr[idx], values, dtype)

        return reduce_store

    def c_Alloc(self, s: Alloc, scope: frozenset[str]) -> StmtFn:
        extents = tuple(self.exprs.compile(e, scope) for e in (s.extents or s.buffer.shape))
        mem = self.mem

        def alloc(env: Env) -> None:
            mem.allocate(s.buffer, tuple(int(f(env)) for f in extents))

        return alloc

    def c_Free(self, s: Free, scope: frozenset[str]) -> StmtFn:
        mem = self.mem
        return lambda env: mem.free(s.buffer)

    # -- loops ------------------------------------------------------------------------------
    def c_For(self, s: For, scope: frozenset[str]) -> StmtFn:
        levels: list[For] = [s]
        while True:
            stmts = levels[-1].body.stmts
            if len(stmts) == 1 and isinstance(stmts[0], For):
                levels.append(stmts[0])
            else:
                break
        body = levels[-1].body
        if not self.vectorize or not depend.is_straight_line(body):
            return self._serial_for(s, scope)
        return self._nest(levels, body, scope)

    def _level(self, f: For, scope: frozenset[str]) -> _Level:
        dtype = f.loop_var.dtype
        return _Level(f.loop_var.name, nm.compute_dtype(dtype), self.exprs.compile_as(f.min, dtype, scope),
                      self.exprs.compile_as(f.extent, dtype, scope))

    def _serial_for(self, s: For, scope: frozenset[str]) -> StmtFn:
        level = self._level(s, scope)
        body = self.compile(s.body, scope | {level.var})
        return lambda env: _run_serial(level, body, env)

    def _nest(self, fors: list[For], body: Block, scope: frozenset[str]) -> StmtFn:
        names = [f.loop_var.name for f in fors]
        levels = [self._level(f, scope | set(names[:k])) for k, f in enumerate(fors)]
        full_scope = scope | set(names)
        plain = self.compile(body, full_scope)
        acc = depend.collect_accesses(body)
        parallel = depend.same_index_everywhere(acc)
        pattern = depend.match_reduction(acc, frozenset(names))
        reduce_body = self.compile(body, full_scope, pattern) if pattern is not None else None
        suffixes = [self._suffix(k, fors, acc, parallel, pattern, scope | set(names[:k]))
                    for k in range(len(fors)) if _extents_independent(fors, k)]

        def nest(env: Env, depth: int = 0) -> None:
            for suffix in suffixes:
                if suffix.start == depth and _try_flat(suffix, levels, plain, reduce_body, env):
                    return
            level = levels[depth]
            lo, n = int(level.min_fn(env)), int(level.extent_fn(env))
            if depth == len(levels) - 1:
                for value in np.arange(lo, lo + max(n, 0), dtype=level.dtype):
                    env[level.var] = value
                    plain(env)
                return
            for value in np.arange(lo, lo + max(n, 0), dtype=level.dtype):
                env[level.var] = value
                nest(env, depth + 1)

        return nest

    def _suffix(self, k: int, fors: list[For], acc: depend.BodyAccesses, parallel: bool,
                pattern: depend.ReducePattern | None, scope: frozenset[str]) -> _Suffix:
        loop_vars = frozenset(f.loop_var.name for f in fors[k:])
        dims: list[list[depend.Coefs | None]] | None = None
        lanes = 1
        if parallel:
            analyzer = depend.AffineAnalyzer(loop_vars, lambda e: self._coef_fn(e, scope))
            seen: set[str] = set()
            dims = []
            for store, idx in acc.stores:
                if store.tensor.buffer.name not in seen:
                    seen.add(store.tensor.buffer.name)
                    dims.append([analyzer.coefs(i) for i in idx])
            lanes = analyzer.lanes
        reduce_ok = pattern is not None and (not (pattern.index_vars & loop_vars) or _scatter_exact(pattern))
        return _Suffix(k, loop_vars, dims, reduce_ok, lanes)

    def _coef_fn(self, e: Expr, scope: frozenset[str]) -> depend.CoefFn | None:
        if any(isinstance(n, Load) for n in walk(e)):
            return None
        try:
            fn = self.exprs.compile(e, scope)
        except InterpError:
            return None
        return lambda env: int(fn(env))
