"""A compiled program run as one native call (the x86 graph runtime).

`NativeGraph` wraps what a backend linked for a program (`Backend.link_program`: the x86 backend's
`codegen.llvm.graph`, an entry function that calls every kernel in order) and its static memory
plan (`cinn_py.runtime.graph_plan`). A call is:

1. `sized(env)`: the plan's layout for the call's symbol values (temporaries' offsets, arena size,
   output shapes), cached per size signature (64 at most) with an arena allocated once and reused
   by every call of that signature (the `ARENAS` most recent signatures keep theirs: with many
   sizes, an LLM's sequence lengths, older ones allocate an arena per call instead of holding
   64 arenas);
2. the caller allocates the outputs (numpy or torch `empty`) and passes every input and output
   by address to `launch(sized, pointers, threads)`: one ctypes call, the GIL released while the
   kernels run. A call that finds the cached arena in use (the same program run from two Python
   threads at once) gets an arena of its own.

Callers keep their own signature caches (numpy: dtype, shape and strides of each array; torch:
the same of each tensor) mapping a call that passed full validation once to its `SizedGraph`, so
a repeated call checks nothing twice (`cinn_py.runtime.program.CompiledProgram`,
`cinn_py.torch.graph.CompiledGraph`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cinn_py.runtime.args import data_ptr
from cinn_py.runtime.graph_plan import ALIGNMENT, GraphPlan, Layout

SIGNATURES = 64
"""Size signatures a graph remembers; the oldest goes first."""
ARENAS = 4
"""Size signatures that keep their arena between calls (the most recently added ones)."""
ALIGNED_OUTPUT_BYTES = 4096
"""numpy outputs at least this large are allocated 64-byte aligned (full-width vector stores);
smaller ones take `np.empty` as it is (numpy aligns to 16), which costs half as much."""


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-contiguous array; 64-byte aligned from `ALIGNED_OUTPUT_BYTES` on."""
    count = 1
    for d in shape:
        count *= d
    nbytes = count * dtype.itemsize
    if nbytes < ALIGNED_OUTPUT_BYTES:
        return np.empty(shape, dtype)
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    return np.ndarray(shape, dtype, raw, (-data_ptr(raw)) % ALIGNMENT)


@dataclass
class SizedGraph:
    """A graph's layout for one size signature, ready to launch: the entry function's arguments
    as addresses (ctypes converts a Python int for a pointer parameter in a third of the time it
    takes for a ctypes array object)."""

    layout: Layout
    output_shapes: tuple[tuple[int, ...], ...]
    pointers: Any
    """This signature's array of input and output addresses, refilled by each call that holds
    `lock` (a call that finds it held builds its own)."""
    offsets: Any
    symbols: Any
    arena: np.ndarray | None
    """The cached arena (None: each call allocates one; see `ARENAS`)."""
    arena_address: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    pointers_address: int = field(init=False)
    offsets_address: int = field(init=False)
    symbols_address: int = field(init=False)

    def __post_init__(self) -> None:
        self.pointers_address = ctypes.addressof(self.pointers)
        self.offsets_address = ctypes.addressof(self.offsets)
        self.symbols_address = ctypes.addressof(self.symbols)


class NativeGraph:
    """A program's linked entry function and memory plan (see the module docstring)."""

    def __init__(self, plan: GraphPlan, entry: Any) -> None:
        self.plan = plan
        self.entry = entry
        self._function = entry.function
        self._threads = entry.threads_cell
        self._sized: dict[tuple[int, ...], SizedGraph] = {}

    @property
    def calls(self) -> int:
        """Kernel calls per run (reshapes that alias their input are none)."""
        return len(self.plan.calls)

    def sized(self, env: Mapping[str, int]) -> SizedGraph:
        """The launchable layout for symbol values `env` (every symbol of the plan bound);
        ValueError when a kernel would see another shape than it declares."""
        key = tuple([env[name] for name in self.plan.symbols])
        hit = self._sized.get(key)
        if hit is not None:
            return hit
        layout = self.plan.layout(env)
        offsets = (ctypes.c_int64 * max(1, len(layout.offsets)))(*layout.offsets)
        symbols = (ctypes.c_int64 * max(1, len(key)))(*key)
        arena = _arena(layout.arena_bytes)
        pointers = (ctypes.c_void_p * max(1, self.plan.n_inputs + self.plan.n_outputs))()
        sized = SizedGraph(layout, layout.output_shapes, pointers, offsets, symbols, arena, _address(arena))
        if len(self._sized) >= SIGNATURES:
            self._sized.pop(next(iter(self._sized)))
        self._release_old_arenas()
        self._sized[key] = sized
        return sized

    def _release_old_arenas(self) -> None:
        """Keep the arenas of the `ARENAS - 1` newest signatures (a new one is being added); an
        arena in use by a call right now is left for a later release."""
        holding = [s for s in self._sized.values() if s.arena is not None]
        for old in holding[:max(0, len(holding) - (ARENAS - 1))]:
            if old.lock.acquire(False):
                old.arena, old.arena_address = None, 0
                old.lock.release()

    def launch(self, sized: SizedGraph, pointers: Sequence[int], threads: int) -> None:
        """Run every kernel on the inputs and outputs at `pointers` (inputs, then outputs, in
        program order; each a dense row-major buffer of its value's shape and dtype, outputs
        not overlapping anything) with `threads` threads for parallel loops."""
        if self._threads.value != threads:
            self._threads.value = threads
        if sized.lock.acquire(False):
            try:
                sized.pointers[:len(pointers)] = pointers
                arena = sized.arena_address if sized.arena is not None else None
                if arena is not None:
                    status = self._function(sized.pointers_address, arena, sized.offsets_address,
                                            sized.symbols_address)
                else:
                    status = self._own_arena(sized, sized.pointers_address)
            finally:
                sized.lock.release()
        else:  # another thread's call of this program holds the signature's pointers and arena
            own = (ctypes.c_void_p * len(pointers))(*pointers)
            status = self._own_arena(sized, ctypes.addressof(own))
        if status:
            self.entry.raise_status(status, sized.layout.symbol_values)

    def _own_arena(self, sized: SizedGraph, pointers_address: int) -> int:
        """One call with an arena of its own (kept alive until the call returns)."""
        arena = _arena(sized.layout.arena_bytes)
        return self._function(pointers_address, _address(arena), sized.offsets_address, sized.symbols_address)


def _arena(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    return raw[(-data_ptr(raw)) % ALIGNMENT:]


def _address(arena: np.ndarray) -> int:
    return data_ptr(arena)


__all__ = ["NativeGraph", "SizedGraph", "aligned_empty"]
