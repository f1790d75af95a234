"""Remedies: support views indexed beside each untouched original (paper §5, App. D).

- ``expansion`` (the paper's KB expansion): one view ``d || p`` per (flagged entity, KB passage),
  so a document with ``N_d`` flagged entities becomes ``1 + k_aug * N_d`` index entries when the KB
  has ``k_aug`` hits for each.
- ``descriptor`` (no LLM; beyond the paper): one view of the document with a short KB description
  inserted after the first mention of each flagged entity.

Every view carries its lineage in metadata (``argus_source_id``, ``argus_view``, ``argus_entity``,
``argus_kb_id``, ``argus_rps``) and a stable id: a hash of the source id, view kind, entity, KB
passage and the settings fingerprint. The original always passes through, first, even when
building its views fails; the failure is counted and described in :class:`RemedyStats`.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from argus_ir.collapse import SOURCE_KEY
from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.kb import DEFAULT_K_AUG, Passage, ReferenceKB

__all__ = [
    "KINDS",
    "RemedyStats",
    "View",
    "apply_remedy",
    "descriptor_text",
    "insertions_only",
    "view_id",
]

logger = logging.getLogger(__name__)

KINDS = ("expansion", "descriptor")
ORIGINAL = "original"
_MAX_CLAUSE_WORDS = 12


@dataclass(frozen=True)
class View:
    """An index entry: an original document or one of its support views.

    Attributes:
        id: The original's id, or a stable hash for a view.
        text: The text to index.
        metadata: Lineage (``argus_source_id``, ``argus_view``, and for views ``argus_entity``,
            ``argus_kb_id``, ``argus_rps``).
    """

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RemedyStats:
    """What a remedy did over a corpus.

    Attributes:
        documents: Originals passed through.
        flagged_entities: Flagged surface forms over all documents.
        views: Views added.
        no_kb_hit: Flagged forms for which the KB had no passage.
        failures: ``(document id, error)`` for documents whose views could not be built (their
            originals still passed through).
    """

    documents: int = 0
    flagged_entities: int = 0
    views: int = 0
    no_kb_hit: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def index_growth(self) -> float:
        """Index entries after the remedy divided by entries before."""
        return (self.documents + self.views) / self.documents if self.documents else 1.0


def view_id(source_id: str, kind: str, entity: str, kb_id: str, settings: str) -> str:
    """Stable id of a view: the same inputs give the same id on every run and machine."""
    key = json.dumps([source_id, kind, entity, kb_id, settings], ensure_ascii=False)
    return f"{source_id}#argus-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


def insertions_only(original: str, rewritten: str) -> bool:
    """True when ``rewritten`` is ``original`` with text inserted and nothing changed or removed."""
    matcher = difflib.SequenceMatcher(None, original, rewritten, autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


def _lead_clause(text: str) -> str:
    """The first clause of a passage, at most a dozen words (a descriptor when there is none)."""
    clause = re.split(r"(?<=[.;:!?])\s|,\s", text.strip(), maxsplit=1)[0].rstrip(".;:!?")
    words = clause.split()
    return " ".join(words[:_MAX_CLAUSE_WORDS]) + (" ..." if len(words) > _MAX_CLAUSE_WORDS else "")


def descriptor_text(text: str, inserts: list[tuple[EntityRisk, Passage]]) -> str:
    """``text`` with `` (description)`` inserted after the first mention of each entity."""
    pieces = []
    for risk, passage in inserts:
        desc = passage.description.strip() or _lead_clause(passage.text)
        if desc:
            pieces.append((risk.mentions[0].end, f" ({desc})"))
    out, last = [], 0
    for pos, insert in sorted(pieces, key=lambda p: p[0]):
        out += [text[last:pos], insert]
        last = pos
    out.append(text[last:])
    return "".join(out)


def _settings(kind: str, k_aug: int, kb: ReferenceKB) -> str:
    return json.dumps({"kind": kind, "k_aug": k_aug, "kb": kb.fingerprint}, sort_keys=True)


def _views_for(
    doc_id: str,
    text: str,
    diagnosis: Diagnosis,
    kb: ReferenceKB,
    kind: str,
    k_aug: int,
    stats: RemedyStats,
) -> list[View]:
    settings = _settings(kind, k_aug, kb)
    views = []
    inserts = []
    for risk in diagnosis.flagged:
        hits = kb.lookup(risk.surface, k=k_aug if kind == "expansion" else 1)
        if not hits:
            stats.no_kb_hit += 1
            continue
        if kind == "descriptor":
            inserts.append((risk, hits[0][0]))
            continue
        for passage, _ in hits:
            lineage = {
                SOURCE_KEY: doc_id,
                "argus_view": kind,
                "argus_entity": risk.surface,
                "argus_kb_id": passage.id,
                "argus_rps": round(risk.rps, 6),
            }
            vid = view_id(doc_id, kind, risk.surface, passage.id, settings)
            views.append(View(vid, f"{text}\n\n{passage.title}: {passage.text}", lineage))
    if inserts:
        new = descriptor_text(text, inserts)
        entities = "|".join(r.surface for r, _ in inserts)
        kb_ids = "|".join(p.id for _, p in inserts)
        lineage = {
            SOURCE_KEY: doc_id,
            "argus_view": kind,
            "argus_entity": entities,
            "argus_kb_id": kb_ids,
            "argus_rps": round(min(r.rps for r, _ in inserts), 6),
        }
        views.append(View(view_id(doc_id, kind, entities, kb_ids, settings), new, lineage))
    return views


def apply_remedy(
    documents: Iterable[tuple[str, str]],
    diagnoses: Iterable[Diagnosis],
    kb: ReferenceKB,
    *,
    kind: str = "expansion",
    k_aug: int = DEFAULT_K_AUG,
    stats: RemedyStats | None = None,
) -> Iterator[View]:
    """Yield each original, then its views, document by document.

    Args:
        documents: ``(id, text)`` pairs, in the order of ``diagnoses``.
        diagnoses: The :class:`~argus_ir.diagnose.Diagnosis` of each document.
        kb: The reference KB.
        kind: ``"expansion"`` or ``"descriptor"``.
        k_aug: KB passages per flagged entity (expansion).
        stats: Filled in as documents go by (pass one to read it afterwards).

    Raises:
        ValueError: Unknown ``kind``, ``k_aug < 1``, or a diagnosis that belongs to another document.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if k_aug < 1:
        raise ValueError(f"k_aug must be at least 1, got {k_aug}")
    stats = RemedyStats() if stats is None else stats
    for (doc_id, text), diagnosis in zip(documents, diagnoses, strict=True):
        if diagnosis.doc_id != doc_id:
            raise ValueError(f"diagnosis of {diagnosis.doc_id!r} given for document {doc_id!r}")
        stats.documents += 1
        stats.flagged_entities += len(diagnosis.flagged)
        yield View(doc_id, text, {SOURCE_KEY: doc_id, "argus_view": ORIGINAL})
        try:
            views = _views_for(doc_id, text, diagnosis, kb, kind, k_aug, stats)
        except Exception as exc:  # the original is out; report the failure and go on
            logger.warning("document %r: %s views failed: %s", doc_id, kind, exc)
            stats.failures.append((doc_id, f"{type(exc).__name__}: {exc}"))
            continue
        stats.views += len(views)
        yield from views
