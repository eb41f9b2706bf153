"""`NetBuilder`: the op-level frontend (CINN `frontend::NetBuilder`).

    nb = NetBuilder("rms")
    x = nb.create_input("float32", ["S0", 768], "X")          # "S0": a symbolic dim
    w = nb.create_input("float32", [768], "W")
    y = nb.rms_norm(x, w, eps=1e-6)
    program = nb.build()                                        # -> Program

The op methods (`nb.add`, `nb.reduce_sum`, ...) are not written here: each op declares its
method with CINN's argument names and defaults in its `OpDef.signature` (cinn_py/frontend/ops),
and `NetBuilder.__getattr__` binds the generated method. Every method checks its arguments and
operands at once (the signature's checkers, then the registry's shape and dtype inference) and
raises `FrontendError` naming the method, the argument and expected vs actual; an unknown method
is an `UnknownOpError` (a FrontendError and an AttributeError) with close matches.

Binary ops broadcast as CINN's `axis` rule says: the lower-rank operand's dims align with the
other's from `axis` on (-1: trailing, numpy's rule), paired dims are equal or 1, and each
operand that needs it gets an explicit `broadcast_to` op (as CINN's PIR frontend inserts
`cinn_op.broadcast`), so elementwise ops always see equal shapes. A Python number operand
becomes a 0-d `fill_constant` of the other operand's dtype.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cinn_py.frontend import checks
from cinn_py.frontend.grad_methods import GradMethods
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.ops.base import METHODS, FrontendError, TensorType, UnknownOpError, check_dtype, suggest
from cinn_py.frontend.ops.elementwise_base import fill_attrs, scalar_of
from cinn_py.frontend.ops.shapes import broadcast_shapes, fmt_shape, shapes_equal, symbols_of, to_dim
from cinn_py.frontend.ops.signature import Kind, OpCall, make_method
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.ir import Var, default_axis_name

Operand = Any  # Variable | bool | int | float

# Loop axis names of lowered kernels (`i j k a b ...`); a symbolic dim may not take one.
_AXIS_NAMES = frozenset(default_axis_name(d) for d in range(32))


@functools.cache
def _method(op: str, name: str) -> Callable[..., Variable]:
    opdef = get_op(op)
    assert opdef.signature is not None
    build = opdef.signature.build or NetBuilder.build_op
    return make_method(op, name, opdef.signature, build)


class NetBuilder(GradMethods):
    """Builds a `Program` op by op; each method returns the output `Variable`."""

    def __init__(self, name: str) -> None:
        checks.check_program_name(name, "NetBuilder")
        self.name = name
        self._inputs: list[Variable] = []
        self._ops: list[Operator] = []
        self._vars: dict[int, Variable] = {}
        self._names: set[str] = set()
        self._symbols: dict[str, Var] = {}
        self._reserved: set[str] = set()
        self._counter = 0

    # -- variables ---------------------------------------------------------------------------------
    def create_input(self, dtype: Any, shape: Sequence[Any], name: str) -> Variable:
        """An input of `dtype` and `shape`; entries are ints, symbolic-dim names ("S0") or `cp.sym`."""
        checks.check_name(name, "create_input")
        d = check_dtype(dtype, f"create_input '{name}'")
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"create_input '{name}': shape must be a list or tuple, got "
                            f"{type(shape).__name__}")
        dims = tuple(to_dim(s, f"create_input '{name}': shape[{k}]") for k, s in enumerate(shape))
        for k, dim in enumerate(dims):
            if not isinstance(dim, (int, Var)):
                raise FrontendError(f"create_input '{name}': shape[{k}] must be an int or a bare symbolic "
                                    "dim "
                                    f"(its value is read from the input array), got {dim}")
            if isinstance(dim, Var):
                self._declare_symbol(dim, name)
        if name in self._names:
            raise FrontendError(f"create_input: the name '{name}' is already used in NetBuilder "
                                f"'{self.name}'")
        var = self._new_var(name, TensorType(dims, d))
        self._inputs.append(var)
        return var

    def _declare_symbol(self, s: Var, where: str) -> None:
        if s.name in _AXIS_NAMES:
            raise FrontendError(f"create_input '{where}': symbolic dim '{s.name}' would clash with the loop "
                                "axis names of lowered kernels (i, j, k, a, b, ...); use e.g. S0, N, batch")
        if s.name in self._names:
            raise FrontendError(f"create_input '{where}': symbolic dim '{s.name}' has the name of a variable")
        self._symbols.setdefault(s.name, s)

    def _new_var(self, name: str, t: TensorType) -> Variable:
        if name in self._symbols:
            raise FrontendError(f"NetBuilder '{self.name}': variable name '{name}' is a symbolic dim name")
        too_big = checks.element_count_error(t.shape, t.dtype, f"NetBuilder '{self.name}': variable '{name}'")
        if too_big is not None:
            raise FrontendError(too_big)
        var = Variable(name, t)
        self._vars[id(var)] = var
        self._names.add(name)
        return var

    def reserve_names(self, names: Sequence[str]) -> None:
        """Keep generated names clear of `names`, which later `emit(..., name=...)` calls will use
        (passes that rebuild a program keep its variable names)."""
        fresh = set(names) - self._names
        self._reserved |= fresh
        self._names |= fresh

    def _fresh_name(self, hint: str) -> str:
        while True:
            name = f"{hint}_{self._counter}"
            self._counter += 1
            if name not in self._names and name not in self._symbols:
                return name

    def emit(self, op_type: str, inputs: Sequence[Variable], attrs: dict[str, Any] | None = None,
             name: str | None = None) -> Variable:
        """Append an op (after shape/dtype inference) and return its output variable."""
        opdef = get_op(op_type)
        ins = tuple(self.variable(v, op_type) for v in inputs)
        if opdef.arity is not None and len(ins) != opdef.arity:
            raise FrontendError(f"{op_type}: expects {opdef.arity} operand(s), got {len(ins)}")
        attrs = dict(attrs or {})
        (out_type,) = opdef.infer([v.type for v in ins], attrs)
        if name is None:
            name = self._fresh_name(op_type)
        else:
            checks.check_name(name, op_type)
            if name in self._reserved:
                self._reserved.discard(name)
                self._names.discard(name)
            elif name in self._names:
                raise FrontendError(f"{op_type}: the name '{name}' is already used in NetBuilder "
                                    f"'{self.name}'")
        out = self._new_var(name, out_type)
        self._ops.append(Operator(op_type, ins, (out,), attrs))
        return out

    @property
    def ops(self) -> tuple[Operator, ...]:
        """The ops emitted so far, in order (rewrites check what a rule emitted)."""
        return tuple(self._ops)

    # -- ops: methods generated from the registry ------------------------------------------------------
    def __getattr__(self, name: str) -> Callable[..., Variable]:
        """`nb.<method>`: the method of the op that declares it (`OpDef.signature`)."""
        if name.startswith("_"):
            raise AttributeError(name)
        op = METHODS.get(name)
        if op is None:
            raise UnknownOpError(f"NetBuilder has no op '{name}'{suggest(name, sorted(METHODS))}")
        return types.MethodType(_method(op, name), self)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(METHODS))

    def build_op(self, call: OpCall) -> Variable:
        """The default build of a generated method: tensor arguments become the op's inputs (an
        absent optional one is left out and `param_names` lists the present ones), the others its
        attributes, normalised by the signature's `attrs` hook against the input types."""
        sig = get_op(call.op).signature
        assert sig is not None
        ins: list[Variable] = []
        attrs: dict[str, Any] = {}
        present: list[str] = []
        for p in sig.params:
            value = call.args[p.name]
            if p.kind == Kind.TENSOR:
                if value is None and p.optional_tensor:
                    continue
                ins.append(self.variable(value, call.method, p.name))
                if p.optional_tensor:
                    present.append(p.name)
            elif p.kind == Kind.TENSORS:
                ins.extend(self.variables(value, call.method, p.name))
            elif p.kind == Kind.OPERAND:
                ins.append(self.variable(value, call.method, p.name))
            elif p.name != sig.name_param:
                attrs[p.name] = value
        if any(p.optional_tensor for p in sig.params):
            attrs["param_names"] = tuple(present)
        if sig.attrs is not None:
            attrs = sig.attrs([v.type for v in ins], attrs)
        name = call.args.get(sig.name_param) if sig.name_param else None
        return self.emit(call.op, ins, attrs, name or None)

    # -- helpers of the ops' build functions ----------------------------------------------------------------
    def variable(self, x: Any, op: str, what: str = "operand") -> Variable:
        """`x` as a Variable of this builder, else a FrontendError naming the op and argument."""
        if isinstance(x, Variable):
            if id(x) not in self._vars:
                raise FrontendError(f"{op}: argument '{what}' ('{x.name}') belongs to another NetBuilder")
            return x
        raise FrontendError(f"{op}: argument '{what}' must be a Variable of this NetBuilder, got "
                            f"{type(x).__name__}")

    def variables(self, xs: Any, op: str, what: str) -> list[Variable]:
        if not isinstance(xs, (list, tuple)) or not xs:
            raise FrontendError(f"{op}: argument '{what}' must be a non-empty list of Variables, got "
                                f"{type(xs).__name__}")
        return [self.variable(v, op, f"{what}[{k}]") for k, v in enumerate(xs)]

    def operands(self, op: str, *xs: Operand) -> list[Variable]:
        """Variables for the operands (numbers become 0-d constants of the first variable's dtype),
        broadcast to one shape (numpy's right alignment)."""
        like = next((x for x in xs if isinstance(x, Variable)), None)
        if like is None:
            raise FrontendError(f"{op}: at least one operand must be a Variable")
        vs = ([self.variable(x, op) if isinstance(x, Variable) else self.constant_like(x, like, op)
               for x in xs])
        shape = vs[0].shape
        for v in vs[1:]:
            shape = broadcast_shapes(shape, v.shape, op) if not shapes_equal(shape, v.shape) else shape
        return [v if shapes_equal(v.shape, shape) else self.broadcast_to(v, shape) for v in vs]

    def constant_like(self, value: Any, like: Variable, op: str) -> Variable:
        """A 0-d `fill_constant` of `like`'s dtype holding the Python number `value`."""
        if isinstance(value, (bool, int, float, np.generic)):
            return self.emit("fill_constant", (),
                             fill_attrs((), scalar_of(value, like.dtype, op), like.dtype))
        raise FrontendError(f"{op}: operands must be Variables or Python numbers, got {type(value).__name__}")

    # -- build -----------------------------------------------------------------------------------------------
    def build(self, outputs: Sequence[Variable] | None = None) -> Program:
        """The Program; `outputs` defaults to the variables no op reads (the graph's sinks)."""
        if outputs is None:
            read = {id(v) for op in self._ops for v in op.inputs}
            outs = [op.output for op in self._ops if id(op.output) not in read]
        else:
            outs = [self.variable(v, "build", "output") for v in outputs]
        if not outs:
            raise FrontendError(f"NetBuilder '{self.name}': the program has no output (no op was added)")
        self._check_symbols()
        return Program(self.name, self._inputs, self._ops, outs)

    def _check_symbols(self) -> None:
        for op in self._ops:
            for s in symbols_of(op.output.shape):
                if s.name not in self._symbols:
                    raise FrontendError(
                        f"{op.type}: output '{op.output.name}' {fmt_shape(op.output.shape)} uses the "
                        "symbolic "
                        f"dim '{s.name}', which no input declares; symbolic dims are bound from input shapes")
