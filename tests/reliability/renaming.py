"""Rename tensors, buffers, blocks and the function of lowered IR to arbitrary (hostile) strings.

The compute DSL only accepts C identifiers, but IR built by hand, parsed, or produced by other
frontends can carry any string; backends must cope with both.
"""

from __future__ import annotations

import dataclasses

from cinn_py.ir import Argument, Buffer, LoweredFunc, Mutator, ScheduleBlock, Tensor

REDUCE_INIT = "__reduce_init"


def _new_name(name: str, mapping: dict[str, str]) -> str:
    if name in mapping:
        return mapping[name]
    if name.endswith(REDUCE_INIT) and name[: -len(REDUCE_INIT)] in mapping:
        return mapping[name[: -len(REDUCE_INIT)]] + REDUCE_INIT
    return name


def _buffer(buf: Buffer, mapping: dict[str, str]) -> Buffer:
    if buf.name.startswith("_") and buf.name[1:] in mapping:
        return dataclasses.replace(buf, name="_" + mapping[buf.name[1:]])
    return buf


class _Rename(Mutator):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_tensor(self, tensor: Tensor) -> Tensor:
        return Tensor(_new_name(tensor.name, self.mapping), tensor.shape, tensor.dtype,
                      _buffer(tensor.buffer, self.mapping))

    def visit_schedule_block(self, node: ScheduleBlock) -> ScheduleBlock:
        node = self.generic_visit(node)
        return dataclasses.replace(node, name=_new_name(node.name, self.mapping))


def rename(func: LoweredFunc, mapping: dict[str, str], func_name: str | None = None) -> LoweredFunc:
    """`func` with tensors (and their buffers `_<name>` and blocks) renamed by `mapping`."""
    r = _Rename(mapping)
    args = tuple(dataclasses.replace(a, tensor=r.visit_tensor(a.tensor)) if a.tensor is not None else a
                 for a in func.args)
    return dataclasses.replace(func, name=func_name or func.name, args=args, body=r.visit(func.body),
                               temp_bufs=tuple(_buffer(b, mapping) for b in func.temp_bufs))


__all__ = ["Argument", "rename"]
