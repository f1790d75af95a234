"""SIRA's LLM enrichment: search vocabulary for documents (corpus side) and queries (query side).

:func:`enrich_corpus` asks the LLM, once per document, for the search vocabulary the document
lacks; :func:`expand_queries` asks, once per query, for the vocabulary a relevant document would
use. Both return an :class:`Enrichment` (the usable phrases by id and the reply counts); every
reply is cached in a :class:`~argus_ir.llm.cache.CallCache`. :class:`SiraEnricher` is the corpus
side as the framework adapters call it at ingest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from argus_ir.errors import ArgusInputError
from argus_ir.lexical import Analyzer
from argus_ir.llm.base import LLM, Generation
from argus_ir.llm.cache import CallCache, cached_generate
from argus_ir.sira.replies import MAX_TERMS, TASKS, ReplyStats, build_prompt, usable_phrases

__all__ = ["SIRA_KEY", "Enrichment", "SiraEnricher", "enrich_corpus", "expand_queries"]


# -- the call cache ---------------------------------------------------------------------------------


def _ask(
    llm: LLM,
    prompts: Sequence[tuple[str, str]],
    cache: CallCache | None,
    stats: ReplyStats,
    max_tokens: int,
    show_progress: bool,
) -> list[Generation]:
    """Replies to ``(version, prompt)`` pairs (cached), counted into ``stats``."""
    replies, count = cached_generate(
        llm, prompts, cache, max_tokens=max_tokens, show_progress=show_progress
    )
    stats.calls += count.calls
    stats.cache_hits += count.cache_hits
    stats.llm_s += count.seconds
    return replies


# -- the two sides ----------------------------------------------------------------------------------


@dataclass
class Enrichment:
    """Phrases the LLM proposed per item (documents or queries), after the reply filters."""

    phrases: dict[str, list[str]]
    stats: ReplyStats


def enrich_corpus(
    documents: Sequence[tuple[str, str]],
    llm: LLM,
    *,
    task: str = "fact",
    cache: CallCache | None = None,
    max_terms: int = MAX_TERMS,
    max_tokens: int = 96,
    analyzer: Analyzer | None = None,
    show_progress: bool = False,
) -> Enrichment:
    """Corpus side: ask the LLM for each document's missing search vocabulary.

    The DF filter and the n-gram cut happen when the phrases go into
    :meth:`SiraIndex.build` (``enrichment=result.phrases``).
    """
    return _enrich(
        "corpus", documents, llm, task, cache, max_terms, max_tokens, analyzer, show_progress
    )


def expand_queries(
    queries: Mapping[str, str],
    llm: LLM,
    *,
    task: str = "fact",
    cache: CallCache | None = None,
    max_terms: int = MAX_TERMS,
    max_tokens: int = 96,
    analyzer: Analyzer | None = None,
    show_progress: bool = False,
) -> Enrichment:
    """Query side: each query's expected-response sketch, as phrases.

    Filter them against an index with :meth:`SiraIndex.expansion_terms` before scoring.
    """
    return _enrich(
        "query", list(queries.items()), llm, task, cache, max_terms, max_tokens, analyzer,
        show_progress,
    )  # fmt: skip


def _enrich(
    side: str,
    items: Sequence[tuple[str, str]],
    llm: LLM,
    task: str,
    cache: CallCache | None,
    max_terms: int,
    max_tokens: int,
    analyzer: Analyzer | None,
    show_progress: bool,
) -> Enrichment:
    """One prompt per ``(id, text)`` of ``side``; the usable phrases by id, and the counts."""
    analyzer = analyzer or Analyzer()
    stats = ReplyStats()
    prompts = [build_prompt(side, task, text, max_terms) for _, text in items]
    replies = _ask(llm, prompts, cache, stats, max_tokens, show_progress)
    phrases = {}
    for (key, text), reply in zip(items, replies):
        kept = usable_phrases(reply, text, analyzer, stats, side, task)
        if kept:
            phrases[key] = kept
    return Enrichment(phrases, stats)


# -- the ingest step of the adapters ----------------------------------------------------------------

SIRA_KEY = "sira_terms"
"""Metadata key under which the adapters store a document's enrichment phrases."""


class SiraEnricher:
    """Corpus-side enrichment of plain texts, as the framework adapters use it.

    Args:
        llm: A backend or an ``argus --llm`` spec (loaded on first use).
        task: Prompt variant (:data:`TASKS`).
        cache: Folder of the reply cache (``None``: no cache).
        max_terms: Phrases a prompt asks for.
    """

    def __init__(
        self,
        llm: str | LLM = "transformers",
        *,
        task: str = "fact",
        cache: str | Path | None = None,
        max_terms: int = MAX_TERMS,
    ) -> None:
        if task not in TASKS:
            raise ArgusInputError(f"unknown task {task!r} (one of {', '.join(TASKS)})")
        self.spec = llm
        self.task = task
        self.max_terms = max_terms
        self.cache = None if cache is None else CallCache(cache)
        self._llm: LLM | None = llm if isinstance(llm, LLM) else None

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from argus_ir.llm import load_llm

            self._llm = load_llm(str(self.spec))
        return self._llm

    def __call__(
        self, texts: Sequence[str], *, show_progress: bool = False
    ) -> tuple[list[list[str]], ReplyStats]:
        """Phrases for each text (``[]`` where the reply was unusable) and the reply stats."""
        items = [(str(i), t) for i, t in enumerate(texts)]
        result = enrich_corpus(
            items,
            self.llm,
            task=self.task,
            cache=self.cache,
            max_terms=self.max_terms,
            show_progress=show_progress,
        )
        return [result.phrases.get(str(i), []) for i in range(len(texts))], result.stats
