"""Storage assignment for CUDA (CINN `VariableTypeAssignment` in TileFirstGeneralTactic, and the
2023 `ArrangeStorageTactic`).

* `<T>_rf` partial results are per-thread: local (registers).
* An intermediate (not a group output) goes to a local buffer when its producer and every
  consumer share the master's spatial loops after loop fusion: each thread then reads only
  values it computed itself (a reduce result is broadcast to every thread by the cross-thread
  helper), and the GPU passes privatise the buffer per iteration of the serial loops.
* Anything else stays global (a host-allocated temp space).

Differs from CINN, which sets every non-output intermediate local before loop fusion: a value
read by a nest that was not fused would then be read after the register holding it was reused.
"""

from __future__ import annotations

from schedules.schedule import IRSchedule
from schedules.tactics.group import analyze_group

__all__ = ["assign_storage"]


def assign_storage(sch: IRSchedule, rf_blocks: list[str], fused: list[str]) -> list[str]:
    """Move per-thread values to local buffers; returns the blocks set to local."""
    info = analyze_group(sch.func)
    fused_set = set(fused)
    local: list[str] = []
    for block in info.blocks:
        if block.is_init or len(block.written) != 1:
            continue
        tensor = block.written[0]
        if tensor in info.outputs:
            continue
        consumers = {b.name for b in info.consumers_of(tensor)} - {block.name}
        writers = {b.name for b in info.producers_of(tensor) if not b.is_init}
        per_thread = block.name in rf_blocks or (writers | consumers) <= fused_set
        if per_thread:
            sch.set_buffer(block.name, "local")
            local.append(block.name)
    return local
