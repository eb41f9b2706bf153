"""Hypothesis strategies for random IR: expressions of every dtype and statement trees.

Reusable by other test areas:

    from tests.ir.strategies import exprs, stmts, funcs
    @given(exprs(dt.float32))          # a random float32 expression
    @given(stmts())                    # loops, blocks, ifs, schedule blocks, lets, stores ...
    @given(funcs())                    # a LoweredFunc with args, temps, symbolic dims

Vars and tensors come from fixed pools with distinct names per dtype (the text format keys var
dtypes by name), so generated trees are always printable and parseable.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from cinn_py import ir
from cinn_py.ir import dtype as dt

INT_TYPES = (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64)
FLOAT_TYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
ALL_TYPES = INT_TYPES + FLOAT_TYPES + (dt.bool_,)
SYM = ir.Var("S0", dt.int64, lower_bound=ir.IntImm(dt.int64, 1), is_symbolic_constant=True)


def var_of(dtype: ir.DType, k: int = 0) -> ir.Var:
    """The k-th pool var of `dtype` (`v_float32_0`, ...); int32 vars are plain `i`, `j`, `k`."""
    if dtype == dt.int32:
        return ir.Var("ijk"[k % 3])
    return ir.Var(f"v_{dtype.scalar_name()}_{k}", dtype)


def tensor_of(dtype: ir.DType, k: int = 0) -> ir.Tensor:
    """A 2-D pool tensor `T_<dtype>_<k>` of shape (8, 16); k == 2 lives in shared memory."""
    shape = (ir.IntImm(dt.int32, 8), ir.IntImm(dt.int32, 16))
    memory = ir.MemoryType.GPU_SHARED if k == 2 else ir.MemoryType.HEAP
    return ir.make_tensor(f"T_{dtype.scalar_name()}_{k}", shape, dtype, memory)


def immediates(dtype: ir.DType) -> st.SearchStrategy[ir.Expr]:
    if dtype.is_bool:
        return st.booleans().map(lambda b: ir.const(b, dt.bool_))
    if dtype.is_int:
        lim = 2 ** (dtype.bits - 1)
        return st.integers(-lim, lim - 1).map(lambda v: ir.IntImm(dtype, v))
    if dtype.is_uint:
        return st.integers(0, 2 ** dtype.bits - 1).map(lambda v: ir.UIntImm(dtype, v))
    return st.floats(allow_nan=True, allow_infinity=True, width=32 if dtype.bits <= 32 else 64).map(
        lambda v: ir.FloatImm(dtype, _fit(v, dtype)))


def _fit(value: float, dtype: ir.DType) -> float:
    """Round to a value `dtype` holds exactly (f16/bf16 values printed with 9 digits read back)."""
    import numpy as np

    if math.isnan(value) or math.isinf(value):
        return value
    if dtype == dt.float16:
        return float(np.float16(value))
    if dtype == dt.bfloat16:
        bits = int(np.float32(value).view(np.uint32)) & 0xFFFF0000
        return float(np.uint32(bits).view(np.float32))
    return value


def leaves(dtype: ir.DType) -> st.SearchStrategy[ir.Expr]:
    options = [immediates(dtype), st.integers(0, 1).map(lambda k: var_of(dtype, k))]
    if not dtype.is_bool:
        options.append(st.integers(0, 2).map(
            lambda k: ir.Load(tensor_of(dtype, k), (var_of(dt.int32, 0), var_of(dt.int32, 1)))))
    return st.one_of(*options)


def exprs(dtype: ir.DType | None = None, max_leaves: int = 12) -> st.SearchStrategy[ir.Expr]:
    """Random expressions of `dtype` (any dtype when None)."""
    if dtype is None:
        return st.sampled_from(ALL_TYPES).flatmap(lambda d: exprs(d, max_leaves))
    return st.recursive(leaves(dtype), lambda sub: _compound(dtype, sub), max_leaves=max_leaves)


def _compound(dtype: ir.DType, sub: st.SearchStrategy[ir.Expr]) -> st.SearchStrategy[ir.Expr]:
    options = []
    if dtype.is_bool:
        cmp = st.sampled_from((ir.EQ, ir.NE, ir.LT, ir.LE, ir.GT, ir.GE))
        operand = st.sampled_from((dt.int32, dt.float32, dt.int64)).flatmap(lambda d: leaves(d))
        options += [
            st.builds(lambda c, a, b: c(a, b if b.dtype == a.dtype else a), cmp, operand, operand),
            st.builds(lambda c, a, b: c(a, b), st.sampled_from((ir.And, ir.Or)), sub, sub),
            sub.map(ir.Not),
        ]
    else:
        ops = [ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Min, ir.Max] + ([ir.Mod] if dtype.is_integral else [])
        options += [
            st.builds(lambda op, a, b: op(a, b), st.sampled_from(ops), sub, sub),
            sub.map(ir.Minus),
            st.builds(ir.Select, leaves(dt.bool_), sub, sub),
            st.sampled_from(ALL_TYPES).flatmap(leaves).map(lambda v: ir.Cast(dtype, v)),
        ]
        if dtype.is_float:
            options.append(st.builds(lambda name, a: ir.Call(name, (a,), dtype),
                                     st.sampled_from(("exp", "tanh", "sqrt")), sub))
            options.append(st.builds(lambda a: ir.Call("isnan", (a,), dt.bool_), sub)
                           .map(lambda c: ir.Select(c, ir.const(1.0, dtype), ir.const(0.0, dtype))))
    return st.one_of(*options)


def vector_exprs() -> st.SearchStrategy[ir.Expr]:
    """Ramp/Broadcast-indexed vector loads and a Cast of a vector."""
    lanes = st.sampled_from((2, 4, 8))
    ramp = st.builds(lambda n: ir.Ramp(var_of(dt.int32, 1), ir.IntImm(dt.int32, 1), n), lanes)
    load = ramp.map(lambda r: ir.Load(tensor_of(dt.float32), (var_of(dt.int32, 0), r)))
    bcast = st.builds(lambda v, n: ir.Broadcast(v, n), leaves(dt.float32), lanes)
    return st.one_of(load, bcast, load.map(lambda x: ir.Add(x, ir.Broadcast(ir.const(1.0), x.dtype.lanes))))


def _int_index() -> st.SearchStrategy[ir.Expr]:
    return exprs(dt.int32, max_leaves=4)


def _store() -> st.SearchStrategy[ir.Stmt]:
    return st.sampled_from((dt.float32, dt.float16, dt.int32, dt.uint32, dt.int8)).flatmap(
        lambda d: st.builds(lambda k, v, a, b: ir.Store(tensor_of(d, k), v, (a, b)),
                            st.integers(0, 2), exprs(d, 6), _int_index(), _int_index()))


def _simple_stmts() -> st.SearchStrategy[ir.Stmt]:
    return st.one_of(
        _store(),
        st.builds(lambda t, v: ir.Let(var_of(t, 1), v), st.sampled_from((dt.float32, dt.int64)),
                  st.none()),
        exprs(dt.float64, 4).map(lambda v: ir.Let(var_of(dt.float64, 1), v)),
        st.just(ir.Call("__syncthreads", (), dt.int32, ir.CallType.INTRINSIC)).map(ir.Evaluate),
        st.builds(lambda k: ir.Alloc(tensor_of(dt.float32, k).buffer, (ir.IntImm(dt.int32, 128),)),
                  st.integers(0, 2)),
        st.integers(0, 2).map(lambda k: ir.Free(tensor_of(dt.float32, k).buffer)),
    )


_FOR_VARIANTS = (
    (ir.ForType.SERIAL, -1, 0), (ir.ForType.PARALLEL, -1, 0), (ir.ForType.UNROLLED, -1, 0),
    (ir.ForType.VECTORIZED, -1, 4), (ir.ForType.GPU_BLOCK, 0, 0), (ir.ForType.GPU_THREAD, 1, 0),
    (ir.ForType.DEFAULT, -1, 0),
)


def _block(children: st.SearchStrategy[ir.Stmt]) -> st.SearchStrategy[ir.Block]:
    return st.lists(children, min_size=1, max_size=3).map(lambda xs: ir.Block(tuple(xs)))


def _for(children: st.SearchStrategy[ir.Stmt]) -> st.SearchStrategy[ir.Stmt]:
    def make(variant: tuple[ir.ForType, int, int], k: int, body: ir.Block, dyn: bool) -> ir.Stmt:
        kind, offset, factor = variant
        extent: ir.Expr = ir.IntImm(dt.int32, 16)
        if dyn:
            extent = ir.Cast(dt.int32, ir.Mul(SYM, ir.IntImm(dt.int64, 4)))
        return ir.For(var_of(dt.int32, k), ir.IntImm(dt.int32, 0), extent, body, kind, offset, factor)

    return st.builds(make, st.sampled_from(_FOR_VARIANTS), st.integers(0, 2), _block(children), st.booleans())


def _if(children: st.SearchStrategy[ir.Stmt]) -> st.SearchStrategy[ir.Stmt]:
    return st.builds(ir.IfThenElse, exprs(dt.bool_, 4), _block(children), st.none() | _block(children))


def _schedule_block(children: st.SearchStrategy[ir.Stmt]) -> st.SearchStrategy[ir.Stmt]:
    def make(n: int, name: str, body: ir.Stmt, attrs: tuple, reduce_iv: bool, method: ir.ReduceMethod,
             regions: bool) -> ir.Stmt:
        iter_vars = tuple(ir.Var(f"i{k}_{name}", dt.int32, is_reduce_axis=reduce_iv and k == n - 1,
                                 upper_bound=ir.IntImm(dt.int32, 16) if reduce_iv and k == n - 1 else None)
                          for k in range(n))
        values = tuple(ir.Add(var_of(dt.int32, k % 3), ir.IntImm(dt.int32, k)) for k in range(n))
        reads = writes = ()
        if regions:
            t = tensor_of(dt.float32)
            reads = (ir.BufferRange(t, ((ir.IntImm(dt.int32, 0), ir.IntImm(dt.int32, 8)),
                                        (var_of(dt.int32, 0), ir.IntImm(dt.int32, 1)))),)
            writes = (ir.BufferRange(tensor_of(dt.int32), ((var_of(dt.int32, 1), ir.IntImm(dt.int32, 2)),)),)
        block = ir.ScheduleBlock(name, iter_vars, body, reads, writes, tuple(sorted(attrs)), method)
        return ir.ScheduleBlockRealize(values, block)

    attr_values = st.one_of(st.integers(-5, 100), st.booleans(), st.sampled_from(("TileFirst", "v4", "64")),
                            st.sampled_from((0.5, 2.0, 0.1)))
    attrs = st.dictionaries(st.sampled_from(("k1", "k2", "tile_method")), attr_values, max_size=2).map(
        lambda d: tuple(d.items()))
    body = st.one_of(children, _block(children))
    return st.builds(make, st.integers(0, 3), st.sampled_from(("B", "C", "B__reduce_init")), body, attrs,
                     st.booleans(), st.sampled_from(list(ir.ReduceMethod)), st.booleans())


def stmts(max_leaves: int = 6) -> st.SearchStrategy[ir.Stmt]:
    """Random statement trees: loops of every kind, blocks, ifs, schedule blocks, lets, stores."""
    return st.recursive(
        _simple_stmts(),
        lambda sub: st.one_of(_for(sub), _if(sub), _schedule_block(sub), _block(sub)),
        max_leaves=max_leaves,
    )


def funcs() -> st.SearchStrategy[ir.LoweredFunc]:
    """A LoweredFunc around a random body, with tensor args, a symbolic dim and a temp buffer."""
    def make(body: ir.Stmt, with_sym: bool) -> ir.LoweredFunc:
        root = ir.ScheduleBlockRealize((), ir.ScheduleBlock("root", (), body))
        args = [ir.Argument(ir.ArgIO.INPUT, tensor=tensor_of(dt.float32, 0)),
                ir.Argument(ir.ArgIO.OUTPUT, tensor=tensor_of(dt.float32, 1))]
        if with_sym:
            args.append(ir.Argument(ir.ArgIO.SCALAR, var=SYM))
        return ir.LoweredFunc("fn", tuple(args), ir.Block((root,)), (tensor_of(dt.int32).buffer,))

    return st.builds(make, stmts(), st.booleans())
