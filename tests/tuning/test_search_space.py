"""The tuning search space never yields an illegal or wrong schedule: candidates of random
NetBuilder programs' groups, random compute-DSL groups (symbolic sizes included) and the bench
workloads are scheduled and run in the interpreter against the unscheduled group; a candidate
is either refused (`CandidateRefused`, never measured) or computes the same result."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.interp import run_ir
from cinn_py.interp.errors import InterpError
from cinn_py.ir import LoweredFunc
from cinn_py.target import Target
from cinn_py.tools.runner import random_inputs
from schedules.tuning.space import Candidate, CandidateRefused, SearchSpace, apply_candidate, space_for

X86 = Target.parse("x86")


def _groups_of(program: Any) -> list[LoweredFunc]:
    from cinn_py.frontend.fusion import plan
    from cinn_py.lowering.group import lower_group

    return [lower_group(g) for g in plan(program).groups]


def _candidates(space: SearchSpace, rng: random.Random, count: int) -> list[Candidate]:
    """The default, random samples, and mutations / crossovers of them (what the search makes)."""
    cands = [space.default] + [space.sample(rng) for _ in range(count)]
    cands += [space.mutate(rng.choice(cands), rng, rng.randint(1, 3)) for _ in range(count // 2)]
    cands += [space.crossover(rng.choice(cands), rng.choice(cands), rng) for _ in range(count // 2)]
    return cands


MAX_ELEMENTS = 3000


def _largest(func: LoweredFunc, symbols: dict[str, int]) -> int:
    from cinn_py.symbolic.integer import eval_int

    sizes = [int(np.prod([eval_int(d, symbols) for d in t.shape])) for t in func.inputs + func.outputs]
    return max(sizes, default=0)


def _check_group(func: LoweredFunc, rng: random.Random, count: int,
                 symbols: dict[str, int]) -> tuple[int, int]:
    """(candidates checked against the interpreter, candidates refused)."""
    if _largest(func, symbols) > MAX_ELEMENTS:
        return 0, 0  # the interpreter runs scheduled (split, vectorised) nests element by element
    space = space_for(func, X86)
    inputs = random_inputs(func, symbols, seed=rng.randrange(1 << 16))
    try:
        want = run_ir(func, inputs, symbols)
    except InterpError:  # random values outside the group's input domain (a gather's indices)
        return 0, 0
    default = apply_candidate(func, X86, space.default)
    checked = refused = 0
    seen: set[str] = set()
    for cand in _candidates(space, rng, count):
        assert space.valid(cand), cand
        try:
            scheduled = apply_candidate(func, X86, cand, len(default.schedule.auto_report.fallbacks))
        except CandidateRefused as err:
            assert "tuning candidate" in str(err) and "refused" in str(err)
            refused += 1
            continue
        if scheduled.fingerprint in seen:
            continue  # the same schedule as an earlier candidate (a knob that does not matter here)
        seen.add(scheduled.fingerprint)
        got = run_ir(scheduled.schedule.func, inputs, symbols)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4, equal_nan=True,
                                       err_msg=f"{func.name}: candidate {cand}")
        checked += 1
    return checked, refused


@pytest.mark.parametrize("seed", range(6))
def test_netbuilder_programs_every_candidate_is_refused_or_right(seed: int) -> None:
    from cinn_py.tools.fuzzing.netgen import build_program, generate_net

    rng = random.Random(seed)
    checked = groups = 0
    for _ in range(12):  # programs until two groups small enough for the interpreter were checked
        for func in _groups_of(build_program(generate_net(rng))):
            done = _check_group(func, rng, 6, {s.name: rng.choice((2, 7)) for s in func.scalar_args})[0]
            checked, groups = checked + done, groups + (done > 0)
        if groups >= 2:
            break
    assert checked > 0


@pytest.mark.parametrize("seed", range(6))
def test_compute_programs_every_candidate_is_refused_or_right(seed: int) -> None:
    from cinn_py.tools.fuzzing.programs import generate_program
    from cinn_py.tools.fuzzing.reference import build_tensors

    rng = random.Random(100 + seed)
    spec = generate_program(rng)
    func = cp.lower(f"fuzz_tune_{seed}", build_tensors(spec))
    symbols = {s.name: rng.choice((3, 8, 17)) for s in func.scalar_args}
    while _largest(func, symbols) > MAX_ELEMENTS:
        spec = generate_program(rng)
        func = cp.lower(f"fuzz_tune_{seed}", build_tensors(spec))
        symbols = {s.name: rng.choice((3, 8, 17)) for s in func.scalar_args}
    checked, _ = _check_group(func, rng, 6, symbols)
    assert checked > 0  # the default at least


@pytest.mark.parametrize("name", ["rmsnorm", "softmax", "colsum", "transpose", "matmul", "bias_gelu"])
def test_bench_workloads_every_candidate_is_refused_or_right(name: str) -> None:
    from cinn_py.tools.bench_workloads import WORKLOADS

    work = WORKLOADS[name]
    shape = {"rmsnorm": {"rows": 8, "cols": 96}, "softmax": {"rows": 8, "cols": 80},
             "colsum": {"rows": 24, "cols": 40},
             "transpose": {"n": 48}, "matmul": {"m": 12, "n": 40, "k": 24},
             "bias_gelu": {"rows": 6, "cols": 72}}[name]
    checked, _ = _check_group(work.lower(shape), random.Random(name), 8, {})
    assert checked >= 2  # distinct schedules (a small shape leaves some knobs without effect)


def test_the_space_names_its_knobs_and_primitives() -> None:
    from cinn_py.tools.bench_workloads import WORKLOADS

    mm = space_for(WORKLOADS["matmul"].lower({"m": 64, "n": 64, "k": 64}), X86)
    assert mm.kind == "matmul"
    assert {k.name for k in mm.knobs} == {"mr", "nv", "lanes", "kc", "pack_b", "parallel"}
    assert any("cache_read" in k.primitive for k in mm.knobs)
    rng = random.Random(0)
    assert all(mm.valid(mm.sample(rng)) for _ in range(50))  # the register file bounds every tile
    bad = Candidate.of("matmul", {**mm.default.as_dict(), "mr": 14, "nv": 4})
    assert not mm.valid(bad)
    col = space_for(WORKLOADS["colsum"].lower({"rows": 64, "cols": 64}), X86)
    names = {k.name for k in col.knobs}
    assert {"column_tasks", "rows_per_pass", "reduce_vectors", "min_parallel_work"} <= names
    assert col.size == np.prod([len(k.choices) for k in col.knobs])
    assert all(k.choices[0] == col.default.as_dict()[k.name] for k in col.knobs)  # defaults first


def test_a_candidate_outside_the_space_is_refused_not_scheduled() -> None:
    from cinn_py.tools.bench_workloads import WORKLOADS

    func = WORKLOADS["matmul"].lower({"m": 64, "n": 64, "k": 64})
    space = space_for(func, X86)
    with pytest.raises(CandidateRefused, match="knob 'parallel' .* is 'all', expected one of"):
        apply_candidate(func, X86, Candidate.of("matmul", {**space.default.as_dict(), "parallel": "all"}),
                        space=space)
    with pytest.raises(CandidateRefused, match="needs 61 vector registers"):
        apply_candidate(func, X86, Candidate.of("matmul", {**space.default.as_dict(), "mr": 14, "nv": 4}),
                        space=space)
    with pytest.raises(CandidateRefused, match="a 'group' candidate for a 'matmul' search space"):
        apply_candidate(func, X86, Candidate.of("group", {}), space=space)
