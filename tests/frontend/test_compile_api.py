"""`cinn_py.compile` -> Executable and CINN's `build_and_get_output` (issue 10)."""

from __future__ import annotations

import numpy as np
import pytest

import cinn_py as cp
from cinn_py.frontend import NetBuilder
from cinn_py.frontend.ops.base import FrontendError
from cinn_py.tools.testing.cuda import cuda_emulation


def _softmax_program() -> tuple[object, object, object, object]:
    nb = NetBuilder("api")
    x = nb.create_input("float32", ["S0", 7], "x")
    b = nb.create_input("float32", [7], "b")
    biased = nb.add(x, b)
    out = nb.softmax(biased, axes=[-1])
    return nb.build(), x, b, (biased, out)


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("rows", [1, 5])
def test_executable_runs_named_feeds_with_symbolic_rows(rows: int) -> None:
    program, _, _, (_, out) = _softmax_program()
    exe = cp.compile(program, "x86")
    assert exe.input_names == ["x", "b"] and exe.output_names == [out.name]
    rng = np.random.default_rng(rows)
    x, b = rng.standard_normal((rows, 7)).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    got = exe.run({"b": b, "x": x})  # by name: order does not matter
    assert list(got) == [out.name]
    np.testing.assert_allclose(got[out.name], _softmax(x + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe(x, b), _softmax(x + b), rtol=1e-5, atol=1e-6)


def test_build_and_get_output_fetches_intermediates_in_fetch_order() -> None:
    program, x, b, (biased, out) = _softmax_program()
    X, B = np.arange(21, dtype=np.float32).reshape(3, 7) / 10, np.ones(7, np.float32)
    got = cp.build_and_get_output(program, cp.DefaultHostTarget(), [b, x], [B, X], [out, biased, out])
    assert [g.shape for g in got] == [(3, 7), (3, 7), (3, 7)]
    np.testing.assert_allclose(got[0], _softmax(X + B), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], X + B)
    np.testing.assert_array_equal(got[0], got[2])
    by_name = cp.build_and_get_output(program, "x86", ["x", "b"], [X, B], [biased.name])
    np.testing.assert_allclose(by_name[0], X + B)


def test_build_and_get_output_on_cuda_runs_the_cuda_kernels_emulated() -> None:
    program, x, b, (_, out) = _softmax_program()
    X, B = np.random.default_rng(0).standard_normal((4, 7)).astype(np.float32), np.zeros(7, np.float32)
    with cuda_emulation():
        got = cp.build_and_get_output(program, cp.DefaultNVGPUTarget(), [x, b], [X, B], [out])
    np.testing.assert_allclose(got[0], _softmax(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"feed_list": ["x"], "feed_datas": [np.zeros((2, 7), np.float32)]},
     "expected each input of program 'api' once"),
    ({"feed_list": ["x", "b"], "feed_datas": [np.zeros((2, 7), np.float32)]},
     "one array per variable, got 2"),
    ({"feed_list": ["x", "nope"], "feed_datas": [0, 0]},
     "argument 'feed_list': expected variables of program"),
    ({"fetch_list": []}, "argument 'fetch_list': expected at least one variable"),
    ({"fetch_list": ["missing"]},
     "argument 'fetch_list': expected variables of program 'api', got 'missing'"),
    ({"passes": ["OpFusionPass"]},
     r"argument 'passes': unknown pass\(es\) \['OpFusionPass'\].* \(available graph "
                                   r"passes and rewrites: decompose, simplify, .*ConstantFolding, .*silu"),
    ({"passes": ["silu", "fold_scale"]}, r"unknown pass\(es\) \['fold_scale'\]; did you mean 'fold_scales'"),
    ({"scope": object()}, "argument 'scope'"),
])
def test_build_and_get_output_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    program, _, _, (_, out) = _softmax_program()
    args: dict[str, object] = {"feed_list": ["x", "b"], "feed_datas": [np.zeros((2, 7), np.float32),
                                                                       np.zeros(7, np.float32)],
                               "fetch_list": [out]}
    args.update(kwargs)
    with pytest.raises(FrontendError, match=message):
        cp.build_and_get_output(program, "x86", **args)  # type: ignore[arg-type]


def test_build_and_get_output_runs_the_named_passes_first() -> None:
    """Named passes rewrite the program before it is compiled; fetched variables keep their names
    (an intermediate the rewrite removes survives as the output it was fetched as)."""
    nb = NetBuilder("named")
    x = nb.create_input("float32", [3, 5], "x")
    s = nb.sigmoid(x)
    y = nb.multiply(x, s)
    program = nb.build()
    X = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    want = X / (1 + np.exp(-X))
    for passes in (["silu"], ["Decomposer", "silu", "ConstantFolding", "CommonSubexpressionElimination",
                              "DeadCodeElimination"], ["simplify", "fold_transposes"]):
        got, sig = cp.build_and_get_output(program, "x86", [x], [X], [y, s], passes=passes)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(sig, 1 / (1 + np.exp(-X)), rtol=1e-6)


def test_variables_of_another_program_are_rejected() -> None:
    program, _, _, _ = _softmax_program()
    _, other_x, other_b, _ = _softmax_program()  # same names, other objects
    with pytest.raises(FrontendError, match="expected variables of program 'api'"):
        cp.build_and_get_output(program, "x86", [other_x, other_b], [0, 0], ["x"])


def test_executable_feed_errors_are_clear() -> None:
    program, _, _, _ = _softmax_program()
    exe = cp.compile(program, "x86", schedule=None)
    with pytest.raises(FrontendError, match="feeds must map input names"):
        exe.run([np.zeros((1, 7), np.float32)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="missing \\['b'\\]"):
        exe.run({"x": np.zeros((1, 7), np.float32)})
    with pytest.raises(ValueError, match="b"):
        exe.run({"x": np.zeros((1, 7), np.float32), "b": np.zeros(6, np.float32)})
    with pytest.raises(TypeError, match="expected a NetBuilder Program"):
        cp.compile("not a program", "x86")
