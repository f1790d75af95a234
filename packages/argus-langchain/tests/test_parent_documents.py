"""argus beside LangChain's own parent-document patterns, with the real retrievers on real stores.

``MultiVectorRetriever`` and ``ParentDocumentRetriever`` (langchain-classic) read their parents
through :class:`~langchain_argus.ArgusDocstore` from the vector store they search: PostgreSQL +
pgvector (langchain-postgres's ``PGVector``) and Chroma on disk. Two orders:

- argus first: argus's output (originals and views) is what the pattern indexes; a hit on a view
  (or on a child chunk of one) reaches the docstore as the view's key and is mapped to its
  original under the scope rule;
- the pattern first: ``MultiVectorRetriever``'s sub-documents (child chunks pointing at their
  parent by ``doc_id``) go through argus, whose views copy that ``doc_id``.

Each query of the film/city set must give its document at rank 1, and no returned context may
be a view's text. The forged-lineage cases of issue 47 (``test_stores.py``) run through the
docstore: 0 leaks, 0 lifts; the naive combination (``id_key="argus_source_id"`` over a second
store of originals) leaks and lifts on the same cases.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.retrievers import MultiVectorRetriever, ParentDocumentRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import VectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import FORGED, SCENARIO, SCENARIO_QUERIES
from argus_ir.testing.postgres import postgres_server
from langchain_argus import ArgusDocstore, ArgusDocumentTransformer
from langchain_argus.parents import ArgusMultiVectorRetriever, ArgusParentDocumentRetriever

pytestmark = pytest.mark.filterwarnings("ignore:Relevance scores must be between")

HITS = 10  # search_kwargs["k"]: MultiVectorRetriever counts hits, not documents

EXPECTED = SCENARIO_QUERIES  # the film/city query set, each with the document it is about


def _children() -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(chunk_size=100, chunk_overlap=0)


# stores: a fresh one per test ------------------------------------------------------------------


def _chroma(path: Path, embeddings: Embeddings) -> tuple[VectorStore, Callable[[], None]]:
    import chromadb
    from chromadb.api.client import SharedSystemClient
    from langchain_chroma import Chroma

    store = Chroma(
        collection_name="argus",
        client=chromadb.PersistentClient(path=str(path)),
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )
    return store, SharedSystemClient.clear_system_cache


def _pgvector(path: Path, embeddings: Embeddings) -> tuple[VectorStore, Callable[[], None]]:
    from langchain_postgres import PGVector

    name = "pd_" + hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:20]
    url = postgres_server().database(name).sqlalchemy_url("psycopg")
    store = PGVector(embeddings=embeddings, collection_name="argus", connection=url, use_jsonb=True)
    return store, store._engine.dispose


STORES = {"chroma": _chroma, "pgvector": _pgvector}


@pytest.fixture(params=sorted(STORES))
def store(request, tmp_path: Path, embeddings: Embeddings) -> Iterator[VectorStore]:
    opened, close = STORES[request.param](tmp_path / "store", embeddings)
    yield opened
    close()


# checks ----------------------------------------------------------------------------------------


def _names(scenario_ids: dict[str, str]) -> dict[str, str]:
    return {doc_id: name for name, doc_id in scenario_ids.items()}


def _check_queries(
    retriever: MultiVectorRetriever, twin: MultiVectorRetriever, scenario_ids: dict[str, str]
) -> int:
    """Every query of the set, sync and async: the right document at rank 1, each document once,
    and every context an original's text. Returns the rank-1 count."""
    names, texts = _names(scenario_ids), {text for _, text in SCENARIO.documents}
    right = 0
    for query, want in EXPECTED.items():
        found = retriever.invoke(query)
        assert asyncio.run(twin.ainvoke(query)) == found, query
        assert all(d.page_content in texts for d in found), query  # no view text
        assert all(d.metadata.get(VIEW_KEY, "original") == "original" for d in found), query
        assert len({d.id for d in found}) == len(found), query
        right += [names.get(d.id or "") for d in found[:1]] == [want]
    return right


# argus first -----------------------------------------------------------------------------------


def _multivector(vectorstore: VectorStore) -> MultiVectorRetriever:
    """argus's MultiVectorRetriever over ``vectorstore``, reading its parents from the same
    store."""
    return ArgusMultiVectorRetriever(
        vectorstore=vectorstore, docstore=ArgusDocstore(vectorstore), search_kwargs={"k": HITS}
    )


def test_multivector_retriever_over_argus_output(store, augmented, scenario_ids, async_twin):
    """argus's originals and views added through the docstore; MultiVectorRetriever maps a hit
    on a view to the view's key, which the docstore reads as its original."""
    docstore = ArgusDocstore(store)
    docstore.mset([(d.id or "", d) for d in augmented])
    twin = async_twin(store)

    assert _check_queries(_multivector(store), _multivector(twin), scenario_ids) == len(EXPECTED)


def test_parent_document_retriever_splits_argus_output(store, augmented, scenario_ids, async_twin):
    """argus's originals and views are ParentDocumentRetriever's parents (under their own ids):
    it splits each into children and writes the parents into the same store through the
    docstore; a child of a view reaches its source's original."""
    retriever = ArgusParentDocumentRetriever(
        vectorstore=store,
        docstore=ArgusDocstore(store),
        child_splitter=_children(),
        search_kwargs={"k": HITS},
    )
    retriever.add_documents(list(augmented), ids=[d.id or "" for d in augmented])
    twin = async_twin(store)
    async_retriever = retriever.model_copy(
        update={"vectorstore": twin, "docstore": ArgusDocstore(twin)}
    )
    assert _check_queries(retriever, async_retriever, scenario_ids) == len(EXPECTED)


# the pattern first -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chunked(
    transformer: ArgusDocumentTransformer, scenario_ids: dict[str, str]
) -> tuple[list[Document], list[Document]]:
    """The scenario's documents as MultiVectorRetriever's parents, and their child chunks (each
    with its parent's ``doc_id``) through argus: the chunks as originals, then their views."""
    parents = [
        Document(text, id=scenario_ids[name], metadata={"lang": "en", "name": name})
        for name, text in SCENARIO.documents
    ]
    chunks = []
    for parent in parents:
        for i, chunk in enumerate(_children().split_documents([parent])):
            chunk_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{parent.id}/{i}"))
            meta = {**chunk.metadata, "doc_id": parent.id}
            chunks.append(chunk.model_copy(update={"id": chunk_id, "metadata": meta}))
    return parents, list(transformer.transform_documents(chunks))


def test_multivector_retriever_with_argus_views_of_its_chunks(
    store, chunked, scenario_ids, async_twin
):
    """Views of the child chunks copy the chunk's ``doc_id``: MultiVectorRetriever maps them
    straight to the parent, and the docstore serves the parent from the same store."""
    parents, children = chunked
    views = [d for d in children if d.metadata[VIEW_KEY] != "original"]
    assert views and all(v.metadata["doc_id"] for v in views)
    store.add_documents(children, ids=[d.id or "" for d in children])
    ArgusDocstore(store).mset([(p.id or "", p) for p in parents])
    twin = async_twin(store)

    assert _check_queries(_multivector(store), _multivector(twin), scenario_ids) == len(EXPECTED)


# issue 47's forged lineage, through the docstore -----------------------------------------------

SUMMARY = FORGED.summary
FORGED_QUERIES = FORGED.queries


def _count(
    retriever: Callable[[dict[str, Any]], MultiVectorRetriever], victim: str, victim_text: str
) -> tuple[int, int, int]:
    """Over the forged queries: leaks (the victim, or its text, in tenant b's filtered results),
    lifts (the victim at rank 1 of an unfiltered query) and results of b's not b's."""
    leaks = lifts = foreign = 0
    for search in ({"filter": {"tenant": "b"}}, {}):
        for query in FORGED_QUERIES:
            found = retriever(search).invoke(query)
            if search:
                leaks += any(d.id == victim or d.page_content == victim_text for d in found)
                foreign += sum(d.metadata.get("tenant") != "b" for d in found)
            else:
                lifts += [d.id for d in found[:1]] == [victim]
    return leaks, lifts, foreign


@pytest.mark.parametrize("pattern", ["multivector", "parent-document"])
def test_forged_lineage_through_the_docstore(
    pattern, store, augmented, transformer, scenario_ids, tenant_b
):
    """Issue 47's cases through ArgusDocstore: a view of tenant b naming tenant a's document
    brings it into none of b's filtered results and lifts it in no unfiltered query; b's own
    document with a look-alike ``argus_view`` is served. The same cases with the naive docstore
    (``id_key="argus_source_id"``, originals kept in a second store) leak and lift."""
    victim = scenario_ids[SCENARIO.target]
    victim_text = next(d.page_content for d in augmented if d.id == victim)
    ingest, direct = tenant_b(victim)
    through = list(transformer.transform_documents(ingest))
    docstore = ArgusDocstore(store)
    if pattern == "multivector":
        docstore.mset([(d.id or "", d) for d in [*augmented, *through, *direct]])

        def retriever(search: dict[str, Any]) -> MultiVectorRetriever:
            return ArgusMultiVectorRetriever(
                vectorstore=store, docstore=docstore, search_kwargs={"k": 3, **search}
            )
    else:
        parents = [*augmented, *through, *direct]
        ParentDocumentRetriever(
            vectorstore=store, docstore=docstore, child_splitter=_children()
        ).add_documents(parents, ids=[d.id or "" for d in parents])

        def retriever(search: dict[str, Any]) -> MultiVectorRetriever:
            return ArgusParentDocumentRetriever(
                vectorstore=store,
                docstore=docstore,
                child_splitter=_children(),
                search_kwargs={"k": 3, **search},
            )

    assert _count(retriever, victim, victim_text) == (0, 0, 0)
    summary = retriever({"filter": {"tenant": "b"}}).invoke(SUMMARY)
    assert [d.page_content for d in summary[:1]] == [SUMMARY]  # a look-alike key hides nothing

    if pattern == "multivector":  # the naive combination, on the same store and cases
        originals = InMemoryStore()
        originals.mset([(d.id or "", d) for d in augmented if d.metadata[VIEW_KEY] == "original"])

        def naive(search: dict[str, Any]) -> MultiVectorRetriever:
            return MultiVectorRetriever(
                vectorstore=store,
                docstore=originals,
                id_key=SOURCE_KEY,
                search_kwargs={"k": 3, **search},
            )

        leaks, lifts, _ = _count(naive, victim, victim_text)
        assert leaks > 0 and lifts > 0


# a hit written straight into the store, naming another tenant's parent ------------------------


@pytest.mark.parametrize("lineage", [False, True], ids=["plain", "with-argus-keys"])
@pytest.mark.parametrize("pattern", ["multivector", "parent-document"])
def test_a_forged_direct_write_brings_in_no_other_tenants_parent(
    pattern, lineage, store, augmented, scenario_ids, async_twin
):
    """Tenant b writes an entry with ``store.add_documents`` (not through the docstore's
    ``mset``, which would overwrite its ``doc_id``) whose ``doc_id`` names tenant a's document.
    Plain ``MultiVectorRetriever`` hands the key to the docstore, which cannot see the hit, and
    serves a's document in b's filtered search; argus's retrievers put the hit to the scope rule:
    0 rows of another tenant, sync and async."""
    docstore = ArgusDocstore(store)
    docstore.mset([(d.id or "", d) for d in augmented])
    victim = scenario_ids[SCENARIO.target]
    forged: dict[str, Any] = {"tenant": "b", "doc_id": victim}
    if lineage:
        forged |= {SOURCE_KEY: victim, VIEW_KEY: "expansion"}
    store.add_documents([Document(FORGED.payroll, metadata=forged)], ids=[str(uuid.uuid4())])
    b_only = {"k": 3, "filter": {"tenant": "b"}}
    kinds = {
        "multivector": (MultiVectorRetriever, ArgusMultiVectorRetriever),
        "parent-document": (ParentDocumentRetriever, ArgusParentDocumentRetriever),
    }[pattern]
    extra = {"child_splitter": _children()} if pattern == "parent-document" else {}

    twin = async_twin(store)

    def others(kind: type) -> list[str | None]:
        def build(vectorstore: VectorStore) -> Any:
            return kind(
                vectorstore=vectorstore,
                docstore=ArgusDocstore(vectorstore),
                search_kwargs=b_only,
                **extra,
            )

        found = build(store).invoke(FORGED.payroll)
        assert asyncio.run(build(twin).ainvoke(FORGED.payroll)) == found
        return [d.id for d in found if d.metadata.get("tenant") != "b"]

    assert others(kinds[0]) == [victim]  # the leak argus's retrievers close
    assert others(kinds[1]) == []


def test_argus_parent_retrievers_need_the_argus_docstore(store):
    """Given another docstore, argus's retrievers refuse at construction, naming what to pass."""
    with pytest.raises(Exception, match=r"docstore=ArgusDocstore\(vectorstore\)"):
        ArgusMultiVectorRetriever(vectorstore=store, docstore=InMemoryStore())
