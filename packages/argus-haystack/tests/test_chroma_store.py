"""ArgusCollapser over a real ChromaDocumentStore on disk: distances read as relevance, and
originals read back although Chroma takes only ``==`` on ids."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.errors import FilterError

from argus_ir.testing import SCENARIO, cosine_reference
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.retrievers.chroma import ChromaEmbeddingRetriever
from haystack_integrations.document_stores.chroma import ChromaDocumentStore


@pytest.fixture(scope="module")
def chroma_corpus(augmented, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The session's augmented corpus written into a Chroma collection per space on disk."""
    path = str(tmp_path_factory.mktemp("chroma"))
    store = _store(path, "cosine")
    pipe = Pipeline()
    pipe.add_component("writer", DocumentWriter(document_store=store))
    pipe.run({"writer": {"documents": augmented.documents}})
    entries = store.filter_documents()
    for space in ("l2", "ip"):
        _store(path, space).write_documents(entries)
    return {"path": path, "entries": entries, "queries": augmented.queries}


def _store(path: str, space: str) -> ChromaDocumentStore:
    return ChromaDocumentStore(
        collection_name=f"argus-{space}",
        persist_path=path,
        distance_function=space,
        client_settings={"anonymized_telemetry": False},  # offline tests
    )


def _query_pipeline(store: ChromaDocumentStore, fetch: int, top_k: int) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", ChromaEmbeddingRetriever(document_store=store, top_k=fetch))
    pipe.add_component("collapser", ArgusCollapser(top_k=top_k, document_store=store))
    pipe.connect("retriever.documents", "collapser.documents")
    return pipe


def _reference(entries: list[Document], query: list[float], top_k: int) -> list[tuple[str, float]]:
    """Cosine similarity to every stored entry (numpy), folded by the core's collapse."""
    ids = [e.id for e in entries]
    metas = [e.meta for e in entries]
    vectors = [e.embedding for e in entries]
    return [(s, score) for s, score, _ in cosine_reference(ids, vectors, metas, query, top_k=top_k)]


@pytest.mark.parametrize("space", ["cosine", "l2", "ip"])
def test_defect_1_chroma_distances_are_folded_as_relevance_like_a_cosine_reference(
    chroma_corpus, space
):
    """Distances folded as similarities (issue 32, 1): chroma-haystack's scores are distances in
    every space; collapsed, they rank and score as cosine does, all twelve queries."""
    entries = chroma_corpus["entries"]
    store = _store(chroma_corpus["path"], space)  # reopened from disk
    pipe = _query_pipeline(store, fetch=len(entries), top_k=5)
    for query, embedding in chroma_corpus["queries"].items():
        got = pipe.run({"retriever": {"query_embedding": embedding}})["collapser"]["documents"]
        want = _reference(entries, embedding, top_k=5)
        assert [d.id for d in got] == [src for src, _ in want], query
        assert [d.score for d in got] == pytest.approx([s for _, s in want], abs=1e-4), query


def test_defect_4_originals_outside_the_hits_are_read_from_chroma(chroma_corpus):
    """A filter the store refuses (issue 32, 4): chroma-haystack takes only ``==`` on ids; the
    originals a query hit only through views are read all the same, on every query."""
    store = _store(chroma_corpus["path"], "cosine")
    pipe = _query_pipeline(store, fetch=2, top_k=2)
    retriever = ChromaEmbeddingRetriever(document_store=store, top_k=2)
    texts = dict(SCENARIO.documents)
    fetched = 0
    for query, embedding in chroma_corpus["queries"].items():
        hits = retriever.run(query_embedding=embedding)["documents"]
        sources = {d.meta.get("argus_source_id", d.id) for d in hits}
        fetched += len(sources - {d.id for d in hits})  # sources hit only through a view
        got = pipe.run({"retriever": {"query_embedding": embedding}})["collapser"]["documents"]
        assert [(d.id, d.content) for d in got] == [(d.id, texts[d.id]) for d in got], query
        assert all(d.meta["argus_view"] == "original" for d in got), query
        collapser = pipe.get_component("collapser")
        # Chroma's async reader needs an HTTP client: run_async falls back to the sync path
        assert asyncio.run(collapser.run_async(documents=hits))["documents"] == got
    assert fetched >= 5  # most queries hit a source only through its views


def test_auto_refuses_a_chroma_store_whose_space_it_cannot_read(tmp_path):
    odd = ChromaDocumentStore(persist_path=str(tmp_path), metadata={"hnsw:space": "dot"})
    with pytest.raises(ValueError, match="scores='distance'"):
        ArgusCollapser(document_store=odd)
    assert ArgusCollapser(document_store=odd, scores="distance").scores == "distance"


def test_scores_round_trips_and_older_yaml_reads_auto():
    collapser = ArgusCollapser(scores="distance")
    data = collapser.to_dict()
    assert data["init_parameters"]["scores"] == "distance"
    assert ArgusCollapser.from_dict(data).scores == "distance"
    del data["init_parameters"]["scores"]  # a YAML written before `scores` existed
    assert ArgusCollapser.from_dict(data).scores == "auto"
    with pytest.raises(ValueError, match="scores"):
        ArgusCollapser(scores="rank")
    hits = [Document(id="a", content="a", score=0.2), Document(id="b", content="b", score=0.7)]
    far = ArgusCollapser(scores="distance").run(documents=hits)["documents"]
    assert [(d.id, d.score) for d in far] == [("a", pytest.approx(0.8)), ("b", pytest.approx(0.3))]


class _EqOnlyStore(InMemoryDocumentStore):
    """Takes only ``==`` on ids (as Chroma does) and fails outright on one id."""

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        if filters and filters.get("operator") == "in":
            raise FilterError("id filter only supports '=='")
        if filters and filters.get("value") == "broken":
            raise RuntimeError("disk gone")
        return super().filter_documents(filters)


def test_ids_are_read_one_by_one_and_a_failure_raises():
    """A store that takes only ``==`` is asked id by id; an id whose read fails raises an error
    naming the store (issue 54: a failed read is not a deleted original), sync and async, and an
    id read without failure that finds nothing is what drops a source."""
    store = _EqOnlyStore()
    store.write_documents([Document(id="a", content="original a")])
    view = {"argus_view": "expansion"}
    a = Document(id="a#v", content="view a", meta={"argus_source_id": "a", **view}, score=0.9)
    gone = Document(id="g#v", content="view g", meta={"argus_source_id": "g", **view}, score=0.8)
    broken = {"argus_source_id": "broken", **view}
    hits = [a, Document(id="x#v", content="view x", meta=broken, score=0.8)]
    collapser = ArgusCollapser(document_store=store)
    with pytest.raises(DocumentStoreError, match=r"_EqOnlyStore.*RuntimeError: disk gone"):
        collapser.run(documents=hits)
    with pytest.raises(DocumentStoreError, match=r"_EqOnlyStore.*RuntimeError: disk gone"):
        asyncio.run(collapser.run_async(documents=hits))
    got = collapser.run(documents=[a, gone])["documents"]
    assert [(d.id, d.content) for d in got] == [("a", "original a")]  # g: read, not found


def test_get_documents_by_id_is_used_when_the_store_has_it():
    asked: list[list[str]] = []

    class ById(_EqOnlyStore):
        def get_documents_by_id(self, ids: list[str]) -> list[Document]:
            asked.append(list(ids))
            return [Document(id=i, content=f"original {i}") for i in ids]

    view = {"argus_source_id": "broken", "argus_view": "expansion"}
    hits = [Document(id="v", content="v", meta=view, score=0.5)]
    got = ArgusCollapser(document_store=ById()).run(documents=hits)["documents"]
    assert [(d.id, d.content) for d in got] == [("broken", "original broken")]
    assert asked == [["broken"]]
