"""Scorers of the bias audit, each turning aligned queries and documents into one score per pair
(a dense encoder, BM25, or either after ARGUS adds its views), and the scoring of every setting's
pairs into statistics; the retrievers' code is imported inside the scorers, so importing the audit
stays light.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from argus_ir.bias.pairs import Pair
from argus_ir.bias.stats import BiasStat, paired_stat

Scorer = Callable[[Sequence[str], Sequence[str]], np.ndarray]
"""``(queries, documents) -> scores``, one score per aligned query-document pair."""


def dense_scorer(encoder: Any, show_progress: bool = False) -> Scorer:
    """Scores as the retriever ranks: the dot product of query and document embeddings."""
    from argus_ir.eval import embed_texts

    def score(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        unique_q = list(dict.fromkeys(queries))
        unique_d = list(dict.fromkeys(documents))
        qv = embed_texts(encoder, unique_q, show_progress)
        dv = embed_texts(encoder, unique_d, show_progress)
        qi = {q: i for i, q in enumerate(unique_q)}
        di = {d: i for i, d in enumerate(unique_d)}
        return np.einsum("ij,ij->i", qv[[qi[q] for q in queries]], dv[[di[d] for d in documents]])

    return score


def bm25_scorer(corpus: Sequence[str]) -> Scorer:
    """BM25 (Lucene variant, argus's SIRA index) with statistics from ``corpus``."""
    from argus_ir.lexical import BM25Index

    unique = list(dict.fromkeys(corpus))
    index = BM25Index.build((str(i), d) for i, d in enumerate(unique))
    row = {d: i for i, d in enumerate(unique)}

    def score(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(queries))
        cache: dict[str, np.ndarray] = {}
        for k, (q, d) in enumerate(zip(queries, documents)):
            if q not in cache:
                cache[q] = index.bm25(index.analyzer.tokens(q))
            out[k] = cache[q][row[d]]
        return out

    return score


def augmented_scorer(argus: Any, scorer: Scorer) -> tuple[Scorer, Counter[str]]:
    """Score each document as its best entry after ARGUS: the original or one of its views.

    ``argus`` (an :class:`argus_ir.Argus` whose retriever is the one ``scorer`` scores with)
    augments every distinct document once; the returned counter records how many documents got
    views and how many views there were.
    """
    counts: Counter[str] = Counter()

    def score(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(documents))
        ids = {d: f"doc-{i}" for i, d in enumerate(unique)}
        entries: dict[str, list[str]] = {}
        for view in argus.augment((ids[d], d) for d in unique):
            entries.setdefault(view.source_id, []).append(view.text)
        counts["documents"] += len(unique)
        counts["documents with views"] += sum(len(v) > 1 for v in entries.values())
        counts["views"] += sum(len(v) - 1 for v in entries.values())
        flat_q: list[str] = []
        flat_d: list[str] = []
        owner: list[int] = []
        for k, (q, d) in enumerate(zip(queries, documents)):
            for text in entries.get(ids[d], [d]):
                flat_q.append(q)
                flat_d.append(text)
                owner.append(k)
        flat = scorer(flat_q, flat_d)
        best = np.full(len(queries), -np.inf)
        np.maximum.at(best, np.array(owner), flat)
        return best

    return score, counts


def score_settings(
    pairs: Mapping[str, Sequence[Pair]], scorer: Scorer, retriever: str
) -> list[BiasStat]:
    """One :class:`BiasStat` per setting with pairs."""
    out = []
    for setting, ps in pairs.items():
        if not ps:
            continue
        queries = [p.query for p in ps]
        s1 = scorer(queries, [p.d1 for p in ps])
        s2 = scorer(queries, [p.d2 for p in ps])
        out.append(paired_stat(setting, retriever, s1, s2))
    return out
