"""Kernel argument validation shared by every backend (x86 and CUDA).

Before generated code runs, `ArgValidator` checks each argument against the LoweredFunc's
signature and raises a clear `TypeError`/`ValueError` naming the argument, what was expected and
what was given. Generated code never sees a wrong-typed, wrongly shaped, strided or aliasing
buffer, so it can index without bounds checks (as CINN's generated code does).

Accepted arguments: numpy arrays, objects with `__dlpack__` (PyTorch / JAX CPU tensors; read
through `np.from_dlpack`) and, for `device="cuda"`, objects with `__cuda_array_interface__`.
Everything is described by an `ArgMeta` (pointer, shape, dtype, contiguity; `arg_meta.py`, whose
`ArgMeta`, `arg_meta`, `data_ptr` and `storage_dtype` are re-exported here), so a backend only
needs the metas and the bound symbolic dims.

Repeated calls are cheap: `ArgValidator.fast_call` remembers each input signature (types,
dtypes, shapes, contiguity of plain numpy arrays) that passed full validation, with its symbol
values and output shapes, so a call with the same signature only re-reads the pointers and
checks the outputs it is given (dtype, shape, contiguity, writability, aliasing); anything else
takes the full path, which also produces the error messages.

Symbolic dims (`S0`, ...) are bound from the input shapes (CINN's `symbol_args_map`: each
symbol argument is read from some input's dim): bare dims first, then dims that are affine
expressions of one still-unknown symbol (`2*S0`) are solved, then every dim expression is
evaluated and compared, and each value is checked against the symbol's bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cinn_py.ir import Expr, IntImm, LoweredFunc, Tensor, UIntImm, Var
from cinn_py.runtime.arg_meta import ArgMeta, _c_strides, _overlap, arg_meta, data_ptr, storage_dtype
from cinn_py.symbolic.integer import eval_int

# ---------------------------------------------------------------------------------------------
# Integer evaluation of dim expressions (C semantics)
# ---------------------------------------------------------------------------------------------
def eval_int_expr(expr: Expr, env: dict[str, int]) -> int:
    """Evaluate an integer expression of symbolic dims; KeyError for an unbound symbol."""
    try:
        return eval_int(expr, env)
    except ZeroDivisionError:
        raise ZeroDivisionError(f"division by zero in the shape expression {expr}") from None
    except ValueError:
        raise ValueError(f"shape expression {expr} is not an integer expression of symbolic dims") from None


def free_symbols(expr: Expr) -> set[str]:
    """Names of the Vars used by a shape expression."""
    from cinn_py.ir import walk

    return {node.name for node in walk(expr) if isinstance(node, Var)}


# ---------------------------------------------------------------------------------------------
# The validator
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BoundArgs:
    """Validated arguments: metas of inputs and outputs (in signature order) and symbol values."""

    inputs: tuple[ArgMeta, ...]
    outputs: tuple[ArgMeta, ...]
    symbols: dict[str, int]

    def scalar_values(self, func: LoweredFunc) -> tuple[int, ...]:
        return tuple(self.symbols[v.name] for v in func.scalar_args)


@dataclass(frozen=True)
class FastCall:
    """A validated call on the cached path: raw pointers in signature order and symbol values."""

    input_ptrs: tuple[int, ...]
    output_ptrs: tuple[int, ...] | None
    """None when no `out=` was given (the caller allocates `output_shapes`)."""
    symbols: dict[str, int]
    output_shapes: tuple[tuple[int, ...], ...]
    scalar_values: tuple[int, ...] = ()
    """Symbol values in the order of the function's scalar arguments."""


_SIGNATURE_CACHE_SIZE = 64


class ArgValidator:
    """Checks call arguments of one LoweredFunc. `device` is `"cpu"` or `"cuda"`."""

    def __init__(self, func: LoweredFunc, device: str = "cpu") -> None:
        self.func = func
        self.device = device
        self.inputs = func.inputs
        self.outputs = func.outputs
        self.symbols = func.scalar_args
        # signature -> (symbol values, output shapes, (dtype, shape, C strides) of each output,
        # symbol values in scalar-argument order)
        self._signatures: dict[tuple[Any, ...], tuple[dict[str, int], tuple[tuple[int, ...], ...],
                                                      tuple[tuple[Any, ...], ...], tuple[int, ...]]] = {}
        self._out_dtypes = tuple(storage_dtype(t.dtype) for t in self.outputs)
        for tensor in (*self.inputs, *self.outputs):
            for dim in tensor.shape:
                unknown = free_symbols(dim) - {s.name for s in self.symbols}
                if unknown:
                    raise ValueError(f"kernel '{func.name}': shape of '{tensor.name}' uses "
                                     f"{sorted(unknown)}, "
                                     f"which are not scalar arguments of the function")

    def _label(self, role: str, k: int, tensor: Tensor) -> str:
        return f"kernel '{self.func.name}': {role} {k} ('{tensor.name}')"

    def _expected_sig(self) -> str:
        names = ", ".join(t.name for t in self.inputs)
        return f"{len(self.inputs)} input(s) ({names})"

    # -- public ---------------------------------------------------------------------------------
    def fast_call(self, args: tuple[Any, ...], out: Any = None) -> FastCall | None:
        """The cached path (see module docstring): None when `args` (or `out`) are not plain
        numpy arrays of a signature that passed `validate` before, or `out` fails a check; the
        caller then runs `validate`, which raises the precise error."""
        if self.device != "cpu":
            return None
        key = []
        for a in args:  # `_signature`, inlined: this runs on every kernel call
            if type(a) is not np.ndarray:
                return None
            key.append((a.dtype, a.shape, a.strides))
        hit = self._signatures.get(tuple(key))
        if hit is None:
            return None
        symbols, shapes, out_keys, scalars = hit
        in_ptrs = tuple([data_ptr(a) for a in args])
        if out is None:
            return FastCall(in_ptrs, None, symbols, shapes, scalars)
        outs = out if type(out) in (list, tuple) else (out,)
        if len(outs) != len(out_keys):
            return None
        out_ptrs = []
        for arr, expected in zip(outs, out_keys):
            # (dtype, shape, C strides) equal to the expected ones: right type, shape, contiguous
            if type(arr) is not np.ndarray or (arr.dtype, arr.shape, arr.strides) != expected \
                    or not arr.flags.writeable:
                return None
            ptr = data_ptr(arr)
            if arr.nbytes and self._overlaps(ptr, arr.nbytes, args, in_ptrs, outs, out_ptrs):
                return None
            out_ptrs.append(ptr)
        return FastCall(in_ptrs, tuple(out_ptrs), symbols, shapes, scalars)

    @staticmethod
    def _overlaps(ptr: int, nbytes: int, args: tuple[Any, ...], in_ptrs: tuple[int, ...], outs: Any,
                  out_ptrs: list[int]) -> bool:
        """Whether [ptr, ptr + nbytes) overlaps an input or an earlier output."""
        end = ptr + nbytes
        for p, a in zip(in_ptrs, args):
            if p < end and ptr < p + a.nbytes and a.nbytes:
                return True
        for p, a in zip(out_ptrs, outs):
            if p < end and ptr < p + a.nbytes and a.nbytes:
                return True
        return False

    def validate(self, args: tuple[Any, ...], out: Any = None) -> BoundArgs:
        """Validate inputs (and `out` when given); returns metas and symbol values."""
        if len(args) != len(self.inputs):
            raise TypeError(f"kernel '{self.func.name}': expected {self._expected_sig()}, got {len(args)} "
                            f"argument(s)")
        metas = tuple(self._check_tensor(arg, "input", k, t) for k,
                      (arg, t) in enumerate(zip(args, self.inputs)))
        symbols = self._bind_symbols(metas)
        self._remember(args, symbols)
        outs: tuple[ArgMeta, ...] = ()
        if out is not None:
            outs = self.check_outputs(out, metas, symbols)
        return BoundArgs(metas, outs, symbols)

    def _remember(self, args: tuple[Any, ...], symbols: dict[str, int]) -> None:
        key = _signature(args) if self.device == "cpu" else None
        if key is None or key in self._signatures:
            return
        try:
            shapes = tuple(tuple(eval_int_expr(d, symbols) for d in t.shape) for t in self.outputs)
        except (KeyError, ZeroDivisionError, ValueError):
            return
        if any(d < 0 for shape in shapes for d in shape):
            return  # the full path reports the negative output shape on every call
        if not all(a.dtype.isbuiltin for a in args):
            return  # bfloat16 and other extension dtypes always take the full path
        if len(self._signatures) >= _SIGNATURE_CACHE_SIZE:
            self._signatures.pop(next(iter(self._signatures)))
        out_keys = tuple((dtype, shape, _c_strides(shape, dtype.itemsize))
                         for dtype, shape in zip(self._out_dtypes, shapes))
        scalars = tuple(symbols[v.name] for v in self.symbols)
        self._signatures[key] = (dict(symbols), shapes, out_keys, scalars)

    def output_shapes(self, symbols: dict[str, int]) -> list[tuple[int, ...]]:
        """Concrete output shapes for bound symbol values (Python twin of the infer-shape ABI)."""
        return [tuple(eval_int_expr(d, symbols) for d in t.shape) for t in self.outputs]

    def check_outputs(self, out: Any, inputs: tuple[ArgMeta, ...],
                      symbols: dict[str, int]) -> tuple[ArgMeta, ...]:
        """Validate user-given output buffers against the expected shapes and the inputs."""
        outs = (out,) if not isinstance(out, (list, tuple)) else tuple(out)
        if len(outs) != len(self.outputs):
            names = ", ".join(t.name for t in self.outputs)
            raise TypeError(f"kernel '{self.func.name}': out= expects {len(self.outputs)} array(s) "
                            f"({names}), "
                            f"got {len(outs)}")
        metas = tuple(self._check_tensor(o, "output", k, t) for k,
                      (o, t) in enumerate(zip(outs, self.outputs)))
        for k, (meta, tensor, shape) in enumerate(zip(metas, self.outputs, self.output_shapes(symbols))):
            label = self._label("output", k, tensor)
            if meta.shape != shape:
                raise ValueError(f"{label}: expected shape {shape}, got {meta.shape}")
            self._check_writable(meta, label)
        self._check_aliasing(inputs, metas)
        return metas

    # -- checks ----------------------------------------------------------------------------------
    def _check_tensor(self, obj: Any, role: str, k: int, tensor: Tensor) -> ArgMeta:
        label = self._label(role, k, tensor)
        meta = arg_meta(obj, label, self.device)
        expected = storage_dtype(tensor.dtype)
        if meta.dtype != expected:
            hint = " (bfloat16 is passed as its uint16 bit pattern or ml_dtypes.bfloat16)" \
                if tensor.dtype.kind == "bfloat" else ""
            raise TypeError(f"{label}: expected dtype {tensor.dtype}{hint}, got {meta.dtype}")
        if len(meta.shape) != tensor.ndim:
            raise ValueError(f"{label}: expected rank {tensor.ndim} (shape {_fmt_shape(tensor)}), "
                             f"got rank {len(meta.shape)} (shape {meta.shape})")
        for axis, (dim, actual) in enumerate(zip(tensor.shape, meta.shape)):
            if isinstance(dim, (IntImm, UIntImm)) and int(dim.value) != actual:
                raise ValueError(f"{label}: dim {axis} must be {dim.value} (shape {_fmt_shape(tensor)}), "
                                 f"got {actual} (shape {meta.shape})")
        if not meta.c_contiguous:
            raise ValueError(f"{label}: expected a C-contiguous array, got strides "
                             f"{getattr(meta.array, 'strides', '?')}; pass np.ascontiguousarray(x)")
        return meta

    def _check_writable(self, meta: ArgMeta, label: str) -> None:
        flags = getattr(meta.array, "flags", None)
        if flags is not None and not flags.writeable:
            raise ValueError(f"{label}: the output array is read-only")

    def _check_aliasing(self, inputs: tuple[ArgMeta, ...], outputs: tuple[ArgMeta, ...]) -> None:
        # All arguments are C-contiguous here, so byte-range overlap is exactly np.shares_memory.
        named = [(f"input {k} ('{t.name}')", m) for k, (m, t) in enumerate(zip(inputs, self.inputs))]
        for k, (meta, tensor) in enumerate(zip(outputs, self.outputs)):
            label = f"output {k} ('{tensor.name}')"
            for other_label, other in named:
                if _overlap(meta, other):
                    raise ValueError(f"kernel '{self.func.name}': {label} shares memory with {other_label}; "
                                     f"outputs must not alias inputs or other outputs (buffers are noalias)")
            named.append((label, meta))

    def _bind_symbols(self, metas: tuple[ArgMeta, ...]) -> dict[str, int]:
        env: dict[str, int] = {}
        where: dict[str, str] = {}
        pending: list[tuple[Expr, int, str]] = []
        for k, (meta, tensor) in enumerate(zip(metas, self.inputs)):
            for axis, (dim, actual) in enumerate(zip(tensor.shape, meta.shape)):
                label = f"{self._label('input', k, tensor)} dim {axis}"
                if isinstance(dim, Var):
                    self._bind_one(env, where, dim.name, actual, label)
                elif not isinstance(dim, (IntImm, UIntImm)):
                    pending.append((dim, actual, label))
        self._solve_affine(env, where, pending)
        for var in self.symbols:
            if var.name not in env:
                shapes = ", ".join(f"{t.name}{_fmt_shape(t)}={m.shape}" for t, m in zip(self.inputs, metas))
                raise ValueError(f"kernel '{self.func.name}': symbolic dim '{var.name}' cannot be inferred "
                                 "from "
                                 f"the input shapes ({shapes})")
            self._check_bounds(var, env[var.name], where[var.name])
        for dim, actual, label in pending:
            value = eval_int_expr(dim, env)
            if value != actual:
                detail = ", ".join(f"{n}={env[n]} (from {where[n]})" for n in sorted(free_symbols(dim)))
                raise ValueError(f"{label}: expected {dim} = {value} with {detail}, got {actual}")
        return env

    def _bind_one(self, env: dict[str, int], where: dict[str, str], name: str, value: int,
                  label: str) -> None:
        if name in env and env[name] != value:
            raise ValueError(f"{label}: symbolic dim '{name}' is {value} here but {env[name]} in "
                             f"{where[name]}; "
                             f"all uses of '{name}' must agree")
        if name not in env:
            env[name], where[name] = value, label

    def _solve_affine(self, env: dict[str, int], where: dict[str, str],
                      pending: list[tuple[Expr, int, str]]) -> None:
        """Bind a symbol that only occurs inside `a*S + b` dims (a, b constant after binding)."""
        for dim, actual, label in pending:
            unknown = free_symbols(dim) - set(env)
            if len(unknown) != 1:
                continue
            name = unknown.pop()
            f0, f1, f2 = (eval_int_expr(dim, {**env, name: x}) for x in (0, 1, 2))
            slope = f1 - f0
            if slope == 0 or f2 - f1 != slope or (actual - f0) % slope:
                continue
            value = (actual - f0) // slope
            if eval_int_expr(dim, {**env, name: value}) == actual:
                self._bind_one(env, where, name, value, label)

    def _check_bounds(self, var: Var, value: int, label: str) -> None:
        lower = var.lower_bound
        upper = var.upper_bound
        if isinstance(lower, (IntImm, UIntImm)) and value < lower.value:
            raise ValueError(f"{label}: symbolic dim '{var.name}' = {value} is below its lower bound "
                             f"{lower.value}")
        if isinstance(upper, (IntImm, UIntImm)) and value >= upper.value:
            raise ValueError(f"{label}: symbolic dim '{var.name}' = {value} is not below its upper bound "
                             f"{upper.value}")
        if value < 0:
            raise ValueError(f"{label}: symbolic dim '{var.name}' = {value} is negative")


def _signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Hashable (dtype, shape, strides) signature of plain numpy arrays (None otherwise). The
    strides make contiguity part of the key: only signatures that passed `validate` (which
    requires C-contiguous inputs) are ever remembered."""
    key = []
    for a in args:
        if type(a) is not np.ndarray:
            return None
        key.append((a.dtype, a.shape, a.strides))
    return tuple(key)


def _fmt_shape(tensor: Tensor) -> str:
    from cinn_py.ir import print_ir

    return "[" + ", ".join(print_ir(d) for d in tensor.shape) + "]"
