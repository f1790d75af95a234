"""Issue 54, item 14: what a pgvector retriever's scores mean is the *retriever's* function.

``PgvectorEmbeddingRetriever`` takes a ``vector_function`` of its own (at init, or per run) that
overrides the store's, and ``PgvectorKeywordRetriever`` scores with ``ts_rank_cd`` (higher is
better) whatever the store's function. Each collapse here is checked against a computation that
shares nothing with the store's scoring: the numpy cosine of every stored entry
(``argus_ir.testing.cosine_reference``), or PostgreSQL's ``ts_rank_cd`` asked with plain SQL.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg
import pytest
from haystack import Document, Pipeline
from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret

from argus_ir.collapse import is_view_entry, rank_sources
from argus_ir.lineage import SOURCE_KEY
from argus_ir.testing import cosine_reference
from argus_ir.testing.postgres import postgres_server
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.retrievers.pgvector import (
    PgvectorEmbeddingRetriever,
    PgvectorKeywordRetriever,
)
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

TOP_K = 5
KEYWORDS = ("polonium", "Casablanca", "physicist", "Bach", "spices", "film")


@pytest.fixture
def database(tmp_path, monkeypatch) -> str:
    """A database of the test's own, named by ``PG_CONN_STR`` (so the stores serialise)."""
    name = "s_" + hashlib.sha1(str(tmp_path).encode(), usedforsecurity=False).hexdigest()[:20]
    url = postgres_server().database(name).url
    monkeypatch.setenv("PG_CONN_STR", url)
    return url


def _store(function: str, documents: list[Document]) -> PgvectorDocumentStore:
    table = "argus"
    store = PgvectorDocumentStore(
        connection_string=Secret.from_env_var("PG_CONN_STR"),
        table_name=table,
        keyword_index_name=f"{table}_keyword_index",
        embedding_dimension=384,
        vector_function=function,
        search_strategy="exact_nearest_neighbor",
    )
    store.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)
    return store


def _pipeline(retriever: Any, store: PgvectorDocumentStore) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", retriever)
    pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=store))
    pipe.connect("retriever.documents", "collapser.documents")
    return pipe


def _reference(entries: list[Document], embedding: list[float]) -> list[tuple[str, Any]]:
    ranked = cosine_reference(
        [e.id for e in entries],
        [e.embedding for e in entries],
        [e.meta for e in entries],
        embedding,
        top_k=TOP_K,
    )
    return [(src, pytest.approx(score, abs=1e-4)) for src, score, _ in ranked]


def _collapsed(pipe: Pipeline, asked: dict[str, Any], **collapser: Any) -> list[tuple[str, float]]:
    out = pipe.run({"retriever": asked, **({"collapser": collapser} if collapser else {})})
    return [(d.id, d.score) for d in out["collapser"]["documents"]]


@pytest.mark.parametrize(
    ("stored", "retrieved"),
    [("cosine_similarity", "l2_distance"), ("l2_distance", "inner_product")],
)
def test_item_14_the_retrievers_own_vector_function_is_read(augmented, database, stored, retrieved):
    """A retriever built with another ``vector_function`` than its store's: the collapse reads
    the retriever's (it ranked l2 distances as similarities, or similarities as distances, by the
    store's). All twelve queries equal the numpy cosine over every entry, scores included."""
    store = _store(stored, augmented.documents)
    try:
        entries = store.filter_documents()
        retriever = PgvectorEmbeddingRetriever(
            document_store=store, top_k=len(entries), vector_function=retrieved
        )
        pipe = _pipeline(retriever, store)
        for query, embedding in augmented.queries.items():
            got = _collapsed(pipe, {"query_embedding": embedding})
            assert got == _reference(entries, embedding), query
        # the same pipeline through YAML: the retriever's function is serialised with it
        loaded = Pipeline.loads(pipe.dumps())
        embedding = next(iter(augmented.queries.values()))
        assert _collapsed(loaded, {"query_embedding": embedding}) == _reference(entries, embedding)
        loaded.get_component("retriever").document_store.close()
    finally:
        store.close()


def test_item_14_a_per_run_vector_function_is_told_or_refused(augmented, database):
    """``run(vector_function="l2_distance")`` on a retriever of a ``cosine_similarity`` store: the
    collapser cannot see a per-run override. Given the same ``vector_function`` for that run, it
    equals the numpy cosine; not told, the hits' order contradicts the function it reads and it
    refuses with an error naming the store and the function (it ranked the distances backwards)."""
    store = _store("cosine_similarity", augmented.documents)
    try:
        entries = store.filter_documents()
        pipe = _pipeline(PgvectorEmbeddingRetriever(document_store=store), store)
        l2 = "l2_distance"
        for query, embedding in augmented.queries.items():
            asked = {"query_embedding": embedding, "top_k": len(entries)}
            told = _collapsed(pipe, {**asked, "vector_function": l2}, vector_function=l2)
            assert told == _reference(entries, embedding), query
            assert _collapsed(pipe, asked) == _reference(entries, embedding), query
        with pytest.raises(
            PipelineRuntimeError, match=r"PgvectorDocumentStore.*cosine_simil"
        ) as err:
            _collapsed(pipe, {**asked, "vector_function": l2})
        assert "'collapser': {'vector_function'" in str(err.value)
    finally:
        store.close()


def _ts_rank_cd(url: str, table: str, query: str) -> dict[str, float]:
    """PostgreSQL's ``ts_rank_cd`` of every matching entry, asked with plain SQL."""
    sql = (
        f"SELECT id, ts_rank_cd(to_tsvector('english', content), q) FROM {table}, "
        "plainto_tsquery('english', %s) q WHERE to_tsvector('english', content) @@ q"
    )
    with psycopg.connect(url) as conn:
        return {row[0]: float(row[1]) for row in conn.execute(sql, (query,))}


def _keyword_reference(entries: list[Document], ranks: dict[str, float]) -> list[tuple[str, Any]]:
    """The entries' ``ts_rank_cd`` (higher is better), folded by lineage."""
    keys, source_of, scores = [], {}, []
    for entry in entries:
        if entry.id not in ranks:
            continue
        source = str(entry.meta.get(SOURCE_KEY) or entry.id)
        key = entry.id if is_view_entry(entry.meta, entry.id) else source
        keys.append(key)
        source_of[key] = source
        scores.append(ranks[entry.id])
    ranked = rank_sources(zip(keys, scores, strict=True), source_of, top_k=TOP_K)
    return [(src, pytest.approx(score, abs=1e-6)) for src, score, _ in ranked]


def test_item_14_keyword_scores_rank_higher_first_on_an_l2_store(augmented, database):
    """``PgvectorKeywordRetriever`` on an ``l2_distance`` store: its ``ts_rank_cd`` scores are
    similarities (they were read as l2 distances, best last). Every keyword query's collapse equals
    the SQL ``ts_rank_cd`` folded by lineage; at least one ranks two sources or more."""
    store = _store("l2_distance", augmented.documents)
    try:
        entries = store.filter_documents()
        pipe = _pipeline(PgvectorKeywordRetriever(document_store=store, top_k=len(entries)), store)
        ranked = 0
        for query in KEYWORDS:
            want = _keyword_reference(entries, _ts_rank_cd(database, "argus", query))
            assert _collapsed(pipe, {"query": query}) == want, query
            ranked += len(want) > 1
        assert ranked >= 1
    finally:
        store.close()
