"""argus beside LlamaIndex's own parent-document patterns, with the real retrievers on real stores.

Two patterns, each on PostgreSQL + pgvector (``PGVectorStore``) and Chroma on disk:

- ``HierarchicalNodeParser`` + ``AutoMergingRetriever``: the scenario's documents split into a
  hierarchy (64-token parents, 16-token leaves); the docstore holds every node, the vector
  store the leaves and their views. argus runs after the parser (over its whole output, as an
  ``IngestionPipeline`` runs it); the fold runs before the merge (:class:`ArgusRetriever`).
- ``IndexNode`` references: small chunks of each document as ``IndexNode`` objects pointing at
  the document (with the document's own ``IndexNode``), followed by ``RecursiveRetriever`` or by
  an object map; argus runs over the references, the fold before they are followed.

And ``SentenceWindowNodeParser`` + ``MetadataReplacementPostProcessor``: argus after the parser,
the fold before the window is put in.

Each query of the film/city set must give its document at rank 1, no returned context may be a
view's text (nor, for references, a chunk's), no document may come back twice, and no merge may
be built from a view. The other orders are tested for what the docs say they do: the fold after
the merge returns a leaf beside the parent that holds it; the fold after the references are
followed returns chunks where the pattern returns documents; argus before the parser splits its
views into hierarchies of their own, which the merge then builds on. Why argus's views are not
``IndexNode`` references: followed inside ``retrieve()``, a reference crosses a metadata filter
unchecked, and one whose object is missing comes back as itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import (
    HierarchicalNodeParser,
    SentenceSplitter,
    SentenceWindowNodeParser,
    get_leaf_nodes,
)
from llama_index.core.postprocessor import MetadataReplacementPostProcessor
from llama_index.core.retrievers import AutoMergingRetriever, RecursiveRetriever
from llama_index.core.schema import (
    BaseNode,
    Document,
    IndexNode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
)
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from argus_ir.errors import ArgusInputError
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import FORGED, SCENARIO, SCENARIO_QUERIES
from argus_ir.testing.postgres import postgres_server
from argus_llamaindex import ArgusPostprocessor, ArgusRetriever, ArgusTransform

HITS = 10  # similarity_top_k of the vector retriever under each pattern

EXPECTED = SCENARIO_QUERIES  # the film/city query set, each with the document it is about


# stores: a fresh one per test ------------------------------------------------------------------


def _chroma(path: Path) -> tuple[Any, Any]:
    collection = chromadb.PersistentClient(path=str(path)).get_or_create_collection(
        "argus", metadata={"hnsw:space": "cosine"}
    )
    return ChromaVectorStore(chroma_collection=collection), None


def _pgvector(path: Path) -> tuple[Any, Any]:
    name = "lipd_" + hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:20]
    server = postgres_server().database(name)
    sync_url, async_url = server.sqlalchemy_url("psycopg2"), server.sqlalchemy_url("asyncpg")
    store = PGVectorStore(
        connection_string=sync_url,
        async_connection_string=async_url,
        table_name="argus",
        embed_dim=384,
        engine=create_engine(sync_url),
        async_engine=create_async_engine(async_url, poolclass=NullPool),  # a loop per run
    )

    def close() -> None:
        store._engine.dispose()
        store._async_engine.sync_engine.dispose()

    return store, close


@pytest.fixture(params=["chroma", "pgvector"])
def store(request, tmp_path: Path) -> Iterator[Any]:
    opened, close = {"chroma": _chroma, "pgvector": _pgvector}[request.param](tmp_path / "s")
    yield opened
    if close is not None:
        close()


def _index(store: Any, nodes: list[BaseNode], embed_model, docstore=None) -> VectorStoreIndex:
    context = StorageContext.from_defaults(vector_store=store, docstore=docstore)
    return VectorStoreIndex(nodes, storage_context=context, embed_model=embed_model)


# shared material -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def transform(corpus) -> ArgusTransform:
    """The scenario's settings, with the models the session already loaded."""
    step = ArgusTransform(**SCENARIO.settings)
    step._argus = corpus.transform.argus
    return step


@pytest.fixture(scope="module")
def asked(embed_model) -> dict[str, QueryBundle]:
    vectors = embed_model.get_text_embedding_batch(list(EXPECTED))
    return {q: QueryBundle(q, embedding=v) for q, v in zip(EXPECTED, vectors)}


def _documents(corpus) -> list[Document]:
    return [Document(id_=corpus.id(name), text=text) for name, text in SCENARIO.documents]


def _parser() -> HierarchicalNodeParser:
    return HierarchicalNodeParser.from_defaults(chunk_sizes=[64, 16], chunk_overlap=0)


def _is_view(node: BaseNode) -> bool:
    return node.metadata.get(VIEW_KEY, "original") != "original"


def _ask(retriever: BaseRetriever, asked: dict[str, QueryBundle]) -> dict[str, list[Any]]:
    return {query: retriever.retrieve(bundle) for query, bundle in asked.items()}


def _rank_one(found: dict[str, list[NodeWithScore]], corpus) -> int:
    """Queries whose first result belongs to their document (by ref doc id, else its own id)."""
    return sum(
        [corpus.names.get(n.node.ref_doc_id or n.node.node_id) for n in found[q][:1]] == [want]
        for q, want in EXPECTED.items()
    )


def _repeats(found: list[NodeWithScore]) -> int:
    """Results whose text another result of the same document holds (a leaf beside its parent,
    or the same node twice)."""
    return sum(
        a.node.ref_doc_id == b.node.ref_doc_id and a.node.get_content() in b.node.get_content()
        for i, a in enumerate(found)
        for j, b in enumerate(found)
        if i != j
    )


# HierarchicalNodeParser + AutoMergingRetriever -------------------------------------------------


@pytest.fixture(scope="module")
def hierarchy(corpus, transform, embed_model) -> dict[str, Any]:
    """The parser's nodes through argus, in one pipeline: every node (parents included, each an
    unchanged copy but for its lineage), and the leaves with their views, embedded."""
    out = IngestionPipeline(transformations=[_parser(), transform]).run(
        documents=_documents(corpus)
    )
    return {
        "parsed": {n.node_id: n for n in out if not _is_view(n)},  # the parser's nodes, copied
        "out": out,
        "leaves": embed_model(get_leaf_nodes(out)),
        "stats": transform.last_stats,
    }


def test_views_of_a_hierarchy_are_made_of_its_leaves(hierarchy):
    """A parent node (one with children) gets no views: a view has no CHILD relationship, so
    get_leaf_nodes would index a view of a parent as a leaf, and a hit on it would bring the
    parent in beside its own leaves. A view carries no structure of its original's: its only
    relationship is its original's SOURCE, so AutoMergingRetriever never counts it as a child."""
    parsed, out = hierarchy["parsed"], hierarchy["out"]
    parents = {i for i, n in parsed.items() if n.child_nodes}
    views = [n for n in out if _is_view(n)]
    assert parents and views
    assert not [v for v in views if v.metadata[SOURCE_KEY] in parents]
    leaves = {n.node_id for n in get_leaf_nodes(list(parsed.values()))}
    assert {n.node_id for n in hierarchy["leaves"]} == leaves | {v.node_id for v in views}
    for view in views:
        original = parsed[view.metadata[SOURCE_KEY]]
        assert set(view.relationships) == {NodeRelationship.SOURCE}
        assert view.ref_doc_id == original.ref_doc_id
    skipped = dict(hierarchy["stats"]["skipped"])
    assert {i for i in parents} <= set(skipped) and "parent node" in skipped[next(iter(parents))]


def _merging(store, hierarchy, embed_model, *, fold_first: bool) -> tuple[BaseRetriever, Any]:
    docstore = SimpleDocumentStore()
    docstore.add_documents(hierarchy["out"])
    index = _index(store, hierarchy["leaves"], embed_model, docstore)
    base = index.as_retriever(similarity_top_k=HITS)
    post = ArgusPostprocessor(index=index)
    if fold_first:
        return AutoMergingRetriever(ArgusRetriever(base, post), index.storage_context), index
    merging = AutoMergingRetriever(base, index.storage_context)

    class FoldAfter(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return post.postprocess_nodes(merging.retrieve(query_bundle), query_bundle)

    return FoldAfter(), index


def test_auto_merging_retriever_over_folded_hits(store, hierarchy, embed_model, asked, corpus):
    """ArgusRetriever folds before AutoMergingRetriever merges: the merge counts a leaf reached
    through its view as a hit child, once; every result is a node of the parser (a leaf or a
    merged parent), each document's text once, and the right document first for all queries."""
    merging, index = _merging(store, hierarchy, embed_model, fold_first=True)
    found = _ask(merging, asked)
    parsed = hierarchy["parsed"]
    assert _rank_one(found, corpus) == len(EXPECTED)
    merged = 0
    for query, nodes in found.items():
        assert all(n.node.node_id in parsed for n in nodes), query  # no view, no view's merge
        assert all(n.node.get_content() == parsed[n.node.node_id].text for n in nodes), query
        assert _repeats(nodes) == 0, query
        merged += sum(bool(n.node.child_nodes) for n in nodes)
    assert merged > 0  # merges happen: the order is exercised

    # ArgusRetriever's async path folds the same hits the same way
    base = index.as_retriever(similarity_top_k=HITS)
    folding = ArgusRetriever(base, ArgusPostprocessor(index=index))
    for bundle in asked.values():
        sync = [(n.node.node_id, n.score) for n in folding.retrieve(bundle)]
        got = asyncio.run(
            folding.aretrieve(QueryBundle(bundle.query_str, embedding=bundle.embedding))
        )
        assert [n.node.node_id for n in got] == [i for i, _ in sync]
        assert [n.score for n in got] == pytest.approx([s for _, s in sync], abs=1e-6)


def test_fold_after_the_merge_returns_a_leaf_beside_its_parent(
    store, hierarchy, embed_model, asked, corpus
):
    """The other order, as the docs describe it: no view text, but the merge did not count the
    views, and a view whose leaf was merged away brings the leaf back beside the parent."""
    merging, _ = _merging(store, hierarchy, embed_model, fold_first=False)
    found = _ask(merging, asked)
    assert not [n for nodes in found.values() for n in nodes if _is_view(n.node)]
    assert sum(_repeats(nodes) > 0 for nodes in found.values()) >= 3


@pytest.fixture(scope="module")
def split_after(corpus, embed_model) -> dict[str, Any]:
    """argus's output for four of the scenario's documents (the session's augment), then the
    parser: the leaves of originals and views alike, embedded."""
    kept = {corpus.id(name) for name in ("film-1", "film-4", "sci-2", "music-2")}
    output = [n for n in corpus.nodes if n.metadata[SOURCE_KEY] in kept]
    nodes = _parser().get_nodes_from_documents(output)
    return {"nodes": nodes, "leaves": embed_model(get_leaf_nodes(nodes))}


def test_argus_before_the_node_parser_merges_views(store, split_after, embed_model, asked, caplog):
    """argus before the parser, as the docs warn: the parser splits each view into a hierarchy
    of its own, AutoMergingRetriever merges view chunks into view parents, and every chunk of a
    document claims the document as its source, so the fold keeps one chunk per document and
    drops a document reached only through its views' chunks (the document itself is stored
    nowhere: only its chunks are)."""
    docstore = SimpleDocumentStore()
    docstore.add_documents(split_after["nodes"])
    index = _index(store, split_after["leaves"], embed_model, docstore)
    base = index.as_retriever(similarity_top_k=HITS)
    merged = _ask(AutoMergingRetriever(base, index.storage_context), asked)
    parents = [n.node for found in merged.values() for n in found if n.node.child_nodes]
    assert any(_is_view(node) for node in parents)  # a merge built from a view's chunks
    folding = ArgusRetriever(base, ArgusPostprocessor(index=index))
    with caplog.at_level(logging.WARNING, logger="argus_llamaindex.postprocessor"):
        folded = _ask(folding, asked)
    for query, nodes in folded.items():  # one chunk per document, whatever else was hit
        assert len({n.node.ref_doc_id for n in nodes}) == len(nodes), query
    assert [r for r in caplog.records if "dropped" in r.getMessage()]  # reached through views


# IndexNode references --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def references(corpus, transform, embed_model) -> dict[str, Any]:
    """Each document, and its 16-token chunks, as IndexNode references to the document (the
    documents themselves are the objects, outside the store); argus over the references."""
    documents = {
        corpus.id(name): TextNode(id_=corpus.id(name), text=text)
        for name, text in SCENARIO.documents
    }
    chunks = SentenceSplitter(chunk_size=16, chunk_overlap=0)
    refs: list[BaseNode] = []
    for doc_id, doc in documents.items():
        refs += [
            IndexNode.from_text_node(c, doc_id) for c in chunks.get_nodes_from_documents([doc])
        ]
        refs.append(IndexNode.from_text_node(doc, doc_id))
    return {"documents": documents, "nodes": embed_model(transform(refs))}


def _check_documents(found: dict[str, list[NodeWithScore]], documents, corpus) -> None:
    texts = {d.text for d in documents.values()}
    assert _rank_one(found, corpus) == len(EXPECTED)
    for query, nodes in found.items():
        assert all(n.node.node_id in documents for n in nodes), query  # documents only
        assert all(n.node.get_content() in texts for n in nodes), query
        assert len({n.node.node_id for n in nodes}) == len(nodes), query


def test_references_are_followed_after_the_fold(store, references, embed_model, asked, corpus):
    """ArgusRetriever folds a view into the reference it was made of (read from the store as the
    IndexNode it is), and RecursiveRetriever (or ArgusRetriever's own object map) follows that:
    documents only, each once, the right one first. Folding after RecursiveRetriever instead
    leaves references the retriever did not follow: chunks where the pattern returns documents."""
    documents = references["documents"]
    originals = [n for n in references["nodes"] if not _is_view(n)]
    assert all(isinstance(n, IndexNode) and n.index_id in documents for n in originals)
    assert not [n for n in references["nodes"] if _is_view(n) and isinstance(n, IndexNode)]
    index = _index(store, references["nodes"], embed_model)
    base = index.as_retriever(similarity_top_k=HITS)
    post = ArgusPostprocessor(index=index)
    recursive = RecursiveRetriever(
        "vector", retriever_dict={"vector": ArgusRetriever(base, post)}, node_dict=documents
    )
    _check_documents(_ask(recursive, asked), documents, corpus)
    _check_documents(
        _ask(ArgusRetriever(base, post, object_map=documents), asked), documents, corpus
    )

    plain = RecursiveRetriever("vector", retriever_dict={"vector": base}, node_dict=documents)
    after = {q: post.postprocess_nodes(plain.retrieve(b), b) for q, b in asked.items()}
    chunks = [n for nodes in after.values() for n in nodes if n.node.node_id not in documents]
    assert chunks and all(isinstance(n.node, IndexNode) for n in chunks)


# SentenceWindowNodeParser + MetadataReplacementPostProcessor -----------------------------------


@pytest.fixture(scope="module")
def windows(corpus, transform, embed_model) -> dict[str, Any]:
    """The documents as sentences, each with a window of one sentence either side, through
    argus in one pipeline, embedded. Each document is filed between two sentences of no topic,
    so that every window is more than its sentence."""
    parser = SentenceWindowNodeParser.from_defaults(window_size=1)
    filed = [
        Document(id_=d.id_, text=f"From the archive's files. {d.text} The file ends here.")
        for d in _documents(corpus)
    ]
    out = IngestionPipeline(transformations=[parser, transform]).run(documents=filed)
    return {"nodes": embed_model(out), "parsed": {n.node_id: n for n in out if not _is_view(n)}}


def test_sentence_windows_are_put_in_after_the_fold(store, windows, embed_model, asked, corpus):
    """The fold, then MetadataReplacementPostProcessor: every result is one of the parser's
    sentences, given as its own window, each once, and the right document first for every
    query. A view carries its original's window and sentence (copied metadata, left out of its
    embedding as on the original), so no order shows a view's text; replacing before the fold
    gives a document reached only through a view as its bare sentence, read from the store."""
    parsed = windows["parsed"]
    views = [n for n in windows["nodes"] if _is_view(n)]
    assert views and all(
        v.metadata["window"] == parsed[v.metadata[SOURCE_KEY]].metadata["window"]
        and "window" in v.excluded_embed_metadata_keys
        for v in views
    )
    index = _index(store, windows["nodes"], embed_model)
    base = index.as_retriever(similarity_top_k=HITS)
    post = ArgusPostprocessor(index=index)
    replace = MetadataReplacementPostProcessor(target_metadata_key="window")

    def run(*steps: Any) -> dict[str, list[NodeWithScore]]:
        found = {}
        for query, bundle in asked.items():
            nodes = base.retrieve(bundle)
            for step in steps:
                nodes = step.postprocess_nodes(nodes, bundle)
            found[query] = nodes
        return found

    found = run(post, replace)
    assert _rank_one(found, corpus) == len(EXPECTED)
    for query, nodes in found.items():
        assert all(n.node.node_id in parsed for n in nodes), query
        assert [n.node.get_content() for n in nodes] == [
            parsed[n.node.node_id].metadata["window"] for n in nodes
        ], query
        assert len({n.node.node_id for n in nodes}) == len(nodes), query

    other = [n for nodes in run(replace, post).values() for n in nodes]
    bare = [n for n in other if n.node.get_content() != parsed[n.node.node_id].metadata["window"]]
    assert bare and all(n.node.get_content() == parsed[n.node.node_id].text for n in bare)


def test_argus_retriever_refuses_what_it_cannot_fold_with():
    with pytest.raises(ArgusInputError, match="BaseRetriever, got str"):
        ArgusRetriever("index", ArgusPostprocessor())  # type: ignore[arg-type]
    with pytest.raises(ArgusInputError, match="must be an ArgusPostprocessor"):
        ArgusRetriever(_Empty(), object())  # type: ignore[arg-type]


class _Empty(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return []


# why argus's views are not IndexNode references ------------------------------------------------

PAYROLL = FORGED.payroll
TENANT_B = MetadataFilters(filters=[ExactMatchFilter(key="tenant", value="b")])


def test_index_node_views_would_skip_the_checks(store, references, embed_model, corpus):
    """A view written as an IndexNode (index_id: its original) is followed inside retrieve(),
    before any postprocessor: one in tenant b naming tenant a's document brings that document
    into b's filtered results, and ArgusPostprocessor after it sees only an original. One whose
    object is not at hand (an index reopened from its store) comes back as itself: its text is
    the context. The same view as argus writes it (a TextNode) is refused by the fold."""
    victim = corpus.id(SCENARIO.target)
    documents = references["documents"]
    meta = {"tenant": "b", SOURCE_KEY: victim, VIEW_KEY: "expansion"}
    as_reference = IndexNode(id_=corpus.id("b-ref"), text=PAYROLL, index_id=victim, metadata=meta)
    as_view = TextNode(id_=corpus.id("b-view"), text=PAYROLL, metadata=dict(meta))
    vector = embed_model.get_text_embedding(PAYROLL)
    as_reference.embedding = as_view.embedding = vector
    index = _index(store, [*references["nodes"], as_reference, as_view], embed_model)
    query = QueryBundle(PAYROLL, embedding=vector)
    post = ArgusPostprocessor(index=index)
    filtered = index.as_retriever(similarity_top_k=HITS, filters=TENANT_B)

    raw = {n.node.node_id: n.score for n in filtered.retrieve(query)}
    native = VectorIndexRetriever(
        index, similarity_top_k=HITS, filters=TENANT_B, object_map=documents
    ).retrieve(query)
    scores = {n.node.node_id: n.score for n in native}
    assert scores[victim] == raw[as_reference.node_id]  # followed across the filter, undiscounted
    assert victim in [n.node.node_id for n in post.postprocess_nodes(native, query)]
    recursive = RecursiveRetriever("v", retriever_dict={"v": filtered}, node_dict=documents)
    assert victim in [n.node.node_id for n in recursive.retrieve(query)]

    reopened = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
    missing = reopened.as_retriever(similarity_top_k=HITS, filters=TENANT_B).retrieve(query)
    assert [n.node.get_content() for n in missing if isinstance(n.node, IndexNode)] == [PAYROLL]

    assert as_view.node_id in raw  # the view as argus writes it passed the filter too
    assert ArgusRetriever(filtered, post).retrieve(query) == []  # both refused: not b's scope
