"""Ridge regression probe, solved in closed form with numpy (App. C.1, linear family).

Minimises ``||y - X w - b||^2 + alpha ||w||^2`` (the intercept ``b`` is not penalised), optionally
on standardised features, the same objective as scikit-learn's ``Ridge``. One eigendecomposition of
the centred Gram matrix serves every ``alpha``, so the whole grid of App. C.1 costs about one fit.
Saved as ``ridge.npz`` (plain arrays, read with ``allow_pickle=False``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.probes.base import ProbeModel, as_matrix, check_labels, check_weight

__all__ = ["RidgeProbe"]

_FILE = "ridge.npz"
_CHUNK = 8192  # rows per block when accumulating the Gram matrix in float64


class _RidgePath:
    """Eigendecomposition of one (optionally standardised) train matrix, solvable for any alpha."""

    def __init__(self, X: np.ndarray, y: np.ndarray, standardize: bool) -> None:
        n, d = X.shape
        self.mean = X.mean(axis=0, dtype=np.float64)
        if standardize:
            std = X.std(axis=0, dtype=np.float64)
            # A constant column carries nothing; leaving it unscaled avoids dividing by zero.
            self.scale = np.where(std > 1e-12, std, 1.0)
        else:
            self.scale = np.ones(d)
        self.y_mean = float(y.mean())
        yc = y - self.y_mean
        self.primal = n >= d
        if self.primal:
            gram = np.zeros((d, d))
            rhs = np.zeros(d)
            for start in range(0, n, _CHUNK):
                block = (X[start : start + _CHUNK].astype(np.float64) - self.mean) / self.scale
                gram += block.T @ block
                rhs += block.T @ yc[start : start + _CHUNK]
            evals, self.vecs = np.linalg.eigh(gram)
            self.proj = self.vecs.T @ rhs
        else:
            # Fewer rows than dims: the dual form w = Z^T (Z Z^T + alpha I)^-1 y is n x n.
            self.Z = (X.astype(np.float64) - self.mean) / self.scale
            evals, self.vecs = np.linalg.eigh(self.Z @ self.Z.T)
            self.proj = self.vecs.T @ yc
        # Round-off can make the smallest eigenvalues of a PSD matrix slightly negative.
        self.evals = np.clip(evals, 0.0, None)

    def solve(self, alpha: float) -> tuple[np.ndarray, float]:
        """Coefficients in the original feature space and the intercept."""
        coef_z = self.vecs @ (self.proj / (self.evals + alpha))
        if not self.primal:
            coef_z = self.Z.T @ coef_z
        coef = coef_z / self.scale
        return coef, self.y_mean - float(self.mean @ coef)


class RidgeProbe(ProbeModel):
    """Linear probe: ``RPS ~ X @ coef + intercept``, clipped to [0, 1].

    Args:
        alpha: L2 penalty (``> 0``), on the same scale as scikit-learn's ``Ridge(alpha=...)``.
        standardize: Penalise standardised features (train mean and std) instead of raw ones.

    Example:
        >>> import numpy as np
        >>> from argus_ir.probes import RidgeProbe
        >>> X = np.random.default_rng(0).normal(size=(100, 3))
        >>> y = np.clip(0.5 + 0.1 * X[:, 0], 0, 1)
        >>> probe = RidgeProbe(alpha=1e-3).fit(X[:80], y[:80], X[80:], y[80:])
        >>> bool(abs(probe.coef[0] - 0.1) < 1e-3)
        True
    """

    family: ClassVar[str] = "ridge"
    defaults: ClassVar[Mapping[str, Any]] = {"alpha": 1.0, "standardize": False}
    files: ClassVar[tuple[str, ...]] = (_FILE,)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        alpha = self._params["alpha"]
        if not (isinstance(alpha, (int, float)) and alpha > 0):
            raise ArgusInputError(f"ridge alpha must be a positive number, got {alpha!r}")
        self._params["alpha"] = float(alpha)
        self._params["standardize"] = bool(self._params["standardize"])
        self.coef: np.ndarray | None = None
        self.intercept = 0.0
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        if self.coef is None:
            raise RuntimeError("the ridge probe is not fitted")
        return int(self.coef.size)

    def _set(self, path: _RidgePath) -> RidgeProbe:
        self.coef, self.intercept = path.solve(self._params["alpha"])
        self.mean, self.scale = path.mean, path.scale
        return self

    def fit(
        self, Xtr: np.ndarray, ytr: np.ndarray, Xval: np.ndarray, yval: np.ndarray
    ) -> RidgeProbe:
        """Fit in closed form (the validation split is not needed; Ridge has no early stopping)."""
        X = as_matrix(Xtr, "Xtr")
        y = check_labels(ytr, X.shape[0], "ytr")
        return self._set(_RidgePath(X, y, self._params["standardize"]))

    @classmethod
    def fit_grid(
        cls,
        grid: Iterable[Mapping[str, Any]],
        Xtr: np.ndarray,
        ytr: np.ndarray,
        Xval: np.ndarray,
        yval: np.ndarray,
    ) -> Iterator[ProbeModel]:
        """Fit every ``alpha`` of the grid from one decomposition per ``standardize`` setting."""
        X = as_matrix(Xtr, "Xtr")
        y = check_labels(ytr, X.shape[0], "ytr")
        paths: dict[bool, _RidgePath] = {}
        for params in grid:
            model = cls(**params)
            flag = model._params["standardize"]
            if flag not in paths:
                paths[flag] = _RidgePath(X, y, flag)
            yield model._set(paths[flag])

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        assert self.coef is not None
        return X @ self.coef + self.intercept

    def save(self, directory: str | Path) -> list[str]:
        """Write ``ridge.npz`` (coef, intercept, and the train mean/scale used for the penalty)."""
        if self.coef is None or self.mean is None or self.scale is None:
            raise RuntimeError("cannot save an unfitted ridge probe")
        with open(Path(directory) / _FILE, "wb") as fh:
            np.savez(
                fh,
                coef=self.coef,
                intercept=np.array(self.intercept),
                mean=self.mean,
                scale=self.scale,
            )
        return [_FILE]

    @classmethod
    def load(cls, directory: str | Path, params: Mapping[str, Any]) -> RidgeProbe:
        """Read ``ridge.npz`` (no pickles: ``allow_pickle=False``)."""
        model = cls(**params)
        where = Path(directory) / _FILE
        with np.load(where, allow_pickle=False) as data:
            try:
                model.coef = np.asarray(data["coef"], dtype=np.float64)
                model.intercept = float(data["intercept"])
                model.mean = np.asarray(data["mean"], dtype=np.float64)
                model.scale = np.asarray(data["scale"], dtype=np.float64)
            except KeyError as exc:
                raise ArgusInputError(f"{where} lacks the array {exc}") from None
        dim = model.coef.size
        check_weight(str(where), "coef", model.coef, (dim,))
        check_weight(str(where), "intercept", np.asarray(model.intercept), ())
        check_weight(str(where), "mean", model.mean, (dim,))
        check_weight(str(where), "scale", model.scale, (dim,))
        return model
