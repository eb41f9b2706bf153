"""The op registry of the NetBuilder frontend: `OpPatternKind`, `OpDef`, `FrontendError`.

Every primitive and composite op of a `Program` is described by one `OpDef` (CINN registers the
same facts per op as attributes: `infershape`, `inferdtype`, `OpPattern`, `CINNStrategy`):

- `infer(inputs, attrs) -> [TensorType]`: output shapes and dtypes, raising `FrontendError` that
  names the op and the mismatch;
- `pattern`: the `OpPatternKind` that drives fusion (`fusion.py`);
- `numpy(arrays, attrs, env) -> [ndarray]`: the reference semantics (the differential oracle);
- `compute(tensors, attrs, out_types, names) -> [ComputeTensor]`: the definition in the compute
  DSL used to lower a fused group (None for composite ops, which are decomposed first);
- `fold`: whether an op of uniform-valued (fill_constant) inputs yields a uniform value that
  constant folding may compute (`graph_passes.fold_constants`);
- `signature`: the NetBuilder method(s) (CINN's argument names and defaults, `signature.py`),
  generated from it, so adding an op is one `register(OpDef(...))` in one module;
- `grad`: the gradient rule (None until autodiff lands);
- `test`: the op's cases for the differential harness (`testing.OpTest`,
  tests/frontend/net_builder/test_op_harness.py runs every registered op with one).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from cinn_py.diagnostics import CinnError
from cinn_py.ir import ALL_SCALAR_DTYPES, DType, Expr, bfloat16, dtype_of

if TYPE_CHECKING:
    from cinn_py.frontend.ops.signature import Signature
    from cinn_py.frontend.ops.testing import OpTest

Dim = Union[int, Expr]
"""A dim of a frontend shape: a Python int (static) or an int64 expression of symbolic dims."""
Shape = tuple[Dim, ...]
Attrs = Mapping[str, Any]
SymbolEnv = Mapping[str, int]


class FrontendError(CinnError, ValueError):
    """A NetBuilder op got operands or attributes it cannot accept (shape, dtype, attribute)."""


class UnknownOpError(FrontendError, AttributeError):
    """`nb.<name>` or `get_op(name)` for a name no op registers (an AttributeError too, so
    `hasattr(nb, name)` is False)."""


class OpPatternKind(enum.IntEnum):
    """CINN's op pattern kinds (`hlir/framework/op.h`), ordered so that a group's kind is the max
    of its ops' kinds."""

    kElementWise = 0
    kBroadcast = 1
    kInjective = 2
    kReduction = 3
    kOutFusible = 4
    kNonFusible = 8


@dataclass(frozen=True)
class TensorType:
    """Shape and dtype of a variable."""

    shape: Shape
    dtype: DType

    @property
    def ndim(self) -> int:
        return len(self.shape)


InferFn = Callable[[Sequence[TensorType], Attrs], list[TensorType]]
NumpyFn = Callable[[Sequence[np.ndarray], Attrs, SymbolEnv], list[np.ndarray]]
ComputeFn = Callable[..., Any]
FoldFn = Callable[[Sequence[Any], Attrs, Sequence[TensorType], TensorType], Any]


@dataclass(frozen=True)
class OpDef:
    name: str
    pattern: OpPatternKind
    infer: InferFn
    numpy: NumpyFn
    compute: ComputeFn | None = None
    composite: bool = False
    fold: FoldFn | None = None
    """For uniform-valued inputs (their scalar values), the uniform value of the output, or None
    when it is not uniform or not computable statically. None: the op is never folded."""
    arity: int | None = None
    """Number of inputs, or None for variadic ops (concat)."""
    signature: Signature | None = None
    """The NetBuilder method(s) of the op; None: the op is only built by passes (emit)."""
    decompose: Callable[..., Any] | None = None
    """For a composite op: `decompose(builder, inputs, attrs, out_name) -> Variable` builds it from
    primitive ops, the last one named `out_name` (decompose.py's RULES hold the older ones)."""
    grad: Callable[..., Any] | None = None
    """Gradient rule (reserved: autodiff is not implemented yet)."""
    test: OpTest | None = None
    """Differential test cases (dtypes, shapes, attributes) for the op harness."""

    @property
    def methods(self) -> tuple[str, ...]:
        if self.signature is None:
            return ()
        return self.signature.methods or (self.name,)


def is_variable(x: object) -> bool:
    """Whether `x` is a NetBuilder `Variable` (duck-typed: op modules cannot import program.py,
    which imports the registry)."""
    return isinstance(getattr(x, "type", None), TensorType) and hasattr(x, "name")


REGISTRY: dict[str, OpDef] = {}
METHODS: dict[str, str] = {}
"""NetBuilder method name -> op name."""


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op '{op.name}' is registered twice")
    clash = [m for m in op.methods if m in METHODS]
    if clash:
        raise ValueError(f"op '{op.name}': NetBuilder method(s) {clash} already belong to op(s) "
                         f"{[METHODS[m] for m in clash]}")
    REGISTRY[op.name] = op
    METHODS.update((m, op.name) for m in op.methods)
    return op


def suggest(name: str, names: Sequence[str]) -> str:
    import difflib  # noqa: PLC0415

    close = difflib.get_close_matches(name, list(names), n=3)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def get_op(name: str) -> OpDef:
    op = REGISTRY.get(name)
    if op is None:
        raise UnknownOpError(f"unknown op '{name}'{suggest(name, sorted(REGISTRY))} "
                             f"(registered ops: {', '.join(sorted(REGISTRY))})")
    return op


# NetBuilder dtypes: everything numpy (the reference) can hold. bfloat16 has no numpy dtype.
SUPPORTED_DTYPES: tuple[DType, ...] = tuple(d for d in ALL_SCALAR_DTYPES if d != bfloat16)


def check_dtype(value: object, op: str) -> DType:
    """A supported scalar dtype from a string / DType / numpy dtype."""
    try:
        resolved = dtype_of(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"{op}: unknown dtype {value!r}") from None
    if resolved not in SUPPORTED_DTYPES:
        names = ", ".join(d.scalar_name() for d in SUPPORTED_DTYPES)
        raise TypeError(f"{op}: dtype {resolved} is not supported by NetBuilder (expected one of {names})")
    return resolved
