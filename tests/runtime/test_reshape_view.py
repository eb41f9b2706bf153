"""Groups of reshapes only run as numpy views of their input (`cinn_py.runtime.program.ReshapeView`),
not copy kernels, where the alias cannot be seen: results as numpy's, and no program output shares
memory with an input or another output."""

from __future__ import annotations

import numpy as np

from cinn_py.frontend import NetBuilder
from cinn_py.pipeline import compile_program
from cinn_py.runtime.program import CompiledProgram, ReshapeView


def _views(compiled: CompiledProgram) -> list[str]:
    return [g.name for g, step in zip(compiled.groups, compiled.steps) if isinstance(step, ReshapeView)]


def test_reshape_between_matmuls_is_a_view() -> None:
    nb = NetBuilder("mm_reshape_mm")
    a = nb.create_input("float32", [6, 8], "A")
    b = nb.create_input("float32", [8, 4], "B")
    c = nb.create_input("float32", [2, 5], "C")
    r = nb.reshape(nb.matmul(a, b), [12, 2])
    out = nb.matmul(r, c)
    compiled = compile_program(nb.build([out]), "x86", schedule="auto")
    assert len(_views(compiled)) == 1
    rng = np.random.default_rng(0)
    A, B, C = (rng.standard_normal(s).astype(np.float32) for s in ((6, 8), (8, 4), (2, 5)))
    np.testing.assert_allclose(compiled(A, B, C), ((A @ B).reshape(12, 2)) @ C, rtol=1e-5, atol=1e-5)


def test_reshaped_output_of_a_temporary_read_once_is_a_view() -> None:
    nb = NetBuilder("bias_grad")
    x = nb.create_input("float32", [4, 6, 8], "X")
    out = nb.reshape(nb.reduce_sum(x, [0, 1], keep_dim=True), [8])
    compiled = compile_program(nb.build([out]), "x86", schedule="auto")
    assert len(_views(compiled)) == 1
    X = np.random.default_rng(1).standard_normal((4, 6, 8)).astype(np.float32)
    np.testing.assert_allclose(compiled(X), X.sum((0, 1)), rtol=1e-5)


def test_no_output_aliases_another_output_or_an_input() -> None:
    """`m` and its reshape are both outputs: the reshape is copied (a caller may write one of them
    in place); a reshape of an input is copied too."""
    nb = NetBuilder("two_outputs")
    a = nb.create_input("float32", [6, 8], "A")
    b = nb.create_input("float32", [8, 4], "B")
    m = nb.matmul(a, b)
    outs = [m, nb.reshape(m, [24]), nb.reshape(a, [48])]
    compiled = compile_program(nb.build(outs), "x86", schedule="auto")
    reshapes = [g for g in compiled.groups if all(op.type == "reshape" for op in g.ops)]
    assert len(reshapes) == 2 and _views(compiled) == []
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((6, 8)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)
    got = compiled(A, B)
    np.testing.assert_allclose(got[1], (A @ B).reshape(24), rtol=1e-5, atol=1e-5)
    arrays = [A, B, *got]
    assert not any(np.shares_memory(x, y) for i, x in enumerate(arrays) for y in arrays[i + 1:])
