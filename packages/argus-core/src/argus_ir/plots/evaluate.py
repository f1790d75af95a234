"""The remedy evaluation's figures (paper §6-7): what each condition and each ablation changes.

:func:`delta_chart` draws each condition's change of a retrieval metric against the original index
with its 95% interval; :func:`ablation_chart` one panel per swept setting with the change and the
index growth per value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.plots.style import SERIES_COLOURS, integer_ticks, new_figure, save_png, series_style

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Delta", "ablation_chart", "delta_chart"]

# (label, delta, half width of the 95% interval)
Delta = tuple[str, float, float]


def _delta_interval(ax: Axes, y: np.ndarray, rows: Sequence[Delta], colour: str) -> None:
    deltas = np.array([d for _, d, _ in rows], dtype=np.float64)
    half = np.array([h for _, _, h in rows], dtype=np.float64)
    ax.errorbar(
        deltas, y, xerr=np.nan_to_num(half), fmt="o", color=colour, ecolor=colour, capsize=3
    )


def delta_chart(
    deltas: Mapping[str, Sequence[Delta]],
    path: str | os.PathLike[str],
    *,
    metric: str = "nDCG@10",
    title: str | None = None,
) -> Path:
    """Each condition's change of ``metric`` against the original index, with 95% intervals.

    One row per (group, condition); a vertical line marks no change. Intervals come from the
    paired test over queries, so a row whose interval crosses zero is not a significant change.

    Args:
        deltas: ``{group (e.g. dataset): [(condition, delta, half-width), ...]}``; deltas in the
            metric's units (0.01 = one point).
        path: Output PNG path.
        metric: Axis label.
        title: Figure title.

    Raises:
        ArgusInputError: No rows, or a non-finite delta.
    """
    rows = [(g, r) for g, group in deltas.items() for r in group]
    if not rows:
        raise ArgusInputError("delta_chart needs at least one condition")
    if not all(np.isfinite(r[1]) for _, r in rows):
        raise ArgusInputError("delta_chart: every delta must be finite")
    fig = new_figure(7.0, 1.2 + 0.32 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1].astype(np.float64)
    start = 0
    for i, (group, group_rows) in enumerate(deltas.items()):
        n = len(group_rows)
        _delta_interval(ax, y[start : start + n], group_rows, SERIES_COLOURS[i % 7])
        ax.plot([], [], "o", color=SERIES_COLOURS[i % 7], label=group)
        start += n
    from matplotlib.ticker import MaxNLocator

    ax.set_yticks(y, labels=[r[0] for _, r in rows], fontsize=8)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(6))
    ax.set_xlabel(f"Δ {metric} against the original index (95% interval)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.set_title(title or f"What each condition changes: {metric}", fontsize=10, pad=22)
    fig.tight_layout()
    return save_png(fig, path)


def ablation_chart(
    sweeps: Mapping[str, Mapping[str, Sequence[tuple[float, float, float, float]]]],
    path: str | os.PathLike[str],
    *,
    metric: str = "nDCG@10",
    title: str | None = None,
) -> Path:
    """One panel per swept setting: Δ ``metric`` (with 95% interval) and index growth per value.

    Args:
        sweeps: ``{setting: {group: [(value, delta, half-width, index growth), ...]}}``; ``value``
            is numeric (plot a switch such as the context check as 0 = off, 1 = on).
        path: Output PNG path.
        metric: Axis label.
        title: Figure title.

    Raises:
        ArgusInputError: No sweep, or a sweep without points.
    """
    if not sweeps or not all(any(pts for pts in g.values()) for g in sweeps.values()):
        raise ArgusInputError("ablation_chart needs at least one setting with points")
    fig = new_figure(4.2 * len(sweeps), 4.6)
    axes = fig.subplots(2, len(sweeps), squeeze=False, sharex="col", height_ratios=(2.2, 1))
    for col, (setting, groups) in enumerate(sweeps.items()):
        top, bottom = axes[0][col], axes[1][col]
        for i, (group, points) in enumerate(groups.items()):
            pts = sorted(points)
            x = np.array([p[0] for p in pts], dtype=np.float64)
            style = series_style(i)
            top.errorbar(
                x,
                [p[1] for p in pts],
                yerr=np.nan_to_num([p[2] for p in pts]),
                capsize=3,
                label=group,
                **style,
            )
            bottom.plot(x, [p[3] for p in pts], **style)
            integer_ticks(bottom, x)
        top.axhline(0.0, color="black", linewidth=0.8)
        top.set_title(setting, fontsize=10)
        bottom.set_xlabel(setting)
        if col == 0:
            top.set_ylabel(f"Δ {metric}")
            bottom.set_ylabel("index growth")
            top.legend(fontsize=8, frameon=False)
    fig.suptitle(title or f"Ablations: Δ {metric} against the original index", fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)
