"""langchain-argus on real stores: Chroma (on disk), Qdrant (local mode, on disk) and FAISS.

Every store holds the shared scenario corpus augmented once (``augmented``); each test opens a
fresh store in its own folder. Rankings are checked against numpy cosine over the store's whole
contents, folded by lineage (``argus_ir.testing.cosine_reference``), for all twelve queries;
lifecycle checks read the store's contents. Update and delete follow the recipe of
``docs/langchain.md``: LangChain's ``index()`` with a record manager, grouped by
``argus_source_id``, or the record manager's keys deleted from the store directly.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import InMemoryRecordManager, RecordManager, index
from langchain_core.vectorstores import VectorStore

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import FORGED, SCENARIO, cosine_reference
from argus_ir.testing.postgres import postgres_server
from langchain_argus import (
    ArgusDocumentTransformer,
    ArgusRetriever,
    collapse_documents,
    delete_sources,
)

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

    ``open`` opens the store kept in a folder (a new one if the folder holds none), ``close``
    leaves it there for the next ``open`` (FAISS, held in memory, is saved with ``save_local``).
    ``view_discount`` is the relevance margin worth the default cosine margin on this store's
    relevance scale (what ``collapse_documents`` is given; the retriever converts its default
    itself), and ``cosine`` turns its relevance back into cosine (unit vectors).
    """

    name: str
    open: Callable[[Path, Embeddings], VectorStore]
    contents: Callable[[VectorStore], tuple[list[str], list[Any], list[dict]]]
    close: Callable[[VectorStore, Path], None]
    view_discount: float
    cosine: Callable[[float], float]
    fetch_originals: Callable[[VectorStore], Callable[[list[str]], list[Document]]] | None
    upserts: bool  # add_documents with a stored id replaces the entry
    tenant: Callable[[str], Any] = lambda value: {"tenant": value}  # its filter on metadata


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


def _chroma_close(store: Any, path: Path) -> None:
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


def _qdrant_tenant(value: str) -> Any:
    from qdrant_client import models

    return models.Filter(
        must=[models.FieldCondition(key="metadata.tenant", match=models.MatchValue(value=value))]
    )


def _faiss_open(path: Path, embeddings: Embeddings) -> VectorStore:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    if (path / "index.faiss").exists():
        # FAISS's own format: the docstore is pickled, so loading it must be allowed explicitly
        return FAISS.load_local(str(path), embeddings, allow_dangerous_deserialization=True)
    return FAISS(
        embedding_function=embeddings,
        index=faiss.IndexFlatL2(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )


def _faiss_close(store: Any, path: Path) -> None:
    store.save_local(str(path))  # the only way a FAISS store outlives its process


def _faiss_contents(store: Any) -> tuple[list[str], list[Any], list[dict]]:
    ids = [store.index_to_docstore_id[i] for i in range(store.index.ntotal)]
    vectors = store.index.reconstruct_n(0, store.index.ntotal)
    return ids, list(vectors), [store.docstore.search(i).metadata for i in ids]


def _pg_url(path: Path) -> str:
    """One database per test folder on the session's PostgreSQL server (psycopg 3's URL)."""
    name = "t_" + hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:20]
    return postgres_server().database(name).sqlalchemy_url("psycopg")


def _pg_open(path: Path, embeddings: Embeddings) -> VectorStore:
    from langchain_postgres import PGVector

    return PGVector(
        embeddings=embeddings, collection_name="argus", connection=_pg_url(path), use_jsonb=True
    )


def pgvector_originals(store: Any) -> Callable[[list[str]], list[Document]]:
    """The fetch hook of docs/langchain.md for langchain-postgres: originals by
    ``argus_source_id``, through a filtered search (PGVector has no fetch by metadata alone)."""

    def fetch(source_ids: list[str]) -> list[Document]:
        where = {"$and": [{SOURCE_KEY: {"$in": source_ids}}, {VIEW_KEY: {"$eq": "original"}}]}
        return store.similarity_search("", k=len(source_ids), filter=where)

    return fetch


def _pg_connect(store: Any) -> Any:
    import psycopg

    engine = getattr(store, "_engine", None) or store._async_engine
    url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    return psycopg.connect(url)


def _pg_rows(store: Any, columns: str) -> list[tuple[Any, ...]]:
    """``columns`` of every row of the store's collection (its rows in langchain-postgres's table)."""
    with _pg_connect(store) as conn:
        return conn.execute(
            f"SELECT {columns} FROM langchain_pg_embedding e "
            "JOIN langchain_pg_collection c ON e.collection_id = c.uuid WHERE c.name = %s",
            (store.collection_name,),
        ).fetchall()


def _pg_contents(store: Any) -> tuple[list[str], list[Any], list[dict]]:
    rows = _pg_rows(store, "e.id, e.embedding::text, e.cmetadata")
    return [r[0] for r in rows], [json.loads(r[1]) for r in rows], [r[2] or {} for r in rows]


def _pg_texts(store: Any) -> tuple[list[str], list[str]]:
    rows = _pg_rows(store, "e.id, e.document")
    return [r[0] for r in rows], [r[1] for r in rows]


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
        lambda store, path: store.client.close(),
        DEFAULT_VIEW_DISCOUNT / 2,
        lambda r: 2 * r - 1,
        qdrant_originals,
        upserts=True,
        tenant=_qdrant_tenant,
    ),
    "faiss": Kind(  # squared L2 d = 2 - 2 cos, relevance 1 - d / sqrt(2)
        "faiss",
        _faiss_open,
        _faiss_contents,
        _faiss_close,
        DEFAULT_VIEW_DISCOUNT * math.sqrt(2),
        lambda r: 1 - (1 - r) / math.sqrt(2),
        None,
        upserts=False,
    ),
    "pgvector": Kind(  # PGVector, COSINE (its default): relevance 1 - d = cos
        "pgvector",
        _pg_open,
        _pg_contents,
        lambda store, path: store._engine.dispose(),
        DEFAULT_VIEW_DISCOUNT,
        lambda r: r,
        pgvector_originals,
        upserts=True,
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
    kind.close(store, tmp_path)


def _reference(kind: Kind, store: VectorStore, embeddings: Embeddings, query: str, k: int):
    ids, vectors, metadatas = kind.contents(store)
    return cosine_reference(ids, vectors, metadatas, embeddings.embed_query(query), top_k=k)


def _source(doc: Document) -> str:
    return str(doc.metadata.get(SOURCE_KEY) or doc.id)


def _index(docs, manager, store, cleanup="incremental"):
    return index(docs, manager, store, cleanup=cleanup, source_id_key=SOURCE_KEY)


def _manager(kind: Kind, store: Any) -> RecordManager:
    """The record manager a team runs beside the store: on PostgreSQL, LangChain's
    ``SQLRecordManager`` in the store's own database; else the in-memory one."""
    if kind.name == "pgvector":
        from langchain_classic.indexes import SQLRecordManager

        url = store._engine.url.render_as_string(hide_password=False)
        manager: RecordManager = SQLRecordManager(f"argus/{kind.name}", db_url=url)
    else:
        manager = InMemoryRecordManager(namespace=f"argus/{kind.name}")
    manager.create_schema()
    return manager


def _check_all_queries(
    kind: Kind,
    store: VectorStore,
    embeddings: Embeddings,
    augmented: list[Document],
    queries: tuple[str, ...],
    *,
    asynchronous: bool = False,
) -> list[list[str]]:
    """For every query, the retriever over every entry returns the cosine reference's sources, in
    its order, with their originals' texts, and the folded relevance scores are the reference's
    cosines. Returns each query's texts; ``asynchronous``: through ``ainvoke`` and
    ``asimilarity_search_with_relevance_scores``."""
    originals = {d.id: d.page_content for d in augmented if d.metadata[VIEW_KEY] == "original"}
    n = len(kind.contents(store)[0])
    retriever = ArgusRetriever(vectorstore=store, k=3, fetch_k=n)
    if asynchronous:
        invoke = lambda q: asyncio.run(retriever.ainvoke(q))  # noqa: E731
        search = lambda q: asyncio.run(store.asimilarity_search_with_relevance_scores(q, k=n))  # noqa: E731
    else:
        invoke = retriever.invoke
        search = lambda q: store.similarity_search_with_relevance_scores(q, k=n)  # noqa: E731
    answers, lifted_by_a_view = [], 0
    for query in queries:
        reference = _reference(kind, store, embeddings, query, k=3)
        lifted_by_a_view += reference[0][2] != reference[0][0]
        found = invoke(query)
        assert [_source(d) for d in found] == [src for src, _, _ in reference], query
        assert [d.page_content for d in found] == [originals[_source(d)] for d in found]
        folded = collapse_documents(search(query), top_k=3, view_discount=kind.view_discount)
        got = [kind.cosine(f.score) for f in folded]
        assert got == pytest.approx([s for _, s, _ in reference], abs=1e-4), query
        answers.append([d.page_content for d in found])
    assert len(queries) == 12
    assert lifted_by_a_view >= 2  # views decide some rankings: the discount is exercised
    return answers


def test_query_and_collapse_match_the_cosine_reference(
    kind, opened, embeddings, augmented, queries
):
    """Every store, its own score convention: sources, order and scores as numpy cosine folds.
    FAISS reports squared L2 distances (issue 32, 1: distances were folded as similarities)."""
    opened.add_documents(augmented)
    _check_all_queries(kind, opened, embeddings, augmented, queries)


def test_ingest_twice_stores_each_entry_once(kind, opened, augmented):
    manager = _manager(kind, opened)
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
    manager = _manager(kind, opened)
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
    manager = _manager(kind, opened)
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


def test_direct_delete_of_a_sources_keys_leaves_nothing_of_it(
    kind, opened, augmented, embeddings, scenario_ids, queries
):
    """The direct delete of docs/langchain.md, ``delete_sources``: the record manager's keys of
    one source (``list_keys(group_ids=...)``) deleted from the store, then from the manager. No
    entry of the source remains, every other entry does, and every query ranks the rest as the
    reference."""
    gone = scenario_ids[SCENARIO.target]
    text = next(d.page_content for d in augmented if d.id == gone)
    manager = _manager(kind, opened)
    _index(augmented, manager, opened)
    before = set(kind.contents(opened)[0])

    keys = manager.list_keys(group_ids=[gone])
    assert len(keys) == sum(d.metadata[SOURCE_KEY] == gone for d in augmented) > 1
    assert delete_sources(opened, manager, [gone]) == len(keys)

    ids, _, metadatas = kind.contents(opened)
    assert set(ids) == before - set(keys)
    assert not [m for m in metadatas if m.get(SOURCE_KEY) == gone]
    assert not any(text in t for t in _texts(kind, opened)[1])
    assert manager.list_keys(group_ids=[gone]) == []
    assert sorted(manager.list_keys()) == sorted(ids)
    kept = [d for d in augmented if d.metadata[SOURCE_KEY] != gone]
    for answer in _check_all_queries(kind, opened, embeddings, kept, queries):
        assert text not in answer


def test_serialisation_does_not_apply_langchain_serialises_no_retriever_bound_to_a_store(
    embeddings, transformer
):
    """LangChain's own serialisation (``langchain_core.load``) refuses a retriever bound to a
    store, its own ``VectorStoreRetriever`` included; the argus steps are in the same case, as
    docs/langchain.md says (no YAML or dumpd round trip to test)."""
    from langchain_core.load import dumpd
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(embedding=embeddings)
    for step in (store.as_retriever(), ArgusRetriever(vectorstore=store), transformer):
        assert dumpd(step)["type"] == "not_implemented", type(step).__name__  # loads refuses it


def _texts(kind: Kind, store: Any) -> tuple[list[str], list[str]]:
    if kind.name == "chroma":
        got = store.get(include=["documents"])
        return got["ids"], got["documents"]
    if kind.name == "qdrant":
        points, _ = store.client.scroll(store.collection_name, limit=10_000)
        return [str(p.id) for p in points], [p.payload["page_content"] for p in points]
    if kind.name == "pgvector":
        return _pg_texts(store)
    ids = [store.index_to_docstore_id[i] for i in range(store.index.ntotal)]
    return ids, [store.docstore.search(i).page_content for i in ids]


def test_close_and_reopen_keeps_everything(kind, tmp_path, embeddings, augmented, queries):
    """Closed and opened again from its folder (FAISS: ``save_local`` and ``load_local``), a store
    holds the same entries and answers every query as before, as the cosine reference."""
    store = kind.open(tmp_path, embeddings)
    store.add_documents(augmented)
    before = _by_id(kind.contents(store))
    answers = _check_all_queries(kind, store, embeddings, augmented, queries)
    kind.close(store, tmp_path)

    store = kind.open(tmp_path, embeddings)
    try:
        after = _by_id(kind.contents(store))
        assert sorted(after) == sorted(before)
        assert {i: m for i, (_, m) in after.items()} == {i: m for i, (_, m) in before.items()}
        for entry_id, (vector, _) in after.items():  # float32 on disk
            assert vector == pytest.approx(before[entry_id][0], abs=1e-6), entry_id
        assert _check_all_queries(kind, store, embeddings, augmented, queries) == answers
    finally:
        kind.close(store, tmp_path)


def _by_id(contents: tuple[list[str], list[Any], list[dict]]) -> dict[str, tuple[list, dict]]:
    ids, vectors, metadatas = contents
    return {i: (list(map(float, v)), m) for i, v, m in zip(ids, vectors, metadatas)}


def test_async_transform_gives_what_transform_gave(transformer, augmented):
    """atransform_documents gives what transform_documents gave, originals and views."""
    originals = [d for d in augmented if d.metadata[VIEW_KEY] == "original"][:3]
    inputs = [
        Document(page_content=d.page_content, id=d.id, metadata={"lang": "en"}) for d in originals
    ]
    sources = {d.id for d in originals}
    want = [d for d in augmented if d.metadata[SOURCE_KEY] in sources]
    got = list(asyncio.run(transformer.atransform_documents(inputs)))
    key = lambda d: (d.id, d.page_content)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want))


def test_async_add_and_retrieve_match_the_cosine_reference(
    kind, opened, embeddings, augmented, queries, async_twin
):
    """aadd_documents stores every entry; ainvoke and the async relevance search rank every query
    as the cosine reference; with few hits, ainvoke fetches originals as invoke does.
    (langchain-postgres: one PGVector object is either sync or async; both open one database.)"""
    store = async_twin(opened)
    ids = asyncio.run(store.aadd_documents(augmented))
    assert (
        sorted(map(str, ids)) == sorted(kind.contents(opened)[0]) == sorted(d.id for d in augmented)
    )
    _check_all_queries(kind, store, embeddings, augmented, queries, asynchronous=True)
    few = ArgusRetriever(vectorstore=opened, k=3, fetch_k=3)
    few_async = ArgusRetriever(vectorstore=store, k=3, fetch_k=3)
    fetched = 0
    for query in queries:
        sync = few.invoke(query)
        hits = {
            _source(d)
            for d in opened.similarity_search(query, k=3)
            if d.metadata[VIEW_KEY] == "original"
        }
        fetched += len({_source(d) for d in sync} - hits)
        got = asyncio.run(few_async.ainvoke(query))
        assert [(_source(d), d.page_content) for d in got] == [
            (_source(d), d.page_content) for d in sync
        ], query
    assert fetched >= 2  # originals outside the hits were read


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
        kind.close(store, tmp_path)


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
        kind.close(store, tmp_path)


@pytest.mark.parametrize("name", ["chroma", "qdrant", "pgvector"])
def test_defect_8_index_with_a_record_manager_folds_original_and_view(
    name, tmp_path, embeddings, augmented, queries, caplog
):
    """index() re-keys by content hash (issue 32, 8): original and views still fold into one
    source; an original outside the hits is fetched with ``fetch_originals`` and, without it,
    its source is dropped (logged), never served by a view."""
    kind = KINDS[name]
    store = kind.open(tmp_path, embeddings)
    try:
        _index(augmented, _manager(kind, store), store)
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
        kind.close(store, tmp_path)


# Tenant b's cases: the `tenant_b` fixture (conftest.py), texts from argus_ir.testing.FORGED.
SUMMARY = FORGED.summary
FORGED_QUERIES = FORGED.queries


def test_defects_1_to_3_forged_lineage_crosses_no_filter_and_lifts_no_source(
    kind, opened, embeddings, augmented, transformer, scenario_ids, tenant_b
):
    """Issue 47, 1-3: tenant b's forged views (through the ingest step and straight into the
    store) never bring the target, tenant a's document, into b's filtered results, nor lift it in
    an unfiltered search; b's own document with a look-alike ``argus_view`` key is retrieved.
    Every ranking, filtered or not, is the cosine reference's (which applies the rule itself)."""
    victim = scenario_ids[SCENARIO.target]
    victim_text = next(d.page_content for d in augmented if d.id == victim)
    ingest, direct = tenant_b(victim)
    through = list(transformer.transform_documents(ingest))
    rewritten = transformer.last_stats.get("lineage_rewritten")
    opened.add_documents([*augmented, *through, *direct])
    ids, vectors, metadatas = kind.contents(opened)
    leaks = lifts = 0
    for tenant in ("b", None):
        search = {"filter": kind.tenant(tenant)} if tenant else {}
        retriever = ArgusRetriever(vectorstore=opened, k=3, fetch_k=3, search_kwargs=search)
        for query in FORGED_QUERIES:
            where = (lambda m, t=tenant: m.get("tenant") == t) if tenant else None
            want = cosine_reference(
                ids, vectors, metadatas, embeddings.embed_query(query), top_k=3, where=where
            )
            for found in (retriever.invoke(query), asyncio.run(retriever.ainvoke(query))):
                got = [_source(d) for d in found]
                leaks += tenant is not None and (
                    victim in got or any(d.page_content == victim_text for d in found)
                )
                lifts += tenant is None and got[:1] == [victim]
                if tenant is None:  # every entry is a hit of the reference; fetch_k=3 is fewer
                    assert victim not in got[:1], query
                    continue
                assert got == [src for src, _, _ in want], (tenant, query)
                assert all(d.metadata.get("tenant") == "b" for d in found), query
    assert (leaks, lifts) == (0, 0)
    assert rewritten == [d.id for d in ingest]  # both came in as originals, their lineage replaced
    summary = ArgusRetriever(
        vectorstore=opened, k=1, search_kwargs={"filter": kind.tenant("b")}
    ).invoke(SUMMARY)
    assert [d.page_content for d in summary] == [SUMMARY]  # a look-alike key hides nothing


def test_defect_7_pgvector_ids_are_one_namespace_across_collections(
    tmp_path, embeddings, augmented
):
    """Issue 47, 7 (langchain-postgres, as docs/langchain.md says): ``PGVector`` keys rows by id
    across every collection of its database: the same argus output written to a second
    collection updates the first collection's rows in place and the second stays empty. One
    database per collection keeps both."""
    from langchain_postgres import PGVector

    def collection(url: str, name: str) -> Any:
        return PGVector(embeddings=embeddings, collection_name=name, connection=url, use_jsonb=True)

    shared = _pg_url(tmp_path / "shared")
    first, second = collection(shared, "first"), collection(shared, "second")
    apart = [collection(_pg_url(tmp_path / name), name) for name in ("one", "two")]
    try:
        first.add_documents(augmented)
        second.add_documents(augmented)
        assert len(_pg_contents(first)[0]) == len(augmented)
        assert len(_pg_contents(second)[0]) == 0  # upstream: the rows stayed in "first"
        assert second.similarity_search(SCENARIO.query, k=3) == []
        for store in apart:
            store.add_documents(augmented)
        assert [len(_pg_contents(s)[0]) for s in apart] == [len(augmented)] * 2
    finally:
        for store in (first, second, *apart):
            store._engine.dispose()


def lancedb_originals(store: Any) -> Callable[[list[str]], list[Document]]:
    """The fetch hook of docs/langchain.md for langchain-community's LanceDB (no get_by_ids)."""

    def fetch(source_ids: list[str]) -> list[Document]:
        quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in source_ids)
        rows = (
            store.get_table()
            .search()
            .where(f"metadata.argus_source_id IN ({quoted}) AND metadata.argus_view = 'original'")
            .select(["id", "text", "metadata"])
            .to_list()
        )
        return [Document(page_content=r["text"], metadata=r["metadata"], id=r["id"]) for r in rows]

    return fetch


@pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset")
@pytest.mark.parametrize(
    ("distance", "metrics", "slope"),
    [("cosine", None, 2.0), ("cosine", "cosine", 1.0), ("l2", None, math.sqrt(2))],
)
def test_defect_5_lancedb_scores_and_originals(
    distance, metrics, slope, tmp_path, embeddings, augmented, queries
):
    """Issue 47, 5 (LanceDB through LangChain): its relevance is 2·cos − 1 with
    ``distance="cosine"`` and the table's L2 metric, cos with ``metrics="cosine"``; the slope
    argus reads matches the scores the store returns; it has no get_by_ids, so the retriever is
    refused without a fetch hook, and with the documented hook every query ranks as the cosine
    reference (hits come back with ``id=None``: they fold by lineage, and are returned without
    an id, as the store gave them; issue 54, 11)."""
    from langchain_community.vectorstores import LanceDB

    from langchain_argus._scores import relevance_per_cosine

    store = LanceDB(
        uri=str(tmp_path / "lance"), embedding=embeddings, distance=distance, table_name="argus"
    )
    store.add_documents(augmented)  # one batch: LanceDB fixes its metadata schema on the first
    search = {"metrics": metrics} if metrics else {}
    assert relevance_per_cosine(store, search) == pytest.approx(slope)
    hits = store.similarity_search_with_relevance_scores(SCENARIO.query, k=6, **search)
    q = np.asarray(embeddings.embed_query(SCENARIO.query))
    cos = [float(np.dot(q, embeddings.embed_query(d.page_content))) for d, _ in hits]
    rel = [r for _, r in hits]
    assert all(d.id is None for d, _ in hits)  # upstream: no id on what it returns
    fitted = np.polyfit(cos, rel, 1)[0]  # relevance = a + b·cos, b read off the store
    assert fitted == pytest.approx(slope, abs=1e-3)

    with pytest.raises(ValueError, match=r"LanceDB cannot read documents by id.*fetch_originals"):
        ArgusRetriever(vectorstore=store, k=3, search_kwargs=search)
    table = store.get_table().to_arrow().to_pylist()
    ids = [r["id"] for r in table]
    vectors = [r["vector"] for r in table]
    metadatas = [r["metadata"] for r in table]
    for fetch_k in (len(ids), 3):
        retriever = ArgusRetriever(
            vectorstore=store,
            k=3,
            fetch_k=fetch_k,
            search_kwargs=search,
            fetch_originals=lancedb_originals(store),
        )
        for query in queries:
            found = retriever.invoke(query)
            if fetch_k == len(ids):
                want = cosine_reference(
                    ids, vectors, metadatas, embeddings.embed_query(query), top_k=3
                )
                assert [_source(d) for d in found] == [s for s, _, _ in want], query
            assert all(d.metadata[VIEW_KEY] == "original" for d in found), query
            # a hit has no id (none made up from argus_source_id); one read by the hook has its own
            assert all(d.id in (None, _source(d)) for d in found), query


_WRITER = """
import json, sys
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_postgres import PGVector

url, path, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = json.load(open(path))
vectors = dict(zip(data["texts"], data["vectors"]))

class Known(Embeddings):  # the session's MiniLM vectors, so the writers load no model
    def embed_documents(self, texts):
        return [vectors[t] for t in texts]

    def embed_query(self, text):
        return vectors[text]

docs = [Document(**d) for d in data["documents"]][start::2]
store = PGVector(embeddings=Known(), collection_name="argus", connection=url, use_jsonb=True)
for doc in docs:  # one row at a time, so the two writers interleave
    store.add_documents([doc])
print(len(docs))
"""


def test_pgvector_two_processes_write_at_once(tmp_path, embeddings, augmented, queries):
    """Two processes add the augmented corpus into one PGVector collection at the same time,
    each half of it, row by row: every entry is stored once and every query ranks as the cosine
    reference. The store is made once before the writers start, as the docs say: langchain-postgres
    creates its tables and collection check-then-insert, so two first-time constructors race (one
    failed on a UNIQUE violation of the collection table in CI)."""
    import subprocess
    import sys

    url = _pg_url(tmp_path)
    _pg_open(tmp_path, embeddings)._engine.dispose()  # tables and the collection, made once
    data = {
        "texts": [d.page_content for d in augmented],
        "vectors": embeddings.embed_documents([d.page_content for d in augmented]),
        "documents": [
            {"page_content": d.page_content, "metadata": d.metadata, "id": d.id} for d in augmented
        ],
    }
    (tmp_path / "corpus.json").write_text(json.dumps(data))
    (tmp_path / "writer.py").write_text(_WRITER)
    writers = [
        subprocess.Popen(
            [sys.executable, str(tmp_path / "writer.py"), url, str(tmp_path / "corpus.json"), s],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in ("0", "1")
    ]
    outs = [w.communicate(timeout=300) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], [err[-2000:] for _, err in outs]
    assert sum(int(out) for out, _ in outs) == len(augmented)
    store = _pg_open(tmp_path, embeddings)
    try:
        assert sorted(_pg_contents(store)[0]) == sorted(d.id for d in augmented)
        _check_all_queries(KINDS["pgvector"], store, embeddings, augmented, queries)
    finally:
        store._engine.dispose()
