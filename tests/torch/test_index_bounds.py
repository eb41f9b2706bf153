"""Data-dependent indices in torch graphs (issue 23 item 1): an out-of-range index raises as eager
does (IndexError / RuntimeError naming the op, the value, the dim and its size) before any kernel
reads heap memory or drops a scattered value; in-range indices (negative ones where torch wraps
them) still compile and match eager; `CINN_PY_TORCH_INDEX_CHECKS=0` turns the checks off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cinn_py.torch as ct  # noqa: E402
from cinn_py.torch.backend import cinn_py_backend  # noqa: E402

STRICT = {"strict": True}

X = torch.randn(6, 5, generator=torch.Generator().manual_seed(0))
SRC = torch.ones(2, 5)

CASES: dict[str, tuple[Callable[..., Any], type[Exception]]] = {
    "embedding": (lambda x, i: torch.nn.functional.embedding(i, x), IndexError),
    "index_select": (lambda x, i: x.index_select(0, i), IndexError),
    "gather": (lambda x, i: x.gather(0, i.view(1, -1).expand(1, 2)), RuntimeError),
    "getitem": (lambda x, i: x[i] * 2, IndexError),
    "index_put": (lambda x, i: x.clone().index_put_((i,), SRC), IndexError),
    "index_put_accumulate": (lambda x, i: x.clone().index_put_((i,), SRC, accumulate=True), IndexError),
    "scatter_add": (lambda x, i: x.clone().scatter_add(0, i.view(2, 1).expand(2, 5), SRC), RuntimeError),
    "index_add": (lambda x, i: x.clone().index_add(0, i, SRC), RuntimeError),
}


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    torch._dynamo.reset()
    return torch.compile(fn, backend=cinn_py_backend, dynamic=False, options=STRICT)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("bad", [6, 2**36, -7])
def test_an_out_of_range_index_raises_like_eager(case: str, bad: int) -> None:
    fn, error = CASES[case]
    compiled = _compiled(fn)
    good = torch.tensor([1, 4])
    torch.testing.assert_close(compiled(X, good), fn(X, good))
    report = ct.last_report()
    assert report is not None and not report.failed
    index = torch.tensor([2, bad])
    with pytest.raises(error):
        fn(X, index)  # eager raises too
    op = {"getitem": "index", "index_put": "index_put_", "index_put_accumulate": "index_put_"}.get(case, case)
    with pytest.raises(error, match=rf"{op}: index {bad} is out of bounds for dimension 0 with size 6"):
        compiled(X, index)


@pytest.mark.parametrize("case", ["getitem", "index_put"])
def test_negative_indices_wrap_where_torch_wraps_them(case: str) -> None:
    fn, _ = CASES[case]
    index = torch.tensor([-1, -6])
    torch.testing.assert_close(_compiled(fn)(X, index), fn(X, index))


def test_an_index_computed_in_the_graph_stays_in_eager() -> None:
    def fn(x: Any, i: Any) -> Any:
        # flip is compiled and not re-evaluated by the guard: eager checks
        return x.index_select(0, i.flip(0) * 3)

    ct.reset_reports()
    compiled = torch.compile(fn, backend=cinn_py_backend, dynamic=False)
    with pytest.raises(IndexError):
        compiled(X, torch.tensor([0, 5]))
    reasons = str(ct.reports())
    assert "computed in the graph" in reasons


def test_the_checks_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CINN_PY_TORCH_INDEX_CHECKS", "0")
    fn, _ = CASES["index_add"]
    compiled = _compiled(fn)
    out = compiled(X, torch.tensor([1, 9]))  # unchecked: the out-of-range row is dropped, as documented
    torch.testing.assert_close(out[1], X[1] + 1)


def test_only_the_values_the_op_sees_are_checked() -> None:
    def fn(x: Any, i: Any) -> Any:
        return x[i[1:]] * 2  # i[0] is never used: eager does not check it, neither do we

    index = torch.tensor([99, 2, -1])
    torch.testing.assert_close(_compiled(fn)(X, index), fn(X, index))
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        _compiled(fn)(X, torch.tensor([0, 7, 1]))


def test_a_constant_out_of_range_index_runs_in_eager_which_raises() -> None:
    def fn(x: Any) -> Any:
        return x.index_select(0, torch.tensor([0, 6])) * 2

    ct.reset_reports()
    with pytest.raises(IndexError):
        torch.compile(fn, backend=cinn_py_backend, dynamic=False)(X)
    assert "constant index out of range" in str(ct.last_report())


def test_position_like_indices_made_in_the_graph_are_checked() -> None:
    def fn(x: Any, i: Any) -> Any:
        # cheap index arithmetic: re-evaluated by the guard
        return x.index_select(0, i + 1) + x[torch.arange(2)]

    compiled = _compiled(fn)
    torch.testing.assert_close(compiled(X, torch.tensor([0, 4])), fn(X, torch.tensor([0, 4])))
    with pytest.raises(IndexError, match="index_select: index 6 is out of bounds"):
        compiled(X, torch.tensor([0, 5]))
