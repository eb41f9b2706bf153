"""Statement nodes of the CINN AST IR.

Statements are frozen dataclasses compared **by identity** (`eq=False`): two identical loops in
different places stay distinct, so schedules can hold them as handles. Every statement also
carries a `uid` that survives copy-on-write rebuilds (`dataclasses.replace` keeps it): a loop
rebuilt because something below it changed is still "the same loop" for a schedule handle,
while a loop that a primitive replaced gets a fresh uid. Use `structural_equal` to compare
statements by value.
"""

from __future__ import annotations

import enum
import itertools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from cinn_py.ir.buffer import Buffer, BufferRange, Tensor
from cinn_py.ir.expr import Expr, Var

_PID_SHIFT = 40
"""uids of a process start at pid << 40: statements travel between processes (the parallel compile
workers unpickle a parent's function, schedule it and send it back), and a worker counting from 1
made fresh loops whose uids were those of the parent's loops: schedule handles then named the wrong
node (a matmul's tactic failed with StaleHandleError and fell back to a naive nest, 50x slower)."""


def _process_uids() -> itertools.count[int]:
    return itertools.count((os.getpid() << _PID_SHIFT) + 1)


_uids = _process_uids()


def _reseed_after_fork() -> None:
    global _uids
    _uids = _process_uids()


os.register_at_fork(after_in_child=_reseed_after_fork)


def new_uid() -> int:
    """A statement id unique across this process and the processes it exchanges IR with."""
    return next(_uids)


class Stmt:
    """Base of every statement node: a dataclass with a process-unique `uid` (schedule handles)."""

    __slots__ = ()
    uid: int
    if TYPE_CHECKING:  # every node class is a dataclass (dataclasses.replace/fields take any Stmt)
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def __str__(self) -> str:
        from cinn_py.ir.text.printer import print_ir

        return print_ir(self)


@dataclass(frozen=True, slots=True, eq=False)
class Store(Stmt):
    """`T[i0, i1] = value`."""

    tensor: Tensor
    value: Expr
    indices: tuple[Expr, ...]
    uid: int = field(default_factory=new_uid, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Block(Stmt):
    """`{ stmt* }`: a statement sequence."""

    stmts: tuple[Stmt, ...] = ()
    uid: int = field(default_factory=new_uid, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    """`if (cond) {...} else {...}`; `false_case` is optional."""

    condition: Expr
    true_case: Block
    false_case: Block | None = None
    uid: int = field(default_factory=new_uid, repr=False)


class ForType(enum.Enum):
    """CINN's `ForType` (bit flags there; one kind per loop here)."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorize"
    UNROLLED = "unroll"
    GPU_THREAD = "gpu_thread"
    GPU_BLOCK = "gpu_block"
    DEFAULT = "default"


BIND_AXES = ("x", "y", "z")


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    """`serial for (i, 0, 32) {...}`: a counted loop over [min, min + extent).

    `bind_offset` (0/1/2 for x/y/z) is set for GPU_THREAD/GPU_BLOCK loops;
    `vectorize_factor` for VECTORIZED loops.
    """

    loop_var: Var
    min: Expr
    extent: Expr
    body: Block
    for_type: ForType = ForType.SERIAL
    bind_offset: int = -1
    vectorize_factor: int = 0
    uid: int = field(default_factory=new_uid, repr=False)

    def __post_init__(self) -> None:
        if self.for_type in (ForType.GPU_THREAD, ForType.GPU_BLOCK) and self.bind_offset not in (0, 1, 2):
            raise ValueError(f"bound loop '{self.loop_var.name}' needs bind_offset 0..2, got "
                             f"{self.bind_offset}")
        if self.for_type is ForType.VECTORIZED and self.vectorize_factor <= 0:
            raise ValueError(f"vectorized loop '{self.loop_var.name}' needs a positive factor")

    @property
    def bind_axis(self) -> str | None:
        """`blockIdx.x` / `threadIdx.y` ... for bound loops, else None."""
        if self.for_type is ForType.GPU_BLOCK:
            return f"blockIdx.{BIND_AXES[self.bind_offset]}"
        if self.for_type is ForType.GPU_THREAD:
            return f"threadIdx.{BIND_AXES[self.bind_offset]}"
        return None


class ReduceMethod(enum.Enum):
    """How a reduce block is realised on GPU (newer CINN `reduce_method`)."""

    NONE = "NoneReduceMethod"
    WARP = "WarpReduceMethod"
    BLOCK = "BlockReduceMethod"
    DISCRETE = "DiscreteReduceMethod"


AttrValue = Union[int, float, bool, str]

FAST_MATH_ATTR = "fast_math"
"""Block attribute: when true, the x86 backend computes the block's float32 exp/log/tanh/erf/
sigmoid/rsqrt with its vectorisable polynomial versions (`codegen.llvm.fastmath`, within a few
ulp), whatever the build's `fast_math` option; a kernel whose speed rests on a vectorised exp
(fused attention's softmax) asks for it. Other targets ignore it.
"""

NONTEMPORAL_ATTR = "x86_nontemporal"
"""Block attribute: when true, the x86 backend marks the block's full-vector stores
`!nontemporal` (streaming stores that bypass the caches: for large write-once outputs, which
would otherwise evict the inputs and cost a read-for-ownership per line)."""

FP_CONTRACT_ATTR = "fp_contract"
"""Block attribute: the backends may contract `a * b + c` in this block into one fused
multiply-add (one rounding instead of two; NVRTC does this everywhere by default, the x86
backend only in blocks that carry this attribute, e.g. the auto scheduler's matmul updates)."""


@dataclass(frozen=True, slots=True, eq=False)
class ScheduleBlock(Stmt):
    """The body of a schedule block: iter vars, regions, attrs, and the computation."""

    name: str
    iter_vars: tuple[Var, ...]
    body: Stmt
    """A single statement (usually a Store) or a Block; printed as-is, as CINN does."""
    read_buffers: tuple[BufferRange, ...] = ()
    write_buffers: tuple[BufferRange, ...] = ()
    attrs: tuple[tuple[str, AttrValue], ...] = ()
    """Sorted by key (CINN prints a std::map)."""
    reduce_method: ReduceMethod = ReduceMethod.NONE
    uid: int = field(default_factory=new_uid, repr=False)

    def attr(self, key: str) -> AttrValue | None:
        return dict(self.attrs).get(key)


@dataclass(frozen=True, slots=True, eq=False)
class ScheduleBlockRealize(Stmt):
    """`ScheduleBlock(B) { i0, i1 = axis.bind(i, j) ... }`: binds iter vars to loop expressions.

    The root block has no iter values.
    """

    iter_values: tuple[Expr, ...]
    schedule_block: ScheduleBlock
    uid: int = field(default_factory=new_uid, repr=False)

    @property
    def name(self) -> str:
        return self.schedule_block.name


@dataclass(frozen=True, slots=True, eq=False)
class Let(Stmt):
    """`int32 x = body`: declares a scalar (body optional)."""

    symbol: Var
    body: Expr | None = None
    uid: int = field(default_factory=new_uid, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Evaluate(Stmt):
    """An expression evaluated for its effect, e.g. `__syncthreads()`."""

    value: Expr
    uid: int = field(default_factory=new_uid, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Alloc(Stmt):
    """`alloc(buf, extents)`."""

    buffer: Buffer
    extents: tuple[Expr, ...]
    uid: int = field(default_factory=new_uid, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Free(Stmt):
    """`free(buf)`."""

    buffer: Buffer
    uid: int = field(default_factory=new_uid, repr=False)
