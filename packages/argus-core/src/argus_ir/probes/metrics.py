"""How well a probe predicts RPS: the regression and semi-classification metrics of Tables 1 and 3.

Regression: RMSE, MAE, Pearson ``r`` and Spearman ``rho``. Semi-classification: both the empirical and
the predicted RPS are cut into three bands (§4.2) and compared as class labels:

- ``low``  = ``[0, 0.33)``
- ``mid``  = ``[0.33, 0.66)``
- ``high`` = ``[0.66, 1]``

Macro averages run over the bands that occur in the truth or in the prediction (what scikit-learn
does with its default ``labels``); weighted averages weight each band by its count in the truth.
Everything is plain numpy, so the metrics need no scikit-learn.

Example:
    >>> import numpy as np
    >>> from argus_ir.probes.metrics import all_metrics
    >>> m = all_metrics(np.array([0.1, 0.5, 0.9]), np.array([0.2, 0.4, 0.8]))
    >>> round(m["accuracy"], 3), round(m["mae"], 3)
    (1.0, 0.1)
"""

from __future__ import annotations

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = [
    "BAND_EDGES",
    "BAND_NAMES",
    "all_metrics",
    "baselines",
    "classification_metrics",
    "regression_metrics",
    "tercile_bands",
]

BAND_EDGES = (0.33, 0.66)
"""Lower edges of the ``mid`` and ``high`` bands (paper §4.2)."""

BAND_NAMES = ("low", "mid", "high")


def _pair(y: np.ndarray, yhat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64)
    yhat = np.asarray(yhat, dtype=np.float64)
    if y.ndim != 1 or yhat.ndim != 1:
        raise ArgusInputError(
            f"y and yhat must be 1-D vectors, got shapes {y.shape} and {yhat.shape}"
        )
    if y.size != yhat.size:
        raise ArgusInputError(f"y has {y.size} values but yhat has {yhat.size}")
    if y.size == 0:
        raise ArgusInputError("y and yhat are empty")
    if not (np.isfinite(y).all() and np.isfinite(yhat).all()):
        raise ArgusInputError("y and yhat must be finite (no NaN or inf)")
    return y, yhat


def _ranks(x: np.ndarray) -> np.ndarray:
    # scipy.stats.rankdata's "average" method, imported only when asked for (scipy.stats takes
    # most of a second to import)
    from scipy.stats import rankdata

    return np.asarray(rankdata(x), dtype=np.float64)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    # A constant vector has no defined correlation; 0.0 (no linear association) keeps tables
    # numeric, which is how the paper reports its constant All-Zero / All-One baselines.
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    ac = a - a.mean()
    bc = b - b.mean()
    denom = np.sqrt(np.dot(ac, ac) * np.dot(bc, bc))
    if denom == 0 or not np.isfinite(denom):
        return 0.0
    return float(np.clip(np.dot(ac, bc) / denom, -1.0, 1.0))


def regression_metrics(y: np.ndarray, yhat: np.ndarray) -> dict[str, float]:
    """RMSE, MAE, Pearson and Spearman correlation of predictions against labels.

    Args:
        y: Empirical RPS per entity.
        yhat: Predicted RPS per entity (same length).

    Returns:
        ``{"rmse", "mae", "pearson", "spearman"}``. A correlation is 0.0 (and no warning is raised)
        when either vector is constant or has a single value.

    Raises:
        ArgusInputError: Vectors are not 1-D, differ in length, are empty or not finite.
    """
    y, yhat = _pair(y, yhat)
    err = yhat - y
    return {
        "rmse": float(np.sqrt(np.mean(err * err))),
        "mae": float(np.mean(np.abs(err))),
        "pearson": _correlation(y, yhat),
        "spearman": _correlation(_ranks(y), _ranks(yhat)),
    }


def tercile_bands(y: np.ndarray) -> np.ndarray:
    """Band index per value: 0 = low ``[0, 0.33)``, 1 = mid ``[0.33, 0.66)``, 2 = high ``[0.66, 1]``.

    Values below 0 count as low and values above 1 as high (an unclipped regressor may stray).

    Args:
        y: RPS values.

    Returns:
        Integer array of the same shape as ``y``.

    Raises:
        ArgusInputError: ``y`` holds NaN or inf.
    """
    y = np.asarray(y, dtype=np.float64)
    if not np.isfinite(y).all():
        raise ArgusInputError("cannot band non-finite RPS values")
    return np.digitize(y, BAND_EDGES).astype(np.int64)


def classification_metrics(y: np.ndarray, yhat: np.ndarray) -> dict[str, float]:
    """Semi-classification metrics over the three RPS bands.

    Per band ``c``: precision = TP / predicted-as-``c``, recall = TP / truly-``c``, F1 their harmonic
    mean, each 0.0 when its denominator is 0. Macro averages run over the bands present in the
    truth or the prediction; weighted averages weight each band by its support in the truth.

    Args:
        y: Empirical RPS per entity.
        yhat: Predicted RPS per entity.

    Returns:
        ``{"accuracy", "macro_f1", "macro_precision", "macro_recall", "weighted_precision",
        "weighted_f1"}``.

    Raises:
        ArgusInputError: Vectors are not 1-D, differ in length, are empty or not finite.
    """
    y, yhat = _pair(y, yhat)
    t, p = tercile_bands(y), tercile_bands(yhat)
    n_bands = len(BAND_NAMES)
    confusion = np.zeros((n_bands, n_bands), dtype=np.int64)
    np.add.at(confusion, (t, p), 1)
    tp = np.diag(confusion).astype(np.float64)
    support = confusion.sum(axis=1).astype(np.float64)
    predicted = confusion.sum(axis=0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(support > 0, tp / support, 0.0)
        f1_denom = support + predicted  # 2TP + FP + FN
        f1 = np.where(f1_denom > 0, 2 * tp / f1_denom, 0.0)
    present = (support > 0) | (predicted > 0)
    weights = support / support.sum()
    return {
        "accuracy": float(tp.sum() / t.size),
        "macro_f1": float(f1[present].mean()),
        "macro_precision": float(precision[present].mean()),
        "macro_recall": float(recall[present].mean()),
        "weighted_precision": float(np.dot(weights, precision)),
        "weighted_f1": float(np.dot(weights, f1)),
    }


def all_metrics(y: np.ndarray, yhat: np.ndarray) -> dict[str, float]:
    """Regression and semi-classification metrics together (one row of Table 1), plus ``n``.

    Args:
        y: Empirical RPS per entity.
        yhat: Predicted RPS per entity.

    Returns:
        The union of :func:`regression_metrics` and :func:`classification_metrics`, and ``"n"``
        (the number of entities, as a float so the dict stays ``str -> float``).
    """
    out = regression_metrics(y, yhat)
    out.update(classification_metrics(y, yhat))
    out["n"] = float(np.asarray(y).size)
    return out


def baselines(y: np.ndarray) -> dict[str, dict[str, float]]:
    """Metrics of the trivial constant predictors of Table 3.

    Args:
        y: Empirical RPS per entity.

    Returns:
        ``{"all_zero": metrics, "all_one": metrics}`` where each is :func:`all_metrics` of the
        constant prediction 0.0 or 1.0.
    """
    y = np.asarray(y, dtype=np.float64)
    return {
        "all_zero": all_metrics(y, np.zeros_like(y)),
        "all_one": all_metrics(y, np.ones_like(y)),
    }
