"""Matmul as a compute-intensive group: recognition and the packed, register-tiled x86 schedule.

A group is a matmul when its only reduction is a sum of a product of two loads,

    C[b.., i, j] += A[b.., i, k] * B[b.., k, j]      (A may be read A[.., k, i], B as B[.., j, k];
                                                      B may have no batch dims)

over one reduce var `k`, whose nest is the lowering's plain `for b.. for i for j { init; for k }`,
and whose other blocks are elementwise epilogues that read `C` at the store's own indices and
write tensors of `C`'s shape (bias add, relu, gelu after inlining). `match_matmul` says so and
names the parts; everything else goes to the generic tactics.

The x86 schedule is the classic GotoBLAS/BLIS loop nest built from our primitives, with the
tile sizes of `MatmulParams` (the tuner's search space, `schedules.tactics.tune_space`):

    parallel for jo            (N / nr column panels; the batch loop instead when B is batched)
      C tile init              (decompose_reduction: zeroed before the k loops)
      for ko                   (K / kc)
        B_local = B[ko panel]  (cache_read + compute_at: the kc x nr panel, contiguous, in L1)
        for io                 (M / mr)
          for ki               (k outermost in the micro-kernel)
            unroll ii in mr    (register tile: mr x nv vectors of `lanes` floats,
              unroll jv in nv   accumulators that LLVM keeps in zmm registers over ki,
                vectorize ji     one broadcast of A and nv loads of B per ki, mr*nv FMAs)
      epilogue                 (reverse_compute_at of the epilogue at jo: computed on the
                                 M x nr output panel while it is in cache, not a second pass)

The update block is annotated `fp_contract` so the backend emits `a*b+c` as one FMA. Shapes that
are not multiples of the tile get the splits' tail guards (correct for every shape, symbolic ones
included; the guarded tiles are slower). A transposed B (`B[j, k]`) is read in place (the cache
copy keeps the operand's layout, so it would not make the panel contiguous).
"""

from __future__ import annotations

from dataclasses import dataclass

from cinn_py.ir import FP_CONTRACT_ATTR, Add, Cast, Expr, For, Load, LoweredFunc, Mul, Var, walk
from cinn_py.target import host
from schedules.analysis.loops import block_stores
from schedules.analysis.regions import const_value
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule
from schedules.state import LoopRV
from schedules.tactics.group import BlockInfo, analyze_group, loops_of

__all__ = ["MatmulInfo", "MatmulParams", "default_matmul_params", "match_matmul", "matmul_x86_tactic"]


@dataclass(frozen=True)
class MatmulParams:
    """The tunable knobs of the x86 matmul schedule."""

    mr: int = 8
    """Rows of the register tile (unrolled)."""
    nv: int = 2
    """Vectors per row of the register tile (unrolled): the tile is mr x (nv * lanes)."""
    lanes: int = 16
    """Vector width in elements (16 float32 = one AVX-512 register)."""
    kc: int = 256
    """Depth of one packed B panel (k block)."""
    pack_b: bool = True
    """Copy each kc x nr panel of B into a contiguous task-private buffer."""
    parallel: str = "outer"
    """"outer": the outermost loop (batch or column panels); "none": serial."""

    @property
    def nr(self) -> int:
        return self.nv * self.lanes

    def as_dict(self) -> dict[str, object]:
        return {"mr": self.mr, "nv": self.nv, "lanes": self.lanes, "kc": self.kc, "pack_b": self.pack_b,
                "parallel": self.parallel}


@dataclass(frozen=True)
class MatmulInfo:
    """The parts of a recognised matmul group."""

    block: str
    """The update block (`C`)."""
    tensor: str
    a: str
    b: str
    a_transposed: bool
    b_transposed: bool
    b_batched: bool
    batch: int
    """Number of batch loops."""
    m: Expr
    n: Expr
    k: Expr
    epilogue: tuple[str, ...]
    """Elementwise blocks after the matmul, in program order."""
    output: bool
    """`C` itself is a function output (else an intermediate that only the epilogue reads)."""
    init: str = ""
    """The block that zeroes the accumulator (`<C>__reduce_init`, kept by `cache_write`)."""

    @property
    def structure(self) -> str:
        """A key for the tuning database: what kind of matmul group this is."""
        flags = ("T" if self.a_transposed else "N") + ("T" if self.b_transposed else "N")
        return f"matmul{'_b' if self.batch else ''}_{flags}_epi{len(self.epilogue)}"


def _operand(e: Expr) -> Load | None:
    """`e` as a load of an operand, or a load cast to the accumulator's type (float16/bfloat16
    inputs of a float32-accumulating matmul: both targets' schedules widen them in registers)."""
    if isinstance(e, Cast) and e.dtype.is_float:
        e = e.v
    return e if isinstance(e, Load) else None


def _sum_of_product(block: BlockInfo) -> tuple[Load, Load] | None:
    stores = block_stores(block.realize)
    if len(stores) != 1:
        return None
    value = stores[0].value
    if not isinstance(value, Add) or not isinstance(value.b, Mul):
        return None
    own = value.a
    if not (isinstance(own, Load) and own.tensor.name == stores[0].tensor.name):
        return None
    x, y = _operand(value.b.a), _operand(value.b.b)
    return (x, y) if x is not None and y is not None else None


def _plain_nest(func: LoweredFunc, block: BlockInfo) -> list[For] | None:
    """The update's loops when its iter values are exactly its loop vars (no earlier schedule)."""
    loops = loops_of(func, block.name)
    values = block.realize.iter_values
    if (len(loops) != len(values)
        or any(not (isinstance(v, Var) and v == lp.loop_var) for v, lp in zip(values, loops))):
        return None
    return loops


def _operand_axes(load: Load, ivars: dict[Var, str]) -> tuple[str, ...] | None:
    """Each index of `load` as the role of the iter var it is ('b0', 'i', 'j', 'k'), or None."""
    roles = []
    for idx in load.indices:
        if not isinstance(idx, Var) or idx not in ivars:
            return None
        roles.append(ivars[idx])
    return tuple(roles)


def _init_block(info_blocks: tuple[BlockInfo, ...], update: BlockInfo) -> str:
    """The init block of the update's accumulator: the one writing its buffer (a `cache_write`
    keeps the name `<C>__reduce_init` for the local accumulator's init)."""
    buffer = block_stores(update.realize)[0].tensor.buffer.name
    return next((b.name for b in info_blocks if b.is_init and
                 any(s.tensor.buffer.name == buffer for s in block_stores(b.realize))), "")


def _epilogue(info_blocks: tuple[BlockInfo, ...], update: BlockInfo, store_idx: tuple[Expr, ...],
              func: LoweredFunc) -> tuple[str, ...] | None:
    """The blocks after the matmul, when each is elementwise over C's shape; None otherwise."""
    names: list[str] = []
    seen_update = False
    init = _init_block(info_blocks, update)
    for blk in info_blocks:
        if blk.name == update.name:
            seen_update = True
            continue
        if blk.name == init:
            continue
        if not seen_update or blk.is_reduce or blk.is_init:
            return None
        stores = block_stores(blk.realize)
        if len(stores) != 1 or len(stores[0].indices) != len(store_idx):
            return None
        loops = loops_of(func, blk.name)
        if len(loops) != len(store_idx):
            return None
        names.append(blk.name)
    return tuple(names)


def match_matmul(func: LoweredFunc) -> MatmulInfo | None:
    """A `MatmulInfo` when `func` is a (batched) matmul group with elementwise epilogues; operands
    may be read through a cast to the accumulator's float type (NetBuilder's float16/bfloat16
    matmul accumulates in float32)."""
    group = analyze_group(func)
    updates = [b for b in group.blocks if b.is_reduce]
    if len(updates) != 1:
        return None
    update = updates[0]
    operands = _sum_of_product(update)
    loops = _plain_nest(func, update)
    if operands is None or loops is None:
        return None
    block = update.realize.schedule_block
    ivs = block.iter_vars
    if len(ivs) < 3 or not ivs[-1].is_reduce_axis or any(v.is_reduce_axis for v in ivs[:-1]):
        return None
    store = block_stores(update.realize)[0]
    if tuple(store.indices) != tuple(ivs[:-1]):
        return None
    batch = len(ivs) - 3
    roles = {v: f"b{d}" for d, v in enumerate(ivs[:batch])} | {ivs[-3]: "i", ivs[-2]: "j", ivs[-1]: "k"}
    axes = [_operand_axes(ld, roles) for ld in operands]
    if any(a is None for a in axes):
        return None
    batch_roles = tuple(f"b{d}" for d in range(batch))
    a_idx = next((n for n, ax in enumerate(axes) if ax is not None and "i" in ax), None)
    if a_idx is None:
        return None
    a_load, b_load = operands[a_idx], operands[1 - a_idx]
    a_ax, b_ax = axes[a_idx], axes[1 - a_idx]
    assert a_ax is not None and b_ax is not None
    if a_ax not in (batch_roles + ("i", "k"), batch_roles + ("k", "i")):
        return None
    if b_ax[-2:] not in (("k", "j"), ("j", "k")) or b_ax[:-2] not in ((), batch_roles):
        return None
    epilogue = _epilogue(group.blocks, update, tuple(store.indices), func)
    if epilogue is None:
        return None
    return MatmulInfo(
        block=update.name, tensor=store.tensor.name, a=a_load.tensor.name, b=b_load.tensor.name,
        a_transposed=a_ax[-1] == "i", b_transposed=b_ax[-1] == "k", b_batched=bool(batch and b_ax[:-2]),
        batch=batch, m=loops[-3].extent, n=loops[-2].extent, k=loops[-1].extent, epilogue=epilogue,
        output=store.tensor.name in group.outputs, init=_init_block(group.blocks, update))


def default_matmul_params(info: MatmulInfo, vector_width_bits: int | None = None,
                          dtype_bits: int = 32) -> MatmulParams:
    """The schedule a performance engineer starts from: with AVX-512 an 8 x (2 x 16) float32 tile
    (16 accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers); with AVX2 6 x (2 x 8)
    (12 + 2 + 1 of 16 ymm); kc = 256 (a 32 KiB B panel in L1); narrowed for small sizes."""
    bits = vector_width_bits or host().cpu.vector_bits
    lanes = max(1, bits // dtype_bits)
    mr = 8 if bits >= 512 else 6
    return fit_params(info, MatmulParams(mr=mr, nv=2, lanes=lanes, kc=256))


def fit_params(info: MatmulInfo, p: MatmulParams) -> MatmulParams:
    """`p` fitted to the static sizes: no tile larger than its dimension, and a tile size that
    divides its dimension when one within a factor of two of the asked size does (a tail guard
    inside the register tile keeps the accumulators out of registers)."""
    m, n, k = const_value(info.m), const_value(info.n), const_value(info.k)
    mr, nv, kc, lanes = p.mr, p.nv, p.kc, p.lanes
    if m is not None:
        mr = _dividing(m, max(1, min(mr, m)))
    if n is not None and n < lanes:
        lanes, nv = 1 << (max(n, 1).bit_length() - 1), 1  # narrower vectors for a thin C
    if n is not None:
        nv = max(1, min(nv, n // lanes))  # the split needs nv * lanes <= N
        if n % lanes == 0:
            nv = _dividing(n // lanes, nv)
    if k is not None:
        kc = _dividing(k, max(1, min(kc, k)))
    pack = p.pack_b and not info.b_transposed and (info.b_batched or not info.batch)
    return MatmulParams(mr=mr, nv=nv, lanes=lanes, kc=kc, pack_b=pack, parallel=p.parallel)


def _dividing(size: int, want: int) -> int:
    """The largest divisor of `size` in [want / 2, want], else `want`."""
    return next((c for c in range(want, (want + 1) // 2 - 1, -1) if c > 0 and size % c == 0), want)


def _split(sch: IRSchedule, loop: LoopRV, factors: list[int]) -> list[LoopRV]:
    return sch.split(loop, factors)


def matmul_x86_tactic(sch: IRSchedule, info: MatmulInfo, params: MatmulParams) -> list[str]:
    """Apply the packed register-tiled schedule (module docstring); returns notes for the report.
    The epilogue falls back to a separate (vectorised, parallel) nest when it cannot be fused."""
    p = fit_params(info, params)
    notes = [f"matmul {info.structure}: tile {p.mr}x{p.nr}, kc {p.kc}, pack_b {p.pack_b}"]
    loops = sch.get_loops(info.block)
    batch, (i, j, k) = loops[:info.batch], loops[info.batch:]
    io, ii = _split(sch, i, [-1, p.mr])
    jo, jv, ji = _split(sch, j, [-1, p.nv, p.lanes])
    ko, ki = _split(sch, k, [-1, p.kc])
    sch.reorder([*batch, jo, io, ii, jv, ji])
    init = sch.decompose_reduction(info.block, io)
    sch.reorder([ko, io, ki, ii, jv, ji])
    sch.unroll(ii)
    sch.unroll(jv)
    sch.annotate(info.block, FP_CONTRACT_ATTR, True)
    if p.lanes > 1:
        sch.vectorize(ji, p.lanes)
        sch.vectorize(sch.get_loops(init)[-1], p.lanes)
    if p.pack_b:
        _pack_b(sch, info, ko, p)
    notes += _fuse_epilogue(sch, info, jo, p)
    outer = sch.get_loops(info.block)[0]
    if p.parallel == "outer" and const_value(sch.get(outer).extent) != 1:
        sch.parallel(outer)
        for name in info.epilogue:
            _parallel_if_own_nest(sch, name, outer)
    return notes


def _pack_b(sch: IRSchedule, info: MatmulInfo, ko: LoopRV, p: MatmulParams) -> None:
    read_idx = 1 + _read_order(sch, info).index(info.b)
    copy = sch.cache_read(info.block, read_idx, "local")
    sch.compute_at(copy, ko)
    inner = sch.get_loops(copy)[-1]
    if p.lanes > 1 and const_value(sch.get(inner).extent) == p.nr:
        sch.vectorize(_split(sch, inner, [-1, p.lanes])[-1], p.lanes)


def _read_order(sch: IRSchedule, info: MatmulInfo) -> list[str]:
    """Tensors the update block reads other than C, in order of first appearance (cache_read's
    `read_idx` counts C itself first)."""
    realize = sch.get(sch.get_block(info.block))
    names: list[str] = []
    for node in walk(realize.schedule_block.body):  # type: ignore[union-attr]
        if isinstance(node, Load) and node.tensor.name != info.tensor and node.tensor.name not in names:
            names.append(node.tensor.name)
    return names


def _fuse_epilogue(sch: IRSchedule, info: MatmulInfo, jo: LoopRV, p: MatmulParams) -> list[str]:
    """Compute each epilogue block on the output panel of `jo` (after its last k block), keep C in
    a task-private buffer when nothing else reads it, and vectorise the epilogue's inner loop."""
    notes: list[str] = []
    for name in info.epilogue:
        try:
            sch.reverse_compute_at(name, jo)
        except ScheduleError as err:
            notes.append(f"epilogue '{name}' not fused ({type(err).__name__}); separate nest")
            _vectorize_inner(sch, name, p)
            continue
        _vectorize_inner(sch, name, p)
        notes.append(f"epilogue '{name}' fused on the output panel")
    if info.epilogue and not info.output and not any("not fused" in n for n in notes):
        try:
            sch.set_buffer(info.block, "local")
            notes.append(f"'{info.tensor}' kept in a task-private panel buffer")
        except ScheduleError as err:
            notes.append(f"'{info.tensor}' stays global ({type(err).__name__})")
    return notes


def _vectorize_inner(sch: IRSchedule, name: str, p: MatmulParams) -> None:
    inner = sch.get_loops(name)[-1]
    extent = const_value(sch.get(inner).extent)
    if extent is None or extent < p.lanes or p.lanes < 2:
        return
    sch.vectorize(_split(sch, inner, [-1, p.lanes])[-1], p.lanes)


def _parallel_if_own_nest(sch: IRSchedule, name: str, outer: LoopRV) -> None:
    first = sch.get_loops(name)[0]
    if sch.get(first).uid == sch.get(outer).uid or const_value(sch.get(first).extent) == 1:
        return
    try:
        sch.parallel(first)
    except ScheduleError:
        pass  # a serial epilogue nest is still correct
