"""Probes shipped with argus-ir as package data (``argus_ir/data/probes/<name>/``).

They are built by ``nox -s probes`` (``scripts/build_probes.py``) from the shared research data and
documented in ``docs/probes.md``. Each folder is an ordinary probe folder: ``card.json`` plus the
family's safe-format weights, so :meth:`TrainedProbe.load` reads it like any user-trained probe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from argus_ir.encoder.models import canonical_id
from argus_ir.errors import ArgusInputError
from argus_ir.probes.artifact import CARD_FILE, TrainedProbe

__all__ = ["ShippedProbe", "load_shipped_probe", "shipped_probe_path", "shipped_probes"]


@dataclass(frozen=True)
class ShippedProbe:
    """One shipped probe: its folder name, retriever id, k and family."""

    name: str
    retriever_id: str
    k: int
    family: str
    path: Path


def _root() -> Path:
    return Path(str(resources.files("argus_ir") / "data" / "probes"))


def shipped_probes() -> list[ShippedProbe]:
    """The shipped probes, sorted by retriever and k (empty if none are installed)."""
    root = _root()
    found = []
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if (p / CARD_FILE).is_file()):
            card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
            found.append(
                ShippedProbe(
                    folder.name, card["retriever_id"], int(card["k"]), card["family"], folder
                )
            )
    return sorted(found, key=lambda p: (p.retriever_id, p.k))


def shipped_probe_path(retriever: str = "minilm", k: int = 10) -> Path:
    """The folder of the shipped probe for ``retriever`` (alias or hub id) and ``k``.

    Raises:
        ArgusInputError: No shipped probe matches; the message lists the ones there are.
    """
    want = canonical_id(retriever)
    for probe in shipped_probes():
        if probe.retriever_id == want and probe.k == k:
            return probe.path
    have = ", ".join(f"{p.retriever_id} k={p.k}" for p in shipped_probes()) or "none"
    raise ArgusInputError(
        f"no shipped probe for retriever {want!r} at k={k} (shipped: {have}); "
        "train one with `argus train-probe`"
    )


def load_shipped_probe(retriever: str = "minilm", k: int = 10) -> TrainedProbe:
    """Load the shipped probe for ``retriever`` (an alias such as ``"mpnet"`` or a hub id) and ``k``.

    Raises:
        ArgusInputError: No shipped probe matches; the message lists the ones there are.
    """
    path = shipped_probe_path(retriever, k)
    return TrainedProbe.load(path, expect_retriever=canonical_id(retriever))
