"""Remedies: support views indexed beside each untouched original (paper §5, App. D).

- ``expansion`` (the paper's KB expansion): one view ``d || p`` per (flagged entity, KB passage),
  so a document with ``N_d`` flagged entities becomes ``1 + k_aug * N_d`` index entries when the KB
  has ``k_aug`` hits for each.
- ``merged`` (no LLM; beyond the paper): one view ``d || p_1 || ... || p_m`` holding every KB
  passage of every flagged entity, so the index grows like synthesis (one view per flagged
  document) without an LLM.
- ``descriptor`` (no LLM; beyond the paper): one view of the document with a short KB description
  inserted after the first mention of each flagged entity.
- ``focus`` (no LLM; beyond the paper): one short view per sentence that mentions flagged
  entities: the document's opening line, then that sentence with each entity's short KB
  description after its mention. The view fits the retriever's window whatever the document's
  length, and it is about the entity in its context rather than the whole document.
- ``synthesis`` (the paper's KB-guided LLM synthesis): one view written by an LLM with the Fig. 8
  prompt, accepted only when it is the original plus short insertions
  (:func:`argus_ir.remedy.synthesis.check_rewrite`); a rejected reply is retried once, then the document
  gets its descriptor view instead (counted in :class:`RemedyStats`).

A view budget ``max_views`` (beyond the paper) caps the views of one document: its flagged entities
are taken riskiest first (lowest predicted RPS), each with its passages in KB order, until the
budget is spent; ``merged``, ``descriptor`` and ``synthesis`` views then hold those entities only.

An optional :class:`ContextCheck` (beyond the paper) drops KB passages whose embedding is too far
from the document's, so "half past nine" never gets the album's paragraph.

Every view carries its lineage in metadata (``argus_source_id``, ``argus_view``, ``argus_entity``,
``argus_kb_id``, ``argus_rps``) and a stable id: a hash of the source id, view kind, entity, KB
passage and the settings fingerprint. The original always passes through, first, even when
building its views fails; the failure is counted and described in :class:`RemedyStats`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import islice
from typing import Any

import numpy as np

from argus_ir._lru import LRU
from argus_ir.collapse import SOURCE_KEY
from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.kb import DEFAULT_K_AUG, KnowledgeBase, Passage, ask
from argus_ir.llm.base import LLM, Generation
from argus_ir.remedy.synthesis import (
    PROMPT_VERSION,
    RETRY_NOTE,
    build_prompt,
    check_rewrite,
    insertions_only,
)

__all__ = [
    "DEFAULT_CONTEXT_THRESHOLD",
    "DEFAULT_REMEDY",
    "KINDS",
    "ContextCheck",
    "RemedyStats",
    "View",
    "apply_remedy",
    "descriptor_text",
    "insertions_only",
    "masked_passage",
    "plan_remedy",
    "view_id",
]

logger = logging.getLogger(__name__)

KINDS = ("expansion", "merged", "descriptor", "focus", "synthesis")
DEFAULT_REMEDY = "descriptor"
GENERATED_PREFIX = "llm:"
"""Passage ids of generated knowledge (:mod:`argus_ir.kb.llm`); their views say so in lineage."""
"""The remedy of :class:`~argus_ir.pipeline.Argus`, ``argus augment``, ``argus evaluate`` and the
adapters when none is named (``docs/benchmarks.md`` has the measurements behind it)."""
ORIGINAL = "original"
_MAX_CLAUSE_WORDS = 12


@dataclass(frozen=True)
class View:
    """An index entry: an original document or one of its support views.

    Attributes:
        id: The original's id, or a stable hash for a view.
        text: The text to index.
        metadata: Lineage (``argus_source_id``, ``argus_view``, and for views ``argus_entity``,
            ``argus_kb_id``, ``argus_rps``; synthesis adds ``argus_prompt`` and ``argus_llm``, a
            fallback ``argus_fallback``).
    """

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def source_id(self) -> str:
        return str(self.metadata.get(SOURCE_KEY, self.id))

    @property
    def is_original(self) -> bool:
        return self.metadata.get("argus_view") == ORIGINAL


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
        no_text: Documents without text (empty, or a title alone): passed through, not
            diagnosed, no views.
        kb_sources: Flagged forms answered per KB source, for a KB of several sources
            (:class:`~argus_ir.kb.places.CompositeKB`: ``{"wikipedia": 120, "places": 41}``).
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
    no_text: int = 0
    fallback_reasons: list[tuple[str, str]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    kb_sources: dict[str, int] = field(default_factory=dict)

    @property
    def index_growth(self) -> float:
        """Index entries after the remedy divided by entries before."""
        return (self.documents + self.views) / self.documents if self.documents else 1.0

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
        """Rebuild from :meth:`to_dict`'s output (a resumed run continues its counts)."""
        counts = {f.name: int(data.get(f.name, 0)) for f in fields(cls) if f.type == "int"}
        return cls(
            **counts,
            fallback_reasons=[(str(a), str(b)) for a, b in data["fallback_reasons"]],
            failures=[(str(a), str(b)) for a, b in data["failures"]],
            kb_sources={str(k): int(v) for k, v in dict(data.get("kb_sources") or {}).items()},
        )


CONTEXT_CACHE_SIZE = 20_000
"""Passage vectors a :class:`ContextCheck` keeps (least recently used forgotten first)."""

DEFAULT_CONTEXT_THRESHOLD = 0.15
"""A starting point for :class:`ContextCheck`, set from a handful of hand-checked pairs under MiniLM."""


class ContextCheck:
    """Drops KB passages about another sense of the name (beyond the paper).

    A passage is kept when the cosine between the document's vector and the passage's vector is at
    least ``threshold``. The passage is embedded with the words of its title and of the entity's
    surface form removed: the name is shared by construction, and leaving it in lets the name alone
    carry the similarity ("half past nine" then looks close to the album *Half Past Nine*).

    Args:
        embed: Texts -> ``(n, dim)`` document vectors from the same retriever that produced the
            diagnoses' ``doc_vector`` (e.g. ``encoder.embed_documents``).
        threshold: Lowest cosine to keep a passage (:data:`DEFAULT_CONTEXT_THRESHOLD` is a starting
            point, not a tuned value).

    Passage vectors are cached per (passage, surface form), the last
    :data:`CONTEXT_CACHE_SIZE` of them.
    """

    def __init__(
        self, embed: Callable[[list[str]], np.ndarray], threshold: float = DEFAULT_CONTEXT_THRESHOLD
    ) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"the context threshold is a cosine in [-1, 1], got {threshold}")
        self.embed = embed
        self.threshold = float(threshold)
        self._vectors: LRU[tuple[str, str], np.ndarray] = LRU(CONTEXT_CACHE_SIZE)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_vectors": LRU(CONTEXT_CACHE_SIZE)}

    def prepare(self, pairs: Iterable[tuple[Passage, str]]) -> None:
        """Embed the (passage, surface form) pairs not seen yet, in one batch."""
        new = {(p.id, s): masked_passage(p, s) for p, s in pairs if (p.id, s) not in self._vectors}
        if not new:
            return
        vectors = np.asarray(self.embed(list(new.values())), np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        for key, vector in zip(new, vectors):
            self._vectors[key] = vector

    def similarity(self, doc_vector: np.ndarray, passage: Passage, surface: str) -> float:
        """Cosine between the document and the passage with the name masked."""
        self.prepare([(passage, surface)])
        vector = self._vectors.get((passage.id, surface))
        assert vector is not None  # prepare() just made it the most recent entry
        norm = float(np.linalg.norm(doc_vector))
        return float(vector @ doc_vector) / (norm or 1.0)

    def keeps(self, doc_vector: np.ndarray, passage: Passage, surface: str) -> bool:
        return self.similarity(doc_vector, passage, surface) >= self.threshold


_WORD = re.compile(r"\w+")


def masked_passage(passage: Passage, surface: str) -> str:
    """The passage text without the words of its title and of ``surface`` (what the check embeds)."""
    names = {w.lower() for w in _WORD.findall(f"{passage.title} {surface}") if len(w) > 1}
    kept = _WORD.sub(lambda m: "" if m.group(0).lower() in names else m.group(0), passage.text)
    return " ".join(kept.split())


def passage_text(passage: Passage) -> str:
    """How a KB passage is written into an expansion view (and embedded by the context check)."""
    return f"{passage.title}: {passage.text}"


def view_id(source_id: str, kind: str, entity: str, kb_id: str, settings: str) -> str:
    """Stable id of a view: the same inputs give the same id on every run and machine."""
    key = json.dumps([source_id, kind, entity, kb_id, settings], ensure_ascii=False)
    return f"{source_id}#argus-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


def _lead_clause(text: str) -> str:
    """The first clause of a passage, at most a dozen words (a descriptor when there is none)."""
    clause = re.split(r"(?<=[.;:!?])\s|,\s", text.strip(), maxsplit=1)[0].rstrip(".;:!?")
    words = clause.split()
    return " ".join(words[:_MAX_CLAUSE_WORDS]) + (" ..." if len(words) > _MAX_CLAUSE_WORDS else "")


def descriptor_text(text: str, inserts: Sequence[tuple[EntityRisk, Passage]]) -> str:
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


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n\s*")
_FOCUS_MAX_WORDS = 80


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence or line of ``text`` (a light splitter, no model)."""
    spans, last = [], 0
    for m in _SENTENCE_BREAK.finditer(text):
        if m.start() > last:
            spans.append((last, m.start()))
        last = m.end()
    if last < len(text):
        spans.append((last, len(text)))
    return spans


def _describe(passage: Passage) -> str:
    return passage.description.strip() or _lead_clause(passage.text)


def _trim_words(text: str, centre: int, limit: int) -> str:
    """At most ``limit`` words of ``text``, centred on character offset ``centre``."""
    words = list(re.finditer(r"\S+", text))
    if len(words) <= limit:
        return text
    at = next((i for i, w in enumerate(words) if w.end() > centre), len(words) - 1)
    lo = max(0, min(at - limit // 2, len(words) - limit))
    hi = lo + limit
    return text[words[lo].start() : words[hi - 1].end()]


def focus_texts(
    text: str, inserts: Sequence[tuple[EntityRisk, Passage]]
) -> list[tuple[str, list[int]]]:
    """The focus views of ``text``: one per sentence holding a first mention of an entity.

    Each is the opening sentence (or title line) of the text, then the sentence with
    `` (description)`` after each entity's first mention, cut to about 80 words around the
    first of them. Returns ``(view text, indices into inserts)`` in sentence order.
    """
    spans = sentence_spans(text)
    if not spans:
        return []
    by_sentence: dict[int, list[int]] = {}
    for i, (risk, _) in enumerate(inserts):
        pos = risk.mentions[0].start
        s = next((j for j, (a, b) in enumerate(spans) if a <= pos < b), len(spans) - 1)
        by_sentence.setdefault(s, []).append(i)
    head = text[spans[0][0] : spans[0][1]]
    out = []
    for s, members in sorted(by_sentence.items()):
        a, b = spans[s]
        descriptions = ((inserts[i][0].mentions[0].end, _describe(inserts[i][1])) for i in members)
        pieces = sorted((pos, f" ({desc})") for pos, desc in descriptions if desc)
        body, last = [], a
        for pos, insert in pieces:
            pos = min(max(pos, a), b)
            body += [text[last:pos], insert]
            last = pos
        body.append(text[last:b])
        sentence = _trim_words(
            "".join(body), inserts[members[0]][0].mentions[0].start - a, _FOCUS_MAX_WORDS
        )
        view = sentence if s == 0 else f"{_trim_words(head, 0, _FOCUS_MAX_WORDS // 2)}\n{sentence}"
        out.append((view, members))
    return out


# (flagged entity, its KB passages after the context check) for one document
Plan = list[tuple[EntityRisk, list[Passage]]]


@dataclass(frozen=True)
class _Settings:
    kind: str
    k_aug: int
    kb: str
    context: float | None
    llm: str | None
    prompt: str | None
    max_views: int | None = None

    def fingerprint(self, kind: str | None = None) -> str:
        kind = kind or self.kind
        data: dict[str, Any] = {"kind": kind, "k_aug": self.k_aug, "kb": self.kb}
        if self.context is not None:
            data["context"] = self.context
        if self.max_views is not None:
            data["max_views"] = self.max_views
        if kind == "synthesis":
            data.update(llm=self.llm, prompt=self.prompt)
        return json.dumps(data, sort_keys=True)


def _plan(
    diagnosis: Diagnosis,
    kb: KnowledgeBase,
    k_aug: int,
    context: ContextCheck | None,
    stats: RemedyStats | None,
    max_views: int | None = None,
    text: str | None = None,
) -> Plan:
    plan: Plan = []
    flagged = diagnosis.flagged
    if max_views is not None:  # riskiest first; the budget is spent in that order below
        flagged = sorted(flagged, key=lambda r: r.rps)
    budget = max_views
    for risk in flagged:
        if budget is not None and budget <= 0:
            if stats is not None:
                stats.over_budget += 1
            continue
        hits = [p for p, _ in ask(kb, risk.surface, k_aug, label=risk.label, context=text)]
        if context is not None and hits:
            kept = [p for p in hits if context.keeps(diagnosis.doc_vector, p, risk.surface)]
            if stats is not None:
                stats.context_dropped += len(hits) - len(kept)
            hits = kept
        if not hits:
            if stats is not None:
                stats.no_kb_hit += 1
            continue
        source_of = getattr(kb, "source_of", None)
        if stats is not None and source_of is not None:
            source = source_of(hits[0].id) or "?"
            stats.kb_sources[source] = stats.kb_sources.get(source, 0) + 1
        if budget is not None:
            hits = hits[:budget]
            budget -= len(hits)
        plan.append((risk, hits))
    return plan


def _lineage(doc_id: str, kind: str, plan: Plan, passages: Sequence[Passage]) -> dict[str, Any]:
    lineage = {
        SOURCE_KEY: doc_id,
        "argus_view": kind,
        "argus_entity": "|".join(r.surface for r, _ in plan),
        "argus_kb_id": "|".join(p.id for p in passages),
        "argus_rps": round(min(r.rps for r, _ in plan), 6),
    }
    if any(p.id.startswith(GENERATED_PREFIX) for p in passages):
        lineage["argus_kb_generated"] = True  # an LLM's line, not a KB passage (argus_ir.kb.llm)
    return lineage


def _expansion_views(doc_id: str, text: str, plan: Plan, settings: _Settings) -> list[View]:
    views = []
    fingerprint = settings.fingerprint()
    for risk, passages in plan:
        for passage in passages:
            lineage = _lineage(doc_id, "expansion", [(risk, passages)], [passage])
            vid = view_id(doc_id, "expansion", risk.surface, passage.id, fingerprint)
            views.append(View(vid, f"{text}\n\n{passage_text(passage)}", lineage))
    return views


def _merged_view(doc_id: str, text: str, plan: Plan, settings: _Settings) -> View:
    passages = list(dict.fromkeys(p for _, ps in plan for p in ps))  # a passage once
    lineage = _lineage(doc_id, "merged", plan, passages)
    vid = view_id(
        doc_id, "merged", lineage["argus_entity"], lineage["argus_kb_id"], settings.fingerprint()
    )
    body = "\n\n".join([text, *(passage_text(p) for p in passages)])
    return View(vid, body, lineage)


def _descriptor_view(
    doc_id: str, text: str, plan: Plan, settings: _Settings, fallback: str | None = None
) -> View:
    firsts = [(risk, passages[0]) for risk, passages in plan]
    lineage = _lineage(doc_id, "descriptor", plan, [p for _, p in firsts])
    if fallback is not None:
        lineage["argus_fallback"] = fallback
    vid = view_id(
        doc_id,
        "descriptor",
        lineage["argus_entity"],
        lineage["argus_kb_id"],
        settings.fingerprint("descriptor"),
    )
    return View(vid, descriptor_text(text, firsts), lineage)


def _focus_views(doc_id: str, text: str, plan: Plan, settings: _Settings) -> list[View]:
    firsts = [(risk, passages[0]) for risk, passages in plan]
    fingerprint = settings.fingerprint()
    views = []
    for body, members in focus_texts(text, firsts):
        part = [plan[i] for i in members]
        lineage = _lineage(doc_id, "focus", part, [firsts[i][1] for i in members])
        vid = view_id(doc_id, "focus", lineage["argus_entity"], lineage["argus_kb_id"], fingerprint)
        views.append(View(vid, body, lineage))
    return views


def _token_budget(text: str, n_entities: int) -> int:
    """New tokens a synthesis reply may need: the text (~3 characters per token) plus insertions."""
    return len(text) // 3 + 24 * n_entities + 32


def _synthesise(
    batch: list[tuple[str, str, Plan]],
    llm: LLM,
    settings: _Settings,
    stats: RemedyStats,
    show_progress: bool,
) -> dict[str, View]:
    """One synthesis view (or descriptor fallback) per document of ``batch`` with a non-empty plan."""
    todo = [(doc_id, text, plan) for doc_id, text, plan in batch if plan]
    prompts = {
        doc_id: build_prompt(
            text, [(r.surface, ps) for r, ps in plan], settings.prompt or PROMPT_VERSION
        )
        for doc_id, text, plan in todo
    }
    out: dict[str, View] = {}
    reasons: dict[str, str] = {}
    pending = todo
    for attempt in range(2):
        if not pending:
            break
        asks = [
            prompts[d] + (RETRY_NOTE.format(reason=reasons[d]) if attempt else "")
            for d, _, _ in pending
        ]
        replies = _generate(
            llm, asks, max(_token_budget(t, len(p)) for _, t, p in pending), show_progress
        )
        stats.llm_calls += len(asks)
        if attempt:
            stats.llm_retries += len(asks)
        still = []
        for (doc_id, text, plan), reply in zip(pending, replies):
            if not reply.ok:
                reasons[doc_id] = f"the LLM call failed ({reply.error})"
                still.append((doc_id, text, plan))
                continue
            verdict = check_rewrite(text, reply.text or "", len(plan))
            if verdict.ok:
                passages = [p for _, ps in plan for p in ps]
                lineage = _lineage(doc_id, "synthesis", plan, passages)
                lineage.update(argus_prompt=settings.prompt, argus_llm=llm.model)
                vid = view_id(
                    doc_id,
                    "synthesis",
                    lineage["argus_entity"],
                    lineage["argus_kb_id"],
                    settings.fingerprint(),
                )
                out[doc_id] = View(vid, verdict.text, lineage)
            elif verdict.reason == "unchanged":
                stats.llm_unchanged += 1
            else:
                reasons[doc_id] = verdict.reason
                still.append((doc_id, text, plan))
        pending = still
    for doc_id, text, plan in pending:
        reason = f"synthesis rejected twice: {reasons[doc_id]}"
        logger.info("document %r: %s; descriptor view instead", doc_id, reason)
        stats.fallbacks += 1
        stats.fallback_reasons.append((doc_id, reason))
        out[doc_id] = _descriptor_view(doc_id, text, plan, settings, fallback=reason)
    return out


def _generate(
    llm: LLM, prompts: list[str], max_tokens: int, show_progress: bool
) -> list[Generation]:
    try:
        replies = llm.generate(prompts, max_tokens=max_tokens, show_progress=show_progress)
    except Exception as exc:  # a backend that raises fails every prompt of the call, reported
        logger.warning("LLM backend %r raised: %s", llm, exc)
        return [Generation(None, f"{type(exc).__name__}: {exc}") for _ in prompts]
    if len(replies) != len(prompts):
        return [
            Generation(None, f"backend returned {len(replies)} replies for {len(prompts)} prompts")
            for _ in prompts
        ]
    return replies


def plan_remedy(
    diagnoses: Iterable[Diagnosis],
    kb: KnowledgeBase,
    *,
    kind: str = "expansion",
    k_aug: int = DEFAULT_K_AUG,
    context: ContextCheck | None = None,
    stats: RemedyStats | None = None,
    max_views: int | None = None,
) -> Iterator[tuple[str, int]]:
    """What :func:`apply_remedy` would add, without writing views or calling an LLM (dry run).

    Yields ``(document id, views it would get)``; ``stats`` gets the projected counts (``views``,
    ``no_kb_hit``, ``context_dropped`` and, for synthesis, ``llm_calls`` before any retry). For
    ``focus`` the count is an upper bound: one view per entity, where entities that share a
    sentence share a view.
    """
    _check(kind, k_aug, max_views)
    stats = RemedyStats() if stats is None else stats
    for diagnosis in diagnoses:
        stats.documents += 1
        stats.flagged_entities += len(diagnosis.flagged)
        plan = _plan(diagnosis, kb, k_aug, context, stats, max_views)
        if kind == "expansion":
            n = sum(len(ps) for _, ps in plan)
        elif kind == "focus":  # one per sentence; without the text, one per entity bounds it
            n = len(plan)
        else:
            n = int(bool(plan))
        if kind == "synthesis":
            stats.llm_calls += n
        stats.views += n
        yield diagnosis.doc_id, n


def _check(kind: str, k_aug: int, max_views: int | None = None) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if k_aug < 1:
        raise ValueError(f"k_aug must be at least 1, got {k_aug}")
    if max_views is not None and max_views < 1:
        raise ValueError(f"max_views must be at least 1 (or None for no budget), got {max_views}")


def apply_remedy(
    documents: Iterable[tuple[str, str]],
    diagnoses: Iterable[Diagnosis],
    kb: KnowledgeBase,
    *,
    kind: str = "expansion",
    k_aug: int = DEFAULT_K_AUG,
    context: ContextCheck | None = None,
    llm: LLM | None = None,
    prompt_version: str = PROMPT_VERSION,
    batch_size: int = 32,
    stats: RemedyStats | None = None,
    show_progress: bool = False,
    max_views: int | None = None,
) -> Iterator[View]:
    """Yield each original, then its views, document by document (streamed in batches).

    Args:
        documents: ``(id, text)`` pairs, in the order of ``diagnoses``.
        diagnoses: The :class:`~argus_ir.diagnose.Diagnosis` of each document.
        kb: The reference KB.
        kind: ``"expansion"``, ``"merged"``, ``"descriptor"``, ``"focus"`` or ``"synthesis"``.
        k_aug: KB passages per flagged entity (the paper's 2).
        context: An optional :class:`ContextCheck` that drops off-topic passages.
        llm: The backend for ``"synthesis"``.
        prompt_version: The synthesis prompt (a file in ``argus_ir/prompts``).
        batch_size: Documents per batch (one LLM call over a batch's prompts).
        stats: Filled in as documents go by (pass one to read it afterwards).
        show_progress: Progress bars for LLM calls.
        max_views: At most this many views per document, riskiest entities first (``None``: no
            budget, as in the paper).

    Raises:
        ValueError: Unknown ``kind``, ``k_aug < 1``, ``max_views < 1``, synthesis without
            ``llm``, or a diagnosis that belongs to another document.
    """
    _check(kind, k_aug, max_views)
    if kind == "synthesis" and llm is None:
        raise ValueError("the synthesis remedy needs an LLM backend (llm=...)")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    stats = RemedyStats() if stats is None else stats
    settings = _Settings(
        kind,
        k_aug,
        kb.fingerprint,
        None if context is None else context.threshold,
        None if llm is None else llm.fingerprint,
        prompt_version if kind == "synthesis" else None,
        max_views,
    )
    pairs = zip(documents, diagnoses, strict=True)
    while batch := list(islice(pairs, batch_size)):
        yield from _batch(batch, kb, settings, context, llm, stats, show_progress)


def _batch(
    batch: list[tuple[tuple[str, str], Diagnosis]],
    kb: KnowledgeBase,
    settings: _Settings,
    context: ContextCheck | None,
    llm: LLM | None,
    stats: RemedyStats,
    show_progress: bool,
) -> Iterator[View]:
    planned: list[tuple[str, str, Plan]] = []
    for (doc_id, text), diagnosis in batch:
        if diagnosis.doc_id != doc_id:
            raise ValueError(f"diagnosis of {diagnosis.doc_id!r} given for document {doc_id!r}")
        stats.documents += 1
        stats.flagged_entities += len(diagnosis.flagged)
        try:
            if context is not None:
                context.prepare(
                    (p, r.surface)
                    for r in diagnosis.flagged
                    for p, _ in ask(kb, r.surface, settings.k_aug, label=r.label, context=text)
                )
            plan = _plan(diagnosis, kb, settings.k_aug, context, stats, settings.max_views, text)
            planned.append((doc_id, text, plan))
        except Exception as exc:
            _fail(stats, doc_id, settings.kind, exc)
            planned.append((doc_id, text, []))  # no plan: the original alone
    synthesised: dict[str, View] = {}
    if settings.kind == "synthesis" and llm is not None:
        try:
            synthesised = _synthesise(planned, llm, settings, stats, show_progress)
        except Exception as exc:
            for doc_id, _, plan in planned:
                if plan:
                    _fail(stats, doc_id, "synthesis", exc)
    for doc_id, text, plan in planned:
        yield View(doc_id, text, {SOURCE_KEY: doc_id, "argus_view": ORIGINAL})
        if not plan:
            continue
        try:
            if settings.kind == "expansion":
                views = _expansion_views(doc_id, text, plan, settings)
            elif settings.kind == "merged":
                views = [_merged_view(doc_id, text, plan, settings)]
            elif settings.kind == "descriptor":
                views = [_descriptor_view(doc_id, text, plan, settings)]
            elif settings.kind == "focus":
                views = _focus_views(doc_id, text, plan, settings)
            else:
                views = [synthesised[doc_id]] if doc_id in synthesised else []
        except Exception as exc:  # the original is out; report the failure and go on
            _fail(stats, doc_id, settings.kind, exc)
            continue
        stats.views += len(views)
        yield from views


def _fail(stats: RemedyStats, doc_id: str, kind: str, exc: Exception) -> None:
    logger.warning("document %r: %s views failed: %s", doc_id, kind, exc)
    stats.failures.append((doc_id, f"{type(exc).__name__}: {exc}"))
