"""SIRA's retrieval evaluation: plain BM25 against the enriched conditions on a BEIR data set.

:func:`evaluate_sira` builds the plain and the enriched index, expands the queries, scores each
condition of :data:`CONDITIONS` with the metrics of :mod:`argus_ir.eval` and tests each against
plain BM25 with a paired t-test per metric. Writing the result (JSON, markdown) is
:class:`~argus_ir.eval.EvalResult`'s job.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.lexical import DEFAULT_TAU, DEFAULT_WEIGHT, Analyzer, BM25Index, top_k
from argus_ir.llm.base import LLM
from argus_ir.llm.cache import CallCache
from argus_ir.sira.expand import Enrichment, enrich_corpus, expand_queries

__all__ = ["CONDITIONS", "evaluate_sira"]

CONDITIONS = ("original", "sira-corpus", "sira-query", "sira-both")
"""BM25 over the original text, then SIRA with corpus-side, query-side or both enrichments."""


def evaluate_sira(
    data: Any,
    llm: LLM | None,
    *,
    conditions: Sequence[str] = CONDITIONS,
    task: str = "fact",
    tau: float = DEFAULT_TAU,
    weight: float | Sequence[float] = DEFAULT_WEIGHT,
    cache: CallCache | None = None,
    analyzer: Analyzer | None = None,
    depth: int = 100,
    show_progress: bool = False,
) -> Any:
    """Score BM25 and the SIRA conditions on a :class:`~argus_ir.eval.BeirData`.

    Every condition is compared with ``"original"`` (plain BM25) by a paired t-test. ``llm_calls``
    is what a condition costs without a cache (one prompt per document and/or query);
    ``stats`` holds the reply filters' counts, the LLM time and the cache hits.
    A ``weight`` sequence adds one query-side condition per extra value (``sira-query-w0.5``).

    Returns:
        An :class:`~argus_ir.eval.EvalResult` with retriever ``"bm25"``.

    Raises:
        ArgusInputError: An unknown condition, or conditions that need an LLM without one.
    """
    from argus_ir.eval import ORIGINAL, Condition, EvalResult, paired_test, score_run

    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ArgusInputError(
            f"unknown SIRA condition {unknown[0]!r} (one of {', '.join(CONDITIONS)})"
        )
    needs_llm = [c for c in conditions if c != ORIGINAL]
    if needs_llm and llm is None:
        raise ArgusInputError(f"conditions {', '.join(needs_llm)} need an LLM")
    weights = [weight] if isinstance(weight, (int, float)) else list(weight)
    analyzer = analyzer or Analyzer()
    docs = [(d.id, d.index_text) for d in data.corpus]
    queries = {q: data.queries[q] for q in data.qrels if q in data.queries}

    t0 = time.perf_counter()
    plain = BM25Index.build(docs, analyzer=analyzer, tau=tau)
    plain_s = time.perf_counter() - t0
    indexes: dict[str, tuple[BM25Index, float, dict[str, Any]]] = {"plain": (plain, plain_s, {})}
    if {"sira-corpus", "sira-both"} & set(conditions):
        assert llm is not None
        t0 = time.perf_counter()
        enriched = enrich_corpus(
            docs, llm, task=task, cache=cache, analyzer=analyzer, show_progress=show_progress
        )
        index = BM25Index.build(docs, enrichment=enriched.phrases, analyzer=analyzer, tau=tau)
        build_s = time.perf_counter() - t0 - enriched.stats.llm_s
        built = {"corpus": enriched.stats.as_dict(), "index": dict(index.stats.__dict__)}
        indexes["enriched"] = (index, enriched.stats.llm_s + build_s, built)
    sketch: Enrichment | None = None
    if {"sira-query", "sira-both"} & set(conditions):
        assert llm is not None
        sketch = expand_queries(
            queries, llm, task=task, cache=cache, analyzer=analyzer, show_progress=show_progress
        )

    def run_of(index: BM25Index, w: float, expand: bool) -> tuple[dict, Counter[str], int]:
        run: dict[str, dict[str, float]] = {}
        dropped: Counter[str] = Counter()
        used = 0
        for qid, text in queries.items():
            terms: list[str] = []
            if expand and sketch is not None:
                terms, why = index.expansion_terms(sketch.phrases.get(qid, []), text)
                dropped.update(why)
                used += bool(terms)
            run[qid] = dict(top_k(index.ids, index.score(text, terms, w), depth))
        return run, dropped, used

    plan: list[tuple[str, str, bool, float]] = []
    for name in conditions:
        kind = "enriched" if name in ("sira-corpus", "sira-both") else "plain"
        expand = name in ("sira-query", "sira-both")
        for i, w in enumerate(weights if expand else weights[:1]):
            label = name if i == 0 else f"{name}-w{w:g}"
            plan.append((label, kind, expand, w))
    out: dict[str, Condition] = {}
    for label, kind, expand, w in plan:
        index, ingest_s, shared = indexes[kind]
        stats: dict[str, Any] = {**shared, "tau": tau, "task": task, "stemmer": analyzer.stemmer}
        run, dropped, used = run_of(index, w, expand)
        calls = len(docs) if kind == "enriched" else 0
        if expand and sketch is not None:
            calls += len(queries)
            stats.update(
                weight=w,
                query=sketch.stats.as_dict(),
                query_terms_dropped=dict(dropped),
                queries_expanded=used,
            )
        aggregate, per_query = score_run(data.qrels, run)
        out[label] = Condition(
            label,
            len(docs),
            1.0,
            ingest_s,
            calls,
            stats,
            aggregate,
            per_query,
        )
    base = out.get(ORIGINAL)
    if base is not None:
        for c in out.values():
            if c is not base:
                c.significance = {
                    m: paired_test(
                        {q: v[m] for q, v in base.per_query.items()},
                        {q: v[m] for q, v in c.per_query.items()},
                    )
                    for m in c.aggregate
                }
    return EvalResult(
        data.name,
        "bm25",
        len(queries),
        len(docs),
        out,
        notes=dict(data.notes),
        subset=bool(data.subset),
    )
