"""The ColDeR bias audit's figure: which document of each pair every retriever prefers.

:func:`bias_chart` draws the paired t statistic per setting and retriever (ColDeR's Fig. 3 view)
with the two-sided 5% critical values.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.plots.style import SERIES_COLOURS, new_figure, save_png

__all__ = ["bias_chart"]


def bias_chart(
    stats: Sequence[tuple[str, str, float, int]],
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
) -> Path:
    """ColDeR's Fig. 3 view: the paired t statistic per setting (rows) and retriever (bars).

    Dashed lines mark the two-sided 5% critical value for the smallest n; a bar beyond them is a
    significant preference for D1 (right) or D2 (left). A setting where a retriever has no
    variation (``t`` not finite) gets no bar.

    Args:
        stats: ``(setting, retriever, t, n)`` rows.
        path: Output PNG path.
        title: Figure title.

    Raises:
        ArgusInputError: No rows.
    """
    if not stats:
        raise ArgusInputError("bias_chart needs at least one statistic")
    from scipy import stats as st

    settings = list(dict.fromkeys(s for s, *_ in stats))
    retrievers = list(dict.fromkeys(r for _, r, *_ in stats))
    value = {(s, r): t for s, r, t, _ in stats}
    fig = new_figure(7.0, 1.4 + 0.55 * len(settings) * max(1, len(retrievers)) / 2)
    ax = fig.add_subplot()
    height = 0.8 / len(retrievers)
    y = np.arange(len(settings))[::-1].astype(np.float64)
    for j, retriever in enumerate(retrievers):
        ts = np.array([value.get((s, retriever), np.nan) for s in settings])
        offset = (len(retrievers) - 1) / 2 - j
        shown = np.isfinite(ts)
        ax.barh(
            y[shown] + offset * height,
            ts[shown],
            height=height * 0.9,
            color=SERIES_COLOURS[j % 7],
            label=retriever,
        )
    n_min = min(n for *_, n in stats)
    crit = float(st.t.ppf(0.975, max(n_min - 1, 1)))
    for x in (-crit, crit):
        ax.axvline(x, color="grey", linestyle="--", linewidth=0.8)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(y, labels=settings, fontsize=8)
    ax.set_xlabel("paired t of score(D1) − score(D2)  (> 0: D1 preferred)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    ax.set_title(title or "Which document each retriever prefers", fontsize=10, pad=22)
    fig.tight_layout()
    return save_png(fig, path)
