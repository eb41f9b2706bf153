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
- `grad`: the gradient rule, attached by `cinn_py/autodiff/rules_*.py` when autodiff is imported;
- `test`: the op's cases for the differential harness (`testing.OpTest`,
  tests/frontend/net_builder/test_op_harness.py runs every registered op with one).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import ml_dtypes
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
    """Gradient rule, attached by `cinn_py.autodiff` (`define_grad`; `define_no_grad` for an op that
    passes none); None for composite ops, differentiated through their decomposition."""
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


# NetBuilder dtypes: every scalar dtype; bfloat16 values are numpy arrays of `ml_dtypes.bfloat16`.
SUPPORTED_DTYPES: tuple[DType, ...] = ALL_SCALAR_DTYPES


def numpy_dtype(dtype: DType) -> np.dtype:
    """The numpy dtype of a NetBuilder value of `dtype`: `ml_dtypes.bfloat16` for bfloat16 (the
    standard numpy extension type; the IR and kernels see its bits as uint16), else the IR's."""
    if dtype.element_of() == bfloat16:
        return np.dtype(ml_dtypes.bfloat16)
    return dtype.to_numpy()


def run_reference(op: OpDef, arrays: Sequence[np.ndarray], attrs: Attrs, env: SymbolEnv,
                  out_types: Sequence[TensorType]) -> list[np.ndarray]:
    """`op.numpy` with bfloat16 computed in float32 and rounded once (nearest even) to each
    bfloat16 output: the reference of one bfloat16 op is its exact result, rounded, as the
    kernels compute it (bfloat16 storage, float32 arithmetic). Other dtypes pass through."""
    bf16 = numpy_dtype(bfloat16)
    if not any(a.dtype == bf16 for a in arrays) and not any(t.dtype == bfloat16 for t in out_types):
        return op.numpy(arrays, attrs, env)
    outs = op.numpy(widen_bfloat16(arrays), attrs, env)
    return [o.astype(bf16) if t.dtype == bfloat16 else o for o, t in zip(outs, out_types)]


def widen_bfloat16(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`arrays` with each bfloat16 one as float32 (exact): what a bfloat16 op computes in."""
    bf16 = numpy_dtype(bfloat16)
    return [a.astype(np.float32) if a.dtype == bf16 else a for a in arrays]


DTYPE_KINDS: dict[str, Callable[[DType], bool]] = {
    "floating-point": lambda d: d.is_float,
    "numeric": lambda d: not d.is_bool,
    "bool": lambda d: d.is_bool,
    "integer": lambda d: d.is_integral,
    "integer or bool": lambda d: d.is_integral or d.is_bool,
    "any": lambda d: True,
}
"""The dtype classes an operand of an op may be restricted to."""


def check_operand_dtype(op: str, arg: str, dtype: DType, kind: str, hint: str = "cast it first") -> None:
    """FrontendError unless `dtype` (of the op's argument `arg`) is of class `kind`
    (`DTYPE_KINDS`); the message names the op, the argument, the dtypes expected and the actual."""
    if DTYPE_KINDS[kind](dtype):
        return
    allowed = ", ".join(d.scalar_name() for d in SUPPORTED_DTYPES if DTYPE_KINDS[kind](d))
    article = "an" if kind[0] in "aeiou" else "a"
    raise FrontendError(f"{op}: needs {article} {kind} operand, got {dtype} for argument '{arg}' "
                        f"(expected one of {allowed}); {hint}")


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
