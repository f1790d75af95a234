"""The lineage keys argus writes into a view's metadata: one owner for every name.

Every index entry argus writes says where it came from: an original carries ``argus_source_id``
(itself) and ``argus_view = "original"``; a support view also names the flagged entities, the KB
passages it drew on, the lowest predicted RPS among them and, for synthesis, the prompt and the
LLM. Collapse reads ``argus_source_id`` to fold views back into their document; the adapters keep
every key of :data:`ARGUS_KEYS` out of embeddings and LLM prompts.
"""

from __future__ import annotations

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
    "PROMPT_KEY",
    "RPS_KEY",
    "SOURCE_KEY",
    "VIEW_KEY",
    "VIEW_NAME_KEY",
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
