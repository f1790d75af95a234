"""Embedding and exact dense search, as the evaluation indexes and ranks.

:func:`embed_texts` embeds as the retriever indexes; :func:`dense_rankings` / :func:`dense_run`
search every entry by inner product and fold views into their sources. The embedding cache keeps
each text's vector (and its share of the embedding time) across the conditions of one evaluation,
and optionally across runs. :mod:`argus_ir.bias` and :mod:`argus_ir.coverage` search this way too.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, rank_sources

__all__ = ["dense_rankings", "dense_run", "embed_texts"]


def dense_run(
    query_vectors: np.ndarray,
    query_ids: Sequence[str],
    entry_vectors: np.ndarray,
    entry_ids: Sequence[str],
    source_of: Mapping[str, str],
    *,
    depth: int = 100,
    chunk: int = 256,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> dict[str, dict[str, float]]:
    """Exact inner-product search over all entries; views collapsed to sources (best score).

    ``depth`` source documents are kept per query; enough entries are fetched that views of a
    few sources cannot crowd others out (each source has at most ``max views + 1`` entries).
    ``view_discount`` is :func:`argus_ir.collapse.collapse`'s.
    """
    rankings = dense_rankings(
        query_vectors,
        query_ids,
        entry_vectors,
        entry_ids,
        source_of,
        depth=depth,
        chunk=chunk,
        view_discount=view_discount,
    )
    return _as_run(rankings)


def dense_rankings(
    query_vectors: np.ndarray,
    query_ids: Sequence[str],
    entry_vectors: np.ndarray,
    entry_ids: Sequence[str],
    source_of: Mapping[str, str],
    *,
    depth: int = 100,
    chunk: int = 256,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> dict[str, list[tuple[str, float, str]]]:
    """:func:`dense_run` as ``query -> [(source, score, entry that gave the score)]``, best first."""
    per_source: dict[str, int] = {}
    for eid in entry_ids:
        src = source_of.get(eid, eid)
        per_source[src] = per_source.get(src, 0) + 1
    fetch = min(len(entry_ids), depth * max(per_source.values(), default=1))
    rank_sources((), view_discount=view_discount)  # the core's check of the discount
    # the discount is taken before the top entries are chosen, so the fetch is exact under it
    penalty = np.array(
        [view_discount if source_of.get(e, e) != e else 0.0 for e in entry_ids], dtype=np.float32
    )
    out: dict[str, list[tuple[str, float, str]]] = {}
    for start in range(0, len(query_ids), chunk):
        scores = query_vectors[start : start + chunk] @ entry_vectors.T
        if view_discount:
            scores = scores - penalty
        if fetch < scores.shape[1]:
            top = np.argpartition(-scores, fetch - 1, axis=1)[:, :fetch]
        else:
            top = np.tile(np.arange(scores.shape[1]), (scores.shape[0], 1))
        for row, qid in enumerate(query_ids[start : start + chunk]):
            hits = [(entry_ids[j], float(scores[row, j])) for j in top[row]]
            # the discount is already in the scores
            out[qid] = rank_sources(hits, source_of, top_k=depth, view_discount=0.0)
    return out


def _as_run(
    rankings: Mapping[str, Sequence[tuple[str, float, str]]],
) -> dict[str, dict[str, float]]:
    return {q: {src: score for src, score, _ in ranked} for q, ranked in rankings.items()}


class _EmbeddingCache:
    """Vectors by text within one evaluation, so every condition embeds each view once.

    Each text also keeps its share of the wall time of the batch that embedded it, so a condition's
    ingest time counts its views' embedding even when an earlier condition paid for it. With a
    ``folder`` (a :class:`~argus_ir.encoder.cache.VectorCache` per model) vectors also persist across
    runs; a text read from there is charged this run's seconds per character (its length capped at
    what the retriever reads), measured on what this run embedded or, when it embedded nothing,
    on a sample of up to 64 cached texts embedded again; :attr:`estimated` then turns true.
    """

    _CHARS_PER_TOKEN = 6  # a generous cap: past the window, more characters cost nothing

    def __init__(self, encoder: Any, show_progress: bool, folder: str | Path | None = None) -> None:
        self.encoder = encoder
        self.show_progress = show_progress
        self._rows: dict[str, tuple[np.ndarray, float]] = {}
        self.estimated = False
        self._seconds = 0.0
        self._chars = 0
        self._disk = None
        self._model_key = ""
        if folder is not None:
            from argus_ir.encoder.cache import VectorCache

            info = encoder.info
            self._model_key = f"{info.retriever_id}|sentence-transformers encode|fp32"
            self._disk = VectorCache.for_model(folder, info.retriever_id, info.dim)
        st_model = getattr(encoder, "sentence_transformer", None)
        window = getattr(st_model, "max_seq_length", None) or 512
        self._cap = int(window) * self._CHARS_PER_TOKEN

    def _cost(self, text: str) -> int:
        return min(len(text), self._cap) + 1

    def _embed(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        vectors = embed_texts(self.encoder, texts, self.show_progress)
        self._seconds += time.perf_counter() - t0
        self._chars += sum(self._cost(t) for t in texts)
        return vectors

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, float]:
        """``(vectors, seconds)``: seconds is the embedding time of these texts, cached or not."""
        from argus_ir.encoder.cache import cached_vectors, text_key

        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._rows))
        if todo:
            first = dict(zip(keys, texts))
            todo_texts = [first[k] for k in todo]
            if self._disk is None:
                t0 = time.perf_counter()
                vectors = self._embed(todo_texts)
                share = (time.perf_counter() - t0) / len(todo)
                self._rows.update((k, (v, share)) for k, v in zip(todo, vectors))
            else:
                disk_keys = [text_key(self._model_key, t) for t in todo_texts]
                hits = [k in self._disk for k in disk_keys]
                before = (self._seconds, self._chars)
                vectors = cached_vectors(
                    todo_texts,
                    disk_keys,
                    self._embed,
                    self._disk,
                    show_progress=self.show_progress,
                    desc="embedding",
                )
                new_s, new_c = self._seconds - before[0], self._chars - before[1]
                if any(hits) and not self._chars:
                    sample = [t for t, hit in zip(todo_texts, hits) if hit][:64]
                    self._embed(sample)  # measure the rate on this machine, this run
                rate = self._seconds / max(self._chars, 1)
                self.estimated = self.estimated or any(hits)
                for k, t, v, hit in zip(todo, todo_texts, vectors, hits):
                    cost = self._cost(t)
                    share = rate * cost if hit else new_s * cost / max(new_c, 1)
                    self._rows[k] = (v, share)
        if not keys:
            return np.zeros((0, self.encoder.dim), dtype=np.float32), 0.0
        rows = [self._rows[k] for k in keys]
        return np.stack([v for v, _ in rows]), sum(s for _, s in rows)


def _filling_the_window(encoder: Any, docs: Sequence[tuple[str, str]]) -> set[str] | None:
    """Ids of ``(id, text)`` documents that alone fill the retriever's input window (``None``:
    unknown).

    The retriever truncates an expansion view of such a document before the KB passage starts, so
    the view embeds like the original.
    """
    st_model = getattr(encoder, "sentence_transformer", None)
    limit = getattr(st_model, "max_seq_length", None)
    if st_model is None or not limit:
        return None
    texts = [text for _, text in docs]
    lengths = st_model.tokenizer(texts, add_special_tokens=True, verbose=False)  # no length warning
    return {doc_id for (doc_id, _), ids in zip(docs, lengths["input_ids"]) if len(ids) >= limit}


def embed_texts(encoder: Any, texts: Sequence[str], show_progress: bool) -> np.ndarray:
    """Embed as the retriever indexes (sentence-transformers' own encode when there is one)."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    st_model = getattr(encoder, "sentence_transformer", None)
    if st_model is not None:
        vectors = st_model.encode(
            list(texts), batch_size=64, show_progress_bar=show_progress, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)
    return np.asarray(encoder.embed_documents(list(texts), show_progress=show_progress))
