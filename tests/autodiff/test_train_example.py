"""examples/train_bert_layer.py: SGD steps of the BERT-style layer through cinn-py follow eager
PyTorch's loss trajectory, and the loss goes down."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_bert_layer.py"


def test_training_steps_match_eager() -> None:
    spec = importlib.util.spec_from_file_location("train_bert_layer", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mine, eager = module.train(steps=3)
    assert mine == pytest.approx(eager, rel=1e-5)
    assert mine[-1] < mine[0]
