"""The lineage keys argus writes into a view's metadata: one owner for every name.

Every index entry argus writes says where it came from: an original carries ``argus_source_id``
(itself) and ``argus_view = "original"``; a support view also names the flagged entities, the KB
passages it drew on, the lowest predicted RPS among them and, for synthesis, the prompt and the
LLM. Collapse reads ``argus_source_id`` to fold views back into their document; the adapters keep
every key of :data:`ARGUS_KEYS` out of embeddings and LLM prompts.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ARGUS_KEYS",
    "ENTITY_KEY",
    "FALLBACK_KEY",
    "KB_GENERATED_KEY",
    "KB_ID_KEY",
    "KB_MATCH_KEY",
    "KNOWLEDGE_ID_KEY",
    "KNOWLEDGE_KEY",
    "KNOWLEDGE_KEYS",
    "LLM_KEY",
    "ORIGINAL",
    "PROMPT_KEY",
    "RPS_KEY",
    "SOURCE_KEY",
    "VIEW_ID",
    "VIEW_KEY",
    "VIEW_NAME_KEY",
    "VIEW_UUID",
    "has_lineage",
    "is_argus_output",
    "is_genuine_original",
    "is_genuine_view",
    "is_view",
    "original_lineage",
    "view_id",
]

SOURCE_KEY = "argus_source_id"
"""The id of the document a view was made from (an original is its own source)."""
VIEW_KEY = "argus_view"
"""``"original"`` or the remedy kind that made the view."""
VIEW_NAME_KEY = "argus_view_key"
"""A view's readable key, ``<source id>#argus-<16 hex>``; its id is a UUIDv5 of this key."""
ENTITY_KEY = "argus_entity"
"""The flagged entities a view is about (surface forms, ``|``-joined)."""
KB_ID_KEY = "argus_kb_id"
"""The ids of the KB passages a view drew on (``|``-joined)."""
KB_MATCH_KEY = "argus_kb_match"
"""How each passage of :data:`KB_ID_KEY` was matched to its entity (``|``-joined, in the same
order): ``title``, ``alias``, ``gazetteer``, ``place-in-name``, ``checked-bm25``, ``bm25`` or ``llm``
(:data:`argus_ir.kb.composite.MATCH_KINDS`)."""
RPS_KEY = "argus_rps"
"""The lowest predicted RPS among the view's entities."""
KB_GENERATED_KEY = "argus_kb_generated"
"""``True`` when a view's knowledge came from an LLM, not a KB passage (:mod:`argus_ir.kb.llm`)."""
PROMPT_KEY = "argus_prompt"
"""The synthesis prompt version of a view an LLM wrote."""
LLM_KEY = "argus_llm"
"""The model that wrote a synthesis view."""
FALLBACK_KEY = "argus_fallback"
"""Why a synthesis view fell back to the descriptor view."""
KNOWLEDGE_KEY = "argus_knowledge"
"""On an original enriched in place: the knowledge written into its vector, one sentence per
entity (the index embeds the original's own string, a newline, then this; the stored text is the
user's). Absent on an original that was not enriched."""
KNOWLEDGE_ID_KEY = "argus_knowledge_kb_id"
"""On an enriched original: the KB passages its knowledge came from (``|``-joined)."""
KNOWLEDGE_KEYS = (KNOWLEDGE_KEY, KNOWLEDGE_ID_KEY)
"""The keys of in-place enrichment: the only lineage an original carries besides its own."""

ARGUS_KEYS = (
    SOURCE_KEY,
    VIEW_KEY,
    VIEW_NAME_KEY,
    ENTITY_KEY,
    KB_ID_KEY,
    KB_MATCH_KEY,
    RPS_KEY,
    KB_GENERATED_KEY,
    PROMPT_KEY,
    LLM_KEY,
    FALLBACK_KEY,
    KNOWLEDGE_KEY,
    KNOWLEDGE_ID_KEY,
)
"""Every lineage key a view may carry (adapters keep them out of embeddings and LLM prompts)."""

ORIGINAL = "original"
"""The ``argus_view`` of an original document, and the name of the unaugmented condition."""

VIEW_ID = re.compile(r".+#argus-[0-9a-f]{16}")
"""What every :func:`~argus_ir.remedy.texts.view_key` looks like (and the id of a view written before ids were UUIDs)."""

VIEW_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
"""What every :func:`view_id` looks like (a version-5 UUID)."""

VIEW_NAMESPACE = uuid.UUID("5d1c2f0e-7a52-4c1e-9b4a-0c6f3e2a9d17")
"""The UUIDv5 namespace of view ids (fixed: changing it changes every view id)."""


def view_id(key: str) -> str:
    """A view's id: the UUIDv5 of its :func:`view_key`, an id every vector store accepts (Qdrant
    takes only UUIDs and unsigned integers as point ids)."""
    name = key.encode("utf-8", "surrogatepass")  # uuid5 itself refuses a lone surrogate
    digest = hashlib.sha1(VIEW_NAMESPACE.bytes + name, usedforsecurity=False).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))  # what uuid.uuid5 computes


# what a record is, read from its lineage -------------------------------------------------------


def is_view(metadata: Mapping[str, Any] | None) -> bool:
    """Whether metadata marks an argus support view (not an original)."""
    kind = (metadata or {}).get(VIEW_KEY)
    return kind is not None and kind != ORIGINAL


def is_genuine_view(doc_id: str | None, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a record is a view as argus writes one: it is marked as a view, its
    ``argus_view_key`` is ``<its argus_source_id>#argus-<16 hex>`` and its id is that key's UUID.

    This tells argus's own output from a user's key that merely looks like argus's, or from a
    careless hand-written lineage; it is not a signature (anyone can compute the UUID), which is
    why trusting input lineage is an opt-in (``trust_lineage``).
    """
    meta = metadata or {}
    if not is_view(meta) or doc_id is None:
        return False
    key, source = meta.get(VIEW_NAME_KEY), meta.get(SOURCE_KEY)
    if not isinstance(key, str) or not isinstance(source, str) or not source:
        return False
    if not key.startswith(f"{source}#argus-") or VIEW_ID.fullmatch(key) is None:
        return False
    return str(doc_id) == view_id(key)


def is_genuine_original(doc_id: str | None, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a record is an original as argus writes one: its only lineage keys are
    ``argus_view = "original"`` and its own id as ``argus_source_id`` (:func:`original_lineage`),
    and where it was enriched in place, its knowledge (:data:`~argus_ir.lineage.KNOWLEDGE_KEYS`)."""
    if doc_id is None:
        return False
    lineage = {k: v for k, v in (metadata or {}).items() if k in ARGUS_KEYS}
    knowledge = [lineage.pop(k) for k in KNOWLEDGE_KEYS if k in lineage]
    if not all(isinstance(v, str) for v in knowledge):
        return False
    return lineage == original_lineage(str(doc_id))


def is_argus_output(doc_id: str | None, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a record is argus's own output with its lineage intact: a consistent view
    (:func:`is_genuine_view`) or a consistent original (:func:`is_genuine_original`). Any other
    record is a user's document, whatever ``argus_*`` keys it carries."""
    return is_genuine_view(doc_id, metadata) or is_genuine_original(doc_id, metadata)


def has_lineage(metadata: Mapping[str, Any] | None) -> bool:
    """Whether metadata carries any of argus's lineage keys."""
    return any(k in ARGUS_KEYS for k in metadata or {})


def original_lineage(doc_id: str) -> dict[str, str]:
    """The lineage an original carries in a framework's store: its own id as its source, so views
    fold into it however the store reports or re-keys ids."""
    return {SOURCE_KEY: doc_id, VIEW_KEY: ORIGINAL}
