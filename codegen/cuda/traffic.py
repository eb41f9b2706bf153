"""Global-memory traffic of a kernel as run: counted by the kernel itself, read by the emulator.

A traffic-counting build (`build_cuda(func, emulate=True, count_traffic=True)`) prints every load
and store of a global buffer (the arguments and the temp spaces; shared and local buffers are on
chip) with a `cinn_traffic_add(load_or_store, bytes)` before it (vector accesses count all their
lanes), so a launch adds up exactly the bytes the threads asked global memory for, each thread's request
on its own. That is an upper bound of what reaches HBM: a re-read the caches serve counts again,
which is what the report is for (a softmax reading its input three times shows it, whether or not
L2 holds the row on some GPU), and requests of one warp to one address (every thread storing a
block reduce's result) merge into one transaction on the hardware but count per thread here.

`minimum_bytes` is what any kernel must move: each input read once, each output written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Traffic:
    """Bytes one launch loaded from and stored to global memory."""

    loaded_bytes: int
    stored_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes


def minimum_bytes(inputs: Sequence[Any], outputs: Sequence[Any]) -> int:
    """Inputs read once + outputs written once (arrays with `.nbytes`)."""
    return int(sum(a.nbytes for a in inputs) + sum(o.nbytes for o in outputs))
