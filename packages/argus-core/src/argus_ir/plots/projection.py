"""The LDA projection figure (paper Fig. 2): entity embeddings in 2-D, coloured by RPS band.

Only the drawing is here; the discriminant fit and the 2-D embedding come from
:mod:`argus_ir.plots.lda`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.plots.audit import BAND_EDGES, checked_vector, rps_bands
from argus_ir.plots.lda import embed_2d
from argus_ir.plots.style import BAND_COLOURS, BAND_NAMES, new_figure, save_png

__all__ = ["lda_projection"]


def lda_projection(
    X: np.ndarray,
    rps: np.ndarray,
    path: str | os.PathLike[str],
    *,
    title: str = "LDA of RPS terciles",
    shrinkage: float | str = "auto",
    max_points: int = 5000,
    seed: int = 0,
) -> Path:
    """Scatter of entity embeddings in 2-D LDA space, coloured by RPS band (paper Fig. 2).

    LDA is fitted on all entities with the bands low ``[0, 0.33)``, mid ``[0.33, 0.66)`` and high
    ``[0.66, 1]`` as classes; at most ``max_points`` (a seeded sample) are drawn, in random order so
    no band hides another. LD1 is oriented so high-RPS entities lie to the right. A top strip shows
    each band's density along LD1. With fewer than three bands present the plot falls back to one
    LDA axis plus a principal axis, or to PCA, and the title says so.

    Fitted on the points it shows, LDA overstates separation when entities are few relative to
    the dimension; the subtitle warns below five entities per dimension.

    Args:
        X: ``(n_entities, dim)`` entity embeddings.
        rps: Per-entity RPS in [0, 1].
        path: Output PNG path.
        title: Figure title.
        shrinkage: Passed to :func:`lda_fit`.
        max_points: Most points drawn.
        seed: Seed of the subsample and the drawing order.

    Returns:
        ``Path(path)``.

    Raises:
        ArgusInputError: Shapes disagree or values are not finite / outside [0, 1].
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ArgusInputError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    r = checked_vector("rps", rps, unit=True)
    if r.size != X.shape[0]:
        raise ArgusInputError(f"rps has {r.size} values for {X.shape[0]} embeddings")
    if not np.all(np.isfinite(X)):
        raise ArgusInputError("X holds non-finite values")
    bands = rps_bands(r)
    coords, (xname, yname), method = embed_2d(X, bands, shrinkage)
    if (bands == 2).any() and (bands == 0).any():
        gap = coords[bands == 2, 0].mean() - coords[bands == 0, 0].mean()
    else:
        gap = np.corrcoef(coords[:, 0], r)[0, 1] if np.ptp(coords[:, 0]) and np.ptp(r) else 1.0
    if gap < 0:
        coords[:, 0] *= -1

    rng = np.random.default_rng(seed)
    order = rng.permutation(r.size)[: max(1, max_points)]
    lo, hi = coords[:, 0].min(), coords[:, 0].max()
    pad = 0.05 * (hi - lo) if hi > lo else 1.0

    fig = new_figure(6.4, 6.4)
    grid = fig.add_gridspec(2, 1, height_ratios=(1, 4), hspace=0.05)
    top = fig.add_subplot(grid[0])
    ax = fig.add_subplot(grid[1], sharex=top)
    edges = np.linspace(lo - pad, hi + pad, 41)
    for b, (name, colour) in enumerate(zip(BAND_NAMES, BAND_COLOURS)):
        sel = bands == b
        if sel.any():
            top.hist(coords[sel, 0], bins=list(edges), density=True, histtype="step", color=colour)
        lo_edge = 0.0 if b == 0 else BAND_EDGES[b - 1]
        hi_edge = f"{BAND_EDGES[b]:g})" if b < 2 else "1]"
        ax.scatter(
            [],
            [],
            color=colour,
            s=18,
            label=f"{name} [{lo_edge:g}, {hi_edge}: n = {int(sel.sum())}",
        )
    colours = np.array(BAND_COLOURS)[bands[order]]
    ax.scatter(
        coords[order, 0],
        coords[order, 1],
        c=colours,
        s=6 if order.size > 1000 else 16,
        alpha=0.6 if order.size > 1000 else 0.8,
        linewidths=0,
    )
    top.set_yticks([])
    top.tick_params(labelbottom=False)
    top.set_ylabel("density", fontsize=8)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_xlabel(xname)
    ax.set_ylabel(yname)
    ax.legend(title="RPS band", fontsize=8, title_fontsize=8, frameon=False, loc="best")
    notes = [] if method == "LDA" else [method]
    if order.size < r.size:
        notes.append(f"{order.size} of {r.size} entities shown")
    if X.shape[0] < 5 * X.shape[1] and not method.startswith("PCA"):
        notes.append(f"{X.shape[0]} entities in {X.shape[1]} dims: LDA overstates separation")
    top.set_title(title + "".join(f"\n{note}" for note in notes), fontsize=10)
    return save_png(fig, path)
