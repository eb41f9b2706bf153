"""examples/train_bert_layer.py: SGD steps of the BERT-style layer through cinn-py (the program as
a torch function, and the eager layer through torch.compile(backend="cinn_py")) follow eager
PyTorch's loss trajectory, and the loss goes down; with `via="dynamic"` each step has another
sequence length, and one forward and one backward graph are compiled for all of them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_bert_layer.py"


# All three ways are `slow` (19 CPU-s for `function`, 37 and 56 s for the torch.compile ways on 2
# cores): the default run covers each path on its own, the program as a torch function with its
# gradient in tests/autodiff/test_torch_function.py, the same layer through torch.compile in
# tests/torch/test_backend.py and test_dynamic.py.
@pytest.mark.parametrize("via", [pytest.param("function", marks=pytest.mark.slow),
                                 pytest.param("compile", marks=pytest.mark.slow),
                                 pytest.param("dynamic", marks=pytest.mark.slow)])
def test_training_steps_match_eager(via: str) -> None:
    import torch

    import cinn_py.torch as ct

    torch._dynamo.reset()
    ct.reset_reports()
    spec = importlib.util.spec_from_file_location("train_bert_layer", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo imports the module of the functions it traces
    spec.loader.exec_module(module)
    mine, eager = module.train(steps=3, via=via)
    assert mine == pytest.approx(eager, rel=1e-5)
    if via != "dynamic":  # (the dynamic steps' batches differ: their losses need not decrease)
        assert mine[-1] < mine[0]
        return
    kinds = [r.name.split()[0] for r in ct.reports()]
    assert kinds == ["forward", "backward"], [str(r) for r in ct.reports()]
    assert all(not r.fallback and not r.errors for r in ct.reports())
