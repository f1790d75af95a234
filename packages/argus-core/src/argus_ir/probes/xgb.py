"""Gradient-boosted tree probe with XGBoost (App. C.1, tree family).

Squared-error regression with the ``hist`` tree method on all cores, early-stopped on validation
RMSE; the booster is cut to its best iteration before it is kept, so saving and predicting need no
separate ``best_iteration``. Saved in XGBoost's own JSON model format (``xgboost.json``). Training
needs the ``[xgboost]`` extra; a saved probe predicts with numpy alone (:class:`Forest`: the same
float32 numbers, added up in the same order, as XGBoost's CPU predictor), since importing xgboost
(with the scikit-learn, pandas and SciPy it pulls in) took 2.2 s of every process's start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from argus_ir._optional import require
from argus_ir.probes.base import ProbeModel, as_matrix, check_labels

__all__ = ["Forest", "XGBoostProbe"]

_FILE = "xgboost.json"


class Forest:
    """An XGBoost regression model read from its JSON format and evaluated with numpy.

    It takes what the probes save: one target, squared-error objective, numerical splits. A node
    sends a row left when its feature is below the split (float32, as XGBoost compares), a missing
    one (NaN) the node's default way; every tree's leaf value is added to ``base_score`` in float32,
    tree by tree in the model's order, as XGBoost's CPU predictor adds them: the predictions are the
    same bits (test: ``test_the_numpy_forest_predicts_what_xgboost_does``).

    Raises:
        ValueError: A model it does not take (another objective, categorical splits, several
            targets or parallel trees): read it with xgboost instead.
    """

    def __init__(self, model: Mapping[str, Any]) -> None:
        learner = model["learner"]
        param = learner["learner_model_param"]
        booster = learner["gradient_booster"]
        trees = booster["model"]["trees"]
        if (
            learner["objective"]["name"] != "reg:squarederror"
            or booster["name"] != "gbtree"
            or param.get("num_target", "1") != "1"
            or param.get("num_class", "0") != "0"
            or booster["model"]["gbtree_model_param"].get("num_parallel_tree", "1") != "1"
            or any(any(t["split_type"]) or t["categories"] for t in trees)
        ):
            raise ValueError("not a single-target squared-error model with numerical splits")
        base = str(param["base_score"]).strip("[]")
        self.base = np.float32(float(base))
        self.n_features = int(param["num_feature"])
        left, right, feature, value, default, roots = [], [], [], [], [], []
        self.depth = 0
        start = 0
        for tree in trees:
            lc = np.asarray(tree["left_children"], dtype=np.int64)
            rc = np.asarray(tree["right_children"], dtype=np.int64)
            leaf = lc < 0
            own = np.arange(len(lc))
            left.append(np.where(leaf, own, lc) + start)  # a leaf leads to itself
            right.append(np.where(leaf, own, rc) + start)
            feature.append(np.asarray(tree["split_indices"], dtype=np.int64))
            value.append(np.asarray(tree["split_conditions"], dtype=np.float32))  # leaf: its value
            default.append(np.asarray(tree["default_left"], dtype=bool))
            depth = np.zeros(len(lc), dtype=np.int64)
            for node in np.flatnonzero(~leaf):  # parents come before their children
                depth[lc[node]] = depth[rc[node]] = depth[node] + 1
            self.depth = max(self.depth, int(depth.max(initial=0)))
            roots.append(start)
            start += len(lc)
        self.left, self.right = np.concatenate(left), np.concatenate(right)
        self.feature, self.value = np.concatenate(feature), np.concatenate(value)
        self.default = np.concatenate(default)
        self.roots = np.asarray(roots, dtype=np.int64)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """float32 predictions for the rows of ``X``."""
        X = np.asarray(X, dtype=np.float32)
        node = np.repeat(self.roots[None, :], len(X), axis=0)  # every row in every tree at once
        rows = np.arange(len(X))[:, None]
        for _ in range(self.depth):
            x = X[rows, self.feature[node]]
            left = x < self.value[node]
            missing = np.isnan(x)
            if missing.any():
                left = np.where(missing, self.default[node], left)
            node = np.where(left, self.left[node], self.right[node])
        leaves = self.value[node]
        out = np.full(len(X), self.base, dtype=np.float32)
        for tree in range(leaves.shape[1]):  # in order, one tree at a time: XGBoost's sum
            out += leaves[:, tree]
        return out


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
    rows_apart: ClassVar[bool] = True  # each row walks the trees alone
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
        self.forest: Forest | None = None  # a loaded probe's trees, read without xgboost
        self._saved: bytes | None = None  # the file the forest was read from

    @property
    def n_features(self) -> int:
        if self.forest is not None:
            return self.forest.n_features
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
        if self.forest is not None:
            return self.forest.predict(X)
        xgb = require("xgboost")
        return self.booster.predict(xgb.DMatrix(X))

    def save(self, directory: str | Path) -> list[str]:
        """Write ``xgboost.json`` (XGBoost's JSON model format)."""
        if self._saved is not None and self.booster is None:
            (Path(directory) / _FILE).write_bytes(self._saved)  # as it was read
            return [_FILE]
        if self.booster is None:
            raise RuntimeError("cannot save an unfitted xgboost probe")
        self.booster.save_model(str(Path(directory) / _FILE))
        return [_FILE]

    @classmethod
    def load(cls, directory: str | Path, params: Mapping[str, Any]) -> XGBoostProbe:
        """Read ``xgboost.json``: with numpy alone (:class:`Forest`) when it is a model the
        probes train, else with xgboost."""
        path = Path(directory) / _FILE
        model = cls(**params)
        data = path.read_bytes()
        parsed = json.loads(data)  # a truncated file stops here (named by the caller)
        try:
            model.forest = Forest(parsed)
            model._saved = data
            return model
        except (ValueError, KeyError, TypeError):  # not one of ours: let xgboost read it
            pass
        xgb = require("xgboost")
        booster = xgb.Booster()
        booster.load_model(str(path))
        booster.set_param({"nthread": _n_cores()})
        model.booster = booster
        return model
