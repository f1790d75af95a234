"""Audit plots (paper Figs. 2, 3, 5 and 7) as PNG files.

Every function takes plain numpy arrays, writes one PNG and returns its path. Matplotlib is imported
inside the functions and figures are drawn on an Agg canvas without pyplot, so calling them neither
changes the user's backend nor leaves figures open. The same inputs give the same bytes.

Colours follow the paper and stay readable with colour-vision deficiencies: low RPS is vermillion,
mid is grey, high is blue; line series use the Okabe-Ito palette with distinct markers.

Example:
    >>> import numpy as np
    >>> from argus_ir import plots
    >>> rps = np.random.default_rng(0).uniform(size=500)
    >>> plots.rps_histogram({10: rps}, "out/rps_histogram.png")  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "BAND_EDGES",
    "ablation_chart",
    "calibration",
    "delta_chart",
    "fraction_vs_k",
    "fraction_vs_n",
    "lda_fit",
    "lda_projection",
    "rps_bands",
    "rps_histogram",
]

DPI = 120
BAND_EDGES = (0.33, 0.66)
"""RPS band cut points: low ``[0, 0.33)``, mid ``[0.33, 0.66)``, high ``[0.66, 1]`` (paper §4.1)."""

_BAND_NAMES = ("low", "mid", "high")
_BAND_COLOURS = ("#D55E00", "#8C8C8C", "#0072B2")  # vermillion, grey, blue
_SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_LINESTYLES = ("-", "--", "-.", ":")
_TOL = 1e-9


# --------------------------------------------------------------------------- input checks


def _vector(name: str, values: object, *, unit: bool) -> np.ndarray:
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


# --------------------------------------------------------------------------- figure plumbing


def _figure(width: float, height: float) -> Figure:
    """A pyplot-free figure on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return target


def _style(i: int) -> dict[str, Any]:
    return {
        "color": _SERIES_COLOURS[i % len(_SERIES_COLOURS)],
        "marker": _MARKERS[i % len(_MARKERS)],
        "linestyle": _LINESTYLES[i % len(_LINESTYLES)],
    }


def _integer_ticks(ax: Axes, x: np.ndarray) -> None:
    """Label exactly the measured x values (when there are few enough to read)."""
    from matplotlib.ticker import NullFormatter, NullLocator

    if x.size <= 12:
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(x, labels=[f"{v:g}" for v in x])


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
        named = {f"k = {k}": _vector(f"rps[{k}]", v, unit=True) for k, v in sorted(rps.items())}
    else:
        named = {"": _vector("rps", rps, unit=True)}
    edges = np.linspace(0.0, 1.0, 21)
    centres = (edges[:-1] + edges[1:]) / 2
    colours = np.where(centres < tau, _BAND_COLOURS[0], _BAND_COLOURS[2])
    fig = _figure(6.4, 1.0 + 1.9 * len(named))
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
    return _save(fig, path)


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
    fig = _figure(6.4, 4.2)
    ax = fig.add_subplot()
    if log_x:
        ax.set_xscale("log")
    for i, (label, y) in enumerate(series.items()):
        ax.plot(x, y, label=label, linewidth=1.6, markersize=5, **_style(i))
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
    _integer_ticks(ax, x)
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
    return _save(fig, path)


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
    return _save(fig, path)


# --------------------------------------------------------------------------- Fig. 2: LDA


def _ledoit_wolf(deviations: np.ndarray, scatter: np.ndarray) -> float:
    """Ledoit-Wolf shrinkage intensity towards ``mu * I`` for rows that are already centred."""
    n, d = deviations.shape
    cov = scatter / n
    mu = np.trace(cov) / d
    delta = float(((cov - mu * np.eye(d)) ** 2).sum())
    if delta <= 0.0:
        return 1.0
    norms = np.einsum("ij,ij->i", deviations, deviations)
    beta = float(((norms**2).sum() / n - (cov**2).sum()) / n)
    return min(max(beta, 0.0), delta) / delta


def lda_fit(
    X: np.ndarray,
    labels: np.ndarray,
    n_components: int = 2,
    shrinkage: float | str = "auto",
) -> np.ndarray:
    """Fit multi-class Fisher LDA and return its projection matrix.

    Solves ``S_B w = lambda * S_W' w`` (``scipy.linalg.eigh``) where ``S_B`` is the between-class and
    ``S_W`` the within-class scatter, and ``S_W' = (1 - a) S_W + a * mean_eig(S_W) * I`` is shrunk
    towards a multiple of the identity so the problem stays well posed when the dimension (384, 768)
    nears the number of samples. ``a = 0`` is plain LDA.

    Args:
        X: ``(n_samples, dim)`` data.
        labels: One class label per row (any hashable values numpy can sort).
        n_components: Number of discriminant axes, at most ``min(dim, n_classes - 1)``.
        shrinkage: ``a`` in [0, 1], or ``"auto"`` for the Ledoit-Wolf estimate from the
            within-class deviations.

    Returns:
        ``(dim, n_components)`` matrix ``W``; project with ``(X - X.mean(0)) @ W``. Columns are
        ordered by decreasing discriminant power, each with its largest-magnitude entry positive.

    Raises:
        ArgusInputError: Shapes disagree, values are not finite, there are too few classes for
            ``n_components``, or ``shrinkage`` is out of range.
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ArgusInputError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    if labels.shape != (X.shape[0],):
        raise ArgusInputError(f"labels has shape {labels.shape}, expected ({X.shape[0]},)")
    if not np.all(np.isfinite(X)):
        raise ArgusInputError("X holds non-finite values")
    classes, inverse = np.unique(labels, return_inverse=True)
    dim = X.shape[1]
    if not 1 <= n_components <= min(dim, classes.size - 1):
        raise ArgusInputError(
            f"n_components={n_components} needs 1 <= n_components <= min(dim, n_classes - 1) "
            f"= {min(dim, classes.size - 1)} (dim {dim}, {classes.size} classes)"
        )
    counts = np.bincount(inverse, minlength=classes.size).astype(np.float64)
    means = np.zeros((classes.size, dim))
    np.add.at(means, inverse, X)
    means /= counts[:, None]
    deviations = X - means[inverse]
    s_w = deviations.T @ deviations
    centred_means = means - X.mean(axis=0)
    s_b = (centred_means * counts[:, None]).T @ centred_means

    if isinstance(shrinkage, str):
        if shrinkage != "auto":
            raise ArgusInputError(
                f"shrinkage must be a float in [0, 1] or 'auto', got {shrinkage!r}"
            )
        # a floor keeps S_W' invertible even when Ledoit-Wolf sees no need to shrink
        alpha = max(_ledoit_wolf(deviations, s_w), 1e-4)
    else:
        alpha = float(shrinkage)
        if not 0.0 <= alpha <= 1.0:
            raise ArgusInputError(f"shrinkage must be in [0, 1], got {shrinkage!r}")
    mean_eig = np.trace(s_w) / dim
    if mean_eig <= 0.0:  # no within-class spread at all (e.g. one sample per class)
        s_w, alpha, mean_eig = np.zeros_like(s_w), 1.0, 1.0
    s_w_shrunk = (1.0 - alpha) * s_w + alpha * mean_eig * np.eye(dim)

    import scipy.linalg

    try:
        _, vecs = scipy.linalg.eigh(s_b, s_w_shrunk)
    except np.linalg.LinAlgError as exc:
        raise ArgusInputError(
            "within-class scatter is singular; use shrinkage > 0 (or 'auto')"
        ) from exc
    w = vecs[:, ::-1][:, :n_components]
    flip = np.sign(w[np.abs(w).argmax(axis=0), np.arange(n_components)])
    return w * np.where(flip == 0, 1.0, flip)


def _principal_axes(X: np.ndarray, n: int) -> np.ndarray:
    """Top-``n`` principal directions as columns (zero columns where the data has no more rank)."""
    centred = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axes = np.zeros((X.shape[1], n))
    m = min(n, vt.shape[0])
    axes[:, :m] = vt[:m].T
    return axes


def _embed_2d(
    X: np.ndarray, bands: np.ndarray, shrinkage: float | str
) -> tuple[np.ndarray, tuple[str, str], str]:
    """2-D coordinates, axis names and a note on the method (LDA, or a fallback)."""
    present = np.unique(bands)
    centred = X - X.mean(axis=0)
    if present.size >= 3 and X.shape[1] >= 2:
        w = lda_fit(X, bands, 2, shrinkage)
        return centred @ w, ("LD1", "LD2"), "LDA"
    if present.size == 2:
        w = lda_fit(X, bands, 1, shrinkage)
        # second axis: the main remaining variation once the discriminant direction is removed
        unit = w[:, 0] / np.linalg.norm(w[:, 0])
        rest = centred - np.outer(centred @ unit, unit)
        pc = _principal_axes(rest, 1)
        return (
            np.column_stack([centred @ w[:, 0], rest @ pc[:, 0]]),
            ("LD1", "PC1 of the rest"),
            "one LDA axis: only 2 bands present",
        )
    pcs = _principal_axes(X, 2)
    why = "only one RPS band present" if present.size < 2 else "dim < 2"
    return centred @ pcs, ("PC1", "PC2"), f"PCA fallback: {why}"


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
    r = _vector("rps", rps, unit=True)
    if r.size != X.shape[0]:
        raise ArgusInputError(f"rps has {r.size} values for {X.shape[0]} embeddings")
    if not np.all(np.isfinite(X)):
        raise ArgusInputError("X holds non-finite values")
    bands = rps_bands(r)
    coords, (xname, yname), method = _embed_2d(X, bands, shrinkage)
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

    fig = _figure(6.4, 6.4)
    grid = fig.add_gridspec(2, 1, height_ratios=(1, 4), hspace=0.05)
    top = fig.add_subplot(grid[0])
    ax = fig.add_subplot(grid[1], sharex=top)
    edges = np.linspace(lo - pad, hi + pad, 41)
    for b, (name, colour) in enumerate(zip(_BAND_NAMES, _BAND_COLOURS)):
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
    colours = np.array(_BAND_COLOURS)[bands[order]]
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
    return _save(fig, path)


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

    y = _vector("y", y, unit=True)
    yhat = _vector("yhat", yhat, unit=False)
    if y.shape != yhat.shape:
        raise ArgusInputError(f"y has {y.size} values but yhat has {yhat.size}")
    residual = y - yhat
    rmse = float(np.sqrt(np.mean(residual**2)))
    corr = np.corrcoef(y, yhat)[0, 1] if np.ptp(y) > 0 and np.ptp(yhat) > 0 else float("nan")
    lo = min(0.0, float(yhat.min()))
    hi = max(1.0, float(yhat.max()))

    fig = _figure(5.6, 7.2)
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
    return _save(fig, path)


# --------------------------------------------------------------------------- evaluation (§6-7)

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
    fig = _figure(7.0, 1.2 + 0.32 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1].astype(np.float64)
    start = 0
    for i, (group, group_rows) in enumerate(deltas.items()):
        n = len(group_rows)
        _delta_interval(ax, y[start : start + n], group_rows, _SERIES_COLOURS[i % 7])
        ax.plot([], [], "o", color=_SERIES_COLOURS[i % 7], label=group)
        start += n
    from matplotlib.ticker import MaxNLocator

    ax.set_yticks(y, labels=[r[0] for _, r in rows], fontsize=8)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(6))
    ax.set_xlabel(f"Δ {metric} against the original index (95% interval)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.set_title(title or f"What each condition changes: {metric}", fontsize=10, pad=22)
    fig.tight_layout()
    return _save(fig, path)


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
    fig = _figure(4.2 * len(sweeps), 4.6)
    axes = fig.subplots(2, len(sweeps), squeeze=False, sharex="col", height_ratios=(2.2, 1))
    for col, (setting, groups) in enumerate(sweeps.items()):
        top, bottom = axes[0][col], axes[1][col]
        for i, (group, points) in enumerate(groups.items()):
            pts = sorted(points)
            x = np.array([p[0] for p in pts], dtype=np.float64)
            style = _style(i)
            top.errorbar(
                x,
                [p[1] for p in pts],
                yerr=np.nan_to_num([p[2] for p in pts]),
                capsize=3,
                label=group,
                **style,
            )
            bottom.plot(x, [p[3] for p in pts], **style)
            _integer_ticks(bottom, x)
        top.axhline(0.0, color="black", linewidth=0.8)
        top.set_title(setting, fontsize=10)
        bottom.set_xlabel(setting)
        if col == 0:
            top.set_ylabel(f"Δ {metric}")
            bottom.set_ylabel("index growth")
            top.legend(fontsize=8, frameon=False)
    fig.suptitle(title or f"Ablations: Δ {metric} against the original index", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


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
    fig = _figure(7.0, 1.4 + 0.55 * len(settings) * max(1, len(retrievers)) / 2)
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
            color=_SERIES_COLOURS[j % 7],
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
    return _save(fig, path)


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
    fig = _figure(max(7.0, 0.55 * len(strata) * max(1, len(names)) / 1.5), 4.2)
    ax = fig.add_subplot()
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        data = [list(groups[name].get(s, [])) or [np.nan] for s in strata]
        pos = np.arange(len(strata)) + (j - (len(names) - 1) / 2) * width
        colour = _SERIES_COLOURS[j % 7]
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
    return _save(fig, path)


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
    fig = _figure(7.0, 1.4 + 0.28 * len(labels))
    ax = fig.add_subplot()
    y = np.arange(len(labels))[::-1].astype(np.float64)
    ax.barh(y + 0.2, d, height=0.4, color=_SERIES_COLOURS[0], label="documents")
    ax.barh(y - 0.2, q, height=0.4, color=_SERIES_COLOURS[1], label="queries")
    ax.set_yticks(y, labels=labels, fontsize=7)
    ax.set_xlabel("share")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    ax.set_title("Where the corpus is and where the queries look", fontsize=10, pad=22)
    fig.tight_layout()
    return _save(fig, path)
