"""langchain-argus on real stores: Chroma (on disk), Qdrant (local mode, on disk) and FAISS.

Every store holds the shared scenario corpus augmented once (``augmented``); each test opens a
fresh store in its own folder. Rankings are checked against numpy cosine over the store's whole
contents, folded by lineage (``argus_ir.testing.cosine_reference``); lifecycle checks read the
store's contents. Update and delete follow the recipe of ``docs/langchain.md``: LangChain's
``index()`` with a record manager, grouped by ``argus_source_id``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import InMemoryRecordManager, index
from langchain_core.vectorstores import VectorStore

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import SCENARIO, cosine_reference
from langchain_argus import ArgusDocumentTransformer, ArgusRetriever, collapse_documents

pytestmark = [
    # langchain-core warns about relevance scores outside [0, 1]; they rank all the same
    pytest.mark.filterwarnings("ignore:Relevance scores must be between"),
    # index()'s default key is a UUID of a SHA-1, the one Qdrant takes as a point id
    pytest.mark.filterwarnings("ignore:Using SHA-1 for document hashing"),
    pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset"),
]

DIM = 384  # MiniLM


@dataclass(frozen=True)
class Kind:
    """One kind of store, as the tests open, read and close it.

    ``view_discount`` is the relevance margin worth the default cosine margin on this store's
    relevance scale (what ``collapse_documents`` is given; the retriever converts its default
    itself), and ``cosine`` turns its relevance back into cosine (unit vectors).
    """

    name: str
    open: Callable[[Path, Embeddings], VectorStore]
    contents: Callable[[VectorStore], tuple[list[str], list[Any], list[dict]]]
    close: Callable[[VectorStore], None]
    view_discount: float
    cosine: Callable[[float], float]
    fetch_originals: Callable[[VectorStore], Callable[[list[str]], list[Document]]] | None
    upserts: bool  # add_documents with a stored id replaces the entry


def _chroma_open(path: Path, embeddings: Embeddings) -> VectorStore:
    import chromadb
    from langchain_chroma import Chroma

    return Chroma(
        collection_name="argus",
        client=chromadb.PersistentClient(path=str(path)),
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )


def _chroma_contents(store: Any) -> tuple[list[str], list[Any], list[dict]]:
    got = store.get(include=["embeddings", "metadatas"])
    return got["ids"], list(got["embeddings"]), [m or {} for m in got["metadatas"]]


def _chroma_close(store: Any) -> None:
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # the next client reads the folder again


def chroma_originals(store: Any) -> Callable[[list[str]], list[Document]]:
    """The fetch hook of docs/langchain.md for Chroma: originals by ``argus_source_id``."""

    def fetch(source_ids: list[str]) -> list[Document]:
        got = store.get(where={"$and": [{SOURCE_KEY: {"$in": source_ids}}, {VIEW_KEY: "original"}]})
        return [
            Document(page_content=text, metadata=meta or {}, id=doc_id)
            for doc_id, text, meta in zip(got["ids"], got["documents"], got["metadatas"])
        ]

    return fetch


def _qdrant_open(path: Path, embeddings: Embeddings) -> VectorStore:
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, VectorParams

    client = QdrantClient(path=str(path))
    if not client.collection_exists("argus"):
        client.create_collection("argus", VectorParams(size=DIM, distance=Distance.COSINE))
    return QdrantVectorStore(client=client, collection_name="argus", embedding=embeddings)


def _qdrant_contents(store: Any) -> tuple[list[str], list[Any], list[dict]]:
    points, _ = store.client.scroll(store.collection_name, limit=10_000, with_vectors=True)
    return (
        [str(p.id) for p in points],
        [p.vector for p in points],
        [p.payload["metadata"] or {} for p in points],
    )


def qdrant_originals(store: Any) -> Callable[[list[str]], list[Document]]:
    """The fetch hook of docs/langchain.md for langchain-qdrant: originals by ``argus_source_id``."""
    from qdrant_client import models

    def fetch(source_ids: list[str]) -> list[Document]:
        points, _ = store.client.scroll(
            store.collection_name,
            scroll_filter=models.Filter(
                must=[
                    models.FieldCondition(
                        key=f"metadata.{SOURCE_KEY}", match=models.MatchAny(any=source_ids)
                    ),
                    models.FieldCondition(
                        key=f"metadata.{VIEW_KEY}", match=models.MatchValue(value="original")
                    ),
                ]
            ),
            limit=len(source_ids),
        )
        return [
            Document(page_content=p.payload["page_content"], metadata=p.payload["metadata"])
            for p in points
        ]

    return fetch


def _faiss_open(path: Path, embeddings: Embeddings) -> VectorStore:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    return FAISS(
        embedding_function=embeddings,
        index=faiss.IndexFlatL2(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )


def _faiss_contents(store: Any) -> tuple[list[str], list[Any], list[dict]]:
    ids = [store.index_to_docstore_id[i] for i in range(store.index.ntotal)]
    vectors = store.index.reconstruct_n(0, store.index.ntotal)
    return ids, list(vectors), [store.docstore.search(i).metadata for i in ids]


KINDS = {
    "chroma": Kind(  # relevance 1 - d = cos
        "chroma",
        _chroma_open,
        _chroma_contents,
        _chroma_close,
        DEFAULT_VIEW_DISCOUNT,
        lambda r: r,
        chroma_originals,
        upserts=True,
    ),
    "qdrant": Kind(  # relevance (1 + cos) / 2
        "qdrant",
        _qdrant_open,
        _qdrant_contents,
        lambda store: store.client.close(),
        DEFAULT_VIEW_DISCOUNT / 2,
        lambda r: 2 * r - 1,
        qdrant_originals,
        upserts=True,
    ),
    "faiss": Kind(  # squared L2 d = 2 - 2 cos, relevance 1 - d / sqrt(2)
        "faiss",
        _faiss_open,
        _faiss_contents,
        lambda store: None,
        DEFAULT_VIEW_DISCOUNT * math.sqrt(2),
        lambda r: 1 - (1 - r) / math.sqrt(2),
        None,
        upserts=False,
    ),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request) -> Kind:
    return KINDS[request.param]


@pytest.fixture
def opened(kind: Kind, tmp_path: Path, embeddings: Embeddings):
    """A fresh, empty store of each kind; closed after the test."""
    store = kind.open(tmp_path, embeddings)
    yield store
    kind.close(store)


def _reference(kind: Kind, store: VectorStore, embeddings: Embeddings, query: str, k: int):
    ids, vectors, metadatas = kind.contents(store)
    return cosine_reference(ids, vectors, metadatas, embeddings.embed_query(query), top_k=k)


def _source(doc: Document) -> str:
    return str(doc.metadata.get(SOURCE_KEY) or doc.id)


def _index(docs, manager, store, cleanup="incremental"):
    return index(docs, manager, store, cleanup=cleanup, source_id_key=SOURCE_KEY)


def _manager(kind: Kind) -> InMemoryRecordManager:
    manager = InMemoryRecordManager(namespace=f"argus/{kind.name}")
    manager.create_schema()
    return manager


def test_query_and_collapse_match_the_cosine_reference(
    kind, opened, embeddings, augmented, queries
):
    """Every store, its own score convention: sources, order and scores as numpy cosine folds."""
    opened.add_documents(augmented)
    originals = {d.id: d.page_content for d in augmented if d.metadata[VIEW_KEY] == "original"}
    n = len(augmented)
    retriever = ArgusRetriever(vectorstore=opened, k=3, fetch_k=n)
    lifted_by_a_view = 0
    for query in queries:
        reference = _reference(kind, opened, embeddings, query, k=3)
        lifted_by_a_view += reference[0][2] != reference[0][0]
        found = retriever.invoke(query)
        assert [_source(d) for d in found] == [src for src, _, _ in reference], query
        assert [d.page_content for d in found] == [originals[_source(d)] for d in found]
        hits = opened.similarity_search_with_relevance_scores(query, k=n)
        folded = collapse_documents(hits, top_k=3, view_discount=kind.view_discount)
        got = [kind.cosine(f.score) for f in folded]
        assert got == pytest.approx([s for _, s, _ in reference], abs=1e-4), query
    assert lifted_by_a_view >= 2  # views decide some rankings: the discount is exercised


def test_ingest_twice_stores_each_entry_once(kind, opened, augmented):
    manager = _manager(kind)
    first = _index(augmented, manager, opened)
    again = _index(augmented, manager, opened)
    assert (first["num_added"], again["num_added"], again["num_skipped"]) == (
        len(augmented),
        0,
        len(augmented),
    )
    ids, texts = _texts(kind, opened)
    assert len(ids) == len(set(ids)) == len(set(texts)) == len(augmented)


def test_plain_add_twice_upserts(opened, kind, augmented):
    if not kind.upserts:
        pytest.skip("FAISS refuses ids it holds (index() is the way to re-ingest)")
    opened.add_documents(augmented)
    opened.add_documents(augmented)
    ids = kind.contents(opened)[0]
    assert sorted(ids) == sorted(d.id for d in augmented)


@pytest.fixture(scope="session")
def updated_source(transformer: ArgusDocumentTransformer, augmented, scenario_ids):
    """The target document with a new text and another entity, augmented again."""
    old = next(d for d in augmented if d.id == scenario_ids[SCENARIO.target])
    new = Document(
        page_content="Ingrid Bergman once filmed a scene in Stockholm, and the crew loved the snow.",
        id=old.id,
        metadata={"lang": "en", "name": SCENARIO.target},
    )
    return old, list(transformer.transform_documents([new]))


def test_defect_5_update_leaves_no_stale_view(kind, opened, augmented, updated_source, queries):
    """Views outlive their source (issue 32, 5): re-augment the changed document and index it with
    cleanup="incremental"; the old original and every old view are gone from the store."""
    old, fresh = updated_source
    manager = _manager(kind)
    _index(augmented, manager, opened)
    old_views = [d for d in augmented if d.metadata[SOURCE_KEY] == old.id and d is not old]
    assert old_views  # the target has views to go stale
    result = _index(fresh, manager, opened)
    assert result["num_deleted"] == 1 + len(old_views)

    _, _, metadatas = kind.contents(opened)
    ids, texts = _texts(kind, opened)
    mine = [(m, t) for m, t in zip(metadatas, texts) if m.get(SOURCE_KEY) == old.id]
    assert sorted(t for _, t in mine) == sorted(d.page_content for d in fresh)
    assert not any(old.page_content in t for t in texts)
    stale = {d.metadata.get("argus_view_key") for d in old_views} - {
        d.metadata.get("argus_view_key") for d in fresh
    }
    assert not stale & {m.get("argus_view_key") for m in metadatas}
    retriever = ArgusRetriever(vectorstore=opened, k=3, fetch_k=len(ids))
    for query in queries:
        assert all(d.page_content != old.page_content for d in retriever.invoke(query))


def test_defect_5_delete_leaves_nothing_of_the_source(
    kind, opened, augmented, scenario_ids, queries, caplog
):
    """Views outlive their source (issue 32, 5): index the corpus without the document and
    cleanup="full"; no entry of it remains and no query returns its text."""
    gone = scenario_ids[SCENARIO.target]
    text = next(d.page_content for d in augmented if d.id == gone)
    manager = _manager(kind)
    _index(augmented, manager, opened)
    kept = [d for d in augmented if d.metadata[SOURCE_KEY] != gone]
    result = _index(kept, manager, opened, cleanup="full")
    assert result["num_deleted"] == len(augmented) - len(kept) > 1

    _, _, metadatas = kind.contents(opened)
    _, texts = _texts(kind, opened)
    assert not [m for m in metadatas if m.get(SOURCE_KEY) == gone]
    assert not any(text in t for t in texts)
    retriever = ArgusRetriever(vectorstore=opened, k=3, fetch_k=len(texts))
    for query in queries:
        hits = opened.similarity_search(query, k=len(texts))
        assert not any(text in d.page_content for d in hits + retriever.invoke(query)), query


def _texts(kind: Kind, store: Any) -> tuple[list[str], list[str]]:
    if kind.name == "chroma":
        got = store.get(include=["documents"])
        return got["ids"], got["documents"]
    if kind.name == "qdrant":
        points, _ = store.client.scroll(store.collection_name, limit=10_000)
        return [str(p.id) for p in points], [p.payload["page_content"] for p in points]
    ids = [store.index_to_docstore_id[i] for i in range(store.index.ntotal)]
    return ids, [store.docstore.search(i).page_content for i in ids]


@pytest.mark.parametrize("name", ["chroma", "qdrant"])
def test_close_and_reopen_keeps_everything(name, tmp_path, embeddings, augmented, queries):
    kind = KINDS[name]
    store = kind.open(tmp_path, embeddings)
    store.add_documents(augmented)
    before = sorted(kind.contents(store)[0])
    retriever = ArgusRetriever(vectorstore=store, k=3)
    answers = [[d.page_content for d in retriever.invoke(q)] for q in queries[:4]]
    kind.close(store)

    store = kind.open(tmp_path, embeddings)
    try:
        assert sorted(kind.contents(store)[0]) == before
        retriever = ArgusRetriever(vectorstore=store, k=3)
        assert [[d.page_content for d in retriever.invoke(q)] for q in queries[:4]] == answers
    finally:
        kind.close(store)


def test_async_transform_and_retrieve_on_qdrant(tmp_path, embeddings, transformer, augmented):
    """atransform_documents gives what transform_documents gave; ainvoke what invoke gives."""
    kind = KINDS["qdrant"]
    originals = [d for d in augmented if d.metadata[VIEW_KEY] == "original"][:3]
    inputs = [
        Document(page_content=d.page_content, id=d.id, metadata={"lang": "en"}) for d in originals
    ]
    sources = {d.id for d in originals}
    want = [d for d in augmented if d.metadata[SOURCE_KEY] in sources]
    got = list(asyncio.run(transformer.atransform_documents(inputs)))
    key = lambda d: (d.id, d.page_content)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want))

    store = kind.open(tmp_path, embeddings)
    try:
        asyncio.run(store.aadd_documents(augmented))
        retriever = ArgusRetriever(vectorstore=store, k=3, fetch_k=3)
        for query in (SCENARIO.query, "radioactive notebooks"):
            sync = [d.page_content for d in retriever.invoke(query)]
            assert [d.page_content for d in asyncio.run(retriever.ainvoke(query))] == sync
    finally:
        kind.close(store)


def test_defect_2_qdrant_accepts_view_ids(tmp_path, embeddings, augmented):
    """View ids Qdrant refuses (issue 32, 2): every view id is a point id langchain-qdrant takes."""
    kind = KINDS["qdrant"]
    store = kind.open(tmp_path, embeddings)
    try:
        added = store.add_documents(augmented)
        assert sorted(map(str, added)) == sorted(d.id for d in augmented)
        views = [d for d in augmented if d.metadata[VIEW_KEY] != "original"]
        assert views and all(d.metadata["argus_view_key"] for d in views)
        assert sorted(kind.contents(store)[0]) == sorted(d.id for d in augmented)
    finally:
        kind.close(store)


def test_defect_3_qdrant_hits_without_ids_fold_by_lineage(tmp_path, embeddings, augmented, queries):
    """Hits without ids (issue 32, 3): langchain-qdrant's hits carry Document.id=None; they fold
    by their lineage, and an original outside the hits is fetched by its point id."""
    kind = KINDS["qdrant"]
    store = kind.open(tmp_path, embeddings)
    try:
        store.add_documents(augmented)
        hits = store.similarity_search(SCENARIO.query, k=3)
        assert all(d.id is None for d in hits)
        view_only = {_source(d) for d in hits} - {
            _source(d) for d in hits if d.metadata[VIEW_KEY] == "original"
        }
        assert view_only  # an original is fetched
        retriever = ArgusRetriever(vectorstore=store, k=3)
        for query in queries:
            found = retriever.invoke(query)
            want = [src for src, _, _ in _reference(kind, store, embeddings, query, k=3)]
            assert [_source(d) for d in found] == want, query
            assert all(d.metadata[VIEW_KEY] == "original" for d in found)
    finally:
        kind.close(store)


@pytest.mark.parametrize("name", ["chroma", "qdrant"])
def test_defect_8_index_with_a_record_manager_folds_original_and_view(
    name, tmp_path, embeddings, augmented, queries, caplog
):
    """index() re-keys by content hash (issue 32, 8): original and views still fold into one
    source; an original outside the hits is fetched with ``fetch_originals`` and, without it,
    its source is dropped (logged), never served by a view."""
    kind = KINDS[name]
    store = kind.open(tmp_path, embeddings)
    try:
        _index(augmented, _manager(kind), store)
        ids = kind.contents(store)[0]
        assert not {d.id for d in augmented} & set(ids)  # every entry under a content hash
        n = len(ids)
        full = ArgusRetriever(vectorstore=store, k=3, fetch_k=n)
        for query in queries:
            want = [src for src, _, _ in _reference(kind, store, embeddings, query, k=3)]
            assert [_source(d) for d in full.invoke(query)] == want, query

        hits = store.similarity_search(SCENARIO.query, k=3)
        originals_hit = {_source(d) for d in hits if d.metadata[VIEW_KEY] == "original"}
        view_only = {_source(d) for d in hits} - originals_hit
        assert view_only
        hook = ArgusRetriever(
            vectorstore=store, k=3, fetch_k=3, fetch_originals=kind.fetch_originals(store)
        )
        found = hook.invoke(SCENARIO.query)
        assert {_source(d) for d in found} == {_source(d) for d in hits}
        assert all(d.metadata[VIEW_KEY] == "original" for d in found)
        assert asyncio.run(hook.ainvoke(SCENARIO.query)) == found

        plain = ArgusRetriever(vectorstore=store, k=3, fetch_k=3)
        with caplog.at_level(logging.WARNING, logger="langchain_argus.retriever"):
            found = plain.invoke(SCENARIO.query)
        assert {_source(d) for d in found} == originals_hit
        assert all(d.metadata[VIEW_KEY] == "original" for d in found)
        assert any(f"{len(view_only)} source(s) dropped" in r.getMessage() for r in caplog.records)
    finally:
        kind.close(store)
