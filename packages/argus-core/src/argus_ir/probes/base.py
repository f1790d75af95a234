"""The contract every probe family fulfils (paper §4.1, App. C.1).

A probe maps an entity's embedding vector to a predicted RPS in [0, 1]. A family (Ridge, XGBoost,
MLP) subclasses :class:`ProbeModel`: it is built from a dict of JSON-scalar hyperparameters, fits on
a train split with a validation split for early stopping, predicts clipped scores, and saves its
weights to fixed file names in a folder, in a format that loads without unpickling anything.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = [
    "DISPLAY_NAMES",
    "FAMILIES",
    "ProbeModel",
    "as_matrix",
    "check_labels",
]

FAMILIES = ("ridge", "xgboost", "mlp")
"""The probe families, in the order of Table 3."""

DISPLAY_NAMES = {"ridge": "Ridge", "xgboost": "XGBoost", "mlp": "MLP"}


def as_matrix(X: Any, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite 2-D float array, or raise naming what was given.

    Args:
        X: Embedding rows, one per entity.
        name: How the array is called in the error message.

    Returns:
        A 2-D float32 or float64 array (float32 stays float32; other dtypes become float64).

    Raises:
        ArgusInputError: ``X`` is not 2-D, has no rows or columns, or holds NaN or inf.
    """
    arr = np.asarray(X)
    if arr.dtype != np.float32:
        arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ArgusInputError(
            f"{name} must be a non-empty 2-D array (rows x dims), got {arr.shape}"
        )
    if not np.isfinite(arr).all():
        raise ArgusInputError(f"{name} holds NaN or inf values")
    return arr


class ProbeModel(abc.ABC):
    """A regressor from embedding vectors to RPS in [0, 1].

    Subclasses set :attr:`family`, :attr:`defaults` (every accepted hyperparameter with its
    default), :attr:`files` (what :meth:`save` writes) and :attr:`requires` (the module training
    needs, or None), and implement :meth:`fit`, :meth:`_predict_raw`, :meth:`save`, :meth:`load`
    and :attr:`n_features`.

    Example:
        >>> import numpy as np
        >>> from argus_ir.probes import RidgeProbe
        >>> X = np.random.default_rng(0).normal(size=(50, 4))
        >>> y = 1 / (1 + np.exp(-X[:, 0]))
        >>> probe = RidgeProbe(alpha=1.0).fit(X[:40], y[:40], X[40:], y[40:])
        >>> probe.predict(X[40:]).shape
        (10,)
    """

    family: ClassVar[str]
    defaults: ClassVar[Mapping[str, Any]]
    files: ClassVar[tuple[str, ...]]
    requires: ClassVar[str | None] = None
    rows_apart: ClassVar[bool] = False
    """Whether each row's prediction is computed apart from the other rows of a call, to the
    bit (trees), so that a caller may put many documents' rows in one call; a matrix product's
    rows may round differently with the number of rows, so it is not."""

    def __init__(self, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise ArgusInputError(
                f"unknown {self.family} probe parameter(s) {unknown}; "
                f"allowed: {sorted(self.defaults)}"
            )
        self._params = {**self.defaults, **params}
        self.fit_info: dict[str, Any] = {}

    @property
    def params(self) -> dict[str, Any]:
        """The hyperparameters (defaults filled in); JSON-serialisable."""
        return dict(self._params)

    @property
    @abc.abstractmethod
    def n_features(self) -> int:
        """Input dimension the fitted model expects."""

    @abc.abstractmethod
    def fit(
        self, Xtr: np.ndarray, ytr: np.ndarray, Xval: np.ndarray, yval: np.ndarray
    ) -> ProbeModel:
        """Fit on the train split; the validation split drives early stopping where a family has it.

        Args:
            Xtr: Train embeddings, ``(n_train, dim)``.
            ytr: Train RPS labels in [0, 1].
            Xval: Validation embeddings, ``(n_val, dim)``.
            yval: Validation RPS labels.

        Returns:
            ``self``, fitted.
        """

    @abc.abstractmethod
    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        """Unclipped predictions for a checked 2-D array."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted RPS per row, clipped to [0, 1].

        Args:
            X: Embeddings, ``(n, dim)``.

        Returns:
            float64 array of shape ``(n,)``.

        Raises:
            ArgusInputError: ``X`` is malformed or its width differs from the fitted dimension.
        """
        X = as_matrix(X)
        if X.shape[1] != self.n_features:
            raise ArgusInputError(
                f"this {self.family} probe expects {self.n_features}-dim vectors, "
                f"got {X.shape[1]}-dim"
            )
        out = np.asarray(self._predict_raw(X), dtype=np.float64).reshape(-1)
        return np.clip(out, 0.0, 1.0)

    @abc.abstractmethod
    def save(self, directory: str | Path) -> list[str]:
        """Write the fitted weights into an existing folder.

        Args:
            directory: Folder to write into.

        Returns:
            Names of the files written (a subset of :attr:`files`).
        """

    @classmethod
    @abc.abstractmethod
    def load(cls, directory: str | Path, params: Mapping[str, Any]) -> ProbeModel:
        """Read weights written by :meth:`save`.

        Args:
            directory: The folder :meth:`save` wrote into.
            params: The hyperparameters recorded with the weights (from the probe card).

        Returns:
            A fitted model.
        """

    @classmethod
    def fit_grid(
        cls,
        grid: Iterable[Mapping[str, Any]],
        Xtr: np.ndarray,
        ytr: np.ndarray,
        Xval: np.ndarray,
        yval: np.ndarray,
    ) -> Iterator[ProbeModel]:
        """Fit one model per hyperparameter set, yielding each as soon as it is fitted.

        Families that can share work across a grid (Ridge reuses one eigendecomposition for every
        ``alpha``) override this; the default fits them one by one.
        """
        for params in grid:
            yield cls(**params).fit(Xtr, ytr, Xval, yval)


def check_labels(y: Any, n: int, name: str = "y") -> np.ndarray:
    """Return ``y`` as a float64 vector of ``n`` finite values in [0, 1], or raise."""
    arr = np.asarray(y, dtype=np.float64)
    if arr.ndim != 1 or arr.size != n:
        raise ArgusInputError(f"{name} must be a vector of {n} labels, got shape {arr.shape}")
    if not np.isfinite(arr).all() or arr.min() < 0 or arr.max() > 1:
        raise ArgusInputError(f"{name} must hold RPS values in [0, 1] (no NaN)")
    return arr


def check_weight(where: str, name: str, array: Any, shape: tuple[int, ...]) -> None:
    """A loaded weight of the expected shape with finite values, or an error naming the file and
    the weight (``-1`` in ``shape``: the weight before it was already of the wrong shape)."""
    array = np.asarray(array)
    if array.shape != shape or -1 in shape:
        raise ArgusInputError(f"{where}: {name} has shape {array.shape}, expected {shape}")
    if not np.all(np.isfinite(array)):
        raise ArgusInputError(f"{where}: {name} holds non-finite values (NaN or infinity)")
