"""Lowering of compute-DSL tensors to CINN's ScheduleBlock AST (`paddle/cinn/ast_gen_ius/ast_gen.cc`).

`lower(name, tensors)` returns a `LoweredFunc` whose body is `Block((root,))`, `root` being the
`ScheduleBlock(root)` realize that holds one serial loop nest per computed tensor, producers first:

- elementwise / broadcast tensor `T`: `serial for (i, 0, d0) { serial for (j, 0, d1) {
  ScheduleBlock(T) { i0, i1 = axis.bind(i, j)  T[i0, i1] = <body> } } }`;
- reduction `C` (as CINN's AstGen builds it): inside the spatial loops, the init block
  `C__reduce_init` (tensor `C__reduce_init` sharing buffer `_C`) stores the identity, followed by
  the reduce loops (named after the reduce axes) around the update block
  `C[i0_0, i1_0] = (C[i0_0, i1_0] + body)` (`*`, `cinn_max`, `cinn_min`, `and`, `or` for
  prod/max/min/all/any). Reduce iter vars continue the numbering (`i2`) and are flagged
  `is_reduce_axis`.

Loop vars are the default axis names (`i j k ...`, reused by every tensor); block iter vars come
from `unique_name("i<d>")`, so the second block gets `i0_0`. A 0-d tensor gets no spatial loops: its
blocks have no iter vars and its stores no indices (`C[] = ...`), and a 0-d reduction contributes
two top-level statements (init block, reduce loops). Differs from CINN, which never lowers a 0-d
tensor: its reduce ops turn a full reduction into shape [1].

Arguments follow CINN: the placeholders listed (inputs), the computed tensors listed (outputs),
then one int64 scalar per symbolic dim in first-appearance order over input shapes, output shapes,
intermediate shapes and bodies. Computes reachable from the outputs but not listed become
`temp_bufs`. A function with any symbolic dim uses int64 for all index arithmetic (`0ll`).
"""

from __future__ import annotations

from collections.abc import Sequence

from cinn_py.diagnostics import LoweringError
from cinn_py.frontend import checks
from cinn_py.frontend.compute import ComputeTensor
from cinn_py.ir import (
    Add, And, ArgIO, Argument, Block, Buffer, Cast, DType, Expr, For, IntImm, Load, LoweredFunc, Max, Min,
    Mul, Or, Reduce, ReduceType, ScheduleBlock, ScheduleBlockRealize, Stmt, Store, Tensor, Var, const,
    NameGenerator, current_context, int32, int64, print_ir_marked, substitute, unique_name, using_names, walk,
)
from cinn_py.lowering.index_dtype import Int64Indices
from cinn_py.lowering.program import Program, analyse

_COMBINE = {
    ReduceType.SUM: Add, ReduceType.MUL: Mul, ReduceType.MAX: Max, ReduceType.MIN: Min,
    ReduceType.ALL: And, ReduceType.ANY: Or,
}


def lower(name: str, tensors: Sequence[ComputeTensor]) -> LoweredFunc:
    """Lower the computes reachable from the listed outputs into one CINN function.

    Args:
        name: function name (a C identifier).
        tensors: placeholders (inputs) and computed tensors (outputs), in argument order.

    Raises:
        LoweringError: a compute reads a placeholder that is not listed, two tensors share a
            name, a symbolic dim clashes with a loop or tensor name, no output is listed, or an
            access is provably out of bounds (`X[i + 1]` over all of `X`).
    """
    program = analyse(name, tensors)
    with using_names(NameGenerator()):   # names are per function: lowering twice prints the same IR
        func = _Lowering(program).run()
    reject_out_of_bounds(func)
    return func


def reject_out_of_bounds(func: LoweredFunc) -> None:
    """Raise a LoweringError for the first access that is out of bounds for every value of the
    symbolic dims (islpy decides affine indices exactly); accesses it cannot decide (gathers,
    symbolic offsets) are left to a `checked=True` build (docs/semantics.md)."""
    from cinn_py.analysis.access_bounds import Verdict, check_access_bounds  # noqa: PLC0415 - islpy

    for check in check_access_bounds(func):
        if check.verdict is Verdict.OUT_OF_RANGE:
            marked = print_ir_marked(func, check.store) if check.store is not None else None
            raise LoweringError(f"lower('{func.name}'): {check.describe()}", marked)


INT32_LIMIT = 2**31 - 1


def needs_int64_indices(program: Program) -> bool:
    """True when a static extent (a tensor dim or a reduce axis bound) does not fit int32: the
    loop variable must hold every value of its range, so the function uses int64 indices (as a
    symbolic function does). Differs from CINN, which keeps int32 and overflows."""
    extents: list[Expr] = [d for t in (*program.inputs, *program.order) for d in t.shape]
    for t in program.order:
        if t.body is None:
            continue
        for node in walk(t.body):
            if isinstance(node, Reduce):
                extents.extend(b for v in node.reduce_axis for b in (v.lower_bound, v.upper_bound) if b
                               is not None)
    return any(isinstance(e, IntImm) and abs(e.value) > INT32_LIMIT for e in extents)


class _Lowering:
    """State of one `lower` call: index dtype and the int64 rewriter of symbolic functions."""

    def __init__(self, program: Program) -> None:
        self.program = program
        wide = bool(program.symbols) or needs_int64_indices(program)
        self.index: DType = int64 if wide else int32
        self.widen = Int64Indices() if wide else None
        names = current_context().names
        # Keep generated iter-var names clear of user names (a sym or tensor called `i0`).
        for reserved in program.user_names:
            names.reserve(reserved)

    # -- conversions -----------------------------------------------------------------------------
    def tensor(self, t: Tensor) -> Tensor:
        return self.widen.tensor(t) if self.widen is not None else t

    def expr(self, e: Expr) -> Expr:
        return self.widen.visit(e) if self.widen is not None else e

    def var(self, v: Var) -> Var:
        return self.widen.var(v) if self.widen is not None else v

    def zero(self) -> Expr:
        return const(0, self.index)

    # -- driver ----------------------------------------------------------------------------------
    def run(self) -> LoweredFunc:
        p = self.program
        stmts: list[Stmt] = []
        for ct in p.order:
            stmts.extend(self.lower_tensor(ct))
        root_body: Stmt = stmts[0] if len(stmts) == 1 else Block(tuple(stmts))
        root = ScheduleBlockRealize((), ScheduleBlock("root", (), root_body))
        args = ([Argument(ArgIO.INPUT, tensor=self.tensor(t.tensor)) for t in p.inputs]
                + [Argument(ArgIO.OUTPUT, tensor=self.tensor(t.tensor)) for t in p.outputs]
                + [Argument(ArgIO.SCALAR, var=s) for s in p.symbols])
        temps: tuple[Buffer, ...] = tuple(self.tensor(t.tensor).buffer for t in p.temps)
        return LoweredFunc(p.name, tuple(args), Block((root,)), temps)

    def lower_tensor(self, ct: ComputeTensor) -> list[Stmt]:
        loop_vars = [self.var(v) for v in ct.axis]
        tensor = self.tensor(ct.tensor)
        if isinstance(ct.body, Reduce):
            inner = self.reduction(ct.body, tensor, loop_vars)
        elif ct.body is not None:  # analyse() orders computed tensors only
            inner = [self.elementwise(ct.body, tensor, loop_vars)]
        else:
            return []
        return self.spatial_loops(inner, loop_vars, tensor.shape)

    def spatial_loops(self, inner: list[Stmt], loop_vars: list[Var], shape: tuple[Expr, ...]) -> list[Stmt]:
        body: list[Stmt] = inner
        for var, extent in zip(reversed(loop_vars), reversed(shape)):
            body = [For(var, self.zero(), extent, Block(tuple(body)))]
        return body

    def iter_vars(self, shape: tuple[Expr, ...]) -> list[Var]:
        """Fresh block iter vars `i0, i1, ...` (CINN `UniqName("i" + d)`) bound to [0, d)."""
        return [Var(unique_name(f"i{d}"), self.index, lower_bound=self.zero(), upper_bound=extent)
                for d, extent in enumerate(shape)]

    # -- blocks ----------------------------------------------------------------------------------
    def elementwise(self, body: Expr, tensor: Tensor, loop_vars: list[Var]) -> Stmt:
        iters = self.iter_vars(tensor.shape)
        value = substitute(self.expr(body), dict(zip(loop_vars, iters)))
        store = Store(tensor, _as_dtype(value, tensor.dtype), tuple(iters))
        return ScheduleBlockRealize(tuple(loop_vars), ScheduleBlock(tensor.name, tuple(iters), store))

    def reduction(self, red: Reduce, tensor: Tensor, loop_vars: list[Var]) -> list[Stmt]:
        init_name = tensor.name + checks.REDUCE_INIT_SUFFIX
        init_tensor = Tensor(init_name, tensor.shape, tensor.dtype, tensor.buffer)
        init_iters = self.iter_vars(tensor.shape)
        init_store = Store(init_tensor, _as_dtype(self.expr(red.init), tensor.dtype), tuple(init_iters))
        init = ScheduleBlockRealize(tuple(loop_vars), ScheduleBlock(init_name, tuple(init_iters), init_store))

        reduce_vars = [self.var(v) for v in red.reduce_axis]
        ndim = len(tensor.shape)
        spatial = self.iter_vars(tensor.shape)
        reduce_iters = [Var(unique_name(f"i{ndim + r}"), self.index, lower_bound=rv.lower_bound,
                            upper_bound=rv.upper_bound, is_reduce_axis=True)
                        for r, rv in enumerate(reduce_vars)]
        mapping = dict(zip(loop_vars + reduce_vars, spatial + reduce_iters))
        value = _as_dtype(substitute(self.expr(red.body), mapping), tensor.dtype)
        current = Load(tensor, tuple(spatial))
        store = Store(tensor, _COMBINE[red.reduce_type](current, value), tuple(spatial))
        update: Stmt = ScheduleBlockRealize(tuple(loop_vars + reduce_vars),
                                            ScheduleBlock(tensor.name, tuple(spatial + reduce_iters), store))
        for rv in reversed(reduce_vars):
            update = For(rv, self.reduce_min(rv), self.reduce_extent(rv), Block((update,)))
        return [init, update]

    def reduce_min(self, rv: Var) -> Expr:
        return rv.lower_bound if rv.lower_bound is not None else self.zero()

    def reduce_extent(self, rv: Var) -> Expr:
        lo, hi = self.reduce_min(rv), rv.upper_bound
        if hi is None:  # reduce_axis() always sets it; a hand-made axis is a user error
            raise LoweringError(f"reduce axis '{rv.name}' has no extent (upper bound); create it with "
                                "reduce_axis(extent, name)")
        if isinstance(lo, IntImm) and lo.value == 0:
            return hi
        if isinstance(lo, IntImm) and isinstance(hi, IntImm):
            return const(hi.value - lo.value, hi.dtype)
        return hi - lo


def _as_dtype(value: Expr, dtype: DType) -> Expr:
    """Int64 widening can turn an int32 index expression stored into an int32 tensor into int64."""
    return value if value.dtype == dtype else Cast(dtype, value)
