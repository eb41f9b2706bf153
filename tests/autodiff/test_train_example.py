"""examples/train_bert_layer.py: SGD steps of the BERT-style layer through cinn-py (the program as
a torch function, and the eager layer through torch.compile(backend="cinn_py")) follow eager
PyTorch's loss trajectory, and the loss goes down."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_bert_layer.py"


@pytest.mark.parametrize("via", ["function", "compile"])
def test_training_steps_match_eager(via: str) -> None:
    spec = importlib.util.spec_from_file_location("train_bert_layer", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo imports the module of the functions it traces
    spec.loader.exec_module(module)
    mine, eager = module.train(steps=3, via=via)
    assert mine == pytest.approx(eager, rel=1e-5)
    assert mine[-1] < mine[0]
