"""`run_ir`: execute a LoweredFunc on numpy inputs (the test oracle of cinn-py).

Argument handling: inputs are keyed by input tensor name (`A`) or buffer name (`_A`); their
dtype, rank and static dims are checked; symbolic dims are bound from input shapes (a dim that is
a plain symbolic Var binds it; a dim that is an expression is checked once all are bound);
`symbols` gives values no input determines. bfloat16 tensors take float arrays (rounded to
bfloat16, nearest even) or uint16 bit patterns, and come back as float32 arrays holding bfloat16
values (`float32_to_bf16_bits` converts them to the runtime's uint16 representation).

Outputs and temporary buffers start poisoned (NaN for floats, zero otherwise) so that a kernel
that forgets to write an element shows a NaN in differential tests.

A compiled program is cached per function (and vectorize flag); `run_ir` is not re-entrant for
one function across threads.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from cinn_py.interp import numerics as nm
from cinn_py.interp.memory import Memory
from cinn_py.interp.stmts import StmtCompiler, StmtFn
from cinn_py.ir import Alloc, Buffer, Expr, Load, LoweredFunc, Store, Tensor, Var, deep_nesting, walk
from cinn_py.symbolic.integer import eval_int

_CACHE: OrderedDict[tuple[int, bool], tuple[LoweredFunc, StmtFn, Memory]] = OrderedDict()
_CACHE_SIZE = 64


@deep_nesting
def run_ir(func: LoweredFunc, inputs: Mapping[str, Any], symbols: Mapping[str, int] | None = None, *,
           vectorize: bool = True, poison: bool = True) -> dict[str, np.ndarray]:
    """Execute `func` and return its outputs keyed by output tensor name.

    Args:
        func: the lowered function.
        inputs: one array per input tensor, keyed by tensor name or buffer name.
        symbols: values of symbolic dims that no input shape determines.
        vectorize: evaluate independent loop nests and reductions with numpy vector operations
            (default); False forces iteration-by-iteration evaluation (the reference for tests).
        poison: fill outputs and temporaries with NaN (floats) before running.

    Raises:
        TypeError / ValueError: bad arguments (names, dtypes, ranks, dims, symbols).
        InterpError: the IR cannot be executed (out-of-bounds access, unsupported construct...).
    """
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"run_ir expects a LoweredFunc, got {type(func).__name__}")
    if not isinstance(inputs, Mapping):
        raise TypeError(f"run_ir inputs must be a dict of name -> ndarray, got {type(inputs).__name__}")
    arrays = _match_inputs(func, inputs)
    sym_vars = _symbol_vars(func)
    values = _bind_symbols(func, arrays, sym_vars, dict(symbols or {}))
    env: dict[str, Any] = {name: nm.make_const(v, sym_vars[name].dtype) for name, v in values.items()}
    program, mem = _compiled(func, vectorize, frozenset(sym_vars))
    mem.poison = poison
    _allocate(func, mem, arrays, env)
    with np.errstate(all="ignore"):
        program(env)
    return {t.name: mem.views[t.name] for t in func.outputs}


# -- inputs -------------------------------------------------------------------------------------
def _match_inputs(func: LoweredFunc, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Input arrays by tensor name, converted to compute dtype after dtype and rank checks."""
    by_key: dict[str, Tensor] = {}
    for t in func.inputs:
        by_key[t.name] = t
        by_key[t.buffer.name] = t
    expected = [t.name for t in func.inputs]
    out: dict[str, np.ndarray] = {}
    for key, value in inputs.items():
        tensor = by_key.get(key)
        if tensor is None:
            raise ValueError(f"run_ir: '{key}' is not an input of function '{func.name}'; inputs are "
                             f"{expected}")
        if tensor.name in out:
            raise ValueError(f"run_ir: input '{tensor.name}' given twice (as tensor and buffer name)")
        out[tensor.name] = _convert_input(tensor, value)
    missing = [name for name in expected if name not in out]
    if missing:
        raise ValueError(f"run_ir: missing input(s) {missing} of function '{func.name}'")
    return out


def _convert_input(tensor: Tensor, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    dtype = tensor.dtype
    if dtype.kind == "bfloat":
        if arr.dtype == np.uint16:
            arr = nm.bf16_bits_to_float32(arr)
        elif arr.dtype.name == "bfloat16" and arr.dtype.itemsize == 2:  # ml_dtypes.bfloat16: exact
            arr = arr.astype(np.float32)
        elif arr.dtype.kind == "f":
            arr = np.asarray(nm.round_bf16(arr.astype(np.float32)), dtype=np.float32)
        else:
            raise TypeError(f"run_ir: input '{tensor.name}' is bfloat16 and needs a float or uint16 (bit "
                            f"pattern) array, got {arr.dtype}")
    elif arr.dtype != dtype.to_numpy():
        raise TypeError(f"run_ir: input '{tensor.name}' has dtype {arr.dtype}, expected {dtype.to_numpy()}")
    if arr.ndim != len(tensor.shape):
        raise ValueError(f"run_ir: input '{tensor.name}' has rank {arr.ndim} (shape {arr.shape}), "
                         f"expected rank {len(tensor.shape)}")
    return np.array(arr, copy=True, order="C")


# -- symbols ------------------------------------------------------------------------------------
def _symbol_vars(func: LoweredFunc) -> dict[str, Var]:
    """Every variable a shape or the signature mentions: the function's symbolic dims."""
    found: dict[str, Var] = {v.name: v for v in func.scalar_args}
    shapes = [t.shape for t in (*func.inputs, *func.outputs)] + [b.shape for b in func.temp_bufs]
    for node in walk(func.body):
        if isinstance(node, (Load, Store)):
            shapes.append(node.tensor.shape)
            shapes.append(node.tensor.buffer.shape)
    for shape in shapes:
        for dim in shape:
            for n in walk(dim):
                if isinstance(n, Var):
                    found.setdefault(n.name, n)
    return found


def _bind_symbols(func: LoweredFunc, arrays: dict[str, np.ndarray], sym_vars: dict[str, Var],
                  given: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(given) - set(sym_vars))
    if unknown:
        raise ValueError(f"run_ir: {unknown} are not symbolic dims of '{func.name}'; "
                         f"its symbols are {sorted(sym_vars)}")
    values: dict[str, int] = {name: int(v) for name, v in given.items()}
    origin: dict[str, str] = {name: "symbols=" for name in values}
    for tensor in func.inputs:
        for dim, (expr, size) in enumerate(zip(tensor.shape, arrays[tensor.name].shape)):
            if isinstance(expr, Var):
                where = f"dim {dim} of input '{tensor.name}'"
                if expr.name in values and values[expr.name] != size:
                    raise ValueError(f"run_ir: {where} is {size} but symbol '{expr.name}' is "
                                     f"{values[expr.name]} (from {origin[expr.name]})")
                values[expr.name] = size
                origin.setdefault(expr.name, where)
    missing = sorted(set(sym_vars) - set(values))
    if missing:
        raise ValueError(f"run_ir: symbolic dim(s) {missing} of '{func.name}' are not determined by any "
                         f"input shape; pass them as symbols={{...}}")
    for name, var in sym_vars.items():
        _check_bound(name, values[name], var.lower_bound, var.upper_bound, values)
    for tensor in func.inputs:
        for dim, (expr, size) in enumerate(zip(tensor.shape, arrays[tensor.name].shape)):
            want = eval_int(expr, values)
            if want != size:
                raise ValueError(f"run_ir: dim {dim} of input '{tensor.name}' is {size}, expected "
                                 f"{want} ({expr}) given symbols {values}")
    return values


def _check_bound(name: str, value: int, lower: Expr | None, upper: Expr | None,
                 values: dict[str, int]) -> None:
    if lower is not None and value < eval_int(lower, values):
        raise ValueError(f"run_ir: symbol '{name}' = {value} is below its lower bound {lower}")
    if upper is not None and value >= eval_int(upper, values):
        raise ValueError(f"run_ir: symbol '{name}' = {value} is not below its upper bound {upper}")


# -- program and memory -------------------------------------------------------------------------
def _compiled(func: LoweredFunc, vectorize: bool, scope: frozenset[str]) -> tuple[StmtFn, Memory]:
    key = (func.uid, vectorize)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is func:
        _CACHE.move_to_end(key)
        return hit[1], hit[2]
    mem = Memory(poison=True)
    program = StmtCompiler(mem, vectorize).compile(func.body, scope)
    _CACHE[key] = (func, program, mem)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return program, mem


def _allocate(func: LoweredFunc, mem: Memory, arrays: dict[str, np.ndarray], env: dict[str, Any]) -> None:
    """Fresh storage for this run: input copies, then every other buffer the function touches."""
    mem.buffers.clear()
    mem.views.clear()
    mem.tensor_shapes.clear()
    mem.tensors_of.clear()
    values = {name: int(v) for name, v in env.items()}
    tensors: dict[str, Tensor] = {t.name: t for t in (*func.inputs, *func.outputs)}
    buffers: dict[str, Buffer] = {b.name: b for b in func.temp_bufs}
    for node in walk(func.body):
        if isinstance(node, (Load, Store)):
            tensors.setdefault(node.tensor.name, node.tensor)
        elif isinstance(node, Alloc):
            buffers.setdefault(node.buffer.name, node.buffer)
    for tensor in tensors.values():
        mem.register(tensor, tuple(eval_int(d, values) for d in tensor.shape))
        buffers.setdefault(tensor.buffer.name, tensor.buffer)
    inputs_by_buffer = {t.buffer.name: arrays[t.name] for t in func.inputs}
    for name, buffer in buffers.items():
        if name in inputs_by_buffer:
            mem.bind(name, _as_buffer(inputs_by_buffer[name], buffer, values))
        else:
            mem.allocate(buffer, tuple(eval_int(d, values) for d in buffer.shape))


def _as_buffer(array: np.ndarray, buffer: Buffer, values: dict[str, int]) -> np.ndarray:
    """The input array in its buffer's shape (a tensor may view its buffer with another shape)."""
    shape = tuple(eval_int(d, values) for d in buffer.shape)
    if array.shape == shape or int(np.prod(shape, dtype=np.int64)) != array.size:
        return array
    return array.reshape(shape)
