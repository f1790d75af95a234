"""What a remedy did over a corpus: :class:`RemedyStats`, counted per document and merged per run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["RemedyStats"]


@dataclass
class RemedyStats:
    """What a remedy did over a corpus.

    Attributes:
        documents: Originals passed through.
        flagged_entities: Flagged surface forms over all documents.
        views: Views added.
        no_kb_hit: Flagged forms for which the KB had no passage (after the context check).
        context_dropped: KB passages the context check dropped.
        over_budget: Flagged forms left out because their document's ``max_views`` was spent.
        llm_calls: LLM prompts sent (retries included).
        llm_retries: Second tries after a rejected or failed first reply.
        llm_unchanged: Documents whose reply inserted nothing (no view: nothing to add).
        fallbacks: Documents that got the descriptor view because synthesis failed twice.
        fallback_reasons: ``(document id, reason)`` for each fallback.
        failures: ``(document id, error)`` for documents whose views could not be built (their
            originals still passed through).
        passed_through: Input records an earlier run wrote (they carry ``argus_view`` in their
            metadata: its originals and views), written back as read: no diagnosis, no views of
            views.
        stale_vectors: Records of an earlier run's output passed through by a run without
            vectors that came with the ``argus_vector`` that run wrote: written without it (it
            may no longer match what an index embeds for them; rerun with vectors to write them
            afresh).
        no_text: Documents without text (empty, or a title alone): passed through, not
            diagnosed, no views.
        kb_sources: Flagged forms answered per KB source, for a KB of several sources
            (:class:`~argus_ir.kb.places.CompositeKB`: ``{"wikipedia": 120, "places": 41}``).
        kb_llm_calls: Requests sent to the LLM behind the KB (``--kb-llm``,
            :class:`~argus_ir.kb.llm.LLMKnowledge`) for one-line knowledge of a mention, retries
            included, cached replies not; apart from ``llm_calls``, which counts synthesis.
        kb_llm_failures: Lookups whose KB-LLM call failed after its retries (the mention got no
            generated passage; the document's other views were still built).
        kb_llm_last_error: Why the last of those failed (``""`` when none did).
        kb_llm_gave_up: Why the run stopped asking the KB's LLM after
            :data:`~argus_ir.kb.llm.GIVE_UP_AFTER` failed lookups in a row (``""`` while it asks).
        kb_llm_refused: KB-LLM lines refused by the prompt's rules (over twelve words, a
            control or bidirectional character, an over-long word).
        enriched: Originals whose vector embeds knowledge written in place (``enrich``, ``auto``;
            the knowledge is in their ``argus_knowledge``).
        in_place_as_views: Flagged entities whose knowledge would have gone into the original's
            vector but went into a descriptor view, because the index embeds the stored text
            (no ``embed=True`` / ``--vectors``); unflagged ones ``auto`` would have written in
            place get nothing then.
    """

    documents: int = 0
    flagged_entities: int = 0
    views: int = 0
    no_kb_hit: int = 0
    context_dropped: int = 0
    over_budget: int = 0
    llm_calls: int = 0
    llm_retries: int = 0
    llm_unchanged: int = 0
    fallbacks: int = 0
    passed_through: int = 0
    stale_vectors: int = 0
    no_text: int = 0
    enriched: int = 0
    in_place_as_views: int = 0
    fallback_reasons: list[tuple[str, str]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    kb_sources: dict[str, int] = field(default_factory=dict)
    kb_llm_calls: int = 0
    kb_llm_failures: int = 0
    kb_llm_last_error: str = ""
    kb_llm_gave_up: str = ""
    kb_llm_refused: int = 0

    @property
    def index_growth(self) -> float:
        """Index entries after the remedy divided by entries before."""
        return (self.documents + self.views) / self.documents if self.documents else 1.0

    def count_kb_llm(self, kb: Any) -> None:
        """Add what the LLM behind ``kb`` did since it was last counted: ``kb`` itself or a
        source of it (a :class:`~argus_ir.kb.CompositeKB`'s) with a ``take_usage`` method
        (:meth:`argus_ir.kb.llm.LLMKnowledge.take_usage`); a KB without one adds nothing."""
        sources = getattr(kb, "sources", None)
        for source in [kb, *(sources.values() if isinstance(sources, Mapping) else ())]:
            take = getattr(source, "take_usage", None)
            if take is None:
                continue
            usage = take()
            self.kb_llm_calls += usage.calls
            self.kb_llm_failures += usage.failures
            self.kb_llm_last_error = usage.last_error or self.kb_llm_last_error
            self.kb_llm_gave_up = usage.gave_up or self.kb_llm_gave_up
            self.kb_llm_refused += usage.refused

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (lists of reasons and failures included)."""
        out: dict[str, Any] = {k: v for k, v in self.__dict__.items() if not isinstance(v, list)}
        out["index_growth"] = round(self.index_growth, 6)
        out["fallback_reasons"] = [list(r) for r in self.fallback_reasons]
        out["failures"] = [list(f) for f in self.failures]
        out["kb_sources"] = dict(sorted(self.kb_sources.items()))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RemedyStats:
        """Rebuild from :meth:`to_dict`'s output (a resumed run continues its counts); a field
        an older run's dict lacks starts empty."""
        plain: dict[str, Any] = {
            f.name: int(data.get(f.name, 0)) for f in fields(cls) if f.type == "int"
        }
        plain.update({f.name: str(data.get(f.name) or "") for f in fields(cls) if f.type == "str"})
        return cls(
            **plain,
            fallback_reasons=[(str(a), str(b)) for a, b in data.get("fallback_reasons") or []],
            failures=[(str(a), str(b)) for a, b in data.get("failures") or []],
            kb_sources={str(k): int(v) for k, v in dict(data.get("kb_sources") or {}).items()},
        )
