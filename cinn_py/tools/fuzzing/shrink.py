"""Greedy shrinking of a failing fuzz case: fewer schedule steps, fewer outputs, smaller bodies.

`shrink(spec, steps, still_fails)` repeatedly tries smaller candidates and keeps one whenever
`still_fails(candidate_spec, candidate_steps)` says it fails the same way, until no candidate
does (or the budget of attempts runs out). Steps are opaque here (the harness passes trace
steps); a candidate that no longer replays simply does not "still fail".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from cinn_py.tools.fuzzing.programs import Node, ProgramSpec, prune

StillFails = Callable[[ProgramSpec, list[Any]], bool]


def shrink(spec: ProgramSpec, steps: list[Any], still_fails: StillFails,
           budget: int = 60) -> tuple[ProgramSpec, list[Any]]:
    """The smallest (spec, steps) found that still fails; `budget` bounds the attempts."""
    attempts = 0
    improved = True
    while improved and attempts < budget:
        improved = False
        for cand_spec, cand_steps in _candidates(spec, steps):
            attempts += 1
            if still_fails(cand_spec, cand_steps):
                spec, steps, improved = cand_spec, cand_steps, True
                break
            if attempts >= budget:
                break
    return spec, steps


def _candidates(spec: ProgramSpec, steps: list[Any]) -> Iterator[tuple[ProgramSpec, list[Any]]]:
    # 1. drop one schedule step (latest first: later steps depend on earlier ones)
    for k in reversed(range(len(steps))):
        yield spec, steps[:k] + steps[k + 1:]
    # 2. drop one output
    if len(spec.outputs) > 1:
        for k in spec.outputs:
            yield prune(dataclasses.replace(spec, outputs=tuple(o for o in spec.outputs if o != k))), steps
    # 3. replace a subexpression of a compute body by one of its operands
    for t_index, t in enumerate(spec.tensors):
        if t.body is None:
            continue
        for smaller in _smaller_bodies(t.body):
            tensors = list(spec.tensors)
            tensors[t_index] = dataclasses.replace(t, body=smaller)
            candidate = prune(dataclasses.replace(spec, tensors=tuple(tensors)))
            if _all_loads_valid(candidate):
                yield candidate, steps


def _operands(node: Node) -> list[Node]:
    """Operands computed in the same dtype as `node` (casts change the dtype: none)."""
    kind = node[0]
    if kind == "un":
        return [node[2]]
    if kind == "bin":
        return [node[2], node[3]]
    if kind == "sel":
        return [node[4], node[5]]
    return []


def _smaller_bodies(node: Node) -> Iterator[Node]:
    """`node` with one subtree replaced by one of its operands (outermost first)."""
    yield from _operands(node)
    for pos, child in enumerate(node):
        if pos == 0 or not isinstance(child, tuple):
            continue
        for smaller in _smaller_bodies(child):
            yield node[:pos] + (smaller,) + node[pos + 1:]


def _all_loads_valid(spec: ProgramSpec) -> bool:
    """A reduction must still use its reduce axis somewhere, or lowering would reject it."""
    from cinn_py.tools.fuzzing.programs import loads_of

    for t in spec.tensors:
        if t.reduce is None:
            continue
        r = t.reduce[1]
        uses = any(r in spec.tensors[k].axes for k in loads_of(t.body)) or _uses_idx(t.body, r)
        if not uses:
            return False
    return True


def _uses_idx(node: Any, axis: int) -> bool:
    if not isinstance(node, tuple):
        return False
    if node[0] == "idx":
        return node[1] == axis
    return any(_uses_idx(c, axis) for c in node[1:])
