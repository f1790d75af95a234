"""The store matrix: ArgusTransform and ArgusPostprocessor over real stores on disk, Chroma
(``PersistentClient``) and Qdrant (local mode), held to one behaviour: ingest, query and fold as a
numpy cosine reference does, ingest twice, update, delete, close and reopen, serialisation, async.

Every store is filled from the one augment of the shared scenario (``conftest.corpus``, UUID ids:
Qdrant takes no other string ids); only the update and pipeline tests augment again, a few
documents each.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import AsyncQdrantClient, QdrantClient

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY, VIEW_NAME_KEY
from argus_ir.testing import SCENARIO, cosine_reference
from argus_llamaindex import ArgusPostprocessor, ArgusTransform

# local Qdrant ignores the payload index llama-index asks for; the delete filter works without it
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

STORES = ("chroma", "qdrant")
COLLECTION = "argus-docs"
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
    """One store on disk, opened through its own client; ``entries`` reads its whole contents."""

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
        else:
            self.client = QdrantClient(path=str(self.path))  # one client per folder at a time
            self.vector_store = QdrantVectorStore(client=self.client, collection_name=COLLECTION)
        return self

    def close(self) -> None:
        if self.kind == "qdrant":
            self.client.close()
        self.client = self.vector_store = None

    def index(self, embed_model, nodes: tuple[BaseNode, ...] | list[BaseNode] = ()):
        """An index over the store, with ``nodes`` added (none: the store as it is)."""
        if not nodes:
            return VectorStoreIndex.from_vector_store(self.vector_store, embed_model=embed_model)
        context = StorageContext.from_defaults(vector_store=self.vector_store)
        return VectorStoreIndex(list(nodes), storage_context=context, embed_model=embed_model)

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every stored entry by id: its ``vector``, the node's ``metadata``, what the store keeps
        beside it (``stored``: the node's metadata and its bookkeeping) and its ``text``."""
        if self.kind == "chroma":
            got = self.vector_store.client.get(include=["embeddings", "metadatas", "documents"])
            rows = zip(got["ids"], got["embeddings"], got["metadatas"], got["documents"])
            return {
                i: {"vector": v, "metadata": _meta(m), "stored": m, "text": t}
                for i, v, m, t in rows
            }
        if not self.client.collection_exists(COLLECTION):
            return {}
        points, _ = self.client.scroll(COLLECTION, limit=10_000, with_vectors=True)
        return {
            str(p.id): {
                "vector": _dense(p.vector),
                "metadata": _meta(p.payload),
                "stored": p.payload,
                "text": _text(p.payload),
            }
            for p in points
        }


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


def test_ingest_twice_adds_nothing(fresh, corpus, embed_model):
    before = fresh.entries()
    fresh.index(embed_model).insert_nodes(list(corpus.nodes))
    after = fresh.entries()
    assert len(before) == len(corpus.nodes)
    assert sorted(after) == sorted(before)  # the same ids, once each
    assert {i: e["text"] for i, e in after.items()} == {i: e["text"] for i, e in before.items()}


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
