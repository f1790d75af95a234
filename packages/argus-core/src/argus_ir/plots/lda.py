"""Fisher linear discriminant analysis (LDA) and the 2-D embedding behind the LDA projection figure.

This is the model fit of paper Fig. 2, kept apart from the drawing in
:mod:`argus_ir.plots.projection`: :func:`lda_fit` solves the shrunk multi-class Fisher problem and
:func:`embed_2d` turns entity embeddings and their RPS bands into plot coordinates, falling back to
one discriminant axis or to PCA when fewer bands are present. (Linear discriminant analysis, not a
topic model; nothing here imports matplotlib.)
"""

from __future__ import annotations

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = ["embed_2d", "lda_fit"]


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


def embed_2d(
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
