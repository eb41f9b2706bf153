"""Validation helpers of the compute DSL: names, shapes, operand dtypes, reduction placement.

Every rule violation is a `LoweringError` naming the op or tensor, the rule, and expected vs
actual, with the offending expression in `detail`; a wrong kind of Python object is a TypeError.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cinn_py.diagnostics import LoweringError
from cinn_py.ir import (
    BinaryOp, DType, Expr, IntImm, Load, LogicalOp, Not, Reduce, Select, Var, const, int32, int64, print_ir,
    walk,
)

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
REDUCE_INIT_SUFFIX = "__reduce_init"


def is_identifier(name: object) -> bool:
    """True for a C identifier (`[A-Za-z_][A-Za-z0-9_]*`)."""
    return isinstance(name, str) and _NAME_RE.match(name) is not None


def check_name(name: object, what: str) -> str:
    """A tensor / dim / axis name: a C identifier, not a reduce-init name. A name that is a word of
    the IR text format (`select`, `true`, `axis`, ...) is fine: the format escapes it (ir/text/names.py)."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str, got {type(name).__name__}")
    if not _NAME_RE.match(name):
        raise ValueError(f"{what} name {name!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if name.endswith(REDUCE_INIT_SUFFIX):
        raise ValueError(f"{what} name {name!r} ends with '{REDUCE_INIT_SUFFIX}', which lowering "
                         "reserves for reduction init tensors")
    return name


def check_program_name(name: object, what: str) -> str:
    """A program's name: any non-empty str (CINN takes any; kernels get identifiers derived from it)."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str, got {type(name).__name__}")
    if not name or "\0" in name:
        raise ValueError(f"{what} name must be a non-empty str without NUL characters, got {name!r}")
    return name


def excerpt(e: Expr) -> str:
    return "  in: " + print_ir(e)


def has_load(e: Expr) -> bool:
    return any(isinstance(node, Load) for node in walk(e))


def is_index_int(d: DType) -> bool:
    return d in (int32, int64)


def symbolic_vars(e: Expr) -> list[Var]:
    """Symbolic-dim Vars used in `e`, in first-use order (each once)."""
    seen: dict[str, Var] = {}
    for node in walk(e):
        if isinstance(node, Var) and node.is_symbolic_constant and node.name not in seen:
            seen[node.name] = node
    return list(seen.values())


def normalize_shape(shape: object, what: str) -> tuple[tuple[Expr, ...], DType]:
    """Shape entries as index Exprs, and the index dtype: int64 if any dim is symbolic.

    Entries are non-negative ints, `sym` Vars, or integer expressions of syms (`S * 2`). A
    symbolic shape stores every entry as int64 (`1024ll`), as CINN's dynamic-shape lowering does.
    """
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{what}: shape must be a tuple or list, got {type(shape).__name__}")
    for k, dim in enumerate(shape):
        _check_dim(dim, k, what)
    symbolic = any(isinstance(d, Expr) and symbolic_vars(d) for d in shape)
    index = int64 if symbolic else int32
    dims: list[Expr] = []
    for dim in shape:
        if isinstance(dim, int):
            dims.append(const(dim, index))
        elif isinstance(dim, IntImm):
            dims.append(const(dim.value, index))
        else:
            dims.append(dim)  # type: ignore[arg-type]
    return tuple(dims), index


INT64_MAX = 2**63 - 1


def element_count_error(dims: Sequence[object], dtype: DType, what: str) -> str | None:
    """Why a tensor of `dims` (ints / IntImms; symbolic dims count as 1) and `dtype` cannot be
    indexed with int64 element and byte offsets, or None when it can."""
    count = 1
    for d in dims:
        if isinstance(d, IntImm):
            d = d.value
        if isinstance(d, int):
            count *= d
    size = count * max(1, dtype.bits // 8)
    if size <= INT64_MAX:
        return None
    shown = ", ".join(str(d) for d in dims)
    return (f"{what}: shape ({shown}) has {count} elements ({size} bytes of {dtype}), more than int64 "
            f"offsets can address (at most {INT64_MAX} bytes)")


def _check_dim(dim: object, k: int, what: str) -> None:
    if isinstance(dim, bool) or not isinstance(dim, (int, Expr)):
        raise TypeError(f"{what}: shape[{k}] must be an int or a symbolic dim expression, "
                        f"got {type(dim).__name__}")
    if isinstance(dim, int):
        if dim < 0:
            raise LoweringError(f"{what}: shape[{k}] must be non-negative, got {dim}")
        return
    if isinstance(dim, IntImm):
        if dim.value < 0:
            raise LoweringError(f"{what}: shape[{k}] must be non-negative, got {dim.value}")
        return
    if not is_index_int(dim.dtype):
        raise LoweringError(f"{what}: shape[{k}] must be an int32/int64 expression, got dtype {dim.dtype}",
                            excerpt(dim))
    bad = [n.name for n in walk(dim) if isinstance(n, Var) and not n.is_symbolic_constant]
    if bad:
        raise LoweringError(f"{what}: shape[{k}] may only use symbolic dims (cp.sym), "
                            f"but uses {', '.join(sorted(set(bad)))}", excerpt(dim))
    if has_load(dim):
        raise LoweringError(f"{what}: shape[{k}] may not read a tensor", excerpt(dim))
    if dim.dtype != int64 and symbolic_vars(dim):
        raise LoweringError(f"{what}: shape[{k}] must be int64 like the symbolic dims, got {dim.dtype}",
                            excerpt(dim))


def check_operand_dtypes(body: Expr, where: str) -> None:
    """Reject implicit type mixing anywhere in `body` (TVM te / CINN need explicit casts).

    int32 and int64 may meet in pure index arithmetic (no tensor reads), since lowering widens
    every index to one dtype; everything else needs `cast`.
    """
    for node in walk(body):
        if isinstance(node, BinaryOp) and not isinstance(node, LogicalOp):
            _check_binary(node, where)
        elif isinstance(node, Select) and not node.condition.dtype.element_of().is_bool:
            raise LoweringError(f"{where}: select condition must be bool, got {node.condition.dtype}",
                                excerpt(node))
        elif isinstance(node, Not) and not node.v.dtype.element_of().is_bool:
            raise LoweringError(f"{where}: logical not (~) needs a bool operand, got {node.v.dtype}",
                                excerpt(node))


def _check_binary(node: BinaryOp, where: str) -> None:
    a, b = node.a.dtype, node.b.dtype
    if a == b:
        return
    if is_index_int(a) and is_index_int(b) and not has_load(node.a) and not has_load(node.b):
        return
    op = type(node).__name__
    raise LoweringError(
        f"{where}: {op} mixes dtypes {a} and {b}; insert an explicit cast(x, dtype) "
        "(mixed-dtype arithmetic is never promoted implicitly)", excerpt(node))


def check_reduce_placement(body: Expr, where: str, loop_names: Sequence[str]) -> None:
    """A reduction must be the whole body of its compute, reduce axes only appear inside the
    reduction over them, and a reduce axis must not share a name with one of the tensor's loops."""
    top = body if isinstance(body, Reduce) else None
    inner = (top.body, top.init) if top is not None else (body,)
    for part in inner:
        for node in walk(part):
            if isinstance(node, Reduce):
                raise LoweringError(
                    f"{where}: a reduction must be the whole body of its compute (as in TVM te and "
                    "CINN lang); compute the reduction into its own tensor first", excerpt(body))
    bound = {v.name for v in top.reduce_axis} if top is not None else set()
    for part in inner:
        for node in walk(part):
            if isinstance(node, Var) and node.is_reduce_axis and node.name not in bound:
                raise LoweringError(
                    f"{where}: reduce axis '{node.name}' is used outside a reduction over it",
                    excerpt(body))
    for name in sorted(bound & set(loop_names)):
        raise LoweringError(
            f"{where}: reduce axis '{name}' has the same name as one of the tensor's loop axes "
            f"({', '.join(loop_names)}); give the reduce axis another name")
