"""The learned cost model: predicts how fast a candidate is from its loop-nest features.

A gradient-boosted regression model (LightGBM's `LGBMRegressor` when installed: `pip install
'cinn-py[tune]'`; else scikit-learn's `HistGradientBoostingRegressor` when that is installed)
fitted to the measured candidates: target `log(time / the group's default time)`, so that
candidates of different groups and shapes (the database's measurements: transfer across groups)
share one scale, and lower is better. With neither library, or fewer than `MIN_SAMPLES`
measurements, `trained` is False and the search samples at random (`predict` returns None).

The model is small and refitted after every measured batch (one thread: the machine measures).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["MIN_SAMPLES", "CostModel", "available_backend", "relative_cost"]

MIN_SAMPLES = 8


def available_backend() -> str | None:
    """"lightgbm", "sklearn" or None: the first model library that imports."""
    try:
        import lightgbm  # noqa: F401  # pyright: ignore[reportMissingImports, reportUnusedImport]
    except ImportError:
        pass
    else:
        return "lightgbm"
    try:
        import sklearn.ensemble  # noqa: F401  # pyright: ignore[reportMissingImports, reportUnusedImport]
    except ImportError:
        return None
    return "sklearn"


def relative_cost(time_s: float, default_s: float | None) -> float:
    """The model's target: log2 of the time relative to the group's default (0 without one)."""
    if default_s is None or default_s <= 0 or time_s <= 0:
        return 0.0
    return math.log2(time_s / default_s)


class CostModel:
    """`fit(features, costs)` then `predict(features)`; `backend` "auto" picks the library."""

    def __init__(self, backend: str = "auto", seed: int = 0) -> None:
        if backend not in ("auto", "lightgbm", "sklearn", "none"):
            raise ValueError(f"cost model: backend must be 'auto', 'lightgbm', 'sklearn' or 'none', got "
                             f"{backend!r}")
        self.backend = available_backend() if backend == "auto" else (None if backend == "none" else backend)
        self.seed = seed
        self.model: Any = None
        self.samples = 0

    @property
    def trained(self) -> bool:
        return self.model is not None

    def fit(self, features: Sequence[Sequence[float]], costs: Sequence[float]) -> bool:
        """Fit on all the data (True when a model was trained)."""
        self.samples = len(costs)
        if self.backend is None or len(costs) < MIN_SAMPLES or len(set(costs)) < 2:
            self.model = None
            return False
        import numpy as np

        x, y = np.asarray(features, dtype=np.float64), np.asarray(costs, dtype=np.float64)
        model = self._new_model(len(costs))
        model.fit(x, y)
        self.model = model
        return True

    def _new_model(self, n: int) -> Any:
        return _LightGBM(self.seed) if self.backend == "lightgbm" else _sklearn_model(n, self.seed)

    def predict(self, features: Sequence[Sequence[float]]) -> list[float] | None:
        """Predicted costs (lower is faster), or None when no model is trained."""
        if self.model is None or not features:
            return None
        import numpy as np

        return [float(v) for v in self.model.predict(np.asarray(features, dtype=np.float64))]


class _LightGBM:
    """LightGBM's own training API (its scikit-learn wrapper needs scikit-learn installed)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.booster: Any = None

    def fit(self, x: Any, y: Any) -> None:
        import lightgbm  # pyright: ignore[reportMissingImports]

        params = {"objective": "regression", "learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 2,
                  "min_data_in_bin": 1, "bagging_fraction": 0.9, "bagging_freq": 1, "seed": self.seed,
                  "num_threads": 1, "verbose": -1}
        data = lightgbm.Dataset(x, y, params={"verbose": -1})
        self.booster = lightgbm.train(params, data, num_boost_round=100)

    def predict(self, x: Any) -> Any:
        return self.booster.predict(x)


def _sklearn_model(n: int, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor  # pyright: ignore[reportMissingImports]

    return HistGradientBoostingRegressor(max_iter=100, learning_rate=0.1, max_leaf_nodes=15,
                                         min_samples_leaf=max(2, n // 20), random_state=seed)
