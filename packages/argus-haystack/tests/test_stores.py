"""The store matrix: argus over Chroma (persistent, on disk) and Qdrant (local mode, on disk).

Each store is written through ``DocumentWriter`` from the session's one augment; every collapse is
checked against a cosine over the store's whole contents (``argus_ir.testing.cosine_reference``);
re-ingest, update, delete, reopen, a YAML round trip and the async path are checked on the store's
contents, not only on rankings.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.types import DuplicatePolicy

from argus_ir.testing import SCENARIO, cosine_reference
from haystack_integrations.components.augmenters.argus import (
    ArgusSourceCleaner,
    adelete_sources,
    delete_sources,
)
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.retrievers.chroma import ChromaEmbeddingRetriever
from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever
from haystack_integrations.document_stores.chroma import ChromaDocumentStore
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

TOP_K = 5
TARGET = SCENARIO.target  # film-1, which has views
STORES = ("chroma", "qdrant")


def _open(kind: str, path: str) -> Any:
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
    return QdrantEmbeddingRetriever(document_store=store, top_k=top_k)


def _close(store: Any) -> None:
    if isinstance(store, QdrantDocumentStore):
        store.close()  # a local Qdrant folder takes one client at a time


def _write(store: Any, documents: list[Document], *, cleaner: bool = False) -> dict[str, Any]:
    pipe = Pipeline()
    pipe.add_component(
        "writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE)
    )
    if cleaner:
        pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))
        pipe.connect("cleaner.documents", "writer.documents")
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
def store_at(request, tmp_path) -> Callable[[], Any]:
    """Opens the parametrised store on one folder (call again to reopen it)."""
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
    assert out["cleaner"]["deleted"] == len(old)
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
    target and its views."""
    entries = ingested.filter_documents()
    texts = {e.id: e.content for e in entries}
    n = len(_entries_of(ingested, TARGET))
    queries = augmented.queries
    assert len(queries) == 12
    few = {q: _ask(_query_pipeline(ingested, fetch=3), e) for q, e in queries.items()}
    top3 = _retriever(ingested, 3)
    hit = {q: {d.id for d in top3.run(query_embedding=e)["documents"]} for q, e in queries.items()}
    assert sum(len({d.id for d in few[q]} - hit[q]) for q in queries) >= 3  # originals read
    if isinstance(ingested, QdrantDocumentStore):
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
            await ingested.close_async()
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


def test_the_cleaner_round_trips_and_passes_documents_on(augmented, ingested):
    cleaner = ArgusSourceCleaner(document_store=ingested)
    again = ArgusSourceCleaner.from_dict(cleaner.to_dict())
    assert again.to_dict() == cleaner.to_dict()
    docs = [replace(d) for d in augmented.documents[:2]]
    assert cleaner.run(documents=docs)["documents"] is docs
