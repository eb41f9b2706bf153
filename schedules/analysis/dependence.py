"""Producer/consumer queries and the dependence checks of the block-level primitives.

Blocks depend on each other through buffers (a reduction `C` and its `C__reduce_init` share `_C`),
so every query keys accesses by buffer name.

Legality of moving a block (compute_at, simple_compute_at, reverse_compute_at) is decided with a
*same-iteration* argument: after the move the block shares loops L1..Lm with another block; if for
every buffer both touch (one of them writing) the accessed element determines the shared
iteration uniquely and identically for both (the two access index tuples are the same function of
the shared loop vars, use no other loop var, and that function is injective), then every pair of
dependent instances runs in the same shared iteration, where the original statement order is
kept. Injectivity is proved syntactically: `(e / d, e % d)` pairs recover `e`, and a mixed-radix
sum `c1*v1 + c2*v2 + ...` (each coefficient above the span of the smaller terms) recovers each
`v`. This decides the aligned, tiled nests of the seed (`sp / S2`, `sp % S2` with a symbolic
`S2`), which islpy cannot: division by a parameter is not quasi-affine.
"""

from __future__ import annotations

from cinn_py.ir import (
    Add, Div, Expr, For, IntImm, LoweredFunc, Mod, Mul, ScheduleBlockRealize, Sub, Var, substitute, walk,
)
from schedules.analysis.arith import prove_equal
from schedules.analysis.loops import StmtIndex, all_blocks
from schedules.analysis.regions import (
    Access, accesses, block_buffers_read, block_buffers_written, const_value, simplify_index,
)

__all__ = [
    "producers", "consumers", "blocks_between", "buffer_conflicts", "is_injective", "same_iteration",
    "writers_of", "readers_of", "argument_buffers",
]


def writers_of(func: LoweredFunc, buffer: str) -> list[ScheduleBlockRealize]:
    return [b for b in all_blocks(func) if buffer in block_buffers_written(b)]


def readers_of(func: LoweredFunc, buffer: str) -> list[ScheduleBlockRealize]:
    return [b for b in all_blocks(func) if buffer in block_buffers_read(b)]


def argument_buffers(func: LoweredFunc) -> set[str]:
    """Buffers of the function's tensor arguments (their final contents are observable)."""
    return {a.tensor.buffer.name for a in func.args if a.tensor is not None}


def producers(func: LoweredFunc, block: ScheduleBlockRealize) -> list[ScheduleBlockRealize]:
    """Blocks before `block` that write a buffer `block` reads (program order)."""
    blocks = all_blocks(func)
    pos = _position(blocks, block)
    reads = block_buffers_read(block)
    return [b for b in blocks[:pos] if block_buffers_written(b) & reads]


def consumers(func: LoweredFunc, block: ScheduleBlockRealize) -> list[ScheduleBlockRealize]:
    """Blocks after `block` that read a buffer `block` writes (program order)."""
    blocks = all_blocks(func)
    pos = _position(blocks, block)
    writes = block_buffers_written(block)
    return [b for b in blocks[pos + 1:] if block_buffers_read(b) & writes]


def blocks_between(func: LoweredFunc, first: ScheduleBlockRealize,
                   second: ScheduleBlockRealize) -> list[ScheduleBlockRealize]:
    """Blocks strictly between two blocks in program order (in either argument order)."""
    blocks = all_blocks(func)
    a, b = sorted((_position(blocks, first), _position(blocks, second)))
    return blocks[a + 1:b]


def _position(blocks: list[ScheduleBlockRealize], block: ScheduleBlockRealize) -> int:
    for k, b in enumerate(blocks):
        if b is block:
            return k
    raise ValueError(f"block '{block.name}' is not in the function")


def buffer_conflicts(a: ScheduleBlockRealize, b: ScheduleBlockRealize) -> list[tuple[Access, Access]]:
    """Pairs of accesses of `a` and `b` to one buffer where at least one writes."""
    acc_b = accesses(b)
    return [(x, y) for x in accesses(a) for y in acc_b
            if x.buffer == y.buffer and (x.is_write or y.is_write)]


# ----------------------------------------------------------------------------------------------
# Injectivity of an index tuple in a set of loop vars
# ----------------------------------------------------------------------------------------------
def is_injective(indices: tuple[Expr, ...], loops: list[For]) -> bool:
    """True when distinct values of the loop vars of `loops` (each in its range, starting at 0)
    always give distinct index tuples (the other vars held fixed)."""
    wanted = {loop.loop_var: loop for loop in loops}
    components = _recover_div_mod([simplify_index(e) for e in indices])
    covered: set[Var] = set()
    for comp in components:
        used = {n for n in walk(comp) if isinstance(n, Var) and n in wanted}
        if not used:
            continue
        if used & covered or not _mixed_radix(comp, used, wanted):
            return False
        covered |= used
    return covered == set(wanted)


def _recover_div_mod(components: list[Expr]) -> list[Expr]:
    """Replace a pair `(e / d, e % d)` by `e` (together they determine `e`)."""
    out = list(components)
    changed = True
    while changed:
        changed = False
        for k, c in enumerate(out):
            if not isinstance(c, Div):
                continue
            for m, other in enumerate(out):
                if isinstance(other, Mod) and other.a == c.a and other.b == c.b:
                    rest = [x for j, x in enumerate(out) if j not in (k, m)]
                    out = rest + [simplify_index(c.a)]
                    changed = True
                    break
            if changed:
                break
    return out


def _mixed_radix(comp: Expr, used: set[Var], loops: dict[Var, For]) -> bool:
    """`comp` is `sum c_k * v_k + rest` (rest free of `used`) with positive constant c_k such that
    each c_k exceeds the largest value of the terms with smaller coefficients."""
    terms = _linear_terms(comp, used)
    if terms is None:
        return False
    # A loop of one iteration makes its term a constant (a split by 1 gives `i + i_0`), so it
    # is left out. The rest is ordered by coefficient, ties by name: Vars have no Python order
    # (`<` builds an IR LT), and equal coefficients must still be compared, not crash.
    terms = sorted((t for t in terms if const_value(loops[t[1]].extent) != 1), key=lambda t: (t[0], t[1].name))
    span = 0  # largest value of the terms seen so far
    for coef, var in terms:
        if coef <= span:
            return False
        loop = loops[var]
        if const_value(loop.min) != 0:
            return False
        extent = const_value(loop.extent)
        if extent is None:
            # A symbolic extent is fine only for the largest coefficient (nothing above it).
            if (coef, var) != terms[-1]:
                return False
            continue
        span += coef * (extent - 1)
    return True


def _linear_terms(e: Expr, used: set[Var]) -> list[tuple[int, Var]] | None:
    """(coefficient, var) of each var of `used` in `e`, when `e` is linear in them."""
    coefs: dict[Var, int] = {}

    def visit(node: Expr, scale: int) -> bool:
        if isinstance(node, Var) and node in used:
            coefs[node] = coefs.get(node, 0) + scale
            return True
        if not any(isinstance(n, Var) and n in used for n in walk(node)):
            return True
        if isinstance(node, Add):
            return visit(node.a, scale) and visit(node.b, scale)
        if isinstance(node, Sub):
            return visit(node.a, scale) and visit(node.b, -scale)
        if isinstance(node, Mul):
            for x, y in ((node.a, node.b), (node.b, node.a)):
                if isinstance(y, IntImm):
                    return visit(x, scale * y.value)
        return False

    if not visit(e, 1) or any(c <= 0 for c in coefs.values()):
        return None
    return [(c, v) for v, c in coefs.items()]


# ----------------------------------------------------------------------------------------------
# The same-iteration criterion
# ----------------------------------------------------------------------------------------------
def same_iteration(x: Access, y: Access, shared: list[For], x_loops: list[For], y_loops: list[For],
                   y_to_x: dict[Var, Expr]) -> bool:
    """True when every element accessed by both `x` and `y` is accessed in the same iteration
    of the `shared` loops: the index components free of the other loops' vars are the same
    function of the shared loop vars in both, and that function is injective (so an element
    determines the shared iteration). `y_to_x` renames y's vars into x's where they differ."""
    x_idx = tuple(simplify_index(e) for e in x.indices)
    y_idx = tuple(simplify_index(substitute(e, y_to_x)) for e in y.indices)
    if len(x_idx) != len(y_idx):
        return False
    shared_vars = {loop.loop_var for loop in shared}
    private = {loop.loop_var for loop in x_loops + y_loops} - shared_vars

    def free(e: Expr) -> bool:
        return not any(isinstance(n, Var) and n in private for n in walk(e))

    common = tuple(a for a, b in zip(x_idx, y_idx) if free(a) and free(b) and prove_equal(a, b))
    return is_injective(common, shared)


def index_of(func: LoweredFunc) -> StmtIndex:
    return StmtIndex(func)
