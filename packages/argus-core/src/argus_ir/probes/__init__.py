"""Probes that predict RPS from an entity's embedding (paper §4, App. C).

Importing this package loads neither torch nor xgboost; a family imports its backend when it trains
(XGBoost also to predict). A trained probe is a folder with ``card.json`` and safe-format weights.

Example:
    >>> from argus_ir.probes import TrainedProbe, train_probe
    >>> result = train_probe(X, y, ids, budget="tiny", card_fields={"retriever_id": "minilm"})  # doctest: +SKIP
    >>> result.probe.save("probe")  # doctest: +SKIP
    >>> TrainedProbe.load("probe", expect_retriever="minilm").flag(X)  # doctest: +SKIP
"""

from argus_ir.probes.artifact import FORMAT_VERSION, ProbeCard, TrainedProbe
from argus_ir.probes.base import FAMILIES, ProbeModel
from argus_ir.probes.families import model_class
from argus_ir.probes.metrics import (
    BAND_EDGES,
    BAND_NAMES,
    all_metrics,
    baselines,
    classification_metrics,
    regression_metrics,
    tercile_bands,
)
from argus_ir.probes.mlp import MLPProbe
from argus_ir.probes.ridge import RidgeProbe
from argus_ir.probes.shipped import (
    ShippedProbe,
    load_shipped_probe,
    shipped_probe_path,
    shipped_probes,
)
from argus_ir.probes.sweep import BUDGETS, SweepConfig, SweepRow, resolve_families, sweep_configs
from argus_ir.probes.train import (
    EntitySplit,
    ProbeTrainingResult,
    audit_card_fields,
    split_by_entity,
    train_probe,
    train_probe_on_audit,
)
from argus_ir.probes.xgb import XGBoostProbe

__all__ = [
    "BAND_EDGES",
    "BAND_NAMES",
    "BUDGETS",
    "FAMILIES",
    "FORMAT_VERSION",
    "EntitySplit",
    "MLPProbe",
    "ProbeCard",
    "ProbeModel",
    "ProbeTrainingResult",
    "RidgeProbe",
    "ShippedProbe",
    "SweepConfig",
    "SweepRow",
    "TrainedProbe",
    "XGBoostProbe",
    "all_metrics",
    "audit_card_fields",
    "baselines",
    "classification_metrics",
    "load_shipped_probe",
    "model_class",
    "regression_metrics",
    "resolve_families",
    "shipped_probe_path",
    "shipped_probes",
    "split_by_entity",
    "sweep_configs",
    "tercile_bands",
    "train_probe",
    "train_probe_on_audit",
]
