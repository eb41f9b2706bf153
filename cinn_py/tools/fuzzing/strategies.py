"""Hypothesis strategies over the fuzzer's generators (hypothesis is a test dependency).

    from cinn_py.tools.fuzzing.strategies import fuzz_cases, program_specs
    @given(program_specs())
    def test_something(spec): ...

The generators draw from a `random.Random` that hypothesis controls
(`st.randoms(use_true_random=False)`), so hypothesis can shrink a failing example by
shrinking the random choices.
"""

from __future__ import annotations

from typing import Any

from cinn_py.tools.fuzzing.programs import ProgramSpec, generate_program, random_bindings


def program_specs() -> Any:
    """Strategy of random valid `ProgramSpec`s."""
    from hypothesis import strategies as st  # noqa: PLC0415

    return st.randoms(use_true_random=False).map(generate_program)


def fuzz_cases() -> Any:
    """Strategy of `(spec, bindings, input_seed, schedule_seed)` tuples, as `cinn_py.tools.fuzz.Case`
    fields (build a Case with `Case(0, index, *drawn)`)."""
    from hypothesis import strategies as st  # noqa: PLC0415

    @st.composite
    def cases(draw: Any) -> tuple[ProgramSpec, list[dict[str, int]], int, int]:
        rng = draw(st.randoms(use_true_random=False))
        spec = generate_program(rng)
        seeds = st.integers(0, 2 ** 31 - 1)
        return spec, random_bindings(spec, rng), draw(seeds), draw(seeds)

    return cases()
