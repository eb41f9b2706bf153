"""Random NetBuilder programs (elementwise / broadcast / reduce chains, <= 8 ops): fusion keeps
the group graph acyclic, places every op in exactly one group, and compile_program (x86)
matches the numpy reference of the op graph for several values of the symbolic dim."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cinn_py.frontend.fusion import plan
from cinn_py.pipeline import compile_program
from cinn_py.frontend.net_builder import NetBuilder
from cinn_py.frontend.ops import FrontendError

UNARY = ["tanh", "sigmoid", "relu", "abs", "negative", "scale"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
REDUCE = ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean"]

step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(UNARY), st.integers(0, 99)),
    st.tuples(st.just("binary"), st.sampled_from(BINARY), st.integers(0, 99), st.integers(0, 99)),
    st.tuples(st.just("reduce"), st.sampled_from(REDUCE), st.integers(0, 99), st.integers(0, 1),
              st.booleans()),
    st.tuples(st.just("broadcast"), st.integers(0, 99)),
)


def _apply(nb: NetBuilder, pool: list, s: tuple) -> None:  # type: ignore[type-arg]
    kind = s[0]
    if kind == "unary":
        x = pool[s[2] % len(pool)]
        pool.append(nb.scale(x, 0.5, 0.25) if s[1] == "scale" else getattr(nb, s[1])(x))
    elif kind == "binary":
        pool.append(getattr(nb, s[1])(pool[s[2] % len(pool)], pool[s[3] % len(pool)]))
    elif kind == "reduce":
        x = pool[s[2] % len(pool)]
        if x.ndim == 0:
            return
        pool.append(getattr(nb, s[1])(x, [s[3] % x.ndim], keep_dim=s[4]))
    else:
        x = pool[s[1] % len(pool)]
        pool.append(nb.broadcast_to(x, ["S0", 8]))


def _build(steps: list) -> object:  # type: ignore[type-arg]
    nb = NetBuilder("rand")
    pool = [nb.create_input("float32", ["S0", 8], "X"), nb.create_input("float32", [8], "Y")]
    for s in steps:
        try:
            _apply(nb, pool, s)
        except FrontendError:
            continue  # operands that do not broadcast: skip the step
    if len(pool) == 2:
        pool.append(nb.add(pool[0], pool[1]))
    return nb.build()


def _check_partition(fusion) -> None:  # type: ignore[no-untyped-def]
    ops = fusion.program.ops
    placed = [id(op) for g in fusion.groups for op in g.ops]
    assert sorted(placed) == sorted(id(op) for op in ops)                 # each op exactly once
    available = {id(v) for v in fusion.program.inputs}
    for g in fusion.groups:                                                 # topological => acyclic
        assert all(id(v) in available for v in g.args), g.name
        inside = {id(op.output) for op in g.ops}
        for op in g.ops:
            assert all(id(v) in available or id(v) in inside for v in op.inputs)
        available |= {id(v) for v in g.outputs}
    assert all(id(v) in available for v in fusion.program.outputs)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(step, min_size=1, max_size=8))
def test_random_programs(steps: list) -> None:  # type: ignore[type-arg]
    program = _build(steps)
    fusion = plan(program)
    _check_partition(fusion)
    compiled = compile_program(program)
    rng = np.random.default_rng(len(steps))
    for rows in (1, 3):
        args = [rng.standard_normal((rows, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)]
        got, want = compiled(*args), program.run_numpy(*args)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
