"""The fuzzers generate NaN, +-inf, -0.0, zero divisors and out-of-range indices (issue 23 item 8):
`--torch-values` (random aten graphs on special inputs vs eager: values, NaN positions, errors),
`--net --specials` and `--specials` (DSL) inputs, and the checks catch what they are for."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cinn_py.tools import fuzz
from cinn_py.tools.fuzzing import netgen, torchgen
from cinn_py.tools.fuzzing import programs as P
from cinn_py.tools.fuzzing import reference

torch = pytest.importorskip("torch")


def test_torch_values_generator_covers_specials_value_ops_and_errors() -> None:
    cases = [torchgen.generate(0, k, values=True) for k in range(40)]
    assert all(c.values and any("sp(" in i for i in c.inputs) for c in cases)
    body = "\n".join(line for c in cases for line in c.body)
    for op in ("torch.relu(", "torch.maximum(", "* 0.0)", "torch.clamp(", "torch.where("):
        assert op in body, op
    raising = [c for c in cases if c.expects_error]
    assert len(raising) >= 3, "out-of-range indices that eager refuses"
    assert all(c.outputs[0] == c.body[-1].split(" = ")[0] for c in raising)  # the failing read is returned
    assert torchgen.generate(0, 3, values=True) == torchgen.generate(0, 3, values=True)


@pytest.mark.parametrize("index", [0, 1, 11])  # 11 reads an embedding row out of range
def test_torch_values_fuzz_slice_agrees_with_eager(index: int) -> None:
    case = torchgen.generate(0, index, values=True)
    assert torchgen.check(case) is None, case.script()


def test_torch_values_check_catches_a_missing_index_check(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: object) -> None:
    from cinn_py.runtime import checked  # noqa: PLC0415

    monkeypatch.setenv("CINN_PY_CACHE_DIR", str(tmp_path))  # no compiled graph from an earlier run
    monkeypatch.setenv("CINN_PY_TORCH_INDEX_CHECKS", "0")
    monkeypatch.setattr(checked, "_default", False)  # not the suite's bounds-checked kernels
    case = torchgen.generate(0, 11, values=True)
    assert case.expects_error
    detail = torchgen.check(case)
    assert detail is not None and "eager raises IndexError" in detail and "returned values" in detail


def test_torch_values_check_compares_nan_positions(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """With relu converted by CINN's rule (relu(NaN) = 0) instead of torch's, the check fails."""
    import cinn_py.torch.converters.elementwise as elementwise  # noqa: PLC0415

    monkeypatch.setenv("CINN_PY_CACHE_DIR", str(tmp_path))  # no compiled graph from an earlier run
    monkeypatch.setattr(elementwise, "nan_kept", lambda e, x, y: y)
    case = torchgen.TorchCase(0, 5, ("sp(torch.randn([6, 8], generator=g), g)",), ("v0 = torch.relu(a0)",),
                              ("v0",), False, values=True)
    detail = torchgen.check(case)
    assert detail is not None and "values differ" in detail


def test_net_specials_inputs_and_zero_divisors() -> None:
    spec, rng = fuzz.make_net_case(0, 0, specials=True)
    arrays = netgen.random_inputs(spec, rng, np.random.default_rng(0), specials=True)
    values = np.concatenate([a.ravel() for a in arrays])
    assert np.isnan(values).any() or np.isinf(values).any() or (values == 0).any()
    specs = [fuzz.make_net_case(0, k, specials=True)[0] for k in range(60)]
    inputs = [len(s.inputs) for s in specs]
    raw = sum(any(m == "divide" and isinstance(a[1], int) and a[1] < n for m, a, _ in s.ops)
              for s, n in zip(specs, inputs))
    assert raw >= 1, "a division by an input as is (which holds zeros)"


@pytest.mark.parametrize("index", [0, 1])
def test_net_specials_fuzz_slice_agrees_with_the_oracle(index: int) -> None:
    opts = fuzz.Options(net=True, specials=True)
    result = fuzz.check_case(7, index, opts)
    assert result.status == "ok", result.reproducer


def test_dsl_specials_slice_and_compare_of_nan_positions() -> None:
    opts = dataclasses.replace(fuzz.Options(), specials=True)
    for index in range(4):
        result = fuzz.check_case(3, index, opts)
        assert result.status == "ok", result.reproducer
    case = fuzz.make_case(3, 0)
    outs = [case.spec.tensors[k] for k in case.spec.outputs]
    want = {t.name: np.full(P.shape_of(case.spec, t, case.bindings[0]), np.nan, t.dtype) for t in outs
            if t.dtype in P.FLOAT_DTYPES}
    if not want:
        pytest.skip("case 0 of seed 3 has no float output")
    spec = dataclasses.replace(case.spec, outputs=tuple(k for k in case.spec.outputs
                                                        if case.spec.tensors[k].name in want))
    fuzz.compare(spec, {k: v.copy() for k, v in want.items()}, want, "x")  # NaN where NaN: agrees
    with pytest.raises(fuzz._Failure, match="differ"):  # a number where the reference has NaN
        fuzz.compare(spec, {k: np.zeros_like(v) for k, v in want.items()}, want, "x")


def test_dsl_reference_follows_the_kernels_nan_rule() -> None:
    a, b = np.array([np.nan, 1.0, 2.0]), np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(reference._binary("max", a, b, "float64"), [1.0, np.nan, 3.0])
    np.testing.assert_array_equal(reference._binary("min", a, b, "float64"), [1.0, np.nan, 2.0])
