"""Train a probe: split entities, sweep the families, select by validation RMSE, test once (§4.1).

:func:`train_probe` is the public door. It splits the entities (never one entity in two splits),
runs the sweep of :mod:`argus_ir.probes.sweep` on train/validation, picks the configuration with the
lowest validation RMSE across all families, and measures on the untouched test split the chosen
probe, the best probe of each family and the constant baselines: the rows of Table 3.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from argus_ir.errors import ArgusInputError, ProbeMismatchError
from argus_ir.probes.artifact import LABEL_KINDS, ProbeCard, TrainedProbe
from argus_ir.probes.base import DISPLAY_NAMES, FAMILIES, as_matrix, check_labels
from argus_ir.probes.metrics import all_metrics, baselines
from argus_ir.probes.sweep import SweepRow, resolve_families, run_sweep, sweep_configs

__all__ = [
    "EntitySplit",
    "ProbeTrainingResult",
    "audit_card_fields",
    "split_by_entity",
    "train_probe",
    "train_probe_on_audit",
]

_CARD_FIELDS = (
    "retriever_id",
    "pooling",
    "dim",
    "k",
    "n_neutrals",
    "tau",
    "label_kind",
    "data_fingerprint",
)
_MIN_ENTITIES = 10


@dataclass(frozen=True, eq=False)
class EntitySplit:
    """Row indices of a train/validation/test split over entities.

    Attributes:
        train: Row indices of the train split (sorted).
        val: Row indices of the validation split.
        test: Row indices of the test split.
    """

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def sizes(self) -> dict[str, int]:
        """Rows per split."""
        return {
            "train": int(self.train.size),
            "val": int(self.val.size),
            "test": int(self.test.size),
        }


def split_by_entity(
    ids: Sequence[str],
    seed: int = 0,
    fractions: tuple[float, float, float] = (0.7, 0.15, 0.15),
) -> EntitySplit:
    """Split rows into train/validation/test so that no entity id lands in two splits.

    The distinct ids are sorted and shuffled with a seeded permutation, then cut by ``fractions``
    (rounded, each split at least one entity); every row follows its id. The same ids, seed and
    fractions always give the same split, whatever the order of the rows.

    Args:
        ids: Entity id per row (repeats allowed: all rows of an id go to one split).
        seed: Seed of the permutation.
        fractions: Shares of entities for train, validation and test (positive, summing to 1).

    Returns:
        The split.

    Raises:
        ArgusInputError: Bad fractions, or fewer than three distinct ids.

    Example:
        >>> s = split_by_entity([f"Q{i}" for i in range(20)], seed=0)
        >>> s.sizes()
        {'train': 14, 'val': 3, 'test': 3}
    """
    if len(fractions) != 3 or min(fractions) <= 0 or abs(sum(fractions) - 1.0) > 1e-6:
        raise ArgusInputError(
            f"fractions must be three positive shares summing to 1, got {fractions}"
        )
    keys = np.asarray([str(i) for i in ids])
    unique, inverse = np.unique(keys, return_inverse=True)
    n = unique.size
    if n < 3:
        raise ArgusInputError(f"need at least 3 distinct entity ids to split, got {n}")
    n_val = max(1, round(fractions[1] * n))
    n_test = max(1, round(fractions[2] * n))
    n_train = n - n_val - n_test
    if n_train < 1:
        raise ArgusInputError(f"{n} entities are too few for fractions {fractions}")
    order = np.random.default_rng(seed).permutation(n)
    part = np.empty(n, dtype=np.int8)
    part[order[:n_train]] = 0
    part[order[n_train : n_train + n_val]] = 1
    part[order[n_train + n_val :]] = 2
    row_part = part[inverse.reshape(-1)]
    return EntitySplit(*(np.flatnonzero(row_part == p) for p in range(3)))


def _fingerprint(X: np.ndarray, y: np.ndarray, ids: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(X).tobytes())
    h.update(np.ascontiguousarray(y, dtype=np.float64).tobytes())
    h.update("\n".join(map(str, ids)).encode("utf-8"))
    return h.hexdigest()


class _AuditLike(Protocol):
    """What :meth:`ProbeTrainingResult.from_saved` reads from an audit."""

    @property
    def ids(self) -> list[str]: ...

    @property
    def vectors(self) -> np.ndarray: ...

    @property
    def data_fingerprint(self) -> str: ...

    @property
    def encoder(self) -> Any: ...

    def label(self, k: int, kind: str = ...) -> np.ndarray: ...


class _TrainableAudit(_AuditLike, Protocol):
    """What :func:`train_probe_on_audit` reads from an audit: also its settings (the pool size)."""

    @property
    def settings(self) -> Any: ...


@dataclass(frozen=True, eq=False)
class ProbeTrainingResult:
    """Everything a probe training run produced.

    Attributes:
        probe: The selected probe (lowest validation RMSE over all families), with its card.
        family_probes: The best probe of each swept family (the selected one included).
        sweep: Validation RMSE of every configuration tried (empty when loaded from disk).
        split: The entity split.
        test_ids: Entity id per test row.
        test_y: Empirical test labels (for the calibration plot).
        test_pred: The selected probe's test predictions.

    Example:
        >>> result = train_probe(X, y, ids, budget="tiny")  # doctest: +SKIP
        >>> result.probe.save("probe-k10")  # doctest: +SKIP
        >>> for name, m in result.table_rows():  # doctest: +SKIP
        ...     print(name, round(m["rmse"], 3), round(m["pearson"], 3))
    """

    probe: TrainedProbe
    family_probes: Mapping[str, TrainedProbe]
    sweep: tuple[SweepRow, ...]
    split: EntitySplit
    test_ids: list[str]
    test_y: np.ndarray
    test_pred: np.ndarray

    @property
    def card(self) -> ProbeCard:
        """The selected probe's card."""
        return self.probe.card

    @property
    def test_metrics(self) -> dict[str, float]:
        """Test metrics of the selected probe (``card.metrics["test"]``)."""
        return dict(self.card.metrics["test"])

    def table_rows(self) -> list[tuple[str, dict[str, float]]]:
        """Rows of a Table-3-like comparison on the test split.

        Returns:
            ``[(name, metrics), ...]``: ``"All One"``, ``"All Zero"``, then each swept family's best
            probe (``"Ridge"``, ``"XGBoost"``, ``"MLP"``), the selected one marked ``" (selected)"``.
        """
        metrics = self.card.metrics
        rows = [
            ("All One", dict(metrics["baselines"]["all_one"])),
            ("All Zero", dict(metrics["baselines"]["all_zero"])),
        ]
        for family in FAMILIES:
            if family in metrics["per_family"]:
                name = DISPLAY_NAMES[family]
                if family == self.card.family:
                    name += " (selected)"
                rows.append((name, dict(metrics["per_family"][family])))
        return rows

    @classmethod
    def from_saved(cls, directory: str | Path, audit: _AuditLike) -> ProbeTrainingResult:
        """Rebuild the result of a saved probe from the audit it was trained on.

        The split is recomputed from the card's seed and fractions, so ``test_y`` and ``test_pred``
        are the ones of training; the per-family and baseline rows come from the card.

        Args:
            directory: The probe folder.
            audit: The :class:`~argus_ir.audit.AuditResult` the probe was trained on.

        Returns:
            A result with ``sweep`` empty and only the selected probe in ``family_probes``.

        Raises:
            ProbeMismatchError: The probe belongs to another encoder or to other data.
        """
        enc = audit.encoder
        probe = TrainedProbe.load(
            directory,
            expect_retriever=enc.retriever_id,
            expect_dim=enc.dim,
            expect_pooling=enc.pooling,
        )
        card = probe.card
        if card.data_fingerprint and card.data_fingerprint != audit.data_fingerprint:
            raise ProbeMismatchError(
                f"the probe in {directory} was trained on data {card.data_fingerprint!r}, not on "
                f"this audit's data {audit.data_fingerprint!r}; its test split cannot be rebuilt"
            )
        split = split_by_entity(audit.ids, card.seed, card.split_fractions)
        X = np.asarray(audit.vectors)[split.test]
        y = np.asarray(audit.label(card.k, card.label_kind), dtype=np.float64)[split.test]
        return cls(
            probe=probe,
            family_probes={card.family: probe},
            sweep=(),
            split=split,
            test_ids=[audit.ids[i] for i in split.test],
            test_y=y,
            test_pred=probe.predict(X),
        )


def train_probe(
    X: np.ndarray,
    y: np.ndarray,
    ids: Sequence[str],
    *,
    families: Sequence[str] | None = None,
    budget: str = "cpu",
    seed: int = 0,
    card_fields: Mapping[str, Any] | None = None,
    fractions: tuple[float, float, float] = (0.7, 0.15, 0.15),
    show_progress: bool = True,
) -> ProbeTrainingResult:
    """Sweep probe families on an entity split and keep the one with the lowest validation RMSE.

    Args:
        X: Entity embeddings, ``(n, dim)``.
        y: RPS label per row, in [0, 1].
        ids: Entity id per row (the split is by id).
        families: Families to sweep; None = every family whose extra is installed (others are
            skipped with a warning). Naming a family whose extra is missing raises.
        budget: Sweep size: ``"tiny"``, ``"cpu"`` or ``"full"`` (see :mod:`argus_ir.probes.sweep`).
        seed: Seed of the split, the random subset of the sweep and the models.
        card_fields: What the card records about the embedding space and label: any of
            ``retriever_id``, ``pooling``, ``dim``, ``k``, ``n_neutrals``, ``tau``, ``label_kind``,
            ``data_fingerprint``. A missing ``retriever_id`` or ``pooling`` is recorded as
            ``"unknown"`` (such a probe then fails every retriever check on load); a missing
            fingerprint is computed from ``X``, ``y`` and ``ids``.
        fractions: Train/validation/test shares of entities.
        show_progress: Show a progress bar over the sweep.

    Returns:
        A :class:`ProbeTrainingResult`. The selected probe's ``card.metrics`` holds ``"test"``
        (:func:`~argus_ir.probes.metrics.all_metrics` on the test split), ``"validation"``
        (``{"rmse"}``), ``"baselines"`` (``{"all_zero", "all_one"}`` on the test split) and
        ``"per_family"`` (test metrics plus ``"val_rmse"`` of each family's best configuration).

    Raises:
        ArgusInputError: Malformed inputs, unknown card fields or families, a ``dim`` that differs
            from ``X``, or fewer than 10 entities.
        MissingExtraError: A family named in ``families`` needs an extra that is not installed.
    """
    X = as_matrix(X)
    y = check_labels(y, X.shape[0])
    ids = [str(i) for i in ids]
    if len(ids) != X.shape[0]:
        raise ArgusInputError(f"X has {X.shape[0]} rows but ids has {len(ids)} entries")
    if len(set(ids)) < _MIN_ENTITIES:
        raise ArgusInputError(
            f"need at least {_MIN_ENTITIES} distinct entities to train a probe, got {len(set(ids))}"
        )
    fields_in = dict(card_fields or {})
    unknown = sorted(set(fields_in) - set(_CARD_FIELDS))
    if unknown:
        raise ArgusInputError(f"unknown card_fields {unknown}; allowed: {list(_CARD_FIELDS)}")
    dim = int(fields_in.pop("dim", X.shape[1]))
    if dim != X.shape[1]:
        raise ArgusInputError(f"card_fields says dim {dim} but X has {X.shape[1]} columns")
    if fields_in.get("label_kind", "empirical") not in LABEL_KINDS:
        raise ArgusInputError(
            f"label_kind must be one of {LABEL_KINDS}, got {fields_in['label_kind']!r}"
        )
    if not 0.0 <= float(fields_in.get("tau", 0.3)) <= 1.0:
        raise ArgusInputError(f"tau must be in [0, 1], got {fields_in['tau']}")
    chosen = resolve_families(families)
    configs = sweep_configs(chosen, budget, seed)

    split = split_by_entity(ids, seed, fractions)
    Xtr, Xval, Xte = X[split.train], X[split.val], X[split.test]
    ytr, yval, yte = y[split.train], y[split.val], y[split.test]
    rows, best = run_sweep(configs, Xtr, ytr, Xval, yval, show_progress=show_progress)

    val_rmse = {f: min(r.val_rmse for r in rows if r.family == f) for f in best}
    winner = min(best, key=lambda f: (val_rmse[f], FAMILIES.index(f)))
    per_family: dict[str, dict[str, float]] = {}
    preds: dict[str, np.ndarray] = {}
    for family, model in best.items():
        preds[family] = model.predict(Xte)
        per_family[family] = {**all_metrics(yte, preds[family]), "val_rmse": val_rmse[family]}
    base = baselines(yte)
    fingerprint = fields_in.get("data_fingerprint") or _fingerprint(X, y, ids)
    family_probes = {}
    for family, model in best.items():
        card = ProbeCard(
            retriever_id=str(fields_in.get("retriever_id", "unknown")),
            pooling=str(fields_in.get("pooling", "unknown")),
            dim=dim,
            k=int(fields_in.get("k", 0)),
            n_neutrals=int(fields_in.get("n_neutrals", 0)),
            tau=float(fields_in.get("tau", 0.3)),
            label_kind=str(fields_in.get("label_kind", "empirical")),
            data_fingerprint=str(fingerprint),
            family=family,
            params=model.params,
            fit_info=dict(model.fit_info),
            metrics={
                "test": {k: v for k, v in per_family[family].items() if k != "val_rmse"},
                "validation": {"rmse": val_rmse[family]},
                "baselines": base,
                "per_family": per_family,
            },
            split_sizes=split.sizes(),
            split_fractions=fractions,
            seed=seed,
        )
        family_probes[family] = TrainedProbe(card=card, model=model)
    return ProbeTrainingResult(
        probe=family_probes[winner],
        family_probes=family_probes,
        sweep=tuple(rows),
        split=split,
        test_ids=[ids[i] for i in split.test],
        test_y=yte,
        test_pred=preds[winner],
    )


def audit_card_fields(
    audit: _TrainableAudit, k: int, *, label_kind: str = "empirical", tau: float = 0.3
) -> dict[str, Any]:
    """The ``card_fields`` of a probe trained on an audit's RPS at ``k``.

    The retriever, pooling and dimension come from the audit's encoder, the pool size from its
    settings and the data fingerprint from its data, so the card ties the probe to the embedding
    space and the entities it learned from.

    Args:
        audit: The :class:`~argus_ir.audit.AuditResult` trained on.
        k: The audited budget whose RPS is the label.
        label_kind: ``"empirical"`` (sampled pools, the paper's) or ``"expected"``.
        tau: The flagging threshold to record.
    """
    return {
        "retriever_id": audit.encoder.retriever_id,
        "pooling": audit.encoder.pooling,
        "dim": audit.encoder.dim,
        "k": k,
        "n_neutrals": audit.settings.n_neutrals,
        "tau": tau,
        "label_kind": label_kind,
        "data_fingerprint": audit.data_fingerprint,
    }


def train_probe_on_audit(
    audit: _TrainableAudit,
    k: int,
    *,
    label_kind: str = "empirical",
    tau: float = 0.3,
    families: Sequence[str] | None = None,
    budget: str = "cpu",
    seed: int = 0,
    show_progress: bool = True,
) -> ProbeTrainingResult:
    """:func:`train_probe` on an audit's mention vectors and RPS at ``k``, its card filled in by
    :func:`audit_card_fields` (what ``argus train-probe`` and ``argus demo`` train).

    Raises:
        ValueError: ``k`` was not audited (the audit's ``label`` says which were).
        ArgusInputError: As :func:`train_probe`.
    """
    return train_probe(
        audit.vectors,
        audit.label(k, label_kind),
        audit.ids,
        families=families,
        budget=budget,
        seed=seed,
        show_progress=show_progress,
        card_fields=audit_card_fields(audit, k, label_kind=label_kind, tau=tau),
    )
