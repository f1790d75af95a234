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
from argus_ir.testing import cosine_reference, minilm_path
from argus_ir.testing.postgres import postgres_server
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.retrievers.pgvector import (
    PgvectorEmbeddingRetriever,
    PgvectorKeywordRetriever,
)
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

TOP_K = 5
MODEL = str(minilm_path())
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


def _folded(hits: list[Document]) -> list[tuple[str, Any]]:
    """The hits' own scores (higher is better) folded by lineage: what a collapser that reads
    them as they are returns."""
    keys, source_of, scores = [], {}, []
    for hit in hits:
        source = str(hit.meta.get(SOURCE_KEY) or hit.id)
        key = hit.id if is_view_entry(hit.meta, hit.id) else source
        keys.append(key)
        source_of[key] = source
        scores.append(hit.score)
    ranked = rank_sources(zip(keys, scores, strict=True), source_of, top_k=TOP_K)
    return [(src, pytest.approx(score, abs=1e-6)) for src, score, _ in ranked]


def _behind(store: PgvectorDocumentStore, middle: Any, top_k: int, **collapser: Any) -> Pipeline:
    """retriever -> ``middle`` (as "middle") -> collapser; ``middle`` takes ``documents`` (and a
    ``query``, given at run, for a ranker)."""
    pipe = Pipeline()
    pipe.add_component("retriever", PgvectorEmbeddingRetriever(document_store=store, top_k=top_k))
    pipe.add_component("middle", middle)
    pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=store, **collapser))
    pipe.connect("retriever.documents", "middle.documents")
    pipe.connect("middle.documents", "collapser.documents")
    return pipe


def _diversity_ranker(top_k: int) -> Any:
    from haystack_integrations.components.rankers.sentence_transformers import (
        SentenceTransformersDiversityRanker,
    )

    return SentenceTransformersDiversityRanker(model=MODEL, top_k=top_k)


def test_item_7_a_rank_fusion_joiner_behind_pgvector_retrievers_is_folded_as_it_scores(
    augmented, database
):
    """Issue 59, item 7: an ``l2_distance`` store's embedding and keyword retrievers joined by a
    ``DocumentJoiner`` in ``reciprocal_rank_fusion`` mode. The collapser read the joiner's fused
    scores (higher is better) by the store's ``l2_distance`` and refused them as ordered against
    it, asking for a per-run ``vector_function`` nobody had set. The fused scores are the joiner's
    own, from the retrievers' orders: it now folds them as they are, for every query."""
    from haystack.components.joiners import DocumentJoiner

    store = _store("l2_distance", augmented.documents)
    try:
        n = store.count_documents()
        pipe = Pipeline()
        pipe.add_component("embedding", PgvectorEmbeddingRetriever(document_store=store, top_k=n))
        pipe.add_component("keywords", PgvectorKeywordRetriever(document_store=store, top_k=n))
        pipe.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
        pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=store))
        pipe.connect("embedding.documents", "joiner.documents")
        pipe.connect("keywords.documents", "joiner.documents")
        pipe.connect("joiner.documents", "collapser.documents")
        for query, embedding in augmented.queries.items():
            asked = {"embedding": {"query_embedding": embedding}, "keywords": {"query": query}}
            out = pipe.run(asked, include_outputs_from={"joiner"})
            got = [(d.id, d.score) for d in out["collapser"]["documents"]]
            assert got == _folded(out["joiner"]["documents"]), query
    finally:
        store.close()


@pytest.mark.parametrize("middle", ["joiner", "ranker"])
def test_item_7_behind_a_component_keeping_l2_distances_the_message_names_it(
    augmented, database, middle
):
    """Issue 59, item 7: a ``DocumentJoiner`` (``concatenate``) or a
    ``SentenceTransformersDiversityRanker`` between an ``l2_distance`` retriever and the collapser
    passes the distances on, reordered. The collapser refused them, or not, by the first and the
    last score, with a message about a per-run ``vector_function``. It cannot tell whether such a
    component scored the documents itself, so it now refuses naming the component and what to
    set; with ``scores="distance"`` it reads the l2 distances, equal to the numpy cosine."""
    from haystack.components.joiners import DocumentJoiner

    store = _store("l2_distance", augmented.documents)
    try:
        entries = store.filter_documents()
        n = len(entries)

        def make() -> Any:
            return DocumentJoiner() if middle == "joiner" else _diversity_ranker(n)

        kind = type(make()).__name__
        query, embedding = next(iter(augmented.queries.items()))
        asked: dict[str, Any] = {"retriever": {"query_embedding": embedding}}
        if middle == "ranker":
            asked["middle"] = {"query": query}
        with pytest.raises(PipelineRuntimeError) as err:
            _behind(store, make(), n).run(asked)
        message = str(err.value)
        assert f"'middle' ({kind})" in message and "scores='distance'" in message, message
        assert "l2_distance" in message and "given to the retriever's run" not in message
        pipe = _behind(store, make(), n, scores="distance")
        for query, embedding in augmented.queries.items():
            asked = {"retriever": {"query_embedding": embedding}}
            if middle == "ranker":
                asked["middle"] = {"query": query}
            got = [(d.id, d.score) for d in pipe.run(asked)["collapser"]["documents"]]
            assert got == _reference(entries, embedding), query
    finally:
        store.close()


def test_item_7_behind_a_ranker_over_similarities_the_scores_are_taken_as_they_are(
    augmented, database
):
    """A ranker between a ``cosine_similarity`` retriever and the collapser: whether it passes the
    similarities on (the diversity ranker does) or scores the documents itself, higher is
    better. The collapser takes them as they are, whatever their order: equal to the numpy
    cosine for all twelve queries."""
    store = _store("cosine_similarity", augmented.documents)
    try:
        entries = store.filter_documents()
        pipe = _behind(store, _diversity_ranker(len(entries)), len(entries))
        for query, embedding in augmented.queries.items():
            asked = {"retriever": {"query_embedding": embedding}, "middle": {"query": query}}
            got = [(d.id, d.score) for d in pipe.run(asked)["collapser"]["documents"]]
            assert got == _reference(entries, embedding), query
    finally:
        store.close()
