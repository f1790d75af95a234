"""Planning and building views for a batch of diagnosed documents: :func:`apply_remedy`.

The original always passes through, first, even when building its views fails; the failure is
counted and described in :class:`~argus_ir.remedy.stats.RemedyStats`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.errors import ArgusInputError
from argus_ir.kb import DEFAULT_K_AUG, KnowledgeBase, Passage, ask
from argus_ir.kb.composite import match_kind
from argus_ir.lineage import (
    ENTITY_KEY,
    FALLBACK_KEY,
    KB_GENERATED_KEY,
    KB_ID_KEY,
    KB_MATCH_KEY,
    KNOWLEDGE_KEY,
    LLM_KEY,
    PROMPT_KEY,
    RPS_KEY,
    SOURCE_KEY,
    VIEW_KEY,
    VIEW_NAME_KEY,
)
from argus_ir.llm.base import LLM, Generation
from argus_ir.remedy.context import ContextCheck
from argus_ir.remedy.place import Plan, every_entity, knowledge_lineage, place
from argus_ir.remedy.stats import RemedyStats
from argus_ir.remedy.synthesis import (
    PROMPT_VERSION,
    RETRY_NOTE,
    build_prompt,
    check_rewrite,
)
from argus_ir.remedy.texts import (
    descriptor_text,
    focus_texts,
    passage_text,
    view_id,
    view_key,
)
from argus_ir.remedy.view import GENERATED_PREFIX, IN_PLACE, KINDS, View

__all__ = ["Plan", "apply_remedy", "plan_remedy"]

logger = logging.getLogger(__name__)


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
    entities: Sequence[EntityRisk] | None = None,
) -> Plan:
    plan: Plan = []
    flagged = diagnosis.flagged if entities is None else list(entities)
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
            if stats is not None and risk.flagged:
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


def _lineage(
    doc_id: str, kind: str, plan: Plan, passages: Sequence[Passage], kb: KnowledgeBase
) -> dict[str, Any]:
    matched: dict[str, str] = {}  # passage id -> how it was matched to the first entity it serves
    for risk, hits in plan:
        for p in hits:
            matched.setdefault(p.id, match_kind(kb, risk.surface, p))
    lineage = {
        SOURCE_KEY: doc_id,
        VIEW_KEY: kind,
        ENTITY_KEY: "|".join(r.surface for r, _ in plan),
        KB_ID_KEY: "|".join(p.id for p in passages),
        KB_MATCH_KEY: "|".join(matched.get(p.id, "bm25") for p in passages),
        RPS_KEY: round(min(r.rps for r, _ in plan), 6),
    }
    if any(p.id.startswith(GENERATED_PREFIX) for p in passages):
        lineage[KB_GENERATED_KEY] = True  # an LLM's line, not a KB passage (argus_ir.kb.llm)
    return lineage


def _view(lineage: dict[str, Any], text: str, *key: str) -> View:
    """A view named by its key (kept in the lineage) and identified by the key's UUID."""
    name = view_key(*key)
    lineage[VIEW_NAME_KEY] = name
    return View(view_id(name), text, lineage)


def _expansion_views(
    doc_id: str, text: str, plan: Plan, settings: _Settings, kb: KnowledgeBase
) -> list[View]:
    views = []
    fingerprint = settings.fingerprint()
    for risk, passages in plan:
        for passage in passages:
            lineage = _lineage(doc_id, "expansion", [(risk, passages)], [passage], kb)
            body = f"{text}\n\n{passage_text(passage)}"
            views.append(
                _view(lineage, body, doc_id, "expansion", risk.surface, passage.id, fingerprint)
            )
    return views


def _merged_view(
    doc_id: str, text: str, plan: Plan, settings: _Settings, kb: KnowledgeBase
) -> View:
    passages = list(dict.fromkeys(p for _, ps in plan for p in ps))  # a passage once
    lineage = _lineage(doc_id, "merged", plan, passages, kb)
    body = "\n\n".join([text, *(passage_text(p) for p in passages)])
    return _view(
        lineage,
        body,
        doc_id,
        "merged",
        lineage[ENTITY_KEY],
        lineage[KB_ID_KEY],
        settings.fingerprint(),
    )


def _descriptor_view(
    doc_id: str,
    text: str,
    plan: Plan,
    settings: _Settings,
    kb: KnowledgeBase,
    fallback: str | None = None,
) -> View:
    firsts = [(risk, passages[0]) for risk, passages in plan]
    lineage = _lineage(doc_id, "descriptor", plan, [p for _, p in firsts], kb)
    if fallback is not None:
        lineage[FALLBACK_KEY] = fallback
    return _view(
        lineage,
        descriptor_text(text, firsts),
        doc_id,
        "descriptor",
        lineage[ENTITY_KEY],
        lineage[KB_ID_KEY],
        settings.fingerprint("descriptor"),
    )


def _focus_views(
    doc_id: str, text: str, plan: Plan, settings: _Settings, kb: KnowledgeBase
) -> list[View]:
    firsts = [(risk, passages[0]) for risk, passages in plan]
    fingerprint = settings.fingerprint()
    views = []
    for body, members in focus_texts(text, firsts):
        part = [plan[i] for i in members]
        lineage = _lineage(doc_id, "focus", part, [firsts[i][1] for i in members], kb)
        views.append(
            _view(
                lineage, body, doc_id, "focus", lineage[ENTITY_KEY], lineage[KB_ID_KEY], fingerprint
            )
        )
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
    kb: KnowledgeBase,
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
            verdict = check_rewrite(text, reply.text or "", len(plan), [r.surface for r, _ in plan])
            if verdict.ok:
                passages = [p for _, ps in plan for p in ps]
                lineage = _lineage(doc_id, "synthesis", plan, passages, kb)
                lineage.update({PROMPT_KEY: settings.prompt, LLM_KEY: llm.model})
                out[doc_id] = _view(
                    lineage,
                    verdict.text,
                    doc_id,
                    "synthesis",
                    lineage[ENTITY_KEY],
                    lineage[KB_ID_KEY],
                    settings.fingerprint(),
                )
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
        out[doc_id] = _descriptor_view(doc_id, text, plan, settings, kb, fallback=reason)
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
    in_place: bool = True,
) -> Iterator[tuple[str, int]]:
    """What :func:`apply_remedy` would add, without writing views or calling an LLM (dry run).

    Yields ``(document id, views it would get)``; ``stats`` gets the projected counts (``views``,
    ``no_kb_hit``, ``context_dropped``, ``enriched`` and, for synthesis, ``llm_calls`` before any
    retry; ``in_place`` as in :func:`apply_remedy`). For
    ``focus`` the count is an upper bound: one view per entity, where entities that share a
    sentence share a view.
    """
    _check(kind, k_aug, max_views)
    stats = RemedyStats() if stats is None else stats
    users = every_entity(kind, kb)
    for diagnosis in diagnoses:
        stats.documents += 1
        stats.flagged_entities += len(diagnosis.flagged)
        entities = diagnosis.entities if users else None
        plan = _plan(diagnosis, kb, k_aug, context, stats, max_views, entities=entities)
        if kind in IN_PLACE:  # knowledge written into the original's vector adds no view
            plan, placed = place(kb, plan, kind, in_place, stats)
            stats.enriched += bool(placed)
        stats.count_kb_llm(kb)
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
        raise ArgusInputError(f"kind must be one of {KINDS}, got {kind!r}")
    if k_aug < 1:
        raise ArgusInputError(f"k_aug must be at least 1, got {k_aug}")
    if max_views is not None and max_views < 1:
        raise ArgusInputError(
            f"max_views must be at least 1 (or None for no budget), got {max_views}"
        )


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
    in_place: bool = True,
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
        in_place: The index embeds what argus computes for an original, so ``enrich`` and
            ``auto`` may write knowledge into its vector (else views: :func:`~.place.place`).

    Raises:
        ValueError: Unknown ``kind``, ``k_aug < 1``, ``max_views < 1``, synthesis without
            ``llm``, or a diagnosis that belongs to another document.
    """
    _check(kind, k_aug, max_views)
    if kind == "synthesis" and llm is None:
        raise ArgusInputError("the synthesis remedy needs an LLM backend (llm=...)")
    if batch_size < 1:
        raise ArgusInputError(f"batch_size must be at least 1, got {batch_size}")
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
    users = every_entity(kind, kb)
    while batch := list(islice(pairs, batch_size)):
        yield from _batch(batch, kb, settings, context, llm, stats, show_progress, in_place, users)


def _batch(
    batch: list[tuple[tuple[str, str], Diagnosis]],
    kb: KnowledgeBase,
    settings: _Settings,
    context: ContextCheck | None,
    llm: LLM | None,
    stats: RemedyStats,
    show_progress: bool,
    in_place: bool = True,
    users: bool = False,
) -> Iterator[View]:
    planned: list[tuple[str, str, Plan]] = []
    placed: dict[str, Plan] = {}  # knowledge that goes into the original's vector
    for (doc_id, text), diagnosis in batch:
        if diagnosis.doc_id != doc_id:
            raise ArgusInputError(
                f"diagnosis of {diagnosis.doc_id!r} given for document {doc_id!r}"
            )
        stats.documents += 1
        stats.flagged_entities += len(diagnosis.flagged)
        try:
            if context is not None:
                context.prepare(
                    (p, r.surface)
                    for r in diagnosis.flagged
                    for p, _ in ask(kb, r.surface, settings.k_aug, label=r.label, context=text)
                )
            entities = diagnosis.entities if users else None  # auto, the user's KB: all it names
            plan = _plan(
                diagnosis, kb, settings.k_aug, context, stats, settings.max_views, text, entities
            )
            if settings.kind in IN_PLACE:
                plan, placed[doc_id] = place(kb, plan, settings.kind, in_place, stats)
            planned.append((doc_id, text, plan))
        except Exception as exc:
            _fail(stats, doc_id, settings.kind, exc)
            planned.append((doc_id, text, []))  # no plan: the original alone
    stats.count_kb_llm(kb)  # the calls an LLM behind the KB made for these lookups
    synthesised: dict[str, View] = {}
    if settings.kind == "synthesis" and llm is not None:
        try:
            synthesised = _synthesise(planned, llm, settings, stats, show_progress, kb)
        except Exception as exc:
            for doc_id, _, plan in planned:
                if plan:
                    _fail(stats, doc_id, "synthesis", exc)
    for doc_id, text, plan in planned:
        original = knowledge_lineage(doc_id, placed.get(doc_id, []))
        if KNOWLEDGE_KEY in original:
            stats.enriched += 1
        yield View(doc_id, text, original)
        if not plan:
            continue
        try:
            if settings.kind == "expansion":
                views = _expansion_views(doc_id, text, plan, settings, kb)
            elif settings.kind == "merged":
                views = [_merged_view(doc_id, text, plan, settings, kb)]
            elif settings.kind in ("descriptor", *IN_PLACE):
                views = [_descriptor_view(doc_id, text, plan, settings, kb)]
            elif settings.kind == "focus":
                views = _focus_views(doc_id, text, plan, settings, kb)
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
