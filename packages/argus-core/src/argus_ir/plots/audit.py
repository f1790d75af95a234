"""The RPS audit's figures (paper Fig. 2 inset, Figs. 3, 5 and 7) and the checks of their inputs.

:func:`rps_histogram` shows per-entity RPS per budget k, :func:`fraction_vs_n` and
:func:`fraction_vs_k` the share of entities with RPS above 0.5 against the pool size and the
budget, and :func:`calibration` a probe's predicted against empirical RPS. The RPS bands
(:data:`BAND_EDGES`, :func:`rps_bands`) and the array check live here too, shared with the LDA
projection (:mod:`argus_ir.plots.projection`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.plots.style import (
    BAND_COLOURS,
    integer_ticks,
    new_figure,
    save_png,
    series_style,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "BAND_EDGES",
    "calibration",
    "checked_vector",
    "fraction_vs_k",
    "fraction_vs_n",
    "rps_bands",
    "rps_histogram",
]

BAND_EDGES = (0.33, 0.66)
"""RPS band cut points: low ``[0, 0.33)``, mid ``[0.33, 0.66)``, high ``[0.66, 1]`` (paper §4.1)."""

_TOL = 1e-9  # slack when checking that values lie in [0, 1]


# --------------------------------------------------------------------------- input checks


def checked_vector(name: str, values: object, *, unit: bool) -> np.ndarray:
    """A non-empty, finite 1-D float array; ``unit`` also demands values in [0, 1]."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ArgusInputError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ArgusInputError(f"{name} holds {int((~np.isfinite(arr)).sum())} non-finite values")
    if unit and (arr.min() < -_TOL or arr.max() > 1 + _TOL):
        raise ArgusInputError(
            f"{name} must lie in [0, 1], got values from {arr.min():.4g} to {arr.max():.4g}"
        )
    return arr


def _curves(
    xs: Sequence[int], fractions: Mapping[str, Sequence[float]], axis: str
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Check the x values (positive ints) and one y series per label (in [0, 1], NaN = gap)."""
    x = np.asarray(list(xs), dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ArgusInputError(
            f"{axis} must be a non-empty sequence of positive numbers, got {xs!r}"
        )
    if not fractions:
        raise ArgusInputError("fractions is empty: give at least one series {label: values}")
    series = {}
    for label, values in fractions.items():
        y = np.asarray(list(values), dtype=np.float64)
        if y.shape != x.shape:
            raise ArgusInputError(
                f"series {label!r} has {y.size} values for {x.size} {axis} values"
            )
        finite = y[np.isfinite(y)]
        if finite.size and (finite.min() < -_TOL or finite.max() > 1 + _TOL):
            raise ArgusInputError(f"series {label!r} holds fractions outside [0, 1]")
        series[str(label)] = y
    return x, series


def rps_bands(rps: np.ndarray) -> np.ndarray:
    """Band index per entity: 0 = low, 1 = mid, 2 = high (cut at :data:`BAND_EDGES`)."""
    return np.searchsorted(np.asarray(BAND_EDGES), np.asarray(rps, dtype=np.float64), side="right")


# --------------------------------------------------------------------------- Fig. 2 inset / §4.1


def rps_histogram(
    rps: Mapping[int, np.ndarray] | np.ndarray,
    path: str | os.PathLike[str],
    *,
    title: str = "Per-entity RPS",
    tau: float = 0.3,
) -> Path:
    """Histogram of per-entity RPS, one panel per k, with the flagging threshold ``tau``.

    Bars give the share of entities per 0.05-wide bin (panels share the y axis, so budgets with
    different entity counts compare directly); bars left of ``tau`` are drawn in the low-RPS colour
    and each panel states the share of entities with ``RPS < tau``.

    Args:
        rps: ``{k: per-entity RPS_k}`` or a single array of RPS values.
        path: Output PNG path (parent folders are created).
        title: Figure title.
        tau: Threshold drawn as a dashed line (paper: 0.3).

    Returns:
        ``Path(path)``.

    Raises:
        ArgusInputError: An array is empty, non-finite or outside [0, 1], or no k is given.
    """
    if isinstance(rps, Mapping):
        if not rps:
            raise ArgusInputError("rps is an empty mapping: give {k: per-entity RPS}")
        named = {
            f"k = {k}": checked_vector(f"rps[{k}]", v, unit=True) for k, v in sorted(rps.items())
        }
    else:
        named = {"": checked_vector("rps", rps, unit=True)}
    edges = np.linspace(0.0, 1.0, 21)
    centres = (edges[:-1] + edges[1:]) / 2
    colours = np.where(centres < tau, BAND_COLOURS[0], BAND_COLOURS[2])
    fig = new_figure(6.4, 1.0 + 1.9 * len(named))
    axes = fig.subplots(len(named), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    for ax, (label, values) in zip(axes, named.items()):
        share, _ = np.histogram(values, bins=edges)
        ax.bar(centres, share / values.size, width=edges[1] - edges[0], color=colours, alpha=0.85)
        ax.axvline(tau, color="black", linestyle="--", linewidth=1.0)
        below = float((values < tau).mean())
        text = f"{label}\n" if label else ""
        text += f"{below:.1%} below τ = {tau:g}\nmean {values.mean():.3f}, n = {values.size}"
        ax.text(0.98, 0.92, text, transform=ax.transAxes, ha="right", va="top", fontsize=8)
        ax.set_ylabel("share of entities", fontsize=8)
    top = max(ax.get_ylim()[1] for ax in axes)
    axes[0].set_ylim(0.0, top * 1.3)  # headroom for the panel text
    axes[0].set_xlim(0.0, 1.0)
    axes[-1].set_xlabel(
        "RPS (share of an entity's related-entity queries that rank it in the top k)"
    )
    axes[0].set_title(title)
    fig.tight_layout()
    return save_png(fig, path)


# --------------------------------------------------------------------------- Figs. 3 and 5


def _fraction_plot(
    x: np.ndarray,
    series: dict[str, np.ndarray],
    chance_x: np.ndarray,
    chance_y: np.ndarray,
    *,
    xlabel: str,
    title: str,
    log_x: bool,
) -> Figure:
    fig = new_figure(6.4, 4.2)
    ax = fig.add_subplot()
    if log_x:
        ax.set_xscale("log")
    for i, (label, y) in enumerate(series.items()):
        ax.plot(x, y, label=label, linewidth=1.6, markersize=5, **series_style(i))
    if chance_x.size:
        single = chance_x.size == 1
        ax.plot(
            chance_x,
            chance_y,
            color="#555555",
            linestyle=":" if not single else "none",
            marker="_" if single else None,
            markersize=14,
            linewidth=1.0,
            label="chance RPS (k/N), for scale",
        )
    integer_ticks(ax, x)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of entities with RPS > 0.5")
    ax.set_title(title)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _chance_grid(x: np.ndarray, log_x: bool) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        return np.array([lo])
    return np.geomspace(lo, hi, 200) if log_x else np.linspace(lo, hi, 200)


def fraction_vs_n(
    ns: Sequence[int],
    fractions: Mapping[str, Sequence[float]],
    path: str | os.PathLike[str],
    *,
    k: int,
    chance: bool = True,
    title: str | None = None,
) -> Path:
    """Share of entities with ``RPS_k > 0.5`` against the neutral pool size N (paper Fig. 3).

    A random ranking hits with probability ``k/N`` per query; the dotted ``k/N`` guide shows where
    small pools let chance inflate RPS. The x axis is logarithmic when N spans a factor of 8 or more.

    Args:
        ns: Pool sizes N (candidates per query), one per point.
        fractions: ``{label: share per N}``, e.g. one series per retriever; NaN leaves a gap.
        path: Output PNG path.
        k: The retrieval budget the shares were measured at.
        chance: Draw the ``k/N`` guide.
        title: Figure title (a default names k).

    Returns:
        ``Path(path)``.

    Raises:
        ArgusInputError: Empty or non-positive N, a series of the wrong length or outside [0, 1].
    """
    if k <= 0:
        raise ArgusInputError(f"k must be positive, got {k}")
    x, series = _curves(ns, fractions, "ns")
    log_x = x.max() / x.min() >= 8
    cx = _chance_grid(x, log_x) if chance else np.empty(0)
    fig = _fraction_plot(
        x,
        series,
        cx,
        np.minimum(1.0, k / cx),
        xlabel="neutral pool size N (candidates per query)",
        title=title or f"Share of entities with RPS$_{{{k}}}$ > 0.5 against pool size",
        log_x=log_x,
    )
    return save_png(fig, path)


def fraction_vs_k(
    ks: Sequence[int],
    fractions: Mapping[str, Sequence[float]],
    path: str | os.PathLike[str],
    *,
    n: int,
    chance: bool = True,
    title: str | None = None,
) -> Path:
    """Share of entities with ``RPS_k > 0.5`` against the budget k at a fixed pool size N (Fig. 5).

    Args:
        ks: Budgets k, one per point.
        fractions: ``{label: share per k}``; NaN leaves a gap.
        path: Output PNG path.
        n: The pool size N the shares were measured at.
        chance: Draw the ``k/N`` guide.
        title: Figure title (a default names N).

    Returns:
        ``Path(path)``.

    Raises:
        ArgusInputError: Empty or non-positive k, a series of the wrong length or outside [0, 1].
    """
    if n <= 0:
        raise ArgusInputError(f"n must be positive, got {n}")
    x, series = _curves(ks, fractions, "ks")
    cx = _chance_grid(x, False) if chance else np.empty(0)
    fig = _fraction_plot(
        x,
        series,
        cx,
        np.minimum(1.0, cx / n),
        xlabel="retrieval budget k",
        title=title or f"Share of entities with RPS$_k$ > 0.5 against k (N = {n})",
        log_x=False,
    )
    return save_png(fig, path)


# --------------------------------------------------------------------------- Fig. 7: calibration


def calibration(
    y: np.ndarray,
    yhat: np.ndarray,
    path: str | os.PathLike[str],
    *,
    title: str = "Probe calibration: predicted vs. empirical RPS",
) -> Path:
    """Predicted against empirical RPS as a 2-D density, and the residual histogram (Fig. 7).

    Top: hexagonal-bin counts (log colour scale) of empirical RPS (x) against predicted RPS (y) with
    the diagonal of perfect calibration. Bottom: residuals ``y - yhat`` with their mean and standard
    deviation.

    Args:
        y: Empirical RPS per entity, in [0, 1].
        yhat: Predicted RPS per entity (finite; may stray outside [0, 1] for unclipped regressors).
        path: Output PNG path.
        title: Figure title.

    Returns:
        ``Path(path)``.

    Raises:
        ArgusInputError: Arrays are empty, non-finite, of different lengths, or ``y`` is outside
            [0, 1].
    """
    from matplotlib.ticker import MaxNLocator

    y = checked_vector("y", y, unit=True)
    yhat = checked_vector("yhat", yhat, unit=False)
    if y.shape != yhat.shape:
        raise ArgusInputError(f"y has {y.size} values but yhat has {yhat.size}")
    residual = y - yhat
    rmse = float(np.sqrt(np.mean(residual**2)))
    corr = np.corrcoef(y, yhat)[0, 1] if np.ptp(y) > 0 and np.ptp(yhat) > 0 else float("nan")
    lo = min(0.0, float(yhat.min()))
    hi = max(1.0, float(yhat.max()))

    fig = new_figure(5.6, 7.2)
    grid = fig.add_gridspec(2, 1, height_ratios=(3, 1.4), hspace=0.35)
    ax = fig.add_subplot(grid[0])
    cells = ax.hexbin(
        y, yhat, gridsize=25, extent=(0.0, 1.0, lo, hi), bins="log", mincnt=1, cmap="viridis"
    )
    counts = np.asarray(cells.get_array())
    cells.set_clim(1, max(10.0, float(counts.max()) if counts.size else 10.0))
    fig.colorbar(cells, ax=ax, label="entities per cell (log scale)")
    ax.plot([0, 1], [0, 1], color="#D55E00", linestyle="--", linewidth=1.2, label="y = ŷ")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("empirical RPS")
    ax.set_ylabel("predicted RPS")
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    stats = f"n = {y.size}\nRMSE = {rmse:.3f}\nPearson r = " + (
        "n/a" if np.isnan(corr) else f"{corr:.3f}"
    )
    ax.text(0.98, 0.03, stats, transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
    ax.set_title(title, fontsize=10)

    res_ax = fig.add_subplot(grid[1])
    span = max(float(np.abs(residual).max()), 0.1)
    res_ax.hist(residual, bins=list(np.linspace(-span, span, 41)), color="#0072B2", alpha=0.8)
    mean, std = float(residual.mean()), float(residual.std())
    res_ax.axvline(0.0, color="black", linewidth=0.8)
    res_ax.axvline(mean, color="#D55E00", linestyle="--", linewidth=1.2)
    res_ax.text(
        0.98,
        0.95,
        f"mean = {mean:+.3f}\nstd = {std:.3f}",
        transform=res_ax.transAxes,
        ha="right",
        va="top",
        fontsize=8,
    )
    res_ax.xaxis.set_major_locator(MaxNLocator(7))
    res_ax.set_xlabel("residual: empirical − predicted RPS")
    res_ax.set_ylabel("entities")
    return save_png(fig, path)
