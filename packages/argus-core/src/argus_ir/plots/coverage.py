"""The semantic coverage report's figures: scores per stratum, and where corpus and queries lie.

:func:`strata_boxplot` draws a per-query metric per semantic stratum and retriever;
:func:`coverage_bars` each stratum's share of the documents against its share of the queries.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.plots.style import SERIES_COLOURS, new_figure, save_png

__all__ = ["coverage_bars", "strata_boxplot"]


def strata_boxplot(
    groups: Mapping[str, Mapping[str, Sequence[float]]],
    overall: Mapping[str, float],
    path: str | os.PathLike[str],
    *,
    metric: str = "nDCG@10",
) -> Path:
    """Per-stratum distributions of a per-query metric, one box per retriever in each stratum.

    Args:
        groups: ``{retriever: {stratum label: per-query values}}``; strata in the first
            retriever's order.
        overall: Each retriever's overall (micro) mean, drawn as a dashed line.
        path: Output PNG path.
        metric: Axis label.

    Raises:
        ArgusInputError: No values.
    """
    names = list(groups)
    strata = list(dict.fromkeys(s for g in groups.values() for s in g))
    if not names or not strata:
        raise ArgusInputError("strata_boxplot needs at least one stratum with scores")
    fig = new_figure(max(7.0, 0.55 * len(strata) * max(1, len(names)) / 1.5), 4.2)
    ax = fig.add_subplot()
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        data = [list(groups[name].get(s, [])) or [np.nan] for s in strata]
        pos = np.arange(len(strata)) + (j - (len(names) - 1) / 2) * width
        colour = SERIES_COLOURS[j % 7]
        ax.boxplot(
            data,
            positions=pos,
            widths=width * 0.85,
            patch_artist=True,
            boxprops={"facecolor": colour, "alpha": 0.55},
            medianprops={"color": "black"},
            flierprops={"markersize": 2},
        )
        if name in overall:
            ax.axhline(overall[name], color=colour, linestyle="--", linewidth=0.9)
        ax.plot([], [], "s", color=colour, label=f"{name} (dashed: overall mean)")
    ax.set_xticks(np.arange(len(strata)), labels=strata, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(f"{metric} per query")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.set_title(f"{metric} by semantic stratum", fontsize=10, pad=22)
    fig.tight_layout()
    return save_png(fig, path)


def coverage_bars(
    labels: Sequence[str],
    documents: Sequence[float],
    queries: Sequence[float],
    path: str | os.PathLike[str],
) -> Path:
    """Each stratum's share of the corpus's documents against its share of the queries.

    Raises:
        ArgusInputError: No strata, or lengths that differ.
    """
    if not labels or not (len(labels) == len(documents) == len(queries)):
        raise ArgusInputError("coverage_bars needs one document and one query value per stratum")
    d = np.asarray(documents, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    d = d / d.sum() if d.sum() else d
    q = q / q.sum() if q.sum() else q
    fig = new_figure(7.0, 1.4 + 0.28 * len(labels))
    ax = fig.add_subplot()
    y = np.arange(len(labels))[::-1].astype(np.float64)
    ax.barh(y + 0.2, d, height=0.4, color=SERIES_COLOURS[0], label="documents")
    ax.barh(y - 0.2, q, height=0.4, color=SERIES_COLOURS[1], label="queries")
    ax.set_yticks(y, labels=labels, fontsize=7)
    ax.set_xlabel("share")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    ax.set_title("Where the corpus is and where the queries look", fontsize=10, pad=22)
    fig.tight_layout()
    return save_png(fig, path)
