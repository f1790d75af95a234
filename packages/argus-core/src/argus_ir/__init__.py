"""argus: find and fix retrieval blind spots in dense retrievers.

Importing this package is cheap: torch, transformers, xgboost and spaCy load only when a backend
that needs them is used.
"""

from argus_ir import _compat
from argus_ir._version import __version__
from argus_ir.audit import AuditResult, AuditSettings, encode_entities, run_audit
from argus_ir.audit.entities import AuditData, DropRecord, Entity, EntityGraph, LoadReport
from argus_ir.audit.rps import (
    Reliability,
    expected_hits,
    pair_stats,
    sampled_hits,
    split_half_reliability,
)
from argus_ir.errors import ArgusError, ArgusInputError, MissingExtraError, ProbeMismatchError
from argus_ir.pipeline import Argus
from argus_ir.remedy import RemedyStats, View

_compat.install()  # the module paths of 0.1 stay importable (argus_ir._compat.MOVED)

__all__ = [
    "Argus",
    "ArgusError",
    "ArgusInputError",
    "AuditData",
    "AuditResult",
    "AuditSettings",
    "DropRecord",
    "Entity",
    "EntityGraph",
    "LoadReport",
    "MissingExtraError",
    "ProbeMismatchError",
    "Reliability",
    "RemedyStats",
    "View",
    "__version__",
    "encode_entities",
    "expected_hits",
    "pair_stats",
    "run_audit",
    "sampled_hits",
    "split_half_reliability",
]
