"""The coverage audit as one run on a dataset: extract entities, build the strata, place the
queries, fill gaps with LLM-written queries when asked, and score every retriever per query
(BM25 or a dense encoder, whose corpus vectors can be cached between runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from argus_ir.coverage.entities import entities_of
from argus_ir.coverage.gaps import SyntheticQuery, gap_queries
from argus_ir.coverage.report import CoverageReport
from argus_ir.coverage.stats import bootstrap_win_rate, coverage_metrics
from argus_ir.coverage.strata import _unit, build_strata, primary_of, stratify_queries


def _runs(
    name: str,
    docs: Sequence[tuple[str, str]],
    query_sets: Sequence[tuple[Mapping[str, str], Mapping[str, Mapping[str, int]]]],
    metric: str,
    show_progress: bool,
    vector_cache: Any = None,
) -> list[dict[str, float]]:
    """Per-query ``metric`` of retriever ``name`` (``"bm25"`` or an encoder) on each query set.

    With ``vector_cache`` (a folder) the document vectors are kept per model, so a rerun (other
    strata, another query set) or a resumed run embeds only the documents it has not seen.
    """
    from argus_ir.encoder.cache import VectorCache, cached_vectors, text_key
    from argus_ir.eval import dense_run, embed_texts, score_run

    ids = [d for d, _ in docs]
    out = []
    if name == "bm25":
        from argus_ir.lexical import BM25Index

        index = BM25Index.build(docs)
        for queries, qrels in query_sets:
            run = {q: dict(index.search(t, k=100)) for q, t in queries.items()}
            out.append({q: v[metric] for q, v in score_run(qrels, run, [metric])[1].items()})
        return out
    from argus_ir.encoder import load_encoder

    encoder = load_encoder(name)
    info = encoder.info
    cache = None
    if vector_cache is not None:
        cache = VectorCache.for_model(vector_cache, info.retriever_id, info.dim)
    texts = [t for _, t in docs]
    model_key = f"{info.retriever_id}|{encoder.precision}|document"
    dv = cached_vectors(
        texts,
        [text_key(model_key, t) for t in texts],
        lambda batch: embed_texts(encoder, batch, False),
        cache,
        show_progress=show_progress,
        desc=f"{name}: corpus",
    )
    for queries, qrels in query_sets:
        qids = list(queries)
        if not qids:
            out.append({})
            continue
        qv = embed_texts(encoder, [queries[q] for q in qids], False)
        run = dense_run(qv, qids, dv, ids, {})
        out.append({q: v[metric] for q, v in score_run(qrels, run, [metric])[1].items()})
    return out


def audit_coverage(
    data: Any,
    retrievers: Sequence[str] = ("minilm", "bm25"),
    *,
    embed_model: str = "minilm",
    n_clusters: int = 20,
    min_df: int = 2,
    linkage: str = "ward",
    llm: Any = None,
    per_stratum: int = 2,
    cache: Any = None,
    bootstrap: int = 1000,
    seed: int = 0,
    metric: str = "nDCG@10",
    mentioner: Any = None,
    vector_cache: Any = None,
    show_progress: bool = False,
) -> CoverageReport:
    """Strata, coverage and stratified scores of a :class:`~argus_ir.eval.BeirData`.

    Args:
        data: The dataset (corpus, queries, qrels).
        retrievers: ``"bm25"`` and/or encoders (``"minilm"``, ``"mpnet"``, ids, folders).
        embed_model: The encoder that embeds entity names for the clustering.
        n_clusters: Strata.
        min_df: Documents an entity needs to define the strata.
        linkage: Clustering of the entity vectors (:func:`build_strata`).
        llm: A backend for gap queries (``None``: no gap filling).
        per_stratum: Documents sampled per uncovered stratum for gap queries.
        cache: A :class:`~argus_ir.llm.CallCache` for the gap queries.
        bootstrap: Resamples for the win rates.
        seed: Seed of the bootstrap and of the document sample.
        metric: An ``ir-measures`` metric.
        mentioner: A mention extractor (default: spaCy's offline small English model;
            :class:`~argus_ir.text.mentions.LLMMentions` for an LLM's names, whose counts join the
            report's).
        vector_cache: A folder for the dense retrievers' document vectors (``None``: none);
            reruns skip the corpus embedding and an interrupted run resumes.
        show_progress: Progress bars.
    """
    from argus_ir.encoder import load_encoder
    from argus_ir.eval import embed_texts

    if mentioner is None:
        from argus_ir.text.mentions import SpacyMentions

        mentioner = SpacyMentions()
    encoder = load_encoder(embed_model)

    def embed(texts: Sequence[str]) -> np.ndarray:
        return _unit(embed_texts(encoder, list(texts), False))

    docs = [(d.id, d.index_text) for d in data.corpus]
    queries = {q: data.queries[q] for q in data.qrels if q in data.queries}
    doc_entities = entities_of(mentioner.extract([t for _, t in docs], show_progress=show_progress))
    strata = build_strata(
        [d for d, _ in docs],
        doc_entities,
        embed,
        n_clusters=n_clusters,
        min_df=min_df,
        linkage=linkage,
    )
    q_entities = dict(zip(queries, entities_of(mentioner.extract(list(queries.values())))))
    vectors, notes = stratify_queries(queries, q_entities, strata, embed)
    notes.update(strata.notes)
    extractor_notes = getattr(mentioner, "notes", None) or {}  # an LLM extractor counts its work
    notes.update({f"entity extraction: {k}": v for k, v in extractor_notes.items()})
    primary = {q: primary_of(v) for q, v in vectors.items()}
    coverage = coverage_metrics(strata, vectors)
    synthetic: list[SyntheticQuery] = []
    uncovered = [c for c in range(len(strata)) if c not in coverage["touched"]]
    if llm is not None and uncovered:
        synthetic, more = gap_queries(
            strata,
            dict(docs),
            uncovered,
            llm,
            per_stratum=per_stratum,
            seed=seed,
            cache=cache,
            show_progress=show_progress,
        )
        notes.update({f"gap filling: {k}": v for k, v in more.items()})
    syn_queries = {s.id: s.text for s in synthetic}
    syn_qrels = {s.id: {s.source: 1} for s in synthetic}
    scores: dict[str, dict[str, float]] = {}
    syn_scores: dict[str, dict[str, float]] = {}
    for name in retrievers:
        real, syn = _runs(
            name,
            docs,
            [(queries, data.qrels), (syn_queries, syn_qrels)],
            metric,
            show_progress,
            vector_cache,
        )
        scores[name], syn_scores[name] = real, syn
    wins: dict[str, dict[str, float]] = {}
    names = list(scores)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            wins[f"{a} vs {b}"] = bootstrap_win_rate(
                scores[a], scores[b], primary, samples=bootstrap, seed=seed
            )
    return CoverageReport(
        data.name, strata, coverage, primary, scores, synthetic, syn_scores, wins,
        dict(notes), metric, seed, bootstrap,
    )  # fmt: skip
