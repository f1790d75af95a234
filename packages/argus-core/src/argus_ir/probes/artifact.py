"""A trained probe on disk: its card (what it was trained for and how well it does) and its weights.

A probe folder holds ``card.json`` and the family's model file (``ridge.npz``, ``xgboost.json`` or
``mlp.safetensors``). Nothing in it is pickled. A probe only makes sense in the embedding space it
was trained in, so the card records the retriever, the mention pooling and the dimension, and
:meth:`TrainedProbe.load` refuses a probe whose space differs from the one in use.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir._version import __version__
from argus_ir.errors import ArgusInputError, ProbeMismatchError
from argus_ir.io import replace_folder
from argus_ir.outputs import check_output
from argus_ir.probes.base import FAMILIES, ProbeModel
from argus_ir.probes.families import model_class

__all__ = ["FORMAT_VERSION", "ProbeCard", "TrainedProbe", "argus_version"]

FORMAT_VERSION = 1
CARD_FILE = "card.json"
LABEL_KINDS = ("empirical", "expected")


def argus_version() -> str:
    """The argus version that writes a card (:mod:`argus_ir._version`)."""
    return __version__


@dataclass(frozen=True)
class ProbeCard:
    """What a probe was trained for, on what, and how well it did. JSON-serialisable.

    Attributes:
        retriever_id: Retriever whose embedding space the probe reads.
        pooling: How mention vectors were pooled (e.g. ``"span-mean"``).
        dim: Embedding dimension.
        k: Top-k budget of the RPS label.
        n_neutrals: Pool size ``N`` of the RPS label.
        family: ``"ridge"``, ``"xgboost"`` or ``"mlp"``.
        params: The family's hyperparameters.
        tau: Risk threshold: an entity is flagged when its predicted RPS is below it (paper: 0.3).
        label_kind: ``"empirical"`` (sampled neutrals) or ``"expected"`` (exact expectation).
        data_fingerprint: Fingerprint of the training data.
        metrics: ``{"test": ..., "validation": ..., "baselines": ..., "per_family": ...}`` (see
            :func:`argus_ir.probes.train_probe`).
        split_sizes: Rows in each split, ``{"train", "val", "test"}``.
        split_fractions: Entity fractions of the train/val/test split.
        seed: Seed of the split and of the models.
        fit_info: What the fit reported (e.g. XGBoost's best iteration).
        format_version: Layout version of the probe folder.
        argus_version: argus version that wrote the probe.

    Example:
        >>> card = ProbeCard(retriever_id="minilm", pooling="span-mean", dim=384, k=10,
        ...                  n_neutrals=800, family="ridge", params={"alpha": 1.0})
        >>> ProbeCard.from_dict(card.to_dict()) == card
        True
    """

    retriever_id: str
    pooling: str
    dim: int
    k: int
    n_neutrals: int
    family: str
    params: Mapping[str, Any]
    tau: float = 0.3
    label_kind: str = "empirical"
    data_fingerprint: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    split_sizes: Mapping[str, int] = field(default_factory=dict)
    split_fractions: tuple[float, float, float] = (0.7, 0.15, 0.15)
    seed: int = 0
    fit_info: Mapping[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    argus_version: str = field(default_factory=argus_version)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ArgusInputError(f"unknown probe family {self.family!r}; known: {list(FAMILIES)}")
        if self.label_kind not in LABEL_KINDS:
            raise ArgusInputError(
                f"label_kind must be one of {LABEL_KINDS}, got {self.label_kind!r}"
            )
        if not 0.0 <= float(self.tau) <= 1.0:
            raise ArgusInputError(f"tau must be in [0, 1], got {self.tau}")
        object.__setattr__(self, "split_fractions", tuple(self.split_fractions))

    def to_dict(self) -> dict[str, Any]:
        """The card as plain JSON types."""
        out = asdict(self)
        out["split_fractions"] = list(self.split_fractions)
        return json.loads(json.dumps(out, default=_json_default))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeCard:
        """Build a card from :meth:`to_dict` output.

        Raises:
            ArgusInputError: Missing or unknown keys, or a format version this argus cannot read.
        """
        version = data.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
            raise ArgusInputError(
                f"probe card format_version {version!r} is not supported by argus "
                f"{argus_version()} (reads 1..{FORMAT_VERSION}); upgrade argus or retrain"
            )
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ArgusInputError(f"probe card has unknown keys {unknown}")
        required = ("retriever_id", "pooling", "dim", "k", "n_neutrals", "family", "params")
        missing = [key for key in required if key not in data]
        if missing:
            raise ArgusInputError(f"probe card lacks {missing}")
        return cls(**dict(data))

    def check_compatible(
        self,
        retriever_id: str | None = None,
        dim: int | None = None,
        pooling: str | None = None,
    ) -> None:
        """Raise unless the probe's embedding space is the one in use (None = not checked).

        Raises:
            ProbeMismatchError: The message names the probe's and the caller's retriever, dim and
                pooling.
        """
        wrong = [
            name
            for name, mine, theirs in (
                ("retriever", self.retriever_id, retriever_id),
                ("dim", self.dim, dim),
                ("pooling", self.pooling, pooling),
            )
            if theirs is not None and mine != theirs
        ]
        if wrong:
            raise ProbeMismatchError(
                f"probe mismatch ({', '.join(wrong)}): the probe was trained for retriever "
                f"{self.retriever_id!r} (dim {self.dim}, pooling {self.pooling!r}) but the encoder "
                f"in use is retriever {retriever_id!r} (dim {dim}, pooling {pooling!r}); train a "
                "probe for this encoder (argus train-probe)"
            )


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


@dataclass(frozen=True, eq=False)
class TrainedProbe:
    """A fitted probe with its card: predicts RPS from embeddings and flags risky entities.

    Attributes:
        card: What the probe was trained for and its metrics.
        model: The fitted family model.

    Example:
        >>> probe = TrainedProbe.load("runs/minilm/probe-k10",  # doctest: +SKIP
        ...                           expect_retriever=encoder.info.retriever_id,
        ...                           expect_dim=encoder.info.dim)
        >>> risky = probe.flag(mention_vectors)  # doctest: +SKIP
    """

    card: ProbeCard
    model: ProbeModel

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted RPS in [0, 1] per row of ``X`` (a single vector gives one value).

        Raises:
            ArgusInputError: (a ValueError) ``X`` has a width other than the probe's dim; the
                message names both.
        """
        arr = np.asarray(X)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.card.dim:
            got = arr.shape[1] if arr.ndim == 2 else f"shape {arr.shape}"
            raise ArgusInputError(
                f"the probe for {self.card.retriever_id!r} expects dim {self.card.dim} vectors, "
                f"got dim {got}"
            )
        return self.model.predict(arr)

    def flag(self, X: np.ndarray, tau: float | None = None) -> np.ndarray:
        """Boolean mask of rows whose predicted RPS is below ``tau`` (default: the card's tau)."""
        threshold = self.card.tau if tau is None else float(tau)
        return self.predict(X) < threshold

    def check_compatible(
        self, retriever_id: str | None = None, dim: int | None = None, pooling: str | None = None
    ) -> None:
        """See :meth:`ProbeCard.check_compatible`."""
        self.card.check_compatible(retriever_id, dim, pooling)

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``card.json`` and the model file(s) into ``directory``, all or nothing.

        Everything is written into a temporary folder beside the target, which is then renamed
        into place; an existing probe folder there is replaced. A failure leaves nothing behind
        (and an existing probe untouched).

        Returns:
            The folder.

        Raises:
            ArgusInputError: ``directory`` exists and is neither empty nor a probe folder.
        """
        target = check_output(
            directory,
            flag="directory",
            overwrite=True,  # a probe folder is replaced, as documented
            folder=True,
            kind="probe folder",
            is_kind=lambda folder: (folder / CARD_FILE).exists(),
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        try:
            self.model.save(tmp)
            text = json.dumps(self.card.to_dict(), indent=2, sort_keys=True)
            (tmp / CARD_FILE).write_text(text + "\n", encoding="utf-8")
            replace_folder(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return target

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        expect_retriever: str | None = None,
        expect_dim: int | None = None,
        expect_pooling: str | None = None,
    ) -> TrainedProbe:
        """Read a probe folder, checking it against the embedding space in use.

        Args:
            directory: Folder written by :meth:`save`.
            expect_retriever: Retriever id in use (None = not checked).
            expect_dim: Embedding dimension in use (None = not checked).
            expect_pooling: Mention pooling in use (None = not checked).

        Returns:
            The probe.

        Raises:
            ArgusInputError: The folder, its card or its model file is missing or malformed, or
                the card's format version is newer than this argus reads.
            ProbeMismatchError: The probe was trained for another retriever, dim or pooling.
            MissingExtraError: An XGBoost model the numpy reader does not take (not one the
                probes train) without the ``[xgboost]`` extra.
        """
        folder = Path(directory)
        card_path = folder / CARD_FILE
        if not card_path.is_file():
            raise ArgusInputError(f"{folder} is not a probe folder: {CARD_FILE} not found")
        try:
            data = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ArgusInputError(f"{card_path} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ArgusInputError(f"{card_path} must hold a JSON object")
        card = ProbeCard.from_dict(data)
        card.check_compatible(expect_retriever, expect_dim, expect_pooling)
        family = model_class(card.family)
        missing = [name for name in family.files if not (folder / name).is_file()]
        if missing:
            raise ArgusInputError(f"probe folder {folder} lacks its model file(s) {missing}")
        try:
            model = family.load(folder, card.params)
        except (ArgusInputError, ImportError):
            raise
        except Exception as exc:  # a truncated or foreign file: name it, whatever the reader says
            files = ", ".join(str(folder / name) for name in family.files)
            raise ArgusInputError(
                f"{files}: cannot read the {card.family} probe ({type(exc).__name__}: {exc})"
            ) from None
        if model.n_features != card.dim:
            raise ArgusInputError(
                f"probe folder {folder}: the model reads {model.n_features}-dim vectors but the "
                f"card says dim {card.dim}"
            )
        return cls(card=card, model=model)
