"""The settings card of an :class:`~argus_ir.pipeline.Argus`: what its output depends on.

Adapters key their caches by it, ``argus augment`` records it in its stats and checkpoints (a
checkpoint of other settings never resumes), and it costs no model load.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from argus_ir.io import folder_hash
from argus_ir.kb.shipped import kb_fingerprint
from argus_ir.llm import LLM
from argus_ir.probes.artifact import CARD_FILE
from argus_ir.remedy import WINDOW_ONLY
from argus_ir.text.mentions import DEFAULT_SPACY_MODEL
from argus_ir.vectors import VECTOR_PRECISION, pass_precision

if TYPE_CHECKING:
    from argus_ir.pipeline import Argus

__all__ = ["settings_card"]


def settings_card(argus: Argus) -> dict[str, Any]:
    """Every setting of ``argus`` that changes the output, with the probe and KB as content
    fingerprints.

    Cheap: it reads the probe's and KB's files (or their cards) and loads no model (with
    ``precision="auto"`` and no ``device`` it imports torch to see which device will run).
    Adapters use it as a cache key, so a retrained probe in the same folder, or an edited KB
    file, changes it.
    """
    from argus_ir.encoder.backends import pick_device
    from argus_ir.encoder.base import resolve_precision
    from argus_ir.encoder.models import canonical_id

    precision = pass_precision(argus.precision, argus.embed)
    probe_dir = argus._probe_dir()
    card = json.loads((probe_dir / CARD_FILE).read_text(encoding="utf-8"))
    out: dict[str, Any] = {
        "retriever": canonical_id(argus.retriever),
        "backend": argus.backend,
        # what the diagnosis pass runs at here ("auto" resolved: it decides near-τ flags)
        "precision": resolve_precision(precision, pick_device(argus.device))
        if precision == "auto"
        else precision,
        "probe": folder_hash(probe_dir),
        "tau": float(card.get("tau", 0.3)) if argus.tau is None else float(argus.tau),
        "remedy": argus.remedy,
        "k_aug": argus.k_aug,
        "kb": kb_fingerprint(argus.kb),
        "kb_match": argus.kb_match,
        "context_threshold": argus.context_threshold,
        "max_views": argus.max_views,
        "max_chars": argus.max_chars,
        "targeting": argus.targeting,
        "ner_model": argus.ner_model or DEFAULT_SPACY_MODEL,
        # how far each document is read (WINDOW_ONLY): a checkpoint of the other never resumes
        "diagnosis": "window" if argus.remedy in WINDOW_ONLY else "whole",
    }
    if argus.embed:  # records carry vectors: a checkpoint without them never resumes
        out["vectors"] = VECTOR_PRECISION
    if argus.remedy == "synthesis":
        llm = argus.llm
        out["llm"] = llm.fingerprint if isinstance(llm, LLM) else (llm or "transformers")
        out["prompt_version"] = argus.prompt_version
    return out
