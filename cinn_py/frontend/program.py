"""`Program`: the op graph a `NetBuilder` builds (CINN `frontend::Program`).

A program has typed, shaped input `Variable`s, `Operator`s in topological order (each with one
output variable) and output variables. Shapes may hold symbolic dims, which are bound from the
input arrays' shapes when the program runs. `str(program)` prints one op per line:

    program rms_norm(X: float32[S0, 768], W: float32[768]) -> (Y)
      multiply_0: float32[S0, 768] = multiply(X, X)
      ...

`run_numpy(*inputs)` evaluates the graph op by op with numpy (the differential oracle);
`cinn_py.pipeline.run_interpreted(program, inputs)` runs the compiled pipeline (decompose, graph
passes, fusion, lowering) through the IR interpreter, group by group.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.frontend.host_arrays import host_array
from cinn_py.frontend.ops import get_op
from cinn_py.frontend.ops.base import FrontendError, OpPatternKind, TensorType, numpy_dtype, run_reference
from cinn_py.frontend.ops.shapes import fmt_dim, fmt_shape, symbols_of
from cinn_py.ir import DType, Expr, Var


@dataclass(frozen=True, eq=False)
class Variable:
    """A value of the program: a name, a shape (ints and symbolic dims) and a dtype."""

    name: str
    type: TensorType

    @property
    def shape(self) -> tuple[Any, ...]:
        return self.type.shape

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.ndim

    def type_str(self) -> str:
        return f"{self.dtype}{fmt_shape(self.shape)}"

    def __repr__(self) -> str:
        return f"<Variable {self.name}: {self.type_str()}>"


@dataclass(frozen=True, eq=False)
class Operator:
    """One op: `outputs[0] = type(inputs..., attrs)`."""

    type: str
    inputs: tuple[Variable, ...]
    outputs: tuple[Variable, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def output(self) -> Variable:
        return self.outputs[0]

    @property
    def pattern(self) -> OpPatternKind:
        return get_op(self.type).pattern

    def __str__(self) -> str:
        args = [v.name for v in self.inputs] + [f"{k}={_fmt_attr(v)}" for k, v in self.attrs.items()
                                                 if not k.startswith("_")]
        return f"{self.output.name}: {self.output.type_str()} = {self.type}({', '.join(args)})"

    def __repr__(self) -> str:
        return f"<Operator {self}>"


def _fmt_attr(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_fmt_attr(v) for v in value) + "]"
    if isinstance(value, (Expr, int)) and not isinstance(value, bool):
        return fmt_dim(value)
    if isinstance(value, DType):
        return str(value)
    if isinstance(value, float):
        return format(value, ".8g")
    return repr(value)


class Program:
    """An op graph with typed, shaped variables; ops are kept in topological order."""

    def __init__(self, name: str, inputs: Sequence[Variable], ops: Sequence[Operator],
                 outputs: Sequence[Variable]) -> None:
        self.name = name
        self.inputs = tuple(inputs)
        self.ops = tuple(ops)
        self.outputs = tuple(outputs)
        self._check()
        self._producer = {id(op.output): op for op in self.ops}

    def _check(self) -> None:
        known = {id(v) for v in self.inputs}
        for op in self.ops:
            for v in op.inputs:
                if id(v) not in known:
                    raise FrontendError(f"program '{self.name}': op {op.type} reads '{v.name}', which is "
                                        "neither an input nor produced by an earlier op")
            known.update(id(v) for v in op.outputs)
        for v in self.outputs:
            if id(v) not in known:
                raise FrontendError(f"program '{self.name}': output '{v.name}' is not produced by the "
                                    "program")

    # -- graph queries -------------------------------------------------------------------------------
    def producer(self, var: Variable) -> Operator | None:
        return self._producer.get(id(var))

    def consumers(self, var: Variable) -> list[Operator]:
        return [op for op in self.ops if any(v is var for v in op.inputs)]

    @property
    def symbols(self) -> tuple[Var, ...]:
        """Symbolic dims, in order of first appearance in the input shapes."""
        seen: dict[str, Var] = {}
        for v in self.inputs:
            for s in symbols_of(v.shape):
                seen.setdefault(s.name, s)
        return tuple(seen.values())

    def __str__(self) -> str:
        ins = ", ".join(f"{v.name}: {v.type_str()}" for v in self.inputs)
        outs = ", ".join(v.name for v in self.outputs)
        lines = [f"program {self.name}({ins}) -> ({outs})"]
        lines += [f"  {op}" for op in self.ops]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Program {self.name}: {len(self.ops)} ops>"

    # -- execution -----------------------------------------------------------------------------------
    def bind_inputs(self, inputs: Sequence[Any] | Mapping[str, Any]
                    ) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """Check the input arrays against the input variables and bind the symbolic dims.

        Returns the arrays by variable name and the symbol values. Raises TypeError/ValueError
        naming the input and the mismatch (count, dtype, rank, static dim, symbol consistency).
        """
        return bind_inputs(self, inputs)

    def run_numpy(self, *inputs: Any) -> Any:
        """Evaluate the op graph with each op's numpy implementation (the reference)."""
        arrays, env = self.bind_inputs(_positional(inputs))
        values: dict[int, np.ndarray] = {id(v): frontend_array(arrays[v.name], v) for v in self.inputs}
        for op in self.ops:
            result = run_reference(get_op(op.type), [values[id(v)] for v in op.inputs], op.attrs, env,
                                   [v.type for v in op.outputs])
            values[id(op.output)] = result[0]
        return pack([values[id(v)] for v in self.outputs])

    def build_and_get_output(self, target: Any, feed_list: Sequence[Variable | str],
                             feed_datas: Sequence[Any], fetch_list: Sequence[Variable | str],
                             passes: Sequence[str] = (),
                             scope: Any = None) -> list[np.ndarray]:
        """CINN's method form, `program.build_and_get_output(target, feed_list, feed_datas,
        fetch_list)`, as CINN's own op tests call it: `cinn_py.build_and_get_output(self, ...)`.

        The frontend compiles nothing and imports no higher layer (docs/architecture.md, Layers);
        the call is bound late, through the package facade `cinn_py`, which Python has run before
        any of its submodules (so this is a call at run time, not an import dependency)."""
        facade = sys.modules["cinn_py"]
        return facade.build_and_get_output(self, target, feed_list, feed_datas, fetch_list, passes, scope)

    def fetch_program(self, feed_list: Sequence[Variable | str], feed_datas: Sequence[Any],
                      fetch_list: Sequence[Variable | str], passes: Sequence[str] = (),
                      scope: Any = None) -> tuple[Program, dict[str, Any], list[Variable]]:
        """The frontend half of CINN's `build_and_get_output` (`cinn_py.build_and_get_output`
        compiles and runs what this returns; the frontend compiles nothing): checks the
        arguments and returns (the program computing exactly the variables of `fetch_list`, dead
        ops dropped, after the graph passes named in `passes`; the feeds by input name; the
        fetched variables in order).

        `passes` names graph passes or single rewrites (`graph_passes.NAMED_PASSES`: ours, CINN's
        names of the same passes such as "ConstantFolding", and each rule of `simplify` such as
        "silu"), run in order (an unknown name is a FrontendError listing the available ones).
        cinn-py owns its buffers, so a `scope` is refused, not ignored."""
        from cinn_py.frontend.graph_passes import named_passes  # noqa: PLC0415 - graph passes import Program

        chosen = named_passes(list(passes), "build_and_get_output")
        if scope is not None:
            raise FrontendError(f"build_and_get_output: argument 'scope': cinn-py allocates its own buffers, "
                                f"expected None got {type(scope).__name__}")
        feeds = self._feeds(feed_list, feed_datas)
        fetch = [self._own_variable(v, "fetch_list") for v in fetch_list]
        if not fetch:
            raise FrontendError("build_and_get_output: argument 'fetch_list': expected at least one "
                                "variable, got []")
        unique = list({id(v): v for v in fetch}.values())
        program = Program(self.name, self.inputs, self.ops, unique)
        for graph_pass in chosen:  # passes keep the names of the outputs
            program = graph_pass(program)
        return program, feeds, fetch

    def _feeds(self, feed_list: Sequence[Variable | str], feed_datas: Sequence[Any]) -> dict[str, Any]:
        names = [self._own_variable(v, "feed_list").name for v in feed_list]
        if len(names) != len(feed_datas):
            raise FrontendError("build_and_get_output: arguments 'feed_list'/'feed_datas': expected one "
                                "array per "
                                f"variable, got {len(names)} variables and {len(feed_datas)} arrays")
        not_inputs = [n for n in names if n not in {v.name for v in self.inputs}]
        missing = [v.name for v in self.inputs if v.name not in names]
        if not_inputs or missing or len(set(names)) != len(names):
            raise FrontendError(f"build_and_get_output: argument 'feed_list': expected each input of program "
                                f"'{self.name}' once {[v.name for v in self.inputs]}, got {names}")
        return dict(zip(names, feed_datas))

    def _own_variable(self, var: Variable | str, argument: str) -> Variable:
        known = {v.name: v for v in self.inputs}
        known.update({out.name: out for op in self.ops for out in op.outputs})
        name = var if isinstance(var, str) else getattr(var, "name", None)
        found = known.get(name) if isinstance(name, str) else None
        if found is None or (isinstance(var, Variable) and found is not var):
            raise FrontendError(f"build_and_get_output: argument '{argument}': expected variables of program "
                                f"'{self.name}', got {var!r}")
        return found


def _positional(inputs: tuple[Any, ...]) -> Sequence[Any] | Mapping[str, Any]:
    if len(inputs) == 1 and isinstance(inputs[0], Mapping):
        return inputs[0]
    return inputs


def frontend_array(array: np.ndarray, var: Variable) -> np.ndarray:
    """A kernel's or the interpreter's result for `var` as the frontend holds it: bfloat16 comes
    back from kernels as uint16 bits and from the interpreter as float32 holding bfloat16 values,
    and becomes an `ml_dtypes.bfloat16` array (a view of the bits, or an exact conversion)."""
    want = numpy_dtype(var.dtype)
    if var.dtype.scalar_name() != "bfloat16" or array.dtype == want:
        return array
    if array.dtype == np.uint16:
        return array.view(want)
    return array.astype(want)


def pack(arrays: list[np.ndarray]) -> Any:
    """One output: the array; several: a tuple (the convention of compiled kernels)."""
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def bind_inputs(program: Program, inputs: Sequence[Any] | Mapping[str, Any]
                ) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    what = f"program '{program.name}'"
    if isinstance(inputs, Mapping):
        missing = [v.name for v in program.inputs if v.name not in inputs]
        extra = sorted(set(inputs) - {v.name for v in program.inputs})
        if missing or extra:
            raise TypeError(f"{what}: inputs by name must be exactly {[v.name for v in program.inputs]}"
                            f"; missing {missing}, unknown {extra}")
        given = [inputs[v.name] for v in program.inputs]
    else:
        given = list(inputs)
        if len(given) != len(program.inputs):
            raise TypeError(f"{what}: expects {len(program.inputs)} input(s) "
                            f"({', '.join(v.name for v in program.inputs)}), got {len(given)}")
    arrays: dict[str, np.ndarray] = {}
    env: dict[str, int] = {}
    where: dict[str, str] = {}
    for var, value in zip(program.inputs, given):
        arr = _as_array(value, var, what)
        for d, (dim, actual) in enumerate(zip(var.shape, arr.shape)):
            _bind_dim(var, d, dim, actual, env, where, what)
        arrays[var.name] = np.asarray(arr, order="C")  # ascontiguousarray would make a 0-d array 1-d
    return arrays, env


def _as_array(value: Any, var: Variable, what: str) -> np.ndarray:
    value = host_array(value, f"{what}: input '{var.name}'")
    if not isinstance(value, np.ndarray) and not hasattr(value, "__array__"):
        raise TypeError(f"{what}: input '{var.name}' must be a numpy array, got {type(value).__name__}")
    arr = np.asarray(value)
    expected = numpy_dtype(var.dtype)
    bits = var.dtype.scalar_name() == "bfloat16" and arr.dtype == np.uint16  # the runtime's bf16 storage
    if arr.dtype != expected and not bits:
        hint = (" (ml_dtypes.bfloat16, or uint16 bit patterns)" if var.dtype.scalar_name()
                == "bfloat16" else "")
        raise TypeError(f"{what}: input '{var.name}' must have dtype {var.dtype}{hint}, got {arr.dtype}")
    if arr.ndim != var.ndim:
        raise ValueError(f"{what}: input '{var.name}' must have rank {var.ndim} {fmt_shape(var.shape)}, "
                         f"got shape {arr.shape}")
    return arr


def _bind_dim(var: Variable, d: int, dim: Any, actual: int, env: dict[str, int], where: dict[str, str],
              what: str) -> None:
    if isinstance(dim, int):
        if dim != actual:
            raise ValueError(f"{what}: input '{var.name}' dim {d} must be {dim}, got {actual} "
                             f"(shape {fmt_shape(var.shape)})")
        return
    name = dim.name  # create_input only accepts bare symbolic dims
    if name in env and env[name] != actual:
        raise ValueError(f"{what}: symbolic dim '{name}' is {actual} in input '{var.name}' dim {d} but "
                         f"{env[name]} in {where[name]}")
    lower = dim.lower_bound.value if dim.lower_bound is not None else 1
    if actual < lower:
        raise ValueError(f"{what}: symbolic dim '{name}' = {actual} (input '{var.name}' dim {d}) is below "
                         f"its lower bound {lower}")
    env[name] = actual
    where.setdefault(name, f"input '{var.name}' dim {d}")
