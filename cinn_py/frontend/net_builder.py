"""`NetBuilder`: the op-level frontend (CINN `frontend::NetBuilder`).

    nb = NetBuilder("rms")
    x = nb.create_input("float32", ["S0", 768], "X")          # "S0": a symbolic dim
    w = nb.create_input("float32", [768], "W")
    y = nb.rms_norm(x, w, eps=1e-6)
    program = nb.build()                                        # -> Program

Every method checks its operands at once (shape and dtype inference of the op registry) and
raises `FrontendError` naming the op and the mismatch. Binary ops broadcast like numpy: a
symbolic dim pairs with an equal dim or with 1, and each operand that needs it gets an explicit
`broadcast_to` op (as CINN's PIR frontend inserts `cinn_op.broadcast`), so elementwise ops
always see equal shapes. A Python number operand becomes a 0-d `fill_constant` of the other
operand's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cinn_py.frontend import checks
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.ops.base import FrontendError, TensorType, check_dtype
from cinn_py.frontend.ops.elementwise import fill_attrs, scalar_of
from cinn_py.frontend.ops.injective import broadcast_attrs, check_perm, reshape_shape, slice_attrs
from cinn_py.frontend.ops.shapes import (
    broadcast_shapes, fmt_shape, normalize_axes, normalize_axis, shapes_equal, symbols_of, to_dim,
)
from cinn_py.frontend.program import Operator, Program, Variable
from cinn_py.ir import Var, default_axis_name

Operand = Any  # Variable | bool | int | float

# Loop axis names of lowered kernels (`i j k a b ...`); a symbolic dim may not take one.
_AXIS_NAMES = frozenset(default_axis_name(d) for d in range(32))


class NetBuilder:
    """Builds a `Program` op by op; each method returns the output `Variable`."""

    def __init__(self, name: str) -> None:
        checks.check_name(name, "NetBuilder")
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
            raise TypeError(f"create_input '{name}': shape must be a list or tuple, got {type(shape).__name__}")
        dims = tuple(to_dim(s, f"create_input '{name}': shape[{k}]") for k, s in enumerate(shape))
        for k, dim in enumerate(dims):
            if not isinstance(dim, (int, Var)):
                raise FrontendError(f"create_input '{name}': shape[{k}] must be an int or a bare symbolic dim "
                                    f"(its value is read from the input array), got {dim}")
            if isinstance(dim, Var):
                self._declare_symbol(dim, name)
        if name in self._names:
            raise FrontendError(f"create_input: the name '{name}' is already used in NetBuilder '{self.name}'")
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

    def _var(self, x: Any, op: str, what: str = "operand") -> Variable:
        if isinstance(x, Variable):
            if id(x) not in self._vars:
                raise FrontendError(f"{op}: {what} '{x.name}' belongs to another NetBuilder")
            return x
        raise TypeError(f"{op}: {what} must be a Variable of this NetBuilder, got {type(x).__name__}")

    def emit(self, op_type: str, inputs: Sequence[Variable], attrs: dict[str, Any] | None = None,
             name: str | None = None) -> Variable:
        """Append an op (after shape/dtype inference) and return its output variable."""
        opdef = get_op(op_type)
        ins = tuple(self._var(v, op_type) for v in inputs)
        if opdef.arity is not None and len(ins) != opdef.arity:
            raise TypeError(f"{op_type}: expects {opdef.arity} operand(s), got {len(ins)}")
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
                raise FrontendError(f"{op_type}: the name '{name}' is already used in NetBuilder '{self.name}'")
        out = self._new_var(name, out_type)
        self._ops.append(Operator(op_type, ins, (out,), attrs))
        return out

    # -- constants and broadcasting ----------------------------------------------------------------------
    def fill_constant(self, shape: Sequence[Any], value: Any, dtype: Any = "float32",
                      name: str | None = None) -> Variable:
        """A tensor of `shape` filled with `value` (symbolic dims must be those of an input)."""
        return self.emit("fill_constant", (), fill_attrs(shape, value, dtype), name)

    def broadcast_to(self, x: Variable, shape: Sequence[Any], broadcast_axes: Sequence[int] | None = None) -> Variable:
        """Broadcast `x` to `shape`; input dim d maps to output axis `broadcast_axes[d]` (default:
        numpy's right alignment) and must be equal to it or 1."""
        xv = self._var(x, "broadcast_to")
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"broadcast_to: shape must be a list or tuple, got {type(shape).__name__}")
        dims = tuple(to_dim(s, f"broadcast_to: shape[{k}]") for k, s in enumerate(shape))
        return self.emit("broadcast_to", (xv,), broadcast_attrs(xv.type, dims, broadcast_axes))

    def operands(self, op: str, *xs: Operand) -> list[Variable]:
        """Variables for the operands (numbers become 0-d constants of the first variable's dtype),
        broadcast to one shape."""
        like = next((x for x in xs if isinstance(x, Variable)), None)
        if like is None:
            raise TypeError(f"{op}: at least one operand must be a Variable")
        vs = [self._var(x, op) if isinstance(x, Variable) else self._scalar(x, like, op) for x in xs]
        shape = vs[0].shape
        for v in vs[1:]:
            shape = broadcast_shapes(shape, v.shape, op) if not shapes_equal(shape, v.shape) else shape
        return [v if shapes_equal(v.shape, shape) else self.broadcast_to(v, shape) for v in vs]

    def _scalar(self, value: Any, like: Variable, op: str) -> Variable:
        if isinstance(value, (bool, int, float)):
            return self.fill_constant((), scalar_of(value, like.dtype, op), like.dtype)
        raise TypeError(f"{op}: operands must be Variables or Python numbers, got {type(value).__name__}")

    def _binary(self, op: str, x: Operand, y: Operand) -> Variable:
        return self.emit(op, self.operands(op, x, y))

    def _unary(self, op: str, x: Variable) -> Variable:
        return self.emit(op, (self._var(x, op),))

    # -- elementwise ------------------------------------------------------------------------------------
    def add(self, x: Operand, y: Operand) -> Variable:
        return self._binary("add", x, y)

    def subtract(self, x: Operand, y: Operand) -> Variable:
        return self._binary("subtract", x, y)

    def multiply(self, x: Operand, y: Operand) -> Variable:
        return self._binary("multiply", x, y)

    def divide(self, x: Operand, y: Operand) -> Variable:
        """x / y (C semantics for integers: truncation toward zero)."""
        return self._binary("divide", x, y)

    def maximum(self, x: Operand, y: Operand) -> Variable:
        return self._binary("maximum", x, y)

    def minimum(self, x: Operand, y: Operand) -> Variable:
        return self._binary("minimum", x, y)

    def pow(self, x: Operand, y: Operand) -> Variable:
        return self._binary("pow", x, y)

    def equal(self, x: Operand, y: Operand) -> Variable:
        return self._binary("equal", x, y)

    def not_equal(self, x: Operand, y: Operand) -> Variable:
        return self._binary("not_equal", x, y)

    def less_than(self, x: Operand, y: Operand) -> Variable:
        return self._binary("less_than", x, y)

    def less_equal(self, x: Operand, y: Operand) -> Variable:
        return self._binary("less_equal", x, y)

    def greater_than(self, x: Operand, y: Operand) -> Variable:
        return self._binary("greater_than", x, y)

    def greater_equal(self, x: Operand, y: Operand) -> Variable:
        return self._binary("greater_equal", x, y)

    def logical_and(self, x: Operand, y: Operand) -> Variable:
        return self._binary("logical_and", x, y)

    def logical_or(self, x: Operand, y: Operand) -> Variable:
        return self._binary("logical_or", x, y)

    def logical_not(self, x: Variable) -> Variable:
        return self._unary("logical_not", x)

    def negative(self, x: Variable) -> Variable:
        return self._unary("negative", x)

    def abs(self, x: Variable) -> Variable:
        return self._unary("abs", x)

    def relu(self, x: Variable) -> Variable:
        return self._unary("relu", x)

    def exp(self, x: Variable) -> Variable:
        return self._unary("exp", x)

    def log(self, x: Variable) -> Variable:
        return self._unary("log", x)

    def sqrt(self, x: Variable) -> Variable:
        return self._unary("sqrt", x)

    def rsqrt(self, x: Variable) -> Variable:
        return self._unary("rsqrt", x)

    def tanh(self, x: Variable) -> Variable:
        return self._unary("tanh", x)

    def erf(self, x: Variable) -> Variable:
        return self._unary("erf", x)

    def sigmoid(self, x: Variable) -> Variable:
        return self._unary("sigmoid", x)

    def gelu(self, x: Variable, approximate: bool = False) -> Variable:
        """GELU: `x * (0.5 + 0.5 * erf(x / sqrt(2)))`, or the tanh approximation (composite)."""
        return self.emit("gelu", (self._var(x, "gelu"),), {"approximate": bool(approximate)})

    def cast(self, x: Variable, dtype: Any) -> Variable:
        return self.emit("cast", (self._var(x, "cast"),), {"dtype": check_dtype(dtype, "cast")})

    def select(self, condition: Operand, x: Operand, y: Operand) -> Variable:
        """`x` where `condition` holds, else `y` (all three broadcast to one shape)."""
        c = self._var(condition, "select", "condition")
        like = next((v for v in (x, y) if isinstance(v, Variable)), None)
        if like is None:
            raise TypeError("select: x or y must be a Variable")
        xs = [self._var(v, "select") if isinstance(v, Variable) else self._scalar(v, like, "select")
              for v in (x, y)]
        return self.emit("select", self.operands("select", c, *xs))

    def scale(self, x: Variable, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True) -> Variable:
        """`x * scale + bias` (`(x + bias) * scale` when not bias_after_scale), CINN's scale op."""
        xv = self._var(x, "scale")
        attrs = {"scale": scalar_of(scale, xv.dtype, "scale"), "bias": scalar_of(bias, xv.dtype, "scale"),
                 "bias_after_scale": bool(bias_after_scale)}
        return self.emit("scale", (xv,), attrs)

    # -- data movement ------------------------------------------------------------------------------------
    def reshape(self, x: Variable, shape: Sequence[Any]) -> Variable:
        """Reshape to `shape` (0 copies the input dim, one -1 is inferred; symbolic where the element
        counts are provably equal)."""
        xv = self._var(x, "reshape")
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"reshape: shape must be a list or tuple, got {type(shape).__name__}")
        raw = [s if isinstance(s, int) and not isinstance(s, bool) and s < 0 else to_dim(s, f"reshape: shape[{k}]")
               for k, s in enumerate(shape)]
        return self.emit("reshape", (xv,), {"shape": reshape_shape(xv.type, raw)})

    def transpose(self, x: Variable, perm: Sequence[int]) -> Variable:
        xv = self._var(x, "transpose")
        if not isinstance(perm, (list, tuple)):
            raise TypeError(f"transpose: perm must be a list or tuple, got {type(perm).__name__}")
        return self.emit("transpose", (xv,), {"perm": check_perm(xv.type, perm)})

    def slice(self, x: Variable, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
              strides: Sequence[int] | None = None) -> Variable:
        xv = self._var(x, "slice")
        return self.emit("slice", (xv,), slice_attrs(xv.type, axes, starts, ends, strides))

    def concat(self, xs: Sequence[Variable], axis: int = 0) -> Variable:
        if not isinstance(xs, (list, tuple)) or not xs:
            raise TypeError("concat: xs must be a non-empty list of Variables")
        vs = [self._var(v, "concat") for v in xs]
        return self.emit("concat", vs, {"axis": normalize_axis(axis, vs[0].ndim, "concat")})

    # -- reductions -----------------------------------------------------------------------------------------
    def _reduce(self, op: str, x: Variable, axes: Any, keepdim: bool) -> Variable:
        xv = self._var(x, op)
        if isinstance(axes, (list, tuple)) and not axes:
            raise FrontendError(f"{op}: axes is empty; pass None to reduce over all axes")
        return self.emit(op, (xv,), {"axes": normalize_axes(axes, xv.ndim, op), "keepdim": bool(keepdim)})

    def reduce_sum(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_sum", x, axes, keepdim)

    def reduce_mean(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_mean", x, axes, keepdim)

    def reduce_max(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_max", x, axes, keepdim)

    def reduce_min(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_min", x, axes, keepdim)

    def reduce_prod(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_prod", x, axes, keepdim)

    def reduce_all(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_all", x, axes, keepdim)

    def reduce_any(self, x: Variable, axes: Any = None, keepdim: bool = False) -> Variable:
        return self._reduce("reduce_any", x, axes, keepdim)

    # -- composite and non-fusible ops ------------------------------------------------------------------------
    def softmax(self, x: Variable, axis: int = -1) -> Variable:
        xv = self._var(x, "softmax")
        return self.emit("softmax", (xv,), {"axis": normalize_axis(axis, xv.ndim, "softmax")})

    def rms_norm(self, x: Variable, weight: Variable | None = None, eps: float = 1e-6,
                 begin_norm_axis: int = -1) -> Variable:
        """`x / sqrt(mean(x^2 over axes >= begin_norm_axis) + eps) * weight`."""
        return self._norm("rms_norm", x, {"weight": weight}, eps, begin_norm_axis)

    def layer_norm(self, x: Variable, gamma: Variable | None = None, beta: Variable | None = None,
                   eps: float = 1e-5, begin_norm_axis: int = -1) -> Variable:
        """`(x - mean) / sqrt(var + eps) * gamma + beta` over the axes >= begin_norm_axis."""
        return self._norm("layer_norm", x, {"gamma": gamma, "beta": beta}, eps, begin_norm_axis)

    def _norm(self, op: str, x: Variable, params: dict[str, Variable | None], eps: float, begin: int) -> Variable:
        xv = self._var(x, op)
        present = {k: self._var(v, op, k) for k, v in params.items() if v is not None}
        attrs = {"eps": float(eps), "begin_norm_axis": normalize_axis(begin, xv.ndim, op, "begin_norm_axis"),
                 "param_names": tuple(present)}
        return self.emit(op, (xv, *present.values()), attrs)

    def matmul(self, x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False) -> Variable:
        """Matrix product over the last two dims (NonFusible: lowered naively, its own group)."""
        return self.emit("matmul", (self._var(x, "matmul"), self._var(y, "matmul")),
                         {"transpose_x": bool(transpose_x), "transpose_y": bool(transpose_y)})

    # -- build ----------------------------------------------------------------------------------------------------
    def build(self, outputs: Sequence[Variable] | None = None) -> Program:
        """The Program; `outputs` defaults to the variables no op reads (the graph's sinks)."""
        if outputs is None:
            read = {id(v) for op in self._ops for v in op.inputs}
            outs = [op.output for op in self._ops if id(op.output) not in read]
        else:
            outs = [self._var(v, "build", "output") for v in outputs]
        if not outs:
            raise FrontendError(f"NetBuilder '{self.name}': the program has no output (no op was added)")
        self._check_symbols()
        return Program(self.name, self._inputs, self._ops, outs)

    def _check_symbols(self) -> None:
        for op in self._ops:
            for s in symbols_of(op.output.shape):
                if s.name not in self._symbols:
                    raise FrontendError(
                        f"{op.type}: output '{op.output.name}' {fmt_shape(op.output.shape)} uses the symbolic "
                        f"dim '{s.name}', which no input declares; symbolic dims are bound from input shapes")
