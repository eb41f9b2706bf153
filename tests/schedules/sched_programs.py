"""Small lowered functions built directly with the IR constructors, in the exact shape
`cinn_py.lower()` produces (root block, one loop nest per stage, `__reduce_init` blocks).

Used by the schedule tests as fixed inputs; names follow CINN's generator (loops `i j k`, iter
vars `i0, i1`, second block `i0_0`...), so the golden texts match what lowering prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cinn_py import ir
from cinn_py.ir import (
    ArgIO, Argument, Block, Expr, For, LoweredFunc, ScheduleBlock, ScheduleBlockRealize, Store,
    Tensor, Var,
)
from cinn_py.ir import dtype as dt

F32 = dt.float32


def index_dtype(shape: Sequence[int | Expr]) -> dt.DType:
    return dt.int64 if any(not isinstance(s, int) for s in shape) else dt.int32


def syms_of(shape: Sequence[int | Expr]) -> list[Var]:
    """Symbolic dims used by a shape, in first-use order."""
    out: list[Var] = []
    for s in shape:
        if isinstance(s, Expr):
            out += [v for v in ir.walk(s) if isinstance(v, Var) and v not in out]
    return out


def to_expr(extent: int | Expr, idt: dt.DType) -> Expr:
    return ir.const(extent, idt) if isinstance(extent, int) else extent


def sym(name: str, lower: int = 1) -> Var:
    return Var(name, dt.int64, lower_bound=ir.const(lower, dt.int64), is_symbolic_constant=True)


def tensor(name: str, shape: Sequence[int | Expr], idt: dt.DType, dtype: dt.DType = F32) -> Tensor:
    return ir.make_tensor(name, tuple(to_expr(s, idt) for s in shape), dtype)


def stage(name: str, extents: Sequence[int | Expr], idt: dt.DType,
          body: Callable[[list[Var]], Store], reduce_extents: Sequence[int | Expr] = (),
          init: Callable[[list[Var]], Store] | None = None) -> ir.Stmt:
    """A loop nest `for i.. { [init block] for k.. { block } }` as lowering builds it."""
    n, r = len(extents), len(reduce_extents)
    loop_vars = [Var(ir.default_axis_name(k), idt) for k in range(n)]
    red_vars = [Var(f"k{k}", idt, is_reduce_axis=True) for k in range(r)]
    # The init block is created first, so it gets `i0` and the update block `i0_0` (as in CINN).
    init_iters = [Var(ir.unique_name(f"i{k}"), idt) for k in range(n)] if init is not None else []
    iter_vars = [Var(ir.unique_name(f"i{k}"), idt) for k in range(n)]
    red_iters = [Var(ir.unique_name(f"i{n + k}"), idt, is_reduce_axis=True) for k in range(r)]
    update = ScheduleBlockRealize(tuple(loop_vars + red_vars), ScheduleBlock(
        name, tuple(iter_vars + red_iters), body(iter_vars + red_iters)))
    inner: ir.Stmt = update
    for var, extent in reversed(list(zip(red_vars, reduce_extents))):
        inner = For(var, ir.const(0, idt), to_expr(extent, idt), Block((inner,)))
    stmts: tuple[ir.Stmt, ...] = (inner,)
    if init is not None:
        init_block = ScheduleBlockRealize(tuple(loop_vars), ScheduleBlock(
            f"{name}__reduce_init", tuple(init_iters), init(init_iters)))
        stmts = (init_block, inner)
    for var, extent in reversed(list(zip(loop_vars, extents))):
        stmts = (For(var, ir.const(0, idt), to_expr(extent, idt), Block(stmts)),)
    return stmts[0]


def func(name: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor], stages: Sequence[ir.Stmt],
         syms: Sequence[Var] = (), temps: Sequence[Tensor] = ()) -> LoweredFunc:
    body = stages[0] if len(stages) == 1 else Block(tuple(stages))
    root = ScheduleBlockRealize((), ScheduleBlock("root", (), body))
    args = tuple([Argument(ArgIO.INPUT, tensor=t) for t in inputs]
                 + [Argument(ArgIO.OUTPUT, tensor=t) for t in outputs]
                 + [Argument(ArgIO.SCALAR, var=s) for s in syms])
    return LoweredFunc(name, args, Block((root,)), temp_bufs=tuple(t.buffer for t in temps))


def elementwise(shape: Sequence[int | Var] = (32, 64), name: str = "fn") -> LoweredFunc:
    """`B[i, j] = A[i, j] * 2`."""
    idt = index_dtype(shape)
    a, b = tensor("A", shape, idt), tensor("B", shape, idt)
    st = stage("B", shape, idt, lambda iv: Store(b, ir.Load(a, tuple(iv)) * ir.const(2.0), tuple(iv)))
    return func(name, [a], [b], [st], syms_of(shape))


def two_stage(shape: Sequence[int | Var] = (32, 64), name: str = "fn") -> LoweredFunc:
    """`B = A + 1; C = B * 2` (B is a temporary)."""
    idt = index_dtype(shape)
    a, b, c = (tensor(n, shape, idt) for n in "ABC")
    s1 = stage("B", shape, idt, lambda iv: Store(b, ir.Load(a, tuple(iv)) + ir.const(1.0), tuple(iv)))
    s2 = stage("C", shape, idt, lambda iv: Store(c, ir.Load(b, tuple(iv)) * ir.const(2.0), tuple(iv)))
    return func(name, [a], [c], [s1, s2], syms_of(shape), temps=[b])


def reduce_sum(shape: Sequence[int | Var] = (32, 16), name: str = "fn") -> LoweredFunc:
    """`B[i] = sum_k A[i, k]` with its `B__reduce_init` block."""
    idt = index_dtype(shape)
    a, b = tensor("A", shape, idt), tensor("B", shape[:1], idt)
    init_t = ir.Tensor("B__reduce_init", b.shape, b.dtype, b.buffer)

    def body(iv: list[Var]) -> Store:
        return Store(b, ir.Load(b, (iv[0],)) + ir.Load(a, (iv[0], iv[1])), (iv[0],))

    st = stage("B", shape[:1], idt, body, reduce_extents=shape[1:],
               init=lambda iv: Store(init_t, ir.const(0.0), (iv[0],)))
    return func(name, [a], [b], [st], syms_of(shape))


def shifted(n: int = 16, name: str = "fn") -> LoweredFunc:
    """`A[i + 1] = A[i] + 1` over one in-place buffer: loop `i` carries a dependence."""
    idt = dt.int32
    a = tensor("A", [n + 1], idt)
    i = Var("i", idt)
    i0 = Var(ir.unique_name("i0"), idt)
    store = Store(a, ir.Load(a, (i0,)) + ir.const(1.0), (i0 + 1,))
    loop = For(i, ir.const(0, idt), ir.const(n, idt),
               Block((ScheduleBlockRealize((i,), ScheduleBlock("A", (i0,), store)),)))
    return func(name, [], [a], [loop])
