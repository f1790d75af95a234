"""The hyperparameter sweep of App. C.1, sized for a CPU.

The paper's grids:

- Ridge: ``alpha`` in ``1e-6 .. 1e3`` (log-spaced), features raw or standardised.
- XGBoost: trees {300, 600, 1000} x depth {4, 6, 8} x eta {0.03, 0.05, 0.1} x subsample
  {0.7, 0.9, 1.0} x column subsample {0.7, 0.9, 1.0} x min child weight {1, 5, 10} x lambda
  {0, 1, 10}, early-stopped on validation RMSE.
- MLP: width {256, 512, 1024} x depth {1, 2, 3} x dropout {0, 0.1, 0.2} x lr {1e-4, 3e-4, 1e-3} x
  batch {256, 512, 1024}, patience 10.

A ``budget`` decides how much of it runs. Ridge always runs its full grid (one eigendecomposition per
feature scaling serves every alpha). XGBoost and MLP run a seeded random subset: ``"cpu"`` (default)
draws 8 XGBoost and 6 MLP configurations, each list starting with a middle-of-the-grid anchor;
``"full"`` runs the whole grid (2,187 XGBoost and 243 MLP fits); ``"tiny"`` (tests and the demo) draws
2 of each from small grids with few trees and epochs, sized for a few hundred entities.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus_ir._optional import is_available, require
from argus_ir.errors import ArgusInputError
from argus_ir.probes.base import FAMILIES, ProbeModel
from argus_ir.probes.families import model_class

__all__ = [
    "BUDGETS",
    "MLP_GRID",
    "RIDGE_ALPHAS",
    "XGBOOST_GRID",
    "SweepConfig",
    "SweepRow",
    "resolve_families",
    "run_sweep",
    "sweep_configs",
]

logger = logging.getLogger(__name__)

RIDGE_ALPHAS = tuple(10.0**e for e in range(-6, 4))

XGBOOST_GRID: Mapping[str, tuple[Any, ...]] = {
    "n_estimators": (300, 600, 1000),
    "max_depth": (4, 6, 8),
    "learning_rate": (0.03, 0.05, 0.1),
    "subsample": (0.7, 0.9, 1.0),
    "colsample_bytree": (0.7, 0.9, 1.0),
    "min_child_weight": (1, 5, 10),
    "reg_lambda": (0.0, 1.0, 10.0),
}

MLP_GRID: Mapping[str, tuple[Any, ...]] = {
    "hidden": (256, 512, 1024),
    "depth": (1, 2, 3),
    "dropout": (0.0, 0.1, 0.2),
    "lr": (1e-4, 3e-4, 1e-3),
    "batch_size": (256, 512, 1024),
}

# Small data, few rounds: enough to find a signal in a few hundred entities within seconds.
_TINY_XGBOOST_GRID: Mapping[str, tuple[Any, ...]] = {
    "n_estimators": (150,),
    "max_depth": (3, 4),
    "learning_rate": (0.1,),
    "subsample": (0.9, 1.0),
    "colsample_bytree": (0.9, 1.0),
    "min_child_weight": (1,),
    "reg_lambda": (1.0,),
}
_TINY_MLP_GRID: Mapping[str, tuple[Any, ...]] = {
    "hidden": (64, 128),
    "depth": (1, 2),
    "dropout": (0.0, 0.1),
    "lr": (3e-3,),
    "batch_size": (64,),
}

_ANCHORS: Mapping[str, Mapping[str, Any]] = {
    "xgboost": {
        "n_estimators": 600,
        "max_depth": 6,
        "learning_rate": 0.05,
        "subsample": 0.9,
        "colsample_bytree": 0.9,
        "min_child_weight": 1,
        "reg_lambda": 1.0,
    },
    "mlp": {"hidden": 512, "depth": 2, "dropout": 0.1, "lr": 1e-3, "batch_size": 256},
}


@dataclass(frozen=True)
class _Budget:
    xgboost: int | None  # configurations drawn; None = the whole grid
    mlp: int | None
    small: bool  # use the tiny grids
    extra: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


BUDGETS: Mapping[str, _Budget] = {
    "tiny": _Budget(
        xgboost=2,
        mlp=2,
        small=True,
        extra={"xgboost": {"early_stopping_rounds": 20}, "mlp": {"max_epochs": 60}},
    ),
    "cpu": _Budget(xgboost=8, mlp=6, small=False),
    "full": _Budget(xgboost=None, mlp=None, small=False),
}


@dataclass(frozen=True)
class SweepConfig:
    """One point of the sweep.

    Attributes:
        family: Probe family (``"ridge"``, ``"xgboost"`` or ``"mlp"``).
        params: Hyperparameters passed to the family's constructor.
    """

    family: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class SweepRow:
    """Outcome of one configuration (one row of the full sweep table).

    Attributes:
        family: Probe family.
        params: Hyperparameters (defaults filled in).
        val_rmse: RMSE of the clipped predictions on the validation split.
        seconds: Wall time of the fit.
        fit_info: What the fit reported (e.g. XGBoost's best iteration, the MLP's best epoch).
    """

    family: str
    params: Mapping[str, Any]
    val_rmse: float
    seconds: float
    fit_info: Mapping[str, Any] = field(default_factory=dict)


def resolve_families(families: Sequence[str] | None) -> tuple[str, ...]:
    """The families to sweep, in Table-3 order.

    Args:
        families: Names to sweep, or None for every family whose extra is installed (the others
            are skipped with a logged warning).

    Returns:
        Distinct family names.

    Raises:
        ArgusInputError: An unknown family name, or an empty selection.
        MissingExtraError: A family named explicitly needs an extra that is not installed.
    """
    if families is None:
        chosen = []
        for name in FAMILIES:
            needs = model_class(name).requires
            if needs is not None and not is_available(needs):
                logger.warning("skipping %s probes: %r is not installed", name, needs)
                continue
            chosen.append(name)
        return tuple(chosen)
    if isinstance(families, str):
        families = [families]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ArgusInputError(f"unknown probe families {unknown}; choose from {list(FAMILIES)}")
    if not families:
        raise ArgusInputError(f"no probe family selected; choose from {list(FAMILIES)}")
    for name in families:
        needs = model_class(name).requires
        if needs is not None:
            require(needs)
    return tuple(f for f in FAMILIES if f in families)


def _grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def _draw(
    points: list[dict[str, Any]], n: int | None, anchor: Mapping[str, Any] | None, seed: int
) -> list[dict[str, Any]]:
    if n is None or n >= len(points):
        return points
    rng = np.random.default_rng(seed)
    first = [p for p in points if anchor is not None and p == dict(anchor)][:1]
    rest = [p for p in points if not first or p != first[0]]
    picks = rng.choice(len(rest), size=n - len(first), replace=False)
    return first + [rest[i] for i in sorted(picks)]


def sweep_configs(
    families: Sequence[str] = FAMILIES, budget: str = "cpu", seed: int = 0
) -> list[SweepConfig]:
    """The configurations a budget runs, Ridge first.

    Args:
        families: Families to include (already resolved; see :func:`resolve_families`).
        budget: ``"tiny"``, ``"cpu"`` or ``"full"``.
        seed: Seeds the random subset and each model.

    Returns:
        One :class:`SweepConfig` per fit.

    Raises:
        ArgusInputError: Unknown budget.
    """
    if budget not in BUDGETS:
        raise ArgusInputError(f"unknown sweep budget {budget!r}; choose from {list(BUDGETS)}")
    plan = BUDGETS[budget]
    configs: list[SweepConfig] = []
    if "ridge" in families:
        configs += [
            SweepConfig("ridge", {"alpha": a, "standardize": s})
            for s in (False, True)
            for a in RIDGE_ALPHAS
        ]
    for name, grid, tiny_grid, n in (
        ("xgboost", XGBOOST_GRID, _TINY_XGBOOST_GRID, plan.xgboost),
        ("mlp", MLP_GRID, _TINY_MLP_GRID, plan.mlp),
    ):
        if name not in families:
            continue
        points = _grid_points(tiny_grid if plan.small else grid)
        anchor = None if plan.small else _ANCHORS[name]
        for point in _draw(points, n, anchor, seed):
            params = {**point, **plan.extra.get(name, {}), "seed": seed}
            configs.append(SweepConfig(name, params))
    return configs


def _val_rmse(model: ProbeModel, X: np.ndarray, y: np.ndarray) -> float:
    err = model.predict(X) - y
    return float(math.sqrt(float(np.mean(err * err))))


def run_sweep(
    configs: Iterable[SweepConfig],
    Xtr: np.ndarray,
    ytr: np.ndarray,
    Xval: np.ndarray,
    yval: np.ndarray,
    *,
    show_progress: bool = True,
) -> tuple[list[SweepRow], dict[str, ProbeModel]]:
    """Fit every configuration and keep the best model of each family by validation RMSE.

    Args:
        configs: What to fit (see :func:`sweep_configs`).
        Xtr: Train embeddings.
        ytr: Train labels.
        Xval: Validation embeddings.
        yval: Validation labels.
        show_progress: Show a tqdm bar over the configurations.

    Returns:
        ``(rows, best)``: one :class:`SweepRow` per configuration in the order fitted, and the
        lowest-validation-RMSE model per family (only those are kept in memory).
    """
    from tqdm.auto import tqdm

    configs = list(configs)
    by_family: dict[str, list[Mapping[str, Any]]] = {}
    for c in configs:
        by_family.setdefault(c.family, []).append(c.params)
    rows: list[SweepRow] = []
    best: dict[str, ProbeModel] = {}
    best_rmse: dict[str, float] = {}
    with tqdm(total=len(configs), desc="probe sweep", disable=not show_progress) as bar:
        for family in (f for f in FAMILIES if f in by_family):
            bar.set_postfix_str(family)
            fits = _timed(model_class(family).fit_grid(by_family[family], Xtr, ytr, Xval, yval))
            for model, seconds in fits:
                rmse = _val_rmse(model, Xval, yval)
                rows.append(SweepRow(family, model.params, rmse, seconds, dict(model.fit_info)))
                if rmse < best_rmse.get(family, math.inf):
                    best[family], best_rmse[family] = model, rmse
                bar.update(1)
    return rows, best


def _timed(models: Iterator[ProbeModel]) -> Iterator[tuple[ProbeModel, float]]:
    start = time.perf_counter()
    for model in models:
        now = time.perf_counter()
        yield model, now - start
        start = time.perf_counter()
