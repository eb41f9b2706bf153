"""IR analyses the LLVM backend needs before emitting code.

- `nontemporal_buffers`: buffers whose blocks ask for streaming stores.
- `contract_block`: the body of an attribute scope (a block the x86 target passes kept, without
  iter vars) as the printer emits it: float `a * b + c` becomes `fmuladd(a, b, c)` under
  `fp_contract`, exp/log/... their polynomial versions under `fast_math`.
- `lane_stride`: how an index moves from one lane to the next in a `vectorize[F]` loop (0:
  invariant, 1: contiguous, k: strided, None: not affine), which picks vector load/store vs
  broadcast vs gather/scatter.
- `vectorizable`: whether a loop body can be emitted with vector instructions at all (otherwise
  the backend emits a scalar loop and leaves it to LLVM's loop vectoriser).
- `buffers_used`, `vars_used`: what a parallel body captures.
"""

from __future__ import annotations

from typing import Any

from cinn_py.diagnostics import CompileError
from cinn_py.ir import (
    FAST_MATH_ATTR, FP_CONTRACT_ATTR, NONTEMPORAL_ATTR, Add, Alloc, And, Block, Broadcast, Buffer, Call, Cast,
    Expr, FloatImm,
    For, ForType, Free, IfThenElse, IntImm, Let, Load, Minus, Mul, Mutator, Or, Ramp, Reduce,
    ScheduleBlock, ScheduleBlockRealize, Select, Stmt, Store,
    StringImm, Sub, Tensor, UIntImm, Var, int64, print_ir, walk,
)
from cinn_py.passes.flatten import flatten_index
from codegen.llvm.window_load import unclamped_window_load


class _Contract(Mutator):
    """`a * b + c` (float) -> `fmuladd(a, b, c)`, which LLVM emits as one FMA instruction."""

    def visit_add(self, node: Add) -> Expr:
        a, b = self.visit(node.a), self.visit(node.b)
        if node.dtype.element_of().is_float:
            for mul, other in ((a, b), (b, a)):
                if isinstance(mul, Mul) and mul.dtype == node.dtype == other.dtype:
                    return Call("fmuladd", (mul.a, mul.b, other), node.dtype)
        return node if a is node.a and b is node.b else Add(a, b)


class _FastMath(Mutator):
    """`exp(x)` -> `fast_exp(x)` (and the other `FAST_MATH_NAMES`): the emitter's polynomial versions."""

    def visit_call(self, node: Call) -> Expr:
        args = tuple(self.visit(a) for a in node.args)
        name = f"{FAST_PREFIX}{node.name}" if node.name in FAST_MATH_NAMES else node.name
        return Call(name, args, node.dtype, node.call_type)


FAST_PREFIX = "fast_"
FAST_MATH_NAMES = frozenset({"exp", "log", "tanh", "erf", "sigmoid", "rsqrt"})
"""What a `fast_math` block computes with `codegen.llvm.fastmath` (float32; float64 keeps libm)."""


def contract_block(block: ScheduleBlock, body: Stmt) -> Stmt:
    """How the printer emits an attribute scope's body (`cinn_py.passes.x86_lowering`): FMA
    contraction and fast math where the block asks for them (instruction selection)."""
    if block.attr(FP_CONTRACT_ATTR):
        body = _Contract().visit(body)
    if block.attr(FAST_MATH_ATTR):
        body = _FastMath().visit(body)
    return body if isinstance(body, Block) else Block((body,))


def nontemporal_buffers(stmt: Stmt) -> frozenset[str]:
    """Buffers written by blocks annotated `NONTEMPORAL_ATTR` (their vector stores stream)."""
    return frozenset(st.tensor.buffer.name for n in walk(stmt)
                     if isinstance(n, ScheduleBlockRealize) and bool(n.schedule_block.attr(NONTEMPORAL_ATTR))
                     for st in walk(n.schedule_block.body) if isinstance(st, Store))


# ---------------------------------------------------------------------------------------------
# Lane strides
# ---------------------------------------------------------------------------------------------
class LaneInfo:
    """The vector loop variable and the strides of Let-bound vars inside the loop body."""

    def __init__(self, var: Var) -> None:
        self.var = var
        self.lets: dict[Var, int | None] = {}


def lane_stride(e: Expr, info: LaneInfo) -> int | None:
    """Per-lane step of `e` (0 = same value in every lane) or None when not affine."""
    if isinstance(e, Var):
        if e == info.var:
            return 1
        return info.lets.get(e, 0)
    if isinstance(e, (IntImm, UIntImm, FloatImm, StringImm)):
        return 0
    if isinstance(e, Ramp):
        base = lane_stride(e.base, info)
        return int(e.stride.value) if base == 0 and isinstance(e.stride, (IntImm, UIntImm)) else None
    if isinstance(e, Broadcast):
        return 0 if lane_stride(e.value, info) == 0 else None
    if isinstance(e, (Add, Sub)):
        a, b = lane_stride(e.a, info), lane_stride(e.b, info)
        if a is None or b is None:
            return None
        return a + b if isinstance(e, Add) else a - b
    if isinstance(e, Mul):
        return _mul_stride(e, info)
    if isinstance(e, Minus):
        s = lane_stride(e.v, info)
        return None if s is None else -s
    if isinstance(e, Cast) and e.dtype.is_int and e.v.dtype.is_int and e.dtype.bits >= e.v.dtype.bits:
        return lane_stride(e.v, info)
    return 0 if not varies(e, info) else None


def _mul_stride(e: Mul, info: LaneInfo) -> int | None:
    a, b = lane_stride(e.a, info), lane_stride(e.b, info)
    if a == 0 and b == 0:
        return 0
    if a is not None and b == 0 and isinstance(e.b, (IntImm, UIntImm)):
        return a * int(e.b.value)
    if b is not None and a == 0 and isinstance(e.a, (IntImm, UIntImm)):
        return b * int(e.a.value)
    return None


def varies(e: Expr, info: LaneInfo) -> bool:
    """Whether `e` may differ between lanes."""
    for node in walk(e):
        if isinstance(node, (Ramp, Broadcast)):
            return True
        if isinstance(node, Var) and (node == info.var or info.lets.get(node, 0) != 0):
            return True
    return False


def vectorizable(body: Stmt, info: LaneInfo) -> bool:
    """Whether `body` can be emitted in vector form over `info.var` (see module docstring).

    Rejected: lane-dependent `if` conditions and loop bounds, stores of lane-varying values to a
    lane-invariant address (a reduction over the vector axis), lazily evaluated selects whose
    branches load memory under a lane-dependent condition, parallel loops, allocations and
    side-effect calls. Let-bound vars get their stride recorded in `info.lets`.
    """
    if isinstance(body, Block):
        return all(vectorizable(s, info) for s in body.stmts)
    if isinstance(body, Store):
        # an accumulation's window reads stay lazy (LLVM's loop vectoriser does better on the
        # window tactic's strips: conv2d_grad_data 23 ms with it, 39 ms with masked loads)
        if not _exprs_ok((body.value, *body.indices), info, windows=not _accumulates(body)):
            return False
        strides = [lane_stride(i, info) for i in body.indices]
        invariant_address = all(s == 0 for s in strides)
        return not (invariant_address and varies(body.value, info))
    if isinstance(body, Let):
        if body.body is not None:
            if not _exprs_ok((body.body,), info):
                return False
            info.lets[body.symbol] = lane_stride(body.body, info)
        return True
    if isinstance(body, IfThenElse):
        if varies(body.condition, info) or not _exprs_ok((body.condition,), info):
            return False
        return (vectorizable(body.true_case, info)
                and (body.false_case is None or vectorizable(body.false_case, info)))
    if isinstance(body, For):
        if body.for_type is ForType.PARALLEL or varies(body.min, info) or varies(body.extent, info):
            return False
        return vectorizable(body.body, info)
    if isinstance(body, ScheduleBlockRealize) and not body.iter_values:  # an attribute scope
        return vectorizable(contract_block(body.schedule_block, body.schedule_block.body), info)
    return False


def _accumulates(store: Store) -> bool:
    """`store` reads the element it writes (a reduction's update)."""
    return any(isinstance(n, Load) and n.tensor.buffer.name == store.tensor.buffer.name for n
               in walk(store.value))


def _exprs_ok(exprs: tuple[Expr, ...], info: LaneInfo, windows: bool = True) -> bool:
    for root in exprs:
        for node in walk(root):
            if isinstance(node, Select) and varies(node.condition, info) and _has_load(node) \
                    and not (windows and masked_window_read(node, info)):
                return False
            if isinstance(node, (And, Or)) and varies(node.a, info) and any(
                    isinstance(n, Load) for n in walk(node.b)):
                return False
            if isinstance(node, Reduce):
                return False
    return True


def flat_index(tensor: Tensor, indices: tuple[Expr, ...]) -> Expr:
    """Row-major element offset of `tensor[indices]` as an int64 IR expression.

    Strides come from the buffer's shape (the storage layout) when its rank matches, else from
    the tensor's shape; the offset is the shared `cinn_py.passes.flatten.flatten_index` over
    int64 indices and dims (the lane-stride analysis reads its constant factors).
    """
    shape = tensor.buffer.shape if len(tensor.buffer.shape) == len(indices) else tensor.shape
    if len(shape) != len(indices):
        raise CompileError(f"x86 codegen: '{tensor.name}' has rank {len(shape)} but is indexed with "
                           f"{len(indices)} indices: "
                           f"{tensor.name}[{', '.join(print_ir(i) for i in indices)}]")
    if not indices:
        return IntImm(int64, 0)
    return flatten_index(tuple(_to_i64(i) for i in indices), tuple(_to_i64(d) for d in shape))


def _to_i64(e: Expr) -> Expr:
    if isinstance(e, (IntImm, UIntImm)):
        return IntImm(int64, int(e.value))
    return e if e.dtype.element_of() == int64 else Cast(int64, e)


def masked_window_read(select: Select, info: LaneInfo) -> bool:
    """`select` is a padded window read whose unclamped index is contiguous in the lane: the
    emitter reads it with one masked vector load (`window_load`), never touching masked lanes,
    so it needs no lazy evaluation."""
    load = unclamped_window_load(select)
    if load is None or _reads(select.condition) or _reads(select.false_value):
        return False
    return lane_stride(flat_index(load.tensor, load.indices), info) == 1


def _reads(e: Expr) -> bool:
    return any(isinstance(n, Load) for n in walk(e))


def _has_load(select: Select) -> bool:
    return any(isinstance(n, Load) for part in (select.true_value, select.false_value) for n in walk(part))


def buffers_used(node: Any) -> dict[str, Buffer]:
    """Buffers loaded or stored under `node`, by name, in first-use order."""
    found: dict[str, Buffer] = {}
    for n in walk(node):
        if isinstance(n, (Load, Store)):
            found.setdefault(n.tensor.buffer.name, n.tensor.buffer)
        elif isinstance(n, (Alloc, Free)):
            found.setdefault(n.buffer.name, n.buffer)
    return found


def vars_used(node: Any) -> set[Var]:
    """Vars read under `node` (binders excluded)."""
    return {n for n in walk(node) if isinstance(n, Var)}
