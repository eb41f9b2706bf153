"""The search space of one fused group: the tactics' decisions as knobs over the primitives.

A `SearchSpace` is a list of `Knob`s, each a decision a tactic takes and the primitive it
drives, with the values worth trying on this group (what `space_for` finds in its analysis):

=====================  ===============================  =========================================
knob                   primitive                        groups
=====================  ===============================  =========================================
mr, nv, lanes          split + unroll + vectorize       matmul: the register tile mr x (nv*lanes)
kc                     split (k block)                  matmul: depth of one B panel
pack_b                 cache_read + compute_at          matmul: B panel copied into a local buffer
parallel               parallel                         matmul: outer loop on the thread pool or not
vector_width_bits      vectorize (lanes)                every group
min_parallel_work      parallel (which nests)           every group: task granularity threshold
streaming_store_bytes  annotate x86_nontemporal         groups with a large output (cache_write
                                                        policy: stores that bypass the caches)
chunk_vectors          split (task size) + fuse         injective nests (flat loops, long rows)
transpose_block        split + reorder (cache blocks)   injective nests that gather (transposes)
unroll_tiles           unroll                           transposes: the register tile's rows
reduce_vectors         split + rfactor + vectorize      reductions: partial-result vectors
fuse_reduce_producers  split + simple_compute_at        row reductions: the producer's position
column_tasks           split + rfactor + parallel       column reductions: reduce slices
rows_per_pass          split + reorder + unroll         column reductions: rows per strip pass
=====================  ===============================  =========================================

`apply_candidate` schedules the group with a candidate through the tactics, so every candidate
is a sequence of primitives and passes their legality checks (the dependence analysis of
`compute_at`/`reorder`, the rfactor and vectorize rules, the split tail guards): a candidate a
primitive refuses, or for which a tactic falls back to a simpler plan than the default's, raises
`CandidateRefused` and is never measured. Two candidates that schedule to the same IR (a knob
that does not matter for this group) have the same `ScheduledCandidate.fingerprint`; the search
measures one of them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cinn_py.ir import LoweredFunc, print_ir
from cinn_py.target import Target
from schedules.errors import ScheduleError
from schedules.schedule import IRSchedule

__all__ = ["Candidate", "CandidateRefused", "Knob", "ScheduledCandidate", "SearchSpace", "apply_candidate",
           "matmul_info", "prune_space", "space_for"]

NEVER = 1 << 62
"""A `min_parallel_work` / `streaming_store_bytes` no nest reaches: serial / no streaming stores."""


class CandidateRefused(ScheduleError):
    """A candidate the primitives' legality checks or the tactics refuse for this group (it is
    never measured)."""


@dataclass(frozen=True)
class Candidate:
    """One point of a search space: `kind` "matmul" (`MatmulParams` fields) or "group"
    (`ScheduleConfig` fields), as sorted (name, value) pairs."""

    kind: str
    params: tuple[tuple[str, Any], ...]

    @staticmethod
    def of(kind: str, params: Mapping[str, Any]) -> Candidate:
        return Candidate(kind, tuple(sorted(params.items())))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params)


@dataclass(frozen=True)
class Knob:
    """One decision: its name (a `MatmulParams` / `ScheduleConfig` field), the primitive it drives
    and the values tried (the default's value first)."""

    name: str
    primitive: str
    choices: tuple[Any, ...]


@dataclass(frozen=True)
class SearchSpace:
    """The knobs of one group; `default` is what `schedule="auto"` does without a record."""

    kind: str
    knobs: tuple[Knob, ...]
    default: Candidate
    registers: int = 0
    """matmul: vector registers the register tile must fit (mr*nv accumulators + nv + 1)."""

    @property
    def size(self) -> int:
        total = 1
        for knob in self.knobs:
            total *= len(knob.choices)
        return total

    def valid(self, cand: Candidate) -> bool:
        """The candidate sets every knob to one of its choices and fits the register file."""
        params = cand.as_dict()
        if cand.kind != self.kind or any(params.get(k.name) not in k.choices for k in self.knobs):
            return False
        if self.kind == "matmul" and self.registers:
            return params["mr"] * params["nv"] + params["nv"] + 1 <= self.registers
        return True

    def check(self, cand: Candidate) -> None:
        """Raise `CandidateRefused` naming the knob, its value and the choices unless `valid`."""
        if cand.kind != self.kind:
            raise CandidateRefused(f"tuning candidate {cand}: refused: a {cand.kind!r} candidate for a "
                                   f"{self.kind!r} search space")
        params = cand.as_dict()
        for knob in self.knobs:
            if params.get(knob.name) not in knob.choices:
                raise CandidateRefused(f"tuning candidate {cand}: refused: knob {knob.name!r} "
                                       f"({knob.primitive}) is {params.get(knob.name)!r}, expected one of "
                                       f"{knob.choices}")
        if not self.valid(cand):
            raise CandidateRefused(f"tuning candidate {cand}: refused: the register tile needs "
                                   f"{params['mr'] * params['nv'] + params['nv'] + 1} vector registers, "
                                   f"the target has {self.registers}")

    def complete(self, values: dict[str, Any]) -> Candidate:
        """The default with some knobs set to `values`."""
        return Candidate.of(self.kind, {**self.default.as_dict(), **values})

    def sample(self, rng: random.Random, tries: int = 64) -> Candidate:
        """A uniformly random valid candidate (the default when none is found in `tries`)."""
        for _ in range(tries):
            cand = self.complete({k.name: rng.choice(k.choices) for k in self.knobs})
            if self.valid(cand):
                return cand
        return self.default

    def mutate(self, cand: Candidate, rng: random.Random, changes: int = 1, tries: int = 32) -> Candidate:
        """`cand` with `changes` knobs set to another of their choices (a neighbour of `cand`)."""
        movable = [k for k in self.knobs if len(k.choices) > 1]
        if not movable:
            return cand
        for _ in range(tries):
            values = cand.as_dict()
            for knob in rng.sample(movable, min(changes, len(movable))):
                values[knob.name] = rng.choice([c for c in knob.choices if c != values[knob.name]])
            out = self.complete(values)
            if self.valid(out):
                return out
        return cand

    def crossover(self, a: Candidate, b: Candidate, rng: random.Random) -> Candidate:
        """Each knob from one of two parents (the first parent when the mix is invalid)."""
        pa, pb = a.as_dict(), b.as_dict()
        child = self.complete({k.name: (pa if rng.random() < 0.5 else pb)[k.name] for k in self.knobs})
        return child if self.valid(child) else a


@dataclass(frozen=True)
class ScheduledCandidate:
    """A candidate scheduled: the IRSchedule and the scheduled IR's fingerprint."""

    candidate: Candidate
    schedule: IRSchedule
    fingerprint: str


def prune_space(space: SearchSpace, schedule: Any) -> tuple[SearchSpace, list[str]]:
    """`space` without the knobs that change nothing here: each knob's other values are tried on
    the default (`schedule(candidate) -> ScheduledCandidate`), and a knob whose every value
    schedules to the default's IR (or is refused) is fixed at its default. Returns the pruned
    space and the dropped knobs' names (interactions between knobs are not probed: a knob that
    only matters together with another is dropped too)."""
    base = schedule(space.default).fingerprint
    kept: list[Knob] = []
    dropped: list[str] = []
    for knob in space.knobs:
        useful = False
        for value in knob.choices[1:]:
            cand = space.complete({knob.name: value})
            if not space.valid(cand):
                continue
            try:
                useful = schedule(cand).fingerprint != base
            except CandidateRefused:
                continue
            if useful:
                break
        if useful:
            kept.append(knob)
        else:
            dropped.append(knob.name)
    return dataclasses.replace(space, knobs=tuple(kept)), dropped


# -- building the space ------------------------------------------------------------------------------
def space_for(func: LoweredFunc, target: Target) -> SearchSpace:
    """The search space of `func` (one unscheduled fused group) for the CPU `target`."""
    from schedules.tactics.auto import target_config  # the defaults auto_schedule would use
    from schedules.tactics.config import build_schedule_config
    from schedules.tactics.group import analyze_group
    from schedules.tactics.matmul import default_matmul_params

    info = matmul_info(func)
    bits = target.cpu.vector_bits
    if info is not None:
        default = default_matmul_params(info, bits).as_dict()
        return _matmul_space(default, bits)
    group = analyze_group(func)
    cfg = target_config(func, target, build_schedule_config(group), use_db=False)
    default = {k.name: getattr(cfg, k.name) for k in _group_knobs(group, cfg, bits)}
    return SearchSpace("group", _group_knobs(group, cfg, bits), Candidate.of("group", default))


def _matmul_space(default: dict[str, Any], bits: int) -> SearchSpace:
    lanes = sorted({default["lanes"], max(1, bits // 64)}, reverse=True)
    knobs = (
        Knob("mr", "split + unroll (register tile rows)", _with(default["mr"], (2, 4, 6, 8, 12, 14))),
        Knob("nv", "split + unroll (vectors per tile row)", _with(default["nv"], (1, 2, 3, 4))),
        Knob("lanes", "vectorize", tuple(lanes)),
        Knob("kc", "split (k block)", _with(default["kc"], (64, 128, 256, 512))),
        Knob("pack_b", "cache_read + compute_at (B panel)", _with(default["pack_b"], (True, False))),
        Knob("parallel", "parallel", _with(default["parallel"], ("outer", "none"))),
    )
    regs = 32 if bits >= 512 else 16
    return SearchSpace("matmul", knobs, Candidate.of("matmul", default), registers=regs)


def _with(first: Any, values: tuple[Any, ...]) -> tuple[Any, ...]:
    return (first,) + tuple(v for v in values if v != first)


def _group_knobs(group: Any, cfg: Any, bits: int) -> tuple[Knob, ...]:
    knobs = [
        Knob("vector_width_bits", "vectorize (lanes)",
             _with(cfg.vector_width_bits, tuple(sorted({128, 256, bits})))),
        Knob("min_parallel_work", "parallel (task granularity)",
             _with(cfg.min_parallel_work, (1024, 4096, 16384, 65536, NEVER))),
        Knob("streaming_store_bytes", "annotate x86_nontemporal (cache_write policy)",
             _with(cfg.streaming_store_bytes, (NEVER,))),
    ]
    if any(not b.is_reduce and not b.is_init for b in group.blocks):
        knobs += [Knob("chunk_vectors", "split (task size) + fuse",
                       _with(cfg.chunk_vectors, (128, 256, 512, 1024, 4096))),
                  Knob("transpose_block", "split + reorder (cache blocks)",
                       _with(cfg.transpose_block, (64, 128, 256, 512))),
                  Knob("unroll_tiles", "unroll", _with(cfg.unroll_tiles, (True, False)))]
    if group.has_reduce:
        knobs += [Knob("reduce_vectors", "split + rfactor + vectorize",
                       _with(cfg.reduce_vectors, (0, 1, 2, 4))),
                  Knob("fuse_reduce_producers", "split + simple_compute_at",
                       _with(cfg.fuse_reduce_producers, (False, True)))]
    if group.has_reduce and not group.continuous:
        knobs += [Knob("column_tasks", "split + rfactor + parallel",
                       _with(cfg.column_tasks, (2, 4, 8, 16, 32))),
                  Knob("rows_per_pass", "split + reorder + unroll", _with(cfg.rows_per_pass, (1, 2, 4, 8)))]
    return tuple(knobs)


def matmul_info(func: LoweredFunc) -> Any:
    from schedules.tactics.compute_inline import compute_inline_tactic
    from schedules.tactics.group import analyze_group
    from schedules.tactics.matmul import match_matmul

    if not any(block.is_reduce for block in analyze_group(func).blocks):
        return None
    sch = IRSchedule(func)
    compute_inline_tactic(sch)
    return match_matmul(sch.func)


# -- applying a candidate ----------------------------------------------------------------------------
def apply_candidate(func: LoweredFunc, target: Target, cand: Candidate, default_fallbacks: int | None = None,
                    space: SearchSpace | None = None) -> ScheduledCandidate:
    """`func` scheduled with `cand`; `CandidateRefused` when it is outside `space`, a primitive
    refuses it, or a tactic falls back further than the default did (`default_fallbacks`: the
    default's count)."""
    from schedules.tactics.auto import auto_schedule, target_config
    from schedules.tactics.config import build_schedule_config
    from schedules.tactics.group import analyze_group
    from schedules.tactics.matmul import MatmulParams

    if space is not None:
        space.check(cand)
    params = cand.as_dict()
    try:
        if cand.kind == "matmul":
            sch = auto_schedule(func, target, matmul=MatmulParams(**params))
            if sch.auto_report.strategy != "x86-matmul":
                raise _refused(cand, sch.auto_report.fallbacks)
        else:
            base = target_config(func, target, build_schedule_config(analyze_group(func)), use_db=False)
            sch = auto_schedule(func, target, config=dataclasses.replace(base, **params))
            if default_fallbacks is not None and len(sch.auto_report.fallbacks) > default_fallbacks:
                raise _refused(cand, sch.auto_report.fallbacks[default_fallbacks:])
    except CandidateRefused:
        raise
    except (ScheduleError, ValueError, TypeError) as err:
        raise CandidateRefused(f"tuning candidate {cand}: refused: {type(err).__name__}: "
                               f"{str(err).splitlines()[0] if str(err) else ''}") from None
    text = print_ir(sch.func, decls=True)
    return ScheduledCandidate(cand, sch, hashlib.sha256(text.encode()).hexdigest()[:16])


def _refused(cand: Candidate, why: list[str]) -> CandidateRefused:
    reason = why[0] if why else "the tactic did not apply"
    return CandidateRefused(f"tuning candidate {cand}: refused: the tactic fell back ({reason})")
