"""The fuzzer's oracles: a program spec as compute-DSL tensors, as DSL source, and in numpy.

`build_tensors(spec)` builds the `ComputeTensor`s (what `cinn_py.lower` takes);
`to_python(spec)` prints the same program as DSL source for reproducers; `evaluate(spec, inputs,
binding)` computes every tensor with numpy, independently of the compiler: float math in
float64 rounded to the tensor dtype at every store, integer math in int64 with C truncating
division (values are bounded so nothing overflows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cinn_py.frontend.ops.reference import cinn_maximum, cinn_minimum, fold_extreme
from cinn_py.tools.fuzzing.programs import FLOAT_DTYPES, INT_DTYPES, Node, ProgramSpec, TensorSpec, shape_of
from cinn_py.ir import Expr, Var

# Safe-domain wrappers (see programs.UNARY): name -> (numpy function, DSL source template)
_NP_UNARY = {
    "exp": lambda x: np.exp(cinn_minimum(x, np.asarray(3.0, x.dtype))),
    "log": lambda x: np.log(np.abs(x) + 1.0),
    "sqrt": lambda x: np.sqrt(np.abs(x)), "rsqrt": lambda x: 1.0 / np.sqrt(np.abs(x) + 1.0),
    "tanh": np.tanh, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "erf": None,
    "sin": np.sin, "cos": np.cos, "abs": np.abs, "neg": np.negative, "floor": np.floor, "ceil": np.ceil,
}
_SRC_UNARY = {
    "exp": "cp.exp(cp.minimum({0}, 3.0))", "log": "cp.log(cp.abs({0}) + 1.0)", "sqrt": "cp.sqrt(cp.abs({0}))",
    "rsqrt": "cp.rsqrt(cp.abs({0}) + 1.0)", "neg": "(-{0})", "tanh": "cp.tanh({0})",
    "sigmoid": "cp.sigmoid({0})",
    "erf": "cp.erf({0})", "sin": "DSL.sin({0})", "cos": "DSL.cos({0})", "abs": "cp.abs({0})",
    "floor": "cp.floor({0})", "ceil": "cp.ceil({0})",
}
_CMP_SRC = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _erf(x: np.ndarray) -> np.ndarray:
    from math import erf

    return np.vectorize(erf, otypes=[np.float64])(x)


# ---------------------------------------------------------------------------------------------
# numpy reference
# ---------------------------------------------------------------------------------------------
def evaluate(spec: ProgramSpec, inputs: dict[str, np.ndarray],
             binding: dict[str, int]) -> dict[str, np.ndarray]:
    """Every output tensor's reference value, keyed by tensor name."""
    values: list[np.ndarray] = []
    for t in spec.tensors:
        if t.is_input:
            values.append(np.asarray(inputs[t.name]))
            continue
        it_axes = t.axes + ((t.reduce[1],) if t.reduce else ())
        extents = {a: _extent(spec, a, binding) for a in it_axes}
        full = tuple(extents[a] for a in it_axes)
        raw = np.broadcast_to(_eval(spec, t.expr, t.dtype, it_axes, extents, values), full)
        if t.reduce is not None:
            raw = _reduce(t.reduce[0], raw, t.dtype)
        values.append(_store(np.asarray(raw), t.dtype))
    return {spec.tensors[k].name: values[k] for k in spec.outputs}


def _extent(spec: ProgramSpec, axis: int, binding: dict[str, int]) -> int:
    d = spec.dims[axis]
    return binding[d] if isinstance(d, str) else d


def _compute_dtype(dtype: str) -> type:
    return np.float64 if dtype in FLOAT_DTYPES else np.int64


def _store(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype in INT_DTYPES and x.dtype.kind == "f":
        x = np.trunc(x)
    return x.astype(dtype)


def _reduce(kind: str, x: np.ndarray, dtype: str) -> np.ndarray:
    x = x.astype(_compute_dtype(dtype))
    if kind in ("max", "min"):  # the kernels' NaN rule: a serial fold of cinn_max/cinn_min
        return fold_extreme(x, [-1], False, kind == "max")
    return {"sum": np.sum, "prod": np.prod}[kind](x, axis=-1)


def _eval(spec: ProgramSpec, node: Node, dtype: str, it_axes: tuple[int, ...], extents: dict[int, int],
          values: list[np.ndarray]) -> np.ndarray:
    kind = node[0]
    cd = _compute_dtype(dtype)
    if kind == "load":
        return _load(spec.tensors[node[1]], values[node[1]], it_axes).astype(cd)
    if kind == "const":
        return np.asarray(node[1], dtype=cd)
    if kind == "idx":
        shape = [extents[a] if a == node[1] else 1 for a in it_axes]
        return np.arange(extents[node[1]], dtype=cd).reshape(shape)
    sub = lambda n, d=dtype: _eval(spec, n, d, it_axes, extents, values)  # noqa: E731
    if kind == "un":
        fn = _NP_UNARY[node[1]] or _erf
        return np.asarray(fn(sub(node[2])), dtype=cd)
    if kind == "bin":
        return _binary(node[1], sub(node[2]), sub(node[3]), dtype)
    if kind == "sel":
        cmp = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "eq": np.equal, "ne": np.not_equal}[node[1]]
        return np.where(cmp(sub(node[2]), sub(node[3])), sub(node[4]), sub(node[5]))
    if kind == "cast":
        return _store(sub(node[3], node[2]), node[1]).astype(cd)
    raise ValueError(f"unknown expression node {kind!r}")


def _binary(op: str, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    if op == "div" and dtype in FLOAT_DTYPES:
        return a / (np.abs(b) + 1.0)
    if op in ("div", "mod"):   # C truncation, divisor a positive constant
        q = np.sign(a) * (np.abs(a) // b)
        return q if op == "div" else a - q * b
    # max/min: cinn_max(a, b) = a > b ? a : b (a NaN operand gives b), as the kernels compute
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": cinn_maximum,
            "min": cinn_minimum}[op](a, b)


def _load(t: TensorSpec, arr: np.ndarray, it_axes: tuple[int, ...]) -> np.ndarray:
    order = sorted(range(len(t.axes)), key=lambda k: it_axes.index(t.axes[k]))
    moved = np.transpose(arr, order)
    shape = [moved.shape[[t.axes[k] for k in order].index(a)] if a in t.axes else 1 for a in it_axes]
    return moved.reshape(shape)


# ---------------------------------------------------------------------------------------------
# Compute DSL
# ---------------------------------------------------------------------------------------------
def build_tensors(spec: ProgramSpec) -> list[Any]:
    """The spec as ComputeTensors: inputs then outputs (the argument list `cinn_py.lower` takes)."""
    import cinn_py.frontend.compute as dsl  # noqa: PLC0415

    syms = {s: dsl.sym(s, 1) for s in spec.symbols}
    dims = [syms[d] if isinstance(d, str) else d for d in spec.dims]
    built: list[Any] = []
    for t in spec.tensors:
        shape = [dims[a] for a in t.axes]
        if t.is_input:
            built.append(dsl.placeholder(shape, t.dtype, t.name))
            continue
        built.append(dsl.compute(shape, _fcompute(spec, t, dims, built), t.name))
    inputs = [built[k] for k, t in enumerate(spec.tensors) if t.is_input]
    return inputs + [built[k] for k in spec.outputs]


def _fcompute(spec: ProgramSpec, t: TensorSpec, dims: list[Any], built: list[Any]) -> Any:
    import cinn_py.frontend.compute as dsl  # noqa: PLC0415

    def fcompute(*ivs: Var) -> Expr:
        env = dict(zip(t.axes, ivs))
        if t.reduce is None:
            return _dsl_expr(spec, t.expr, t.dtype, env, built)
        kind, r = t.reduce
        k = dsl.reduce_axis(dims[r])
        env[r] = k
        body = _dsl_expr(spec, t.expr, t.dtype, env, built)
        return getattr(dsl, f"reduce_{kind}")(body, [k])

    return fcompute


def _dsl_expr(spec: ProgramSpec, node: Node, dtype: str, env: dict[int, Var], built: list[Any]) -> Expr:
    import cinn_py.frontend.compute as dsl  # noqa: PLC0415

    kind = node[0]
    sub = lambda n, d=dtype: _dsl_expr(spec, n, d, env, built)  # noqa: E731
    if kind == "load":
        t = spec.tensors[node[1]]
        return built[node[1]][tuple(env[a] for a in t.axes)]
    if kind == "const":
        from cinn_py.ir import const  # noqa: PLC0415

        return const(node[1], _ir_dtype(dtype))
    if kind == "idx":
        return dsl.cast(env[node[1]], dtype)
    if kind == "un":
        return _dsl_unary(node[1], sub(node[2]), dtype)
    if kind == "bin":
        a, b = sub(node[2]), sub(node[3])
        op = node[1]
        if op == "div" and dtype in FLOAT_DTYPES:
            return a / (dsl.abs(b) + 1.0)
        return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
                "mod": lambda: a % b, "max": lambda: dsl.maximum(a, b),
                "min": lambda: dsl.minimum(a, b)}[op]()
    if kind == "sel":
        from cinn_py.ir import eq, ne  # noqa: PLC0415

        a, b = sub(node[2]), sub(node[3])
        cond = {"lt": lambda: a < b, "le": lambda: a <= b, "gt": lambda: a > b, "ge": lambda: a >= b,
                "eq": lambda: eq(a, b), "ne": lambda: ne(a, b)}[node[1]]()
        return dsl.select(cond, sub(node[4]), sub(node[5]))
    if kind == "cast":
        return dsl.cast(sub(node[3], node[2]), node[1])
    raise ValueError(f"unknown expression node {kind!r}")


def _ir_dtype(name: str) -> Any:
    from cinn_py.ir import dtype_of  # noqa: PLC0415

    return dtype_of(name)


def _dsl_unary(name: str, x: Expr, dtype: str) -> Expr:
    import cinn_py.frontend.compute as dsl  # noqa: PLC0415

    if name == "exp":
        return dsl.exp(dsl.minimum(x, 3.0))
    if name == "log":
        return dsl.log(dsl.abs(x) + 1.0)
    if name == "sqrt":
        return dsl.sqrt(dsl.abs(x))
    if name == "rsqrt":
        return dsl.rsqrt(dsl.abs(x) + 1.0)
    if name == "neg":
        return -x
    return getattr(dsl, name)(x)


# ---------------------------------------------------------------------------------------------
# DSL source (for reproducers)
# ---------------------------------------------------------------------------------------------
def to_python(spec: ProgramSpec, func_name: str = "fuzz_kernel") -> str:
    """DSL source that builds the same program and binds `func` to the lowered function."""
    lines = ["import cinn_py as cp", "import cinn_py.frontend.compute as DSL", "from cinn_py import ir", ""]
    for s in spec.symbols:
        lines.append(f"{s} = cp.sym({s!r})")
    dims = [d if isinstance(d, str) else str(d) for d in spec.dims]
    for k, t in enumerate(spec.tensors):
        shape = "(" + ", ".join(dims[a] for a in t.axes) + ",)"
        if t.is_input:
            lines.append(f"{t.name} = cp.placeholder({shape}, {t.dtype!r}, {t.name!r})")
            continue
        names = {a: f"v{a}" for a in t.axes}
        if t.reduce is not None:
            names[t.reduce[1]] = "rk"
            lines.append(f"rk = cp.reduce_axis({dims[t.reduce[1]]})")
        body = _src(spec, t.expr, t.dtype, names)
        if t.reduce is not None:
            body = f"cp.reduce_{t.reduce[0]}({body}, [rk])"
        params = ", ".join(f"v{a}" for a in t.axes)
        lines.append(f"{t.name} = cp.compute({shape}, lambda {params}: {body}, {t.name!r})")
    args = [t.name for t in spec.tensors if t.is_input] + [spec.tensors[k].name for k in spec.outputs]
    lines.append(f"func = cp.lower({func_name!r}, [{', '.join(args)}])")
    return "\n".join(lines) + "\n"


def _src(spec: ProgramSpec, node: Node, dtype: str, names: dict[int, str]) -> str:
    kind = node[0]
    sub = lambda n, d=dtype: _src(spec, n, d, names)  # noqa: E731
    if kind == "load":
        t = spec.tensors[node[1]]
        return f"{t.name}[{', '.join(names[a] for a in t.axes)}]"
    if kind == "const":
        return f"ir.const({node[1]!r}, {dtype!r})"
    if kind == "idx":
        return f"cp.cast({names[node[1]]}, {dtype!r})"
    if kind == "un":
        return _SRC_UNARY[node[1]].format(sub(node[2]))
    if kind == "bin":
        a, b = sub(node[2]), sub(node[3])
        if node[1] == "div" and dtype in FLOAT_DTYPES:
            return f"({a} / (cp.abs({b}) + 1.0))"
        infix = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}.get(node[1])
        return (f"({a} {infix} {b})" if infix
                else f"cp.{'maximum' if node[1] == 'max' else 'minimum'}({a}, {b})")
    if kind == "sel":
        a, b = sub(node[2]), sub(node[3])
        cond = f"({a} {_CMP_SRC[node[1]]} {b})" if node[1] in _CMP_SRC else f"ir.{node[1]}({a}, {b})"
        return f"cp.select({cond}, {sub(node[4])}, {sub(node[5])})"
    if kind == "cast":
        return f"cp.cast({sub(node[3], node[2])}, {node[1]!r})"
    raise ValueError(f"unknown expression node {kind!r}")


def output_arrays_shape(spec: ProgramSpec, binding: dict[str, int]) -> dict[str, tuple[int, ...]]:
    return {spec.tensors[k].name: shape_of(spec, spec.tensors[k], binding) for k in spec.outputs}
