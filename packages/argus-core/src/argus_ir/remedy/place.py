"""Where knowledge goes: into an original's vector (in-place enrichment) or into a view beside it.

``enrich`` writes every flagged entity's knowledge into the original's vector; ``auto`` (the
default) writes there what the user's own KB names exactly, for every entity, and leaves the
rest to a descriptor view of the flagged entities (docs/augment.md, "Where knowledge goes").
"""

from __future__ import annotations

from typing import Any

from argus_ir.diagnose import EntityRisk
from argus_ir.kb import KnowledgeBase, Passage
from argus_ir.kb.composite import match_kind
from argus_ir.kb.reference import own_sources
from argus_ir.lineage import KNOWLEDGE_ID_KEY, KNOWLEDGE_KEY, SOURCE_KEY, VIEW_KEY
from argus_ir.remedy.stats import RemedyStats
from argus_ir.remedy.texts import knowledge_sentence
from argus_ir.remedy.view import GENERATED_PREFIX, ORIGINAL

__all__ = ["TRUSTED_MATCHES", "Plan", "every_entity", "knowledge_lineage", "place", "trusted"]

# (flagged entity, its KB passages after the context check) for one document
Plan = list[tuple[EntityRisk, list[Passage]]]


TRUSTED_MATCHES = frozenset({"title", "alias"})
"""How a passage of the user's own KB must be matched to be written into the original's vector
by ``auto``: by the entity's exact name or alias (never a BM25 answer)."""


def every_entity(kind: str, kb: KnowledgeBase) -> bool:
    """Whether a remedy plans every entity of a document, flagged or not: ``auto`` with a KB of
    the user's, whose knowledge of an entity it names goes in place whatever the probe says."""
    return kind == "auto" and bool(own_sources(kb))


def trusted(kb: KnowledgeBase, surface: str, passage: Passage) -> bool:
    """Whether ``auto`` writes ``passage`` into the vector of the original that mentions
    ``surface``: it comes from the user's own KB (:func:`~argus_ir.kb.reference.own_sources`,
    not a shipped source, not an LLM's line) and names the entity exactly
    (:data:`TRUSTED_MATCHES`)."""
    if passage.id.startswith(GENERATED_PREFIX):
        return False
    own = own_sources(kb)
    held = (getattr(source, "passage", None) for source in own)
    if not any(find is not None and find(passage.id) is not None for find in held):
        return False
    return match_kind(kb, surface, passage) in TRUSTED_MATCHES


def knowledge_lineage(doc_id: str, plan: Plan) -> dict[str, Any]:
    """An original's lineage with the knowledge of ``plan`` written in (one sentence per entity,
    from its first passage)."""
    sentences, ids = [], []
    for risk, passages in plan:
        sentence = knowledge_sentence(risk.surface, passages[0])
        if sentence and sentence not in sentences:
            sentences.append(sentence)
            ids.append(passages[0].id)
    out: dict[str, Any] = {SOURCE_KEY: doc_id, VIEW_KEY: ORIGINAL}
    if sentences:
        out.update({KNOWLEDGE_KEY: " ".join(sentences), KNOWLEDGE_ID_KEY: "|".join(ids)})
    return out


def place(
    kb: KnowledgeBase, plan: Plan, kind: str, in_place: bool, stats: RemedyStats
) -> tuple[Plan, Plan]:
    """Split a document's plan into (entities for a descriptor view, entities whose knowledge
    goes into the original's vector). ``enrich`` places every flagged entity; ``auto`` places
    what :func:`trusted` allows and keeps a view for the rest that the probe flagged. Without
    ``in_place`` what would have been placed goes into the view instead (for ``auto``, the
    entities the probe flagged: a view is not trusted more because its KB is)."""
    view: Plan
    if kind == "enrich":
        view, placed = [], plan
    else:
        view, placed = [], []
        for risk, passages in plan:
            if trusted(kb, risk.surface, passages[0]):
                placed.append((risk, passages))
            elif risk.flagged:
                view.append((risk, passages))
    if not in_place and placed:  # the index embeds the stored text: flagged entities get a view
        moved = placed if kind == "enrich" else [e for e in placed if e[0].flagged]
        stats.in_place_as_views += len(moved)
        return [*view, *moved], []
    return view, placed
