"""How the CUDA printer writes a `vectorize[F]` loop (`codegen.CudaPrinter.vectorized`): a loop
from 0 of extent F whose body is one store to a global buffer, with a CUDA vector type for its
dtype and F (`VECTOR_TYPES`: `float4`, `int2`, ...) and a flat index `base + var` with `base`
provably divisible by F, becomes one vector store; each load of the loop var that is contiguous
and aligned the same way becomes one vector load, any other use is printed per lane.
`_vector_plan` returns that plan, or None when the loop stays scalar.
"""

from __future__ import annotations


from cinn_py.ir import (
    Add, Cast, Expr, For, IntImm, Load, MemoryType, Mul, Store, Sub, UIntImm, Var, is_const_int, walk,
)
from codegen.c_family import flatten_index

# (element dtype, lanes) -> CUDA vector type for vectorised loads/stores.
VECTOR_TYPES = {("float32", 2): "float2", ("float32", 4): "float4", ("float64", 2): "double2",
                ("int32", 2): "int2", ("int32", 4): "int4", ("float16", 2): "__half2",
                ("bfloat16", 2): "__nv_bfloat162"}


def _vector_plan(node: For) -> tuple[Store, list[tuple[Load, Expr]], str, int] | None:
    width = node.vectorize_factor
    if not (is_const_int(node.min, 0) and is_const_int(node.extent, width)):
        return None
    stmts = node.body.stmts
    if len(stmts) != 1 or not isinstance(stmts[0], Store):
        return None
    store = stmts[0]
    vtype = VECTOR_TYPES.get((store.tensor.dtype.scalar_name(), width))
    if vtype is None or store.tensor.buffer.memory_type is not MemoryType.HEAP:
        return None
    var = node.loop_var
    base = _split_contiguous(flatten_index(store.indices, store.tensor.buffer.shape), var)
    if base is None or not divisible(base, width):
        return None
    # Contiguous, aligned loads become vector loads; any other use of the loop var is printed
    # per lane with the var replaced by the lane number (still correct, just scalar).
    loads: list[tuple[Load, Expr]] = []
    for load in _loads_using(store.value, var):
        key = (load.tensor.dtype.scalar_name(), width)
        lbase = _split_contiguous(flatten_index(load.indices, load.tensor.buffer.shape), var)
        if key not in VECTOR_TYPES or lbase is None or not divisible(lbase, width) \
                or load.tensor.buffer.memory_type is not MemoryType.HEAP:
            continue
        if all(load != seen for seen, _ in loads):
            loads.append((load, lbase))
    return store, loads, vtype, width


def _loads_using(value: Expr, var: Var) -> list[Load]:
    return [n for n in walk(value) if isinstance(n, Load) and any(m == var for m in walk(n.indices))]


def _split_contiguous(index: Expr, var: Var) -> Expr | None:
    """For `index = base + var` (var absent from base) return `base`; else None."""
    if index == var:
        return IntImm(var.dtype, 0) if var.dtype.is_int else None
    if isinstance(index, Add):
        if index.b == var and not _mentions(index.a, var):
            return index.a
        if index.a == var and not _mentions(index.b, var):
            return index.b
        inner = _split_contiguous(index.a, var)
        if inner is not None and not _mentions(index.b, var):
            return Add(inner, index.b)
        inner = _split_contiguous(index.b, var)
        if inner is not None and not _mentions(index.a, var):
            return Add(index.a, inner)
    return None


def _mentions(e: Expr, var: Var) -> bool:
    return any(n == var for n in walk(e))


def divisible(e: Expr, k: int) -> bool:
    """Whether `e` is provably a multiple of `k` (syntactic: constants, products, sums)."""
    if isinstance(e, (IntImm, UIntImm)):
        return e.value % k == 0
    if isinstance(e, Mul):
        return divisible(e.a, k) or divisible(e.b, k)
    if isinstance(e, (Add, Sub)):
        return divisible(e.a, k) and divisible(e.b, k)
    if isinstance(e, Cast) and e.dtype.is_int:
        return divisible(e.v, k)
    return False


def _fold_indices(value: Expr) -> Expr:
    """Fold the lane constant into load indices: `((base + 3) + 1)` -> `(base + 4)`."""
    from cinn_py.ir import Mutator  # noqa: PLC0415
    from cinn_py.symbolic import simplify  # noqa: PLC0415

    class _Fold(Mutator):
        def visit_load(self, node: Load) -> Expr:
            indices = tuple(simplify(i) for i in node.indices)
            return Load(node.tensor, indices)

    return _Fold().visit(value)


def _replace_loads(value: Expr, mapping: dict[Load, Var]) -> Expr:
    from cinn_py.ir import Mutator  # noqa: PLC0415

    class _Swap(Mutator):
        def visit_load(self, node: Load) -> Expr:
            return mapping.get(node, node)

    return _Swap().visit(value)
