"""The store matrix: ArgusTransform and ArgusPostprocessor over real stores, Chroma
(``PersistentClient``) and Qdrant (local mode) on disk, and PostgreSQL with pgvector
(``PGVectorStore``, a database per test on the process's test server), held to one behaviour:
ingest, query and fold as a numpy cosine reference does, ingest twice, update, delete, close and
reopen, serialisation, async, and the boundaries (a forged view crosses no metadata filter).

Every store is filled from the one augment of the shared scenario (``conftest.corpus``, UUID ids:
Qdrant takes no other string ids); only the update and pipeline tests augment again, a few
documents each (the pgvector re-ingest test: the scenario, once per docstore strategy).

Where a store's own behaviour differs, the test says so: pgvector's ``add`` appends a row per
node whatever ids the table holds (issue defect 6), so ingesting the same nodes twice doubles
them; the documented way to ingest again is an ``IngestionPipeline`` with a docstore.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import psycopg
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeWithScore,
    QueryBundle,
    TextNode,
)
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.postgres import PGVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import AsyncQdrantClient, QdrantClient
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY, VIEW_NAME_KEY
from argus_ir.testing import FORGED, SCENARIO, cosine_reference
from argus_ir.testing.postgres import PostgresServer, postgres_server
from argus_llamaindex import ArgusPostprocessor, ArgusTransform

# local Qdrant ignores the payload index llama-index asks for; the delete filter works without it
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

STORES = ("chroma", "qdrant", "pgvector")
COLLECTION = "argus-docs"
TABLE = "argus_docs"  # PGVectorStore's table is data_<table_name>
EMBED_DIM = 384  # all-MiniLM-L6-v2
# queries whose two best hits are views only: their originals are outside the hits
VIEWS_FIRST = (
    SCENARIO.query,
    "the physicist who discovered polonium and radium",
    "the Danish physicist who developed the model of the atom",
    "the Roman general and dictator",
)
# the target's new text: another actor, so its views (and their entity) change
NEW_TARGET = (
    "Marlon Brando once filmed a scene in Lucknow, and the crew still talks about the heat."
)


class Store:
    """One store, opened through its own client; ``entries`` reads its whole contents.

    Chroma and Qdrant keep their data in ``path``; pgvector keeps it in the database named after
    ``path`` on the process's test server (``client`` is that database's address), so a store
    closed and opened again finds its rows, and no two tests share a table.
    """

    def __init__(self, kind: str, path: Path) -> None:
        self.kind, self.path = kind, path
        self.client: Any = None
        self.vector_store: Any = None
        self.open()

    def open(self) -> Store:
        if self.kind == "chroma":
            self.client = chromadb.PersistentClient(path=str(self.path))
            collection = self.client.get_or_create_collection(
                COLLECTION, metadata={"hnsw:space": "cosine"}
            )
            self.vector_store = ChromaVectorStore(chroma_collection=collection)
        elif self.kind == "qdrant":
            self.client = QdrantClient(path=str(self.path))  # one client per folder at a time
            self.vector_store = QdrantVectorStore(client=self.client, collection_name=COLLECTION)
        else:
            self.client = _database(self.path)
            self.vector_store = _pgvector(self.client)
        return self

    def close(self) -> None:
        if self.kind == "qdrant":
            self.client.close()
        elif self.kind == "pgvector":  # the pooled connections; the async engine pools none
            self.vector_store._engine.dispose()
            self.vector_store._async_engine.sync_engine.dispose()
        self.client = self.vector_store = None

    def index(self, embed_model, nodes: tuple[BaseNode, ...] | list[BaseNode] = ()):
        """An index over the store, with ``nodes`` added (none: the store as it is)."""
        if not nodes:
            return VectorStoreIndex.from_vector_store(self.vector_store, embed_model=embed_model)
        context = StorageContext.from_defaults(vector_store=self.vector_store)
        return VectorStoreIndex(list(nodes), storage_context=context, embed_model=embed_model)

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every stored entry by id: its ``vector``, the node's ``metadata``, what the store keeps
        beside it (``stored``: the node's metadata and its bookkeeping) and its ``text``.

        An id stored more than once (pgvector appends) appears once, as its first row: ``rows``
        shows them all."""
        out: dict[str, dict[str, Any]] = {}
        for entry_id, entry in self.rows():
            out.setdefault(entry_id, entry)
        return out

    def rows(self) -> list[tuple[str, dict[str, Any]]]:
        """Every stored row as ``(id, entry)``, in the store's order; Chroma and Qdrant hold an
        id once, a pgvector table may hold it in several rows."""
        if self.kind == "chroma":
            got = self.vector_store.client.get(include=["embeddings", "metadatas", "documents"])
            rows = zip(got["ids"], got["embeddings"], got["metadatas"], got["documents"])
            return [
                (i, {"vector": v, "metadata": _meta(m), "stored": m, "text": t})
                for i, v, m, t in rows
            ]
        if self.kind == "pgvector":
            return [
                (i, {"vector": v, "metadata": _meta(m), "stored": m, "text": t})
                for i, v, m, t in _pg_rows(self.client)
            ]
        if not self.client.collection_exists(COLLECTION):
            return []
        points, _ = self.client.scroll(COLLECTION, limit=10_000, with_vectors=True)
        return [
            (
                str(p.id),
                {
                    "vector": _dense(p.vector),
                    "metadata": _meta(p.payload),
                    "stored": p.payload,
                    "text": _text(p.payload),
                },
            )
            for p in points
        ]


def _database(path: Path) -> PostgresServer:
    """The database of the store in ``path`` on the process's PostgreSQL server (created on
    first use, with the ``vector`` extension)."""
    digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:20]
    return postgres_server().database(f"li_{digest}")


def _pgvector(server: PostgresServer) -> PGVectorStore:
    """A ``PGVectorStore`` on the database, as ``from_params`` makes it (psycopg2, asyncpg), with
    engines made here: the async one pools no connection, since an asyncpg connection is bound to
    the event loop that opened it and every ``asyncio.run`` brings a new loop."""
    sync_url, async_url = server.sqlalchemy_url("psycopg2"), server.sqlalchemy_url("asyncpg")
    return PGVectorStore(
        connection_string=sync_url,
        async_connection_string=async_url,
        table_name=TABLE,
        embed_dim=EMBED_DIM,
        engine=create_engine(sync_url),
        async_engine=create_async_engine(async_url, poolclass=NullPool),
    )


def _pg_rows(server: PostgresServer) -> list[tuple[str, list[float], dict[str, Any], str]]:
    """``(node_id, embedding, metadata_, text)`` of every row of the store's table, read with SQL
    (``metadata_``: the node's metadata beside the store's bookkeeping, as in a Qdrant payload;
    the text has a column of its own)."""
    with psycopg.connect(server.url) as conn:
        table = conn.execute("SELECT to_regclass(%s)", (f"public.data_{TABLE}",)).fetchone()
        if table is None or table[0] is None:  # nothing was added yet: no table
            return []
        rows = conn.execute(
            f"SELECT node_id, embedding::text, metadata_, text FROM data_{TABLE} ORDER BY id"
        ).fetchall()
    return [(i, json.loads(v), m, t) for i, v, m, t in rows]


def _meta(stored: dict[str, Any]) -> dict[str, Any]:
    # the node's own metadata (the store keeps it beside its bookkeeping: _node_content, doc ids)
    return metadata_dict_to_node(stored).metadata


def _text(payload: dict[str, Any]) -> str:
    # the store keeps the whole node, text included, as JSON in its payload
    return metadata_dict_to_node(payload).get_content(metadata_mode=MetadataMode.NONE)


def _dense(vector: Any) -> Any:
    # a Qdrant collection with named vectors returns a dict of them; the store names its dense one
    return next(iter(vector.values())) if isinstance(vector, dict) else vector


@pytest.fixture(scope="module", params=STORES)
def filled(request, tmp_path_factory, corpus, embed_model) -> Iterator[Store]:
    """A store per kind holding the augmented scenario (the query tests only read it)."""
    store = Store(request.param, tmp_path_factory.mktemp(request.param))
    store.index(embed_model, corpus.nodes)
    yield store
    store.close()


@pytest.fixture
def open_store(tmp_path) -> Iterator[Any]:
    """Opens an empty store of a kind in the test's folder; closes what it opened."""
    opened: list[Store] = []

    def open_one(kind: str, name: str = "store") -> Store:
        opened.append(Store(kind, tmp_path / name))
        return opened[-1]

    yield open_one
    for store in opened:
        if store.client is not None:
            store.close()


@pytest.fixture(params=STORES)
def fresh(request, open_store, corpus, embed_model) -> Store:
    """A store of its own, filled the same way, for a test that changes it."""
    store = open_store(request.param)
    store.index(embed_model, corpus.nodes)
    return store


@pytest.fixture(scope="module")
def asked(embed_model, queries) -> dict[str, QueryBundle]:
    """The twelve queries, embedded once (the retrievers take the embedding as it is)."""
    vectors = embed_model.get_text_embedding_batch(list(queries))  # MiniLM: queries as texts
    return {q: QueryBundle(query_str=q, embedding=v) for q, v in zip(queries, vectors)}


def _reference(
    store: Store, query: QueryBundle, k: int, **kwargs: Any
) -> list[tuple[str, float, str]]:
    entries = store.entries()
    return cosine_reference(
        list(entries),
        [e["vector"] for e in entries.values()],
        [e["metadata"] for e in entries.values()],
        query.embedding,
        top_k=k,
        **kwargs,
    )


def _assert_matches_the_reference(
    store: Store, corpus, asked: dict[str, QueryBundle], found_for, **kwargs: Any
) -> None:
    """For every query, the postprocessed top 3 (ids, scores, texts) equal the cosine reference
    (``kwargs``: its settings, as the postprocessor's)."""
    assert len(asked) == 12
    lifted_by_a_view = 0
    for query, bundle in asked.items():
        reference = _reference(store, bundle, k=3, **kwargs)
        lifted_by_a_view += reference[0][2] != reference[0][0]
        found = found_for(bundle)
        assert [n.node.node_id for n in found] == [src for src, _, _ in reference], query
        assert [n.score for n in found] == pytest.approx([s for _, s, _ in reference], abs=1e-5)
        assert [n.node.get_content() for n in found] == [corpus.texts[s] for s, _, _ in reference]
    assert lifted_by_a_view >= 2  # views decide some rankings: the discount is exercised


def _every_hit(store: Store, index: VectorStoreIndex):
    return index.as_retriever(similarity_top_k=len(store.entries()))


def test_query_and_fold_match_the_cosine_reference(filled, corpus, embed_model, asked):
    retriever = _every_hit(filled, filled.index(embed_model))
    post = ArgusPostprocessor(top_k=3, vector_store=filled.vector_store)
    _assert_matches_the_reference(
        filled, corpus, asked, lambda q: post.postprocess_nodes(retriever.retrieve(q))
    )


def test_defect_9_originals_outside_the_hits_are_read_from_the_store(
    filled, corpus, embed_model, asked
):
    """Issue defect 9: the index keeps no docstore; the originals come from the vector store."""
    index = filled.index(embed_model)
    assert not index.docstore.docs
    for query in VIEWS_FIRST:
        hits = index.as_retriever(similarity_top_k=2).retrieve(asked[query])
        assert all(h.node.metadata[VIEW_KEY] != "original" for h in hits), query  # views only
        sources = list(dict.fromkeys(h.node.metadata[SOURCE_KEY] for h in hits))
        for post in (
            ArgusPostprocessor(top_k=2, vector_store=filled.vector_store),
            ArgusPostprocessor(top_k=2, index=index),
        ):
            found = post.postprocess_nodes(hits)
            assert [n.node.node_id for n in found] == sources, query
            for n in found:  # the original itself, read from the store
                assert n.node.metadata[VIEW_KEY] == "original", query
                assert n.node.get_content() == corpus.texts[n.node.node_id], query


def test_originals_carry_their_lineage_and_embed_their_own_text(filled, corpus):
    entries = filled.entries()
    for doc_id, text in corpus.texts.items():
        assert entries[doc_id]["metadata"][SOURCE_KEY] == doc_id
        assert entries[doc_id]["metadata"][VIEW_KEY] == "original"
        assert entries[doc_id]["text"] == text
    originals = [n for n in corpus.nodes if n.node_id in corpus.texts]
    assert all(n.get_content(metadata_mode="embed") == n.get_content() for n in originals)


def test_view_ids_are_uuids_that_qdrant_accepts(filled, corpus):
    """Issue defect 2: view ids are UUIDs (Qdrant refuses ``<id>#argus-<hex>`` point ids); the
    readable key stays in the view's metadata."""
    views = {i: e for i, e in filled.entries().items() if e["metadata"][VIEW_KEY] != "original"}
    assert len(views) == len(corpus.nodes) - len(corpus.texts) > 0  # every view was stored
    for view_id, entry in views.items():
        assert uuid.UUID(view_id).version == 5
        key = entry["metadata"][VIEW_NAME_KEY]
        assert re.fullmatch(re.escape(entry["metadata"][SOURCE_KEY]) + r"#argus-[0-9a-f]{16}", key)


def test_ingest_twice_adds_nothing(fresh, corpus, embed_model, open_store):
    """Chroma and Qdrant key entries by id: the same nodes inserted again change nothing.
    pgvector (issue defect 6) appends a row per node whatever ids its table holds: every entry is
    there twice, the same each time; the documented way, a pipeline with a docstore, ingests the
    same documents a second time without adding a row."""
    before = fresh.rows()
    fresh.index(embed_model).insert_nodes(list(corpus.nodes))
    after = fresh.rows()
    assert sorted(i for i, _ in before) == sorted(n.node_id for n in corpus.nodes)
    copies = 2 if fresh.kind == "pgvector" else 1
    assert sorted(i for i, _ in after) == sorted(i for i, _ in before for _ in range(copies))
    texts = {i: e["text"] for i, e in before}
    assert all(e["text"] == texts[i] for i, e in after)
    if fresh.kind != "pgvector":
        return
    store = open_store("pgvector", "pipeline")
    pipeline = _pipeline(store, corpus, embed_model, DocstoreStrategy.UPSERTS)
    documents = _documents(corpus, tuple(corpus.names.values()))
    assert [n.node_id for n in pipeline.run(documents=documents)] == [
        n.node_id for n in corpus.nodes
    ]
    assert pipeline.run(documents=documents) == []  # unchanged: nothing runs, nothing is added
    assert sorted(i for i, _ in store.rows()) == sorted(n.node_id for n in corpus.nodes)


def _of(store: Store, doc_id: str) -> dict[str, dict[str, Any]]:
    return {i: e for i, e in store.entries().items() if e["metadata"].get(SOURCE_KEY) == doc_id}


def _texts_returned(store: Store, embed_model, asked: dict[str, QueryBundle]) -> set[str]:
    """Every text the queries (and the target's old text as a query) bring back, raw or folded."""
    retriever = store.index(embed_model).as_retriever(similarity_top_k=10)
    post = ArgusPostprocessor(top_k=10, vector_store=store.vector_store)
    old = dict(SCENARIO.documents)[SCENARIO.target]
    out: set[str] = set()
    for query in (*asked.values(), QueryBundle(old, embedding=embed_model.get_text_embedding(old))):
        hits = retriever.retrieve(query)
        out |= {h.node.get_content() for h in hits} | {
            n.node.get_content() for n in post.postprocess_nodes(hits)
        }
    return out


def test_defect_11_delete_ref_doc_removes_a_document_and_its_views(
    fresh, corpus, embed_model, asked
):
    """Issue defect 11: without a splitter, delete_ref_doc left the document itself behind (its
    ref doc id was stored as "None")."""
    target = corpus.id(SCENARIO.target)
    gone = {e["text"] for e in _of(fresh, target).values()}
    assert len(gone) >= 2  # the original and its views
    fresh.index(embed_model).delete_ref_doc(target)
    assert not _of(fresh, target) and target not in fresh.entries()
    assert len(fresh.entries()) == len(corpus.nodes) - len(gone)
    assert not gone & _texts_returned(fresh, embed_model, asked)


def test_update_by_delete_then_insert_leaves_no_stale_view(fresh, corpus, embed_model):
    """The update recipe without a splitter: Chroma's add skips ids it holds, so delete first."""
    target = corpus.id(SCENARIO.target)
    old = _of(fresh, target)
    index = fresh.index(embed_model)
    index.delete_ref_doc(target)
    new = embed_model(corpus.transform([Document(id_=target, text=NEW_TARGET)]))
    index.insert_nodes(new)
    now = _of(fresh, target)
    assert sorted(now) == sorted(n.node_id for n in new)  # exactly the new entries
    assert now[target]["text"] == NEW_TARGET
    views = [e for i, e in now.items() if i != target]
    assert views and all(e["text"].startswith(NEW_TARGET) for e in views)
    assert all(e["metadata"]["argus_entity"] != "Humphrey Bogart" for e in views)
    stale = {e["text"] for e in old.values()}
    assert not stale & {e["text"] for e in fresh.entries().values()}


def test_a_source_whose_original_is_gone_is_dropped_not_served_by_a_view(
    fresh, corpus, embed_model, asked, caplog
):
    target = corpus.id(SCENARIO.target)
    fresh.vector_store.delete_nodes(node_ids=[target])  # the original only: its views remain
    assert _of(fresh, target)
    retriever = fresh.index(embed_model).as_retriever(similarity_top_k=4)
    hits = retriever.retrieve(asked[SCENARIO.query])
    assert hits[0].node.metadata[SOURCE_KEY] == target  # a view of it is the best hit
    post = ArgusPostprocessor(top_k=2, vector_store=fresh.vector_store)
    with caplog.at_level(logging.WARNING, logger="argus_llamaindex.postprocessor"):
        found = post.postprocess_nodes(hits)
    assert len(found) == 2 and target not in [n.node.node_id for n in found]
    assert all(n.node.metadata[VIEW_KEY] == "original" for n in found)
    assert any("dropped 1 source" in r.getMessage() for r in caplog.records)


def test_close_and_reopen(fresh, corpus, embed_model, asked):
    fresh.close()
    fresh.open()  # a new client on the same folder
    index = fresh.index(embed_model)
    assert len(fresh.entries()) == len(corpus.nodes)
    retriever = _every_hit(fresh, index)
    post = ArgusPostprocessor(top_k=3, index=index)
    _assert_matches_the_reference(
        fresh, corpus, asked, lambda q: post.postprocess_nodes(retriever.retrieve(q))
    )


def _documents(corpus, names: tuple[str, ...], **changed: str) -> list[Document]:
    return [
        Document(id_=corpus.id(n), text=changed.get(n, dict(SCENARIO.documents)[n])) for n in names
    ]


def _pipeline(store: Store, corpus, embed_model, strategy: DocstoreStrategy) -> IngestionPipeline:
    """ArgusTransform (the loaded models) and the embedding into ``store``, deduplicated by a
    docstore of its own with ``strategy``."""
    transform = ArgusTransform(**SCENARIO.settings)
    transform._argus = corpus.transform.argus
    return IngestionPipeline(
        transformations=[transform, embed_model],
        docstore=SimpleDocumentStore(),
        vector_store=store.vector_store,
        docstore_strategy=strategy,
    )


@pytest.mark.parametrize("splitter", [False, True], ids=["documents", "chunks"])
@pytest.mark.parametrize("kind", STORES)
def test_a_pipeline_with_a_docstore_upserts_documents_with_their_views(
    kind, splitter, open_store, corpus, embed_model, tmp_path
):
    """IngestionPipeline(docstore=..., vector_store=...): a rerun adds nothing, a changed document
    replaces its entries and views (with or without a splitter), and the pipeline, persisted and
    loaded with the transform rebuilt from its dict, keeps deduplicating."""
    names = (SCENARIO.target, "sci-2")
    store = open_store(kind)

    def pipeline(transform: ArgusTransform) -> IngestionPipeline:
        steps = [SentenceSplitter(chunk_size=32, chunk_overlap=0)] if splitter else []
        return IngestionPipeline(
            transformations=[*steps, transform, embed_model],
            docstore=SimpleDocumentStore(),
            vector_store=store.vector_store,
        )

    first = pipeline(ArgusTransform(**SCENARIO.settings))
    first.transformations[-2]._argus = corpus.transform.argus  # the loaded models
    out = first.run(documents=_documents(corpus, names))
    target = corpus.id(SCENARIO.target)
    old = {e["text"] for i, e in store.entries().items() if e["stored"]["ref_doc_id"] == target}
    assert len(old) >= 3 and len(store.entries()) == len(out)

    first.persist(str(tmp_path / "pipeline-state"))
    data = first.transformations[-2].to_dict()
    again = pipeline(ArgusTransform.from_dict(data))
    again.load(str(tmp_path / "pipeline-state"))
    assert again.transformations[-2].to_dict() == data
    again.transformations[-2]._argus = corpus.transform.argus
    assert again.run(documents=_documents(corpus, names)) == []  # unchanged: nothing to run
    assert len(store.entries()) == len(out)

    updated = again.run(documents=_documents(corpus, names, **{SCENARIO.target: NEW_TARGET}))
    entries = store.entries()
    assert sorted(entries) == sorted(
        [n.node_id for n in out if n.ref_doc_id != target] + [n.node_id for n in updated]
    )
    now = [e for e in entries.values() if e["stored"]["ref_doc_id"] == target]
    assert any(e["metadata"][VIEW_KEY] != "original" for e in now)
    assert not old & {e["text"] for e in now}  # no stale chunk or view


def test_serialised_postprocessor_folds_the_same(filled, corpus, embed_model, asked):
    """to_dict/from_dict keeps the settings: the clone folds every query as the original does,
    and as the cosine reference with the same discount."""
    post = ArgusPostprocessor(top_k=3, view_discount=0.03, vector_store=filled.vector_store)
    data = post.to_dict()
    assert "vector_store" not in data  # a live client is not data: give it again
    clone = ArgusPostprocessor.from_dict(data, vector_store=filled.vector_store)
    retriever = _every_hit(filled, filled.index(embed_model))

    def folded(query: QueryBundle) -> list[NodeWithScore]:
        hits = retriever.retrieve(query)
        expected = [(n.node.node_id, n.score) for n in post.postprocess_nodes(hits)]
        found = clone.postprocess_nodes(hits)
        assert [(n.node.node_id, n.score) for n in found] == expected, query.query_str
        return found

    _assert_matches_the_reference(filled, corpus, asked, folded, view_discount=0.03)


def _async_qdrant(store: Store) -> Any:
    """The store reopened with an async client only: a local Qdrant folder takes one client at a
    time, so the sync one is closed first."""
    store.close()
    store.client = AsyncQdrantClient(path=str(store.path))
    store.vector_store = QdrantVectorStore(aclient=store.client, collection_name=COLLECTION)
    return store.vector_store


@pytest.mark.parametrize("kind", STORES)
def test_async_ingest_retrieve_and_fold(kind, open_store, corpus, embed_model, asked, caplog):
    """acall through the pipeline, ainsert_nodes, aretrieve and apostprocess_nodes: every query
    folds as the cosine reference. Qdrant in local mode through ``AsyncQdrantClient(path=...)``
    alone: apostprocess_nodes reads originals outside the hits with the store's ``aget_nodes``
    (with the sync ``get_nodes`` such a store could not serve them: sources hit only through
    views were dropped)."""
    store = open_store(kind)
    vector_store = _async_qdrant(store) if kind == "qdrant" else store.vector_store
    transform = ArgusTransform(**SCENARIO.settings)
    transform._argus = corpus.transform.argus
    names = (SCENARIO.target, "sci-2")
    mine = {corpus.id(n) for n in names}
    pipeline = IngestionPipeline(
        transformations=[transform, embed_model], vector_store=vector_store
    )
    total = len(corpus.nodes)

    async def ingest_and_ask() -> tuple[list[BaseNode], dict[str, Any], dict[str, Any]]:
        out = await pipeline.arun(documents=_documents(corpus, names))
        context = StorageContext.from_defaults(vector_store=vector_store)
        index = VectorStoreIndex([], storage_context=context, embed_model=embed_model)
        await index.ainsert_nodes([n for n in corpus.nodes if n.metadata[SOURCE_KEY] not in mine])
        post = ArgusPostprocessor(top_k=3, index=index)
        every, few = {}, {}
        for query, bundle in asked.items():
            hits = await index.as_retriever(similarity_top_k=total).aretrieve(bundle)
            every[query] = await post.apostprocess_nodes(hits)
            hits = await index.as_retriever(similarity_top_k=2).aretrieve(bundle)
            few[query] = (hits, await post.apostprocess_nodes(hits))
        if kind == "qdrant":
            await store.client.close()
        return out, every, few

    with caplog.at_level(logging.WARNING, logger="argus_llamaindex.postprocessor"):
        out, every, few = asyncio.run(ingest_and_ask())
    assert [n.node_id for n in out] == [
        n.node_id for n in corpus.nodes if n.metadata[SOURCE_KEY] in mine
    ]
    if kind == "qdrant":
        store.open()  # the sync client again, to read the whole store for the reference
    assert len(store.entries()) == total
    _assert_matches_the_reference(store, corpus, asked, lambda q: every[q.query_str])

    views_only = [
        q
        for q, (hits, _) in few.items()
        if all(h.node.metadata[VIEW_KEY] != "original" for h in hits)
    ]
    assert views_only
    for query, (hits, found) in few.items():
        assert all(f.node.metadata[VIEW_KEY] == "original" for f in found), query
        sources = list(dict.fromkeys(h.node.metadata[SOURCE_KEY] for h in hits))
        assert [f.node.node_id for f in found] == sources, query  # originals read from the store
    assert not [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]


def test_defect_6_pgvector_reingest_with_each_docstore_strategy(
    open_store, corpus, embed_model, asked
):
    """Issue defect 6: pgvector's ``add`` appends, so a document ingested again must go through a
    pipeline with a docstore. The scenario is ingested, ingested again unchanged (nothing runs),
    then again with the target's text changed, under each ``DocstoreStrategy``:

    - ``UPSERTS`` and ``UPSERTS_AND_DELETE`` delete the changed document's rows by its ref doc id
      (its original and its views) before adding the new ones: one original per source, no stale
      view, no old text; ``UPSERTS_AND_DELETE`` also deletes a document a later run leaves out;
    - ``DUPLICATES_ONLY`` compares hashes only: the changed document is new to it, and the old
      original (under the same id) and its views stay beside the new ones. That is the documented
      reason not to use it for updates.

    Nodes inserted twice without a docstore are stored twice (upstream); the postprocessor over
    every row still folds each query as the cosine reference over the distinct entries does."""
    target = corpus.id(SCENARIO.target)
    old_text = corpus.texts[target]
    names = tuple(corpus.names.values())
    first_ids = [n.node_id for n in corpus.nodes]
    for strategy in DocstoreStrategy:
        store = open_store("pgvector", strategy.value)
        pipeline = _pipeline(store, corpus, embed_model, strategy)
        assert [n.node_id for n in pipeline.run(documents=_documents(corpus, names))] == first_ids
        old = {i: e for i, e in store.rows() if e["stored"]["ref_doc_id"] == target}
        assert len(old) >= 3, strategy  # the original and its views
        assert pipeline.run(documents=_documents(corpus, names)) == [], strategy
        assert len(store.rows()) == len(first_ids), strategy

        changed = _documents(corpus, names, **{SCENARIO.target: NEW_TARGET})
        updated = pipeline.run(documents=changed)
        new = [n.node_id for n in updated]
        assert new[0] == target and len(new) >= 2, strategy  # the new original and its views
        assert set(new[1:]).isdisjoint(old), strategy  # another actor: other views
        rows = store.rows()
        mine = [(i, e) for i, e in rows if e["stored"]["ref_doc_id"] == target]
        kept = [i for i in first_ids if i not in old]  # the other documents' entries
        if strategy == DocstoreStrategy.DUPLICATES_ONLY:
            assert sorted(i for i, _ in rows) == sorted(kept + list(old) + new), strategy
            originals = [e["text"] for i, e in mine if i == target]
            assert sorted(originals) == sorted([old_text, NEW_TARGET]), strategy
            assert len(store.vector_store.get_nodes(node_ids=[target])) == 2, strategy
            continue
        assert sorted(i for i, _ in rows) == sorted(kept + new), strategy
        assert len(rows) == len({i for i, _ in rows}), strategy  # every id once
        assert [e["text"] for i, e in mine if i == target] == [NEW_TARGET], strategy
        assert all(e["text"].startswith(NEW_TARGET) for i, e in mine if i != target), strategy
        assert not {e["text"] for e in old.values()} & {e["text"] for _, e in rows}, strategy
        originals = [i for i, e in rows if e["metadata"][VIEW_KEY] == "original"]
        assert sorted(originals) == sorted(corpus.texts), strategy  # one per source
        if strategy == DocstoreStrategy.UPSERTS_AND_DELETE:
            pipeline.run(documents=[d for d in changed if d.id_ != target])
            assert sorted(i for i, _ in store.rows()) == sorted(kept), strategy  # deleted

    store = open_store("pgvector", "insert_nodes")
    index = store.index(embed_model, corpus.nodes)
    index.insert_nodes(list(corpus.nodes))
    rows = store.rows()
    assert sorted(i for i, _ in rows) == sorted(first_ids * 2)  # upstream: every node twice
    retriever = index.as_retriever(similarity_top_k=len(rows))
    post = ArgusPostprocessor(top_k=3, vector_store=store.vector_store)
    _assert_matches_the_reference(  # the reference reads the distinct entries (``entries``)
        store, corpus, asked, lambda q: post.postprocess_nodes(retriever.retrieve(q))
    )


# Tenant b's documents: a forged view of the target (tenant a's document, as far as b's queries
# go), a user's own look-alike key, and a forged view written straight into the store.
PAYROLL, SUMMARY, LISBON = FORGED.payroll, FORGED.summary, FORGED.lisbon
FORGED_QUERIES = FORGED.queries
TENANT_B = MetadataFilters(filters=[ExactMatchFilter(key="tenant", value="b")])


@pytest.mark.parametrize("kind", STORES)
def test_defects_1_to_3_forged_lineage_crosses_no_filter_and_lifts_no_source(
    kind, open_store, corpus, embed_model, caplog
):
    """Issue defects 1-3: tenant b's forged views, one through ArgusTransform and one written
    straight into the store, never bring the target into b's filtered results, nor lift it in an
    unfiltered search; b's own document with a look-alike ``argus_view`` key is an original and is
    retrieved. Filtered rankings (sync and async) are the cosine reference's, which applies the
    rule itself; unfiltered ones too, over every entry."""
    victim = corpus.id(SCENARIO.target)
    forged = {"tenant": "b", SOURCE_KEY: victim, VIEW_KEY: "expansion"}
    ingest = [
        Document(id_=corpus.id("tenant-b-payroll"), text=PAYROLL, metadata=forged),
        Document(
            id_=corpus.id("tenant-b-summary"),
            text=SUMMARY,
            metadata={"tenant": "b", VIEW_KEY: "summary"},
        ),
    ]
    through = embed_model(corpus.transform(ingest))
    rewritten = corpus.transform.last_stats.get("lineage_rewritten")
    direct = TextNode(id_=corpus.id("tenant-b-lisbon"), text=LISBON, metadata=dict(forged))
    direct.embedding = embed_model.get_text_embedding(LISBON)  # its text alone, as a view's
    store = open_store(kind)
    index = store.index(embed_model, [*corpus.nodes, *through, direct])
    every = len(store.rows())
    post = ArgusPostprocessor(top_k=3, vector_store=store.vector_store)

    def tenant_b(meta: dict[str, Any]) -> bool:
        return meta.get("tenant") == "b"

    def ids(found: list[NodeWithScore]) -> list[str]:
        return [n.node.node_id for n in found]

    bundles = {
        q: QueryBundle(q, embedding=embed_model.get_text_embedding(q)) for q in FORGED_QUERIES
    }
    filtered, unfiltered, widest = {}, {}, {}
    with caplog.at_level(logging.WARNING, logger="argus_llamaindex.postprocessor"):
        for query, bundle in bundles.items():
            hits = index.as_retriever(similarity_top_k=3, filters=TENANT_B).retrieve(bundle)
            filtered[query] = post.postprocess_nodes(hits)
            hits = index.as_retriever(similarity_top_k=3).retrieve(bundle)
            unfiltered[query] = post.postprocess_nodes(hits)
            hits = index.as_retriever(similarity_top_k=every).retrieve(bundle)
            widest[query] = post.postprocess_nodes(hits)
    refused = " ".join(r.getMessage() for r in caplog.records if "not folded" in r.getMessage())

    async def ask(vector_store: Any) -> dict[str, list[NodeWithScore]]:
        retriever = VectorStoreIndex.from_vector_store(
            vector_store, embed_model=embed_model
        ).as_retriever(similarity_top_k=3, filters=TENANT_B)
        apost = ArgusPostprocessor(top_k=3, vector_store=vector_store)
        out = {
            q: await apost.apostprocess_nodes(await retriever.aretrieve(b))
            for q, b in bundles.items()
        }
        if kind == "qdrant":
            await store.client.close()
        return out

    # a local Qdrant folder takes one client: the async one alone, then the sync one again
    asynchronous = asyncio.run(
        ask(_async_qdrant(store) if kind == "qdrant" else store.vector_store)
    )
    if kind == "qdrant":
        store.open()
        index = store.index(embed_model)

    leaks = sum(
        victim in ids(found) or any(n.node.get_content() == corpus.texts[victim] for n in found)
        for results in (filtered, asynchronous)
        for found in results.values()
    )
    lifts = sum(ids(found)[:1] == [victim] for found in (*unfiltered.values(), *widest.values()))
    assert (leaks, lifts) == (0, 0)
    assert rewritten == [d.id_ for d in ingest]  # the ingest step made both originals
    assert all(n.metadata[VIEW_KEY] == "original" for n in through)
    assert direct.node_id in refused  # the forged view written into the store: not folded
    for query, bundle in bundles.items():
        want = _reference(store, bundle, k=3, where=tenant_b)
        for found in (filtered[query], asynchronous[query]):
            assert ids(found) == [src for src, _, _ in want], query
            assert [n.score for n in found] == pytest.approx([s for _, s, _ in want], abs=1e-5)
            assert all(n.node.metadata.get("tenant") == "b" for n in found), query
        want = _reference(store, bundle, k=3)
        assert ids(widest[query]) == [src for src, _, _ in want], query
        assert [n.score for n in widest[query]] == pytest.approx([s for _, s, _ in want], abs=1e-5)
    hits = index.as_retriever(similarity_top_k=1, filters=TENANT_B).retrieve(SUMMARY)
    found = ArgusPostprocessor(top_k=1, vector_store=store.vector_store).postprocess_nodes(hits)
    assert [n.node.get_content() for n in found] == [SUMMARY]  # a look-alike key hides nothing
