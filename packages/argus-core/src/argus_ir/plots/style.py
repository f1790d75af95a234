"""What every report figure shares: the Agg figure, the PNG writer, colours, markers and ticks.

Matplotlib is imported inside the functions and figures are drawn on an Agg canvas without pyplot,
so drawing neither changes the user's backend nor leaves figures open, and importing this module
does not import matplotlib. Colours follow the paper and stay readable with colour-vision
deficiencies: low RPS is vermillion, mid is grey, high is blue; line series use the Okabe-Ito
palette with distinct markers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from argus_ir.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "BAND_COLOURS",
    "BAND_NAMES",
    "DPI",
    "LINESTYLES",
    "MARKERS",
    "SERIES_COLOURS",
    "integer_ticks",
    "new_figure",
    "save_png",
    "series_style",
]

DPI = 120
BAND_NAMES = ("low", "mid", "high")
BAND_COLOURS = ("#D55E00", "#8C8C8C", "#0072B2")  # vermillion, grey, blue
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
LINESTYLES = ("-", "--", "-.", ":")


def new_figure(width: float, height: float) -> Figure:
    """A pyplot-free figure on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` to ``path`` as PNG (atomically, without a software stamp); return the path."""
    target = Path(path)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return target


def series_style(i: int) -> dict[str, Any]:
    """Colour, marker and line style of the ``i``-th line series."""
    return {
        "color": SERIES_COLOURS[i % len(SERIES_COLOURS)],
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
    }


def integer_ticks(ax: Axes, x: np.ndarray) -> None:
    """Label exactly the measured x values (when there are few enough to read)."""
    from matplotlib.ticker import NullFormatter, NullLocator

    if x.size <= 12:
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(x, labels=[f"{v:g}" for v in x])
