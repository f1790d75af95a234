"""Gradient-boosted tree probe with XGBoost (App. C.1, tree family).

Squared-error regression with the ``hist`` tree method on all cores, early-stopped on validation
RMSE; the booster is cut to its best iteration before it is kept, so saving and predicting need no
separate ``best_iteration``. Saved in XGBoost's own JSON model format (``xgboost.json``). Needs the
``[xgboost]`` extra, to train and to predict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from argus_ir._optional import require
from argus_ir.probes.base import ProbeModel, as_matrix, check_labels

__all__ = ["XGBoostProbe"]

_FILE = "xgboost.json"


def _n_cores() -> int:
    # The cores this process may run on (a container's limit), not the machine's count.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class XGBoostProbe(ProbeModel):
    """Boosted regression trees predicting RPS, clipped to [0, 1].

    Args:
        n_estimators: Most boosting rounds.
        max_depth: Tree depth.
        learning_rate: Shrinkage ``eta``.
        subsample: Row fraction per tree.
        colsample_bytree: Column fraction per tree.
        min_child_weight: Least hessian mass in a leaf.
        reg_lambda: L2 penalty on leaf weights.
        early_stopping_rounds: Stop after this many rounds without a better validation RMSE.
        seed: Random seed of row and column sampling.

    Example:
        >>> import numpy as np
        >>> from argus_ir.probes import XGBoostProbe
        >>> X = np.random.default_rng(0).normal(size=(200, 4))
        >>> y = (X[:, 0] > 0).astype(float)
        >>> probe = XGBoostProbe(n_estimators=50).fit(X[:150], y[:150], X[150:], y[150:])
        >>> probe.predict(X[150:]).shape
        (50,)
    """

    family: ClassVar[str] = "xgboost"
    defaults: ClassVar[Mapping[str, Any]] = {
        "n_estimators": 600,
        "max_depth": 6,
        "learning_rate": 0.05,
        "subsample": 0.9,
        "colsample_bytree": 0.9,
        "min_child_weight": 1.0,
        "reg_lambda": 1.0,
        "early_stopping_rounds": 50,
        "seed": 0,
    }
    files: ClassVar[tuple[str, ...]] = (_FILE,)
    requires: ClassVar[str | None] = "xgboost"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.booster: Any = None

    @property
    def n_features(self) -> int:
        if self.booster is None:
            raise RuntimeError("the xgboost probe is not fitted")
        return int(self.booster.num_features())

    def _train_params(self) -> dict[str, Any]:
        p = self._params
        return {
            "objective": "reg:squarederror",
            "eval_metric": "rmse",
            "tree_method": "hist",
            "max_depth": int(p["max_depth"]),
            "eta": float(p["learning_rate"]),
            "subsample": float(p["subsample"]),
            "colsample_bytree": float(p["colsample_bytree"]),
            "min_child_weight": float(p["min_child_weight"]),
            "lambda": float(p["reg_lambda"]),
            "seed": int(p["seed"]),
            "nthread": _n_cores(),
            "verbosity": 0,
        }

    def fit(
        self, Xtr: np.ndarray, ytr: np.ndarray, Xval: np.ndarray, yval: np.ndarray
    ) -> XGBoostProbe:
        """Boost on the train split, early-stopping on validation RMSE."""
        xgb = require("xgboost")
        Xtr = as_matrix(Xtr, "Xtr")
        Xval = as_matrix(Xval, "Xval")
        dtrain = xgb.DMatrix(Xtr, label=check_labels(ytr, Xtr.shape[0], "ytr"))
        dval = xgb.DMatrix(Xval, label=check_labels(yval, Xval.shape[0], "yval"))
        booster = xgb.train(
            self._train_params(),
            dtrain,
            num_boost_round=int(self._params["n_estimators"]),
            evals=[(dval, "val")],
            early_stopping_rounds=int(self._params["early_stopping_rounds"]),
            verbose_eval=False,
        )
        best = int(booster.best_iteration)
        self.booster = booster[: best + 1]
        self.fit_info = {"best_iteration": best, "n_trees": best + 1}
        return self

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        xgb = require("xgboost")
        return self.booster.predict(xgb.DMatrix(X))

    def save(self, directory: str | Path) -> list[str]:
        """Write ``xgboost.json`` (XGBoost's JSON model format)."""
        if self.booster is None:
            raise RuntimeError("cannot save an unfitted xgboost probe")
        self.booster.save_model(str(Path(directory) / _FILE))
        return [_FILE]

    @classmethod
    def load(cls, directory: str | Path, params: Mapping[str, Any]) -> XGBoostProbe:
        """Read ``xgboost.json``."""
        xgb = require("xgboost")
        model = cls(**params)
        booster = xgb.Booster()
        booster.load_model(str(Path(directory) / _FILE))
        booster.set_param({"nthread": _n_cores()})
        model.booster = booster
        return model
