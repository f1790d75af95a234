"""The store matrix: argus over Chroma (persistent, on disk), Qdrant (local mode, on disk) and
pgvector (a database of its own per test on a throwaway PostgreSQL server).

Each store is written through ``DocumentWriter`` from the session's one augment; every collapse is
checked against a cosine over the store's whole contents (``argus_ir.testing.cosine_reference``);
re-ingest, update, delete, reopen, a YAML round trip and the async path are checked on the store's
contents, not only on rankings.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret

from argus_ir.testing import FORGED, SCENARIO, cosine_reference
from argus_ir.testing.postgres import postgres_server
from haystack_integrations.components.augmenters.argus import (
    VERSION_KEY,
    ArgusSourceCleaner,
    ArgusSourceSweeper,
    adelete_sources,
    delete_sources,
)
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.retrievers.chroma import ChromaEmbeddingRetriever
from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever
from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever
from haystack_integrations.document_stores.chroma import ChromaDocumentStore
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

TOP_K = 5
TARGET = SCENARIO.target  # film-1, which has views
STORES = ("chroma", "qdrant", "pgvector")
PG_ENV = "PG_CONN_STR"  # the pgvector stores' connection string: a Secret, so YAML keeps its name


def _use_database(monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    """Points ``PG_CONN_STR`` at a database of the test folder's own, for the test's length."""
    name = "t_" + hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:20]
    monkeypatch.setenv(PG_ENV, postgres_server().database(name).url)


def _pgvector(
    vector_function: str = "cosine_similarity", table: str = "argus"
) -> PgvectorDocumentStore:
    return PgvectorDocumentStore(
        connection_string=Secret.from_env_var(PG_ENV),
        table_name=table,
        keyword_index_name=f"{table}_keyword_index",  # index names are per schema, not per table
        embedding_dimension=384,
        vector_function=vector_function,
        search_strategy="exact_nearest_neighbor",
        recreate_table=False,
    )


def _open(kind: str, path: str) -> Any:
    if kind == "pgvector":
        return _pgvector()  # the database: PG_CONN_STR's (store_at sets it)
    if kind == "chroma":
        return ChromaDocumentStore(
            collection_name="argus",
            persist_path=path,
            distance_function="cosine",
            client_settings={"anonymized_telemetry": False},  # offline tests
        )
    return QdrantDocumentStore(
        path=path, index="argus", embedding_dim=384, similarity="cosine", progress_bar=False
    )


def _retriever(store: Any, top_k: int) -> Any:
    if isinstance(store, ChromaDocumentStore):
        return ChromaEmbeddingRetriever(document_store=store, top_k=top_k)
    if isinstance(store, PgvectorDocumentStore):
        return PgvectorEmbeddingRetriever(document_store=store, top_k=top_k)
    return QdrantEmbeddingRetriever(document_store=store, top_k=top_k)


def _close(store: Any) -> None:
    # a local Qdrant folder takes one client at a time; pgvector: its (sync) connection
    if isinstance(store, (QdrantDocumentStore, PgvectorDocumentStore)):
        store.close()


def _write(store: Any, documents: list[Document], *, cleaner: bool = False) -> dict[str, Any]:
    pipe = Pipeline()
    pipe.add_component(
        "writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE)
    )
    if cleaner:  # the update recipe of docs/haystack.md
        pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))
        pipe.add_component("sweeper", ArgusSourceSweeper(document_store=store))
        pipe.connect("cleaner.documents", "writer.documents")
        pipe.connect("cleaner.documents", "sweeper.documents")
        pipe.connect("writer.documents_written", "sweeper.documents_written")
        return pipe.run({"cleaner": {"documents": documents}}, include_outputs_from={"cleaner"})
    return pipe.run({"writer": {"documents": documents}})


def _query_pipeline(store: Any, fetch: int) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", _retriever(store, fetch))
    pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=store))
    pipe.connect("retriever.documents", "collapser.documents")
    return pipe


def _ask(pipe: Any, embedding: list[float], top_k: int | None = None) -> list[Document]:
    """The pipeline's collapsed documents; ``top_k``: the retriever's, for this run."""
    asked: dict[str, Any] = {"query_embedding": embedding}
    if top_k is not None:
        asked["top_k"] = top_k
    return pipe.run({"retriever": asked})["collapser"]["documents"]


def _reference(entries: list[Document], embedding: list[float]) -> list[tuple[str, float]]:
    ids = [e.id for e in entries]
    metas = [e.meta for e in entries]
    vectors = [e.embedding for e in entries]
    ranked = cosine_reference(ids, vectors, metas, embedding, top_k=TOP_K)
    return [(src, score) for src, score, _ in ranked]


def _check_all_queries(
    store: Any, queries: dict[str, list[float]], pipe: Pipeline | None = None
) -> None:
    """Query + collapse over the whole store equals the cosine reference, for every query
    (through ``pipe``, its retriever asked for every entry, when given)."""
    entries = store.filter_documents()
    pipe = pipe or _query_pipeline(store, fetch=len(entries))
    texts = {e.id: e.content for e in entries}
    assert len(queries) == 12
    for query, embedding in queries.items():
        got = _ask(pipe, embedding, top_k=len(entries))
        _check_against_the_reference(query, got, entries, embedding, texts)


def _check_against_the_reference(
    query: str,
    got: list[Document],
    entries: list[Document],
    embedding: list[float],
    texts: dict[str, str | None],
) -> None:
    want = _reference(entries, embedding)
    assert [d.id for d in got] == [src for src, _ in want], query
    assert [d.score for d in got] == pytest.approx([s for _, s in want], abs=1e-4), query
    assert all(d.meta["argus_view"] == "original" for d in got), query
    assert all(d.content == texts[d.id] for d in got), query


def _entries_of(store: Any, source: str) -> list[Document]:
    return [e for e in store.filter_documents() if e.meta.get("argus_source_id") == source]


@pytest.fixture(params=STORES)
def store_at(request, tmp_path, monkeypatch) -> Callable[[], Any]:
    """Opens the parametrised store on one folder, or one database (call again to reopen it)."""
    if request.param == "pgvector":
        _use_database(monkeypatch, tmp_path)
    opened: list[Any] = []

    def open_store() -> Any:
        store = _open(request.param, str(tmp_path))
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        _close(store)


@pytest.fixture
def ingested(augmented, store_at) -> Any:
    store = store_at()
    written = _write(store, augmented.documents)["writer"]["documents_written"]
    assert written == len(augmented.documents)
    return store


def test_ingest_then_collapse_equals_the_cosine_reference(augmented, ingested):
    assert ingested.count_documents() == len(augmented.documents)
    _check_all_queries(ingested, augmented.queries)


def test_view_ids_are_uuids_and_fold_in_every_store(augmented, ingested):
    # Qdrant hashes a Document id into its point id; the id read back is the one written
    views = [e for e in ingested.filter_documents() if e.meta["argus_view"] != "original"]
    written = {d.id for d in augmented.documents if d.meta["argus_view"] != "original"}
    assert views and {v.id for v in views} == written
    for view in views:
        assert str(uuid.UUID(view.id)) == view.id
        assert view.meta["argus_view_key"].startswith(f"{view.meta['argus_source_id']}#argus-")


def test_ingest_twice_keeps_one_entry_each(augmented, ingested):
    # argus run again over a document gives the same ids: written again, they overwrite
    again = augmented.embed([Document(id=TARGET, content=dict(SCENARIO.documents)[TARGET])])
    assert len(again) > 1 and {d.id for d in again} <= {d.id for d in augmented.documents}
    _write(ingested, augmented.documents)
    _write(ingested, again)
    ids = [e.id for e in ingested.filter_documents()]
    assert len(ids) == len(set(ids)) == len(augmented.documents)


def test_an_update_leaves_no_stale_view(augmented, ingested):
    old = {e.id for e in _entries_of(ingested, TARGET)}
    assert len(old) > 1  # the original and its views
    new_text = "Marie Curie once lectured in Lucknow, and the students still talk about it."
    update = augmented.embed([Document(id=TARGET, content=new_text)])
    out = _write(ingested, update, cleaner=True)
    assert out["cleaner"]["deleted"] == len(old - {d.id for d in update})  # the old views
    stored = _entries_of(ingested, TARGET)
    assert sorted(e.id for e in stored) == sorted(d.id for d in update)
    assert not any("Humphrey Bogart" in (e.content or "") for e in stored)
    assert not (old - {TARGET}) & {e.id for e in ingested.filter_documents()}
    _check_all_queries(ingested, augmented.queries)


def test_a_deleted_source_leaves_nothing_behind(augmented, ingested):
    count = ingested.count_documents()
    n = len(_entries_of(ingested, TARGET))
    assert delete_sources(ingested, [TARGET, "no-such-doc"]) == n
    assert ingested.count_documents() == count - n
    assert not _entries_of(ingested, TARGET)
    assert TARGET not in {e.id for e in ingested.filter_documents()}
    pipe = _query_pipeline(ingested, fetch=count)
    old_text = dict(SCENARIO.documents)[TARGET]
    for embedding in augmented.queries.values():
        assert old_text not in [d.content for d in _ask(pipe, embedding)]
    _check_all_queries(ingested, augmented.queries)


def test_views_whose_original_is_gone_are_dropped_not_served(augmented, ingested, caplog):
    ingested.delete_documents([TARGET])  # the views stay behind (a delete without argus)
    embedding = augmented.queries[SCENARIO.query]
    hits = _retriever(ingested, 12).run(query_embedding=embedding)["documents"]
    sources = {d.meta["argus_source_id"] for d in hits}
    assert TARGET in sources  # its orphaned views are still retrieved
    with caplog.at_level(logging.WARNING):
        got = ArgusCollapser(top_k=TOP_K, document_store=ingested).run(documents=hits)
    got = got["documents"]
    assert TARGET not in [d.id for d in got]
    assert all(d.meta["argus_view"] == "original" for d in got)
    assert len(got) == min(TOP_K, len(sources) - 1)  # the next sources fill its place
    assert "dropped 1 source" in caplog.text


def test_close_and_reopen(augmented, store_at, ingested):
    _close(ingested)
    reopened = store_at()
    assert reopened.count_documents() == len(augmented.documents)
    _check_all_queries(reopened, augmented.queries)


def test_defect_6_yaml_round_trip_shares_the_retrievers_store(augmented, store_at, ingested):
    """Haystack YAML round trip with a local Qdrant (issue 32, 6): the loaded collapser shares
    the loaded retriever's store (a second copy could not open the folder); with few hits it
    answers as before, and over every entry as the cosine reference, all twelve queries."""
    pipe = _query_pipeline(ingested, fetch=3)  # few hits: many sources need their original read
    before = {q: _ask(pipe, e) for q, e in augmented.queries.items()}
    retriever = pipe.get_component("retriever")
    read = 0
    for query, embedding in augmented.queries.items():
        hits = {d.id for d in retriever.run(query_embedding=embedding)["documents"]}
        read += len({d.id for d in before[query]} - hits)
    assert read >= 3
    _close(ingested)
    loaded = Pipeline.loads(pipe.dumps())
    after = {q: _ask(loaded, e) for q, e in augmented.queries.items()}
    collapser = loaded.get_component("collapser")
    retriever = loaded.get_component("retriever")
    shared = getattr(retriever, "document_store", None) or retriever._document_store
    assert collapser.document_store is shared
    for query in augmented.queries:
        assert [(d.id, d.content, d.score) for d in after[query]] == [
            (d.id, d.content, pytest.approx(d.score, abs=1e-6)) for d in before[query]
        ], query
    _check_all_queries(shared, augmented.queries, pipe=loaded)
    _close(shared)


def test_async_query_and_delete(augmented, ingested):
    """``run_async`` over every entry equals the cosine reference for all twelve queries; with few
    hits (originals read) it answers as the synchronous run did; ``adelete_sources`` removes the
    target and its views. Qdrant and pgvector run the whole pipeline on their async clients."""
    entries = ingested.filter_documents()
    texts = {e.id: e.content for e in entries}
    n = len(_entries_of(ingested, TARGET))
    queries = augmented.queries
    assert len(queries) == 12
    few = {q: _ask(_query_pipeline(ingested, fetch=3), e) for q, e in queries.items()}
    top3 = _retriever(ingested, 3)
    hit = {q: {d.id for d in top3.run(query_embedding=e)["documents"]} for q, e in queries.items()}
    assert sum(len({d.id for d in few[q]} - hit[q]) for q in queries) >= 3  # originals read
    if isinstance(ingested, (QdrantDocumentStore, PgvectorDocumentStore)):
        if _is_qdrant(ingested):
            _close(ingested)  # the async client opens the folder itself
        pipe = _query_pipeline(ingested, fetch=len(entries))

        async def query_and_delete() -> tuple[dict, dict, int, int]:
            every, some = {}, {}
            for query, embedding in queries.items():
                for top_k, out in ((len(entries), every), (3, some)):
                    asked = {"query_embedding": embedding, "top_k": top_k}
                    got = await pipe.run_async({"retriever": asked})
                    out[query] = got["collapser"]["documents"]
            deleted = await adelete_sources(ingested, [TARGET])
            left = await ingested.count_documents_async()
            await ingested.close_async()  # pgvector: its connection belongs to this event loop
            return every, some, deleted, left

        every, some, deleted, left = asyncio.run(query_and_delete())
        assert left == len(entries) - n
    else:  # local Chroma has no async client: both fall back to the sync path
        retriever = _retriever(ingested, len(entries))
        collapser = ArgusCollapser(top_k=TOP_K, document_store=ingested)

        def run_async(embedding: list[float], top_k: int) -> list[Document]:
            hits = retriever.run(query_embedding=embedding, top_k=top_k)["documents"]
            return asyncio.run(collapser.run_async(documents=hits))["documents"]

        every = {q: run_async(e, len(entries)) for q, e in queries.items()}
        some = {q: run_async(e, 3) for q, e in queries.items()}
        deleted = asyncio.run(adelete_sources(ingested, [TARGET]))
    for query, embedding in queries.items():
        _check_against_the_reference(query, every[query], entries, embedding, texts)
        assert [(d.id, d.content, d.score) for d in some[query]] == [
            (d.id, d.content, pytest.approx(d.score, abs=1e-6)) for d in few[query]
        ], query
    assert deleted == n
    assert not _entries_of(ingested, TARGET)


def _is_qdrant(store: Any) -> bool:
    return isinstance(store, QdrantDocumentStore)


def test_the_cleaner_and_the_sweeper_round_trip_and_pass_documents_on(augmented, ingested):
    """Both serialise; the cleaner passes the documents on as stamped copies (inputs untouched),
    one version per source, the same on every run."""
    for kind in (ArgusSourceCleaner, ArgusSourceSweeper):
        made = kind(document_store=ingested)
        assert kind.from_dict(made.to_dict()).to_dict() == made.to_dict()
    cleaner = ArgusSourceCleaner(document_store=ingested)
    docs = [replace(d) for d in augmented.documents[:2]]
    out = cleaner.run(documents=docs)["documents"]
    assert [
        replace(d, meta={k: v for k, v in d.meta.items() if k != VERSION_KEY}) for d in out
    ] == docs
    assert all(VERSION_KEY not in d.meta for d in docs)
    assert len({d.meta[VERSION_KEY] for d in out}) == 1
    assert cleaner.run(documents=docs)["documents"] == out


def test_defect_4_pgvector_l2_distance_ranks_as_cosine(augmented, monkeypatch, tmp_path):
    """Issue 47, 4: pgvector-haystack scores ``l2_distance`` with the plain Euclidean distance
    (lower is better), and ``ArgusCollapser(scores="auto")`` ranked those distances as
    similarities, farthest first. Read as ``1 - d²/2``, the collapse over every entry equals the
    cosine reference for all twelve queries, scores included; ``inner_product`` too (its scores
    are similarities: the cosine, for these unit-length embeddings)."""
    _use_database(monkeypatch, tmp_path)
    for function in ("l2_distance", "inner_product"):
        store = _pgvector(function, table=f"argus_{function}")  # two tables, one database
        try:
            _write(store, augmented.documents)
            hits = _retriever(store, 3).run(query_embedding=augmented.queries[SCENARIO.query])
            scores = [d.score for d in hits["documents"]]
            if function == "l2_distance":  # what the test turns on: the nearest has the lowest
                assert scores == sorted(scores) and scores[0] < scores[-1]
            else:
                assert scores == sorted(scores, reverse=True)
            _check_all_queries(store, augmented.queries)
        finally:
            _close(store)


# Tenant b's documents: each of the forged ones names the target (tenant a's document) as source.
PAYROLL, SUMMARY, LISBON = FORGED.payroll, FORGED.summary, FORGED.lisbon
FORGED_QUERIES = FORGED.queries
TENANT_B = {"field": "meta.tenant", "operator": "==", "value": "b"}


def _tenant_b(augmented: Any) -> tuple[list[Document], list[Document], dict[str, Any]]:
    """What tenant b sends through the augmenter (a forged view, a user's own ``argus_view``),
    embedded, with the augmenter's stats; and what it writes straight into the store (a forged
    view, embedded but never augmented)."""
    forged = {"tenant": "b", "argus_source_id": TARGET, "argus_view": "expansion"}
    sent = [
        Document(id="b-payroll", content=PAYROLL, meta=forged),
        Document(id="b-summary", content=SUMMARY, meta={"tenant": "b", "argus_view": "summary"}),
    ]
    out = augmented.augmenter.run(documents=sent)
    through = augmented.embedder.run(documents=out["documents"])["documents"]
    direct = [Document(id="b-lisbon", content=LISBON, meta=dict(forged))]
    return through, augmented.embedder.run(documents=direct)["documents"], out["stats"]


def _of_tenant_b(meta: dict[str, Any]) -> bool:
    return meta.get("tenant") == "b"


async def _collapse_async(collapser: ArgusCollapser, runs: list[list[Document]]) -> list[Any]:
    """``run_async`` over each list of hits, in one event loop."""
    out = [(await collapser.run_async(documents=hits))["documents"] for hits in runs]
    if isinstance(collapser.document_store, PgvectorDocumentStore):
        await collapser.document_store.close_async()  # its connection belongs to this loop
    return out


def _collapsed(collapser: ArgusCollapser, retriever: Any, embedding: list[float]) -> list[Any]:
    """The collapse of the retriever's hits, unfiltered."""
    hits = retriever.run(query_embedding=embedding)["documents"]
    return collapser.run(documents=hits)["documents"]


def _scored(entries: list[Document], embedding: list[float], where: Any) -> list[Any]:
    """The cosine reference's top 3 over every entry ``where`` admits, as ``(id, score)``."""
    ids, metas = [e.id for e in entries], [e.meta for e in entries]
    vectors = [e.embedding for e in entries]
    ranked = cosine_reference(ids, vectors, metas, embedding, top_k=3, where=where)
    return [(src, pytest.approx(score, abs=1e-4)) for src, score, _ in ranked]


def test_defects_1_to_3_forged_lineage_crosses_no_filter_and_lifts_no_source(augmented, ingested):
    """Issue 47, 1-3: tenant b's forged views (through the augmenter and straight into the store)
    never bring the target, tenant a's document, into b's filtered results (``run`` and
    ``run_async``), nor lift it in an unfiltered search; b's own document with a look-alike
    ``argus_view`` key is retrieved. Every filtered collapse is the cosine reference's (which
    applies the rule itself), and so is the unfiltered one over every entry."""
    through, direct, stats = _tenant_b(augmented)
    _write(ingested, [*through, *direct])
    entries = ingested.filter_documents()
    target_text = dict(SCENARIO.documents)[TARGET]
    collapser = ArgusCollapser(top_k=3, document_store=ingested)
    retriever = _retriever(ingested, 3)
    every = _retriever(ingested, len(entries))
    queries = {q: augmented.embed_query(q) for q in FORGED_QUERIES}
    hits = {
        q: retriever.run(query_embedding=e, filters=TENANT_B)["documents"]
        for q, e in queries.items()
    }
    filtered = {q: collapser.run(documents=h)["documents"] for q, h in hits.items()}
    awaited = dict(zip(hits, asyncio.run(_collapse_async(collapser, list(hits.values())))))
    plain = {q: _collapsed(collapser, retriever, e) for q, e in queries.items()}
    leaks = sum(
        TARGET in [d.id for d in found] or any(d.content == target_text for d in found)
        for found in [*filtered.values(), *awaited.values()]
    )
    lifts = sum([d.id for d in found][:1] == [TARGET] for found in plain.values())
    assert (leaks, lifts) == (0, 0)
    assert stats["lineage_rewritten"] == ["b-payroll", "b-summary"]
    for query, embedding in queries.items():
        want = _scored(entries, embedding, where=_of_tenant_b)
        for found in (filtered[query], awaited[query]):
            assert [(d.id, d.score) for d in found] == want, query
            assert all(_of_tenant_b(d.meta) for d in found), query
            assert all(d.meta["argus_view"] == "original" for d in found), query
        # unfiltered, every entry a hit as the reference has them (the top 3 hits are fewer)
        found = _collapsed(collapser, every, embedding)
        assert [(d.id, d.score) for d in found] == _scored(entries, embedding, where=None), query
    own = retriever.run(query_embedding=augmented.embed_query(SUMMARY), filters=TENANT_B, top_k=1)
    found = collapser.run(documents=own["documents"])["documents"]
    assert [(d.id, d.content) for d in found] == [("b-summary", SUMMARY)]  # a look-alike key
