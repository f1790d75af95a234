"""Report figures of every Argus system as PNG: RPS audit, remedy evaluation, bias, coverage.

Every function takes plain numpy arrays (or plain mappings of numbers), writes one PNG and returns
its path. Matplotlib is imported inside the functions and figures are drawn on an Agg canvas without
pyplot, so calling them neither changes the user's backend nor leaves figures open, and importing
this package does not import matplotlib. The same inputs give the same bytes.

One module per system, all drawing with the shared plumbing of :mod:`~argus_ir.plots.style`:
:mod:`~argus_ir.plots.audit` (RPS histogram, share against N and k, calibration; paper Figs. 3, 5
and 7) and :mod:`~argus_ir.plots.projection` (the LDA projection, Fig. 2, whose discriminant fit is
in :mod:`~argus_ir.plots.lda`), :mod:`~argus_ir.plots.evaluate` (remedy evaluation),
:mod:`~argus_ir.plots.bias` (ColDeR bias audit) and :mod:`~argus_ir.plots.coverage` (semantic
coverage). Each name is re-exported here, so ``plots.rps_histogram(...)`` keeps working.

Example:
    >>> import numpy as np
    >>> from argus_ir import plots
    >>> rps = np.random.default_rng(0).uniform(size=500)
    >>> plots.rps_histogram({10: rps}, "out/rps_histogram.png")  # doctest: +SKIP
"""

from __future__ import annotations

from argus_ir.plots.audit import (
    BAND_EDGES,
    calibration,
    fraction_vs_k,
    fraction_vs_n,
    rps_bands,
    rps_histogram,
)
from argus_ir.plots.bias import bias_chart
from argus_ir.plots.coverage import coverage_bars, strata_boxplot
from argus_ir.plots.evaluate import Delta, ablation_chart, delta_chart
from argus_ir.plots.lda import lda_fit
from argus_ir.plots.projection import lda_projection
from argus_ir.plots.style import DPI

__all__ = [
    "BAND_EDGES",
    "DPI",
    "Delta",
    "ablation_chart",
    "bias_chart",
    "calibration",
    "coverage_bars",
    "delta_chart",
    "fraction_vs_k",
    "fraction_vs_n",
    "lda_fit",
    "lda_projection",
    "rps_bands",
    "rps_histogram",
    "strata_boxplot",
]
