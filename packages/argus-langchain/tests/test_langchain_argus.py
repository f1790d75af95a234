"""langchain-argus: the shared adapter contract, the end-to-end scenario and the async path."""

from __future__ import annotations

import asyncio
import inspect
import math
from typing import Any, ClassVar

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from argus_ir import Argus
from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, is_view_entry
from argus_ir.errors import ArgusInputError
from argus_ir.runners.integration import Record
from argus_ir.testing import (
    SCENARIO,
    STORE_KB_DOCUMENT,
    STORE_KB_ENTRIES,
    AdapterContract,
)
from langchain_argus import ArgusDocumentTransformer, ArgusRetriever, collapse_documents


class TestContract(AdapterContract):
    own_settings: ClassVar[frozenset[str]] = frozenset({"kb_fingerprint", "max_pending"})

    def settings_defaults(self) -> dict[str, Any]:
        return {n: f.default for n, f in ArgusDocumentTransformer.model_fields.items()}

    supports_none_text = False  # a LangChain Document's page_content is a str

    def make_adapter(self, **settings: Any) -> ArgusDocumentTransformer:
        return ArgusDocumentTransformer(**settings)

    def make_document(self, doc_id: str, text: str | None, metadata: dict[str, Any]) -> Document:
        return Document(page_content=text or "", metadata=metadata, id=doc_id)

    def read_document(self, doc: Document) -> Record:
        return Record(doc.id, doc.page_content, doc.metadata)

    def run(self, adapter: ArgusDocumentTransformer, documents: list[Document]):
        out = adapter.transform_documents(documents)
        return list(out), adapter.last_stats

    def use_argus(self, adapter: ArgusDocumentTransformer, argus: Any) -> None:
        adapter._argus = argus

    def collapse(self, adapter, hits, top_k):
        return [(f.source_id, f.score) for f in collapse_documents(hits, top_k=top_k)]


def _corpus() -> list[Document]:
    return [Document(page_content=text, id=doc_id) for doc_id, text in SCENARIO.documents]


def _store(embeddings: Embeddings, docs: list[Document]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_documents(docs)
    return store


def test_end_to_end_the_query_finds_its_document_only_with_argus(embeddings):
    plain = _store(embeddings, _corpus())
    top = plain.similarity_search(SCENARIO.query, k=SCENARIO.top_k)
    assert SCENARIO.target not in [d.id for d in top]

    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    augmented = transformer.transform_documents(_corpus())
    assert len(augmented) > len(SCENARIO.documents)
    retriever = ArgusRetriever(vectorstore=_store(embeddings, list(augmented)), k=SCENARIO.top_k)
    found = retriever.invoke(SCENARIO.query)
    assert [d.id for d in found] == [SCENARIO.target]
    assert found[0].page_content == dict(SCENARIO.documents)[SCENARIO.target]  # the original
    assert found[0].metadata["argus_view"] == "original"


def test_retriever_returns_each_source_once_with_originals(embeddings):
    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    store = _store(embeddings, list(transformer.transform_documents(_corpus())))
    found = ArgusRetriever(vectorstore=store, k=5).invoke("Humphrey Bogart Casablanca film actor")
    ids = [d.id for d in found]
    assert len(ids) == len(set(ids)) == 5
    originals = dict(SCENARIO.documents)
    assert all(d.page_content == originals[d.id] for d in found)


def test_async_transform_keeps_the_event_loop_free(embeddings):
    transformer = ArgusDocumentTransformer(**SCENARIO.settings, batch_size=4)
    sync_out = transformer.transform_documents(_corpus())

    async def main() -> tuple[Any, int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        out = await transformer.atransform_documents(_corpus())
        done.set()
        await task
        return out, ticks

    async_out, ticks = asyncio.run(main())
    assert [(d.id, d.page_content, d.metadata) for d in async_out] == [
        (d.id, d.page_content, d.metadata) for d in sync_out
    ]
    assert ticks > 3  # the loop ran other work while argus diagnosed (4 batches, in threads)


def test_async_retriever_matches_sync(embeddings):
    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    store = _store(embeddings, list(transformer.transform_documents(_corpus())))
    retriever = ArgusRetriever(vectorstore=store, k=3)
    sync_ids = [d.id for d in retriever.invoke(SCENARIO.query)]
    async_ids = [d.id for d in asyncio.run(retriever.ainvoke(SCENARIO.query))]
    assert sync_ids == async_ids and sync_ids[0] == SCENARIO.target


def test_documents_without_ids_get_content_ids_their_views_point_to():
    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    doc = Document(page_content=dict(SCENARIO.documents)["film-1"])
    out = transformer.transform_documents([doc])
    assert doc.id is None  # the input is untouched; the output original is a copy with an id
    assert out[0].id and out[0].id.startswith("argus-doc-")
    assert all(v.metadata["argus_source_id"] == out[0].id for v in out[1:])
    assert len(out) > 1


def test_a_changed_setting_rebuilds_the_facade():
    transformer = ArgusDocumentTransformer()
    first = transformer.argus
    transformer.tau = 0.1
    assert transformer.argus is not first and transformer.argus.tau == 0.1


def test_a_source_whose_original_cannot_be_fetched_is_dropped_not_served_by_a_view(embeddings):
    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    views = [d for d in transformer.transform_documents(_corpus()) if _is_view(d)]
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_documents(views)  # only views indexed: the original is in no store (deleted)
    assert ArgusRetriever(vectorstore=store, k=1).invoke(SCENARIO.query) == []


class _NoGetByIds(InMemoryVectorStore):
    """A store without ``get_by_ids``, as LanceDB's (the base class's NotImplementedError)."""

    get_by_ids = VectorStore.get_by_ids
    aget_by_ids = VectorStore.aget_by_ids


def test_defect_5_a_store_without_get_by_ids_is_refused_unless_a_fetch_hook_is_given(embeddings):
    """Issue 47, 5: LanceDB has no get_by_ids; sources reached only through views were dropped
    with a warning on every query. Now the retriever is refused when built (naming
    ``fetch_originals``), and with the hook the originals come from it."""
    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    out = list(transformer.transform_documents(_corpus()))
    store = _NoGetByIds(embedding=embeddings)
    store.add_documents([d for d in out if _is_view(d)])
    with pytest.raises(ValueError, match=r"_NoGetByIds cannot read documents by id.*fetch_origin"):
        ArgusRetriever(vectorstore=store, k=1)
    originals = {d.id: d for d in out if not _is_view(d)}
    hooked = ArgusRetriever(
        vectorstore=store, k=1, fetch_originals=lambda ids: [originals[i] for i in ids]
    )
    found = hooked.invoke(SCENARIO.query)
    assert [d.id for d in found] == [SCENARIO.target]
    assert found == asyncio.run(hooked.ainvoke(SCENARIO.query))


# -- view_discount (query time) and max_views (ingest) ----------------------------------------


@pytest.fixture(scope="module")
def augmented_store(embeddings) -> InMemoryVectorStore:
    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    return _store(embeddings, list(transformer.transform_documents(_corpus())))


def _is_view(doc: Document) -> bool:
    return is_view_entry(doc.metadata)


def _as_given(doc: Document) -> Document:
    """An output original less the lineage the transformer adds (its own id as its source)."""
    assert doc.metadata["argus_source_id"] == doc.id and doc.metadata["argus_view"] == "original"
    rest = {k: v for k, v in doc.metadata.items() if k not in ("argus_source_id", "argus_view")}
    return doc.model_copy(update={"metadata": rest})


def test_view_discount_defaults_to_the_cores_constant():
    default = inspect.signature(collapse_documents).parameters["view_discount"].default
    assert default == DEFAULT_VIEW_DISCOUNT and default is DEFAULT_VIEW_DISCOUNT
    assert ArgusRetriever.model_fields["view_discount"].default is DEFAULT_VIEW_DISCOUNT


@pytest.mark.parametrize("bad", [-0.1, math.inf, -math.inf, math.nan])
def test_a_bad_view_discount_is_refused_when_built(embeddings, bad):
    store = InMemoryVectorStore(embedding=embeddings)
    with pytest.raises(ValueError, match="view_discount"):
        ArgusRetriever(vectorstore=store, view_discount=bad)
    doc = Document(page_content="a", id="a")
    with pytest.raises(ArgusInputError, match="view_discount"):
        collapse_documents([doc], view_discount=bad)  # refused even without scores


def test_collapse_documents_lifts_a_source_only_by_more_than_the_discount(augmented_store):
    originals = {d.id: d for d in augmented_store.get_by_ids([SCENARIO.target, "film-4"])}
    view = next(
        d
        for d in augmented_store.similarity_search(SCENARIO.query, k=20)
        if _is_view(d) and d.metadata["argus_source_id"] == SCENARIO.target
    )
    # the view beats its original by 0.10; the rival sits between the two
    hits = [(view, 0.60), (originals["film-4"], 0.52), (originals[SCENARIO.target], 0.50)]

    lifted = collapse_documents(hits, view_discount=0.05)
    assert [f.source_id for f in lifted] == [SCENARIO.target, "film-4"]
    assert lifted[0].score == pytest.approx(0.55)
    assert lifted[0].original is originals[SCENARIO.target]

    held = collapse_documents(hits, view_discount=0.15)
    assert [f.source_id for f in held] == ["film-4", SCENARIO.target]
    assert held[1].score == pytest.approx(0.50)  # scored by its original, not the view

    plain = collapse_documents(hits, view_discount=0.0)  # 0 keeps the paper's best score
    assert plain[0].source_id == SCENARIO.target and plain[0].score == pytest.approx(0.60)


def test_retriever_applies_the_view_discount(augmented_store):
    hits = augmented_store.similarity_search_with_score(SCENARIO.query, k=20)
    best_view = max(
        s for d, s in hits if _is_view(d) and d.metadata["argus_source_id"] == SCENARIO.target
    )
    own = next(s for d, s in hits if d.id == SCENARIO.target)
    rival = max(s for d, s in hits if d.metadata.get("argus_source_id") != SCENARIO.target)
    assert best_view - rival > 0.05  # the view is what puts the target first
    below = (best_view - rival) / 2  # the view still beats everything by more than this
    above = best_view - own + 0.05  # more than the view gains over its original

    lifted = ArgusRetriever(vectorstore=augmented_store, k=1, view_discount=below)
    assert [d.id for d in lifted.invoke(SCENARIO.query)] == [SCENARIO.target]
    assert [d.id for d in asyncio.run(lifted.ainvoke(SCENARIO.query))] == [SCENARIO.target]

    held = ArgusRetriever(vectorstore=augmented_store, k=1, view_discount=above)
    best_original = max((s, d.id) for d, s in hits if not _is_view(d))[1]
    assert best_original != SCENARIO.target
    assert [d.id for d in held.invoke(SCENARIO.query)] == [best_original]
    assert [d.id for d in asyncio.run(held.ainvoke(SCENARIO.query))] == [best_original]


def test_max_views_defaults_to_the_argus_field():
    default = ArgusDocumentTransformer.model_fields["max_views"].default
    assert default is Argus.__dataclass_fields__["max_views"].default


def test_max_views_reaches_argus():
    doc = Document(page_content=dict(SCENARIO.documents)["sci-2"], id="sci-2")
    unbudgeted = ArgusDocumentTransformer(**SCENARIO.settings)
    assert len(unbudgeted.transform_documents([doc])) > 2  # several views without a budget

    budgeted = ArgusDocumentTransformer(**SCENARIO.settings, max_views=1)
    assert budgeted.argus.max_views == 1
    assert budgeted.argus.settings_card()["max_views"] == 1
    out = budgeted.transform_documents([doc])
    views = [d for d in out if _is_view(d)]
    assert len(views) == 1 and _as_given(out[0]) == doc
    assert budgeted.last_stats["views"] == 1 and budgeted.last_stats["over_budget"] >= 1

    budgeted.max_views = 2  # a changed budget rebuilds the facade
    assert budgeted.argus.max_views == 2
    assert ArgusDocumentTransformer.from_argus(Argus(max_views=3)).max_views == 3


def test_a_bad_max_views_is_refused_when_set():
    with pytest.raises(ValueError, match="max_views"):
        ArgusDocumentTransformer(max_views=0)
    transformer = ArgusDocumentTransformer(max_views=2)
    facade = transformer.argus
    with pytest.raises(ValueError, match="max_views"):
        transformer.max_views = 0
    assert transformer.max_views == 2 and transformer.argus is facade  # nothing changed


def test_corpus_targeting_reaches_argus():
    assert (
        ArgusDocumentTransformer.model_fields["targeting"].default
        is Argus.__dataclass_fields__["targeting"].default
    )
    docs = [Document(page_content=text, id=doc_id) for doc_id, text in SCENARIO.documents]
    probe = ArgusDocumentTransformer(**SCENARIO.settings).transform_documents(docs)
    assert any(_is_view(d) for d in probe)
    corpus = ArgusDocumentTransformer(**SCENARIO.settings, targeting="corpus")
    assert corpus.argus.settings_card()["targeting"] == "corpus"
    # fewer than eleven documents: each is in the top 10 for any name, so nothing is flagged
    out = corpus.transform_documents(docs)
    assert [d.id for d in out] == [d.id for d in docs]
    with pytest.raises(ValueError, match="targeting"):
        ArgusDocumentTransformer(targeting="oracle")


def test_a_lone_surrogate_in_one_document_keeps_every_document():
    bad = Document(page_content="Humphrey Bogart filmed in Lucknow \ud800 once.", id="bad")
    good = Document(page_content=dict(SCENARIO.documents)["sci-2"], id="sci-2")
    out = ArgusDocumentTransformer(**SCENARIO.settings).transform_documents([bad, good])
    originals = [_as_given(d) for d in out if not _is_view(d)]
    assert originals == [bad, good]  # originals as they came (it used to raise TypeError)


def _wiki_store(embeddings: Embeddings) -> InMemoryVectorStore:
    """A user's own knowledge: a product wiki in a LangChain vector store."""
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_documents(
        [Document(id=i, page_content=text, metadata=meta) for i, text, meta in STORE_KB_ENTRIES]
    )
    return store


def test_a_vector_store_is_the_kb(embeddings):
    """Real store, real embeddings, real NER: the mention is looked up in the store, the hit's
    description lands in the view, its store id in the lineage; argus's own views are skipped."""
    store = _wiki_store(embeddings)
    doc = Document(id=STORE_KB_DOCUMENT[0], page_content=STORE_KB_DOCUMENT[1])
    step = ArgusDocumentTransformer(
        kb=store, kb_fingerprint="product-wiki-v1", kb_match="title", remedy="descriptor", tau=1.0
    )
    out = step.transform_documents([doc])
    assert _as_given(out[0]) == doc
    views = [d for d in out[1:] if d.metadata["argus_source_id"] == "t1"]
    assert len(views) == 1
    assert "Quarkon (battery controller for e-bikes)" in views[0].page_content
    assert views[0].metadata["argus_kb_id"] == "wiki-7"  # Vienna, Anna Berg: no title match
    assert step.argus.settings_card()["kb"] == "product-wiki-v1"
    assert step.argus.reference_kb.passage("d1#argus-0123456789abcdef") is None


def test_a_retriever_is_the_kb_with_its_own_k(embeddings):
    store = _wiki_store(embeddings)
    retriever = store.as_retriever(search_kwargs={"k": 1})
    step = ArgusDocumentTransformer(kb=retriever, remedy="descriptor", tau=1.0)
    kb = step.argus.reference_kb
    assert [p.id for p, _ in kb.lookup("Lumora", 2)] == ["wiki-8"]  # the retriever's k = 1
    assert kb.passage("wiki-8").description == "lighting product line"
    assert kb.fingerprint.startswith("langchain:")
    with pytest.raises(ValueError):
        ArgusDocumentTransformer(kb=42)


class _UnknownStore(VectorStore):
    """A store argus knows nothing about: fixed relevance hits, no relevance function declared."""

    def __init__(self, hits: list[tuple[Document, float]]) -> None:
        self.hits = hits

    def add_texts(self, texts, metadatas=None, **kwargs):  # type: ignore[override]
        raise NotImplementedError

    @classmethod
    def from_texts(cls, texts, embedding, metadatas=None, **kwargs):  # type: ignore[override]
        raise NotImplementedError

    def similarity_search(self, query, k=4, **kwargs):  # type: ignore[override]
        return [d for d, _ in self.hits[:k]]

    def similarity_search_with_relevance_scores(self, query, k=4, **kwargs):  # type: ignore[override]
        return self.hits[:k]

    def get_by_ids(self, ids):  # type: ignore[override]
        return [d for d, _ in self.hits if d.id in ids]


def test_the_view_discount_is_put_on_the_stores_relevance_scale_or_declared():
    view = Document(
        id="v", page_content="a+", metadata={"argus_source_id": "a", "argus_view": "descriptor"}
    )
    a = Document(
        id="a", page_content="a", metadata={"argus_source_id": "a", "argus_view": "original"}
    )
    b = Document(id="b", page_content="b")
    store = _UnknownStore([(view, 0.60), (b, 0.595), (a, 0.50)])
    with pytest.raises(ArgusInputError, match=r"_UnknownStore.*relevance_per_cosine"):
        ArgusRetriever(vectorstore=store, k=1).invoke("q")
    # relevance = (1 + cos) / 2: the 0.02 cosine margin is 0.01 here, and b stays first
    half = ArgusRetriever(vectorstore=store, k=1, relevance_per_cosine=0.5)
    assert [d.id for d in half.invoke("q")] == ["b"]
    tenth = ArgusRetriever(vectorstore=store, k=1, relevance_per_cosine=0.1)  # 0.002: a wins
    assert [d.id for d in tenth.invoke("q")] == ["a"]
    assert [d.id for d in ArgusRetriever(vectorstore=store, k=1, view_discount=0).invoke("q")] == [
        "a"
    ]
    with pytest.raises(ValueError, match="relevance_per_cosine"):
        ArgusRetriever(vectorstore=store, relevance_per_cosine=0)


def test_known_stores_declare_their_relevance_scale(tmp_path, embeddings):
    import chromadb
    from langchain_chroma import Chroma
    from langchain_community.vectorstores import FAISS
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient, models

    from langchain_argus._scores import relevance_per_cosine

    assert relevance_per_cosine(InMemoryVectorStore(embedding=embeddings)) == 1.0
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    for space, slope in (("cosine", 1.0), ("ip", 1.0), ("l2", math.sqrt(2))):
        chroma = Chroma(
            collection_name=f"c-{space}",
            client=client,
            embedding_function=embeddings,
            collection_metadata={"hnsw:space": space},
        )
        assert relevance_per_cosine(chroma) == pytest.approx(slope), space
    faiss = FAISS.from_texts(["x"], embeddings)
    assert relevance_per_cosine(faiss) == pytest.approx(math.sqrt(2))
    qdrant = QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        qdrant.create_collection(
            "q", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE)
        )
        store = QdrantVectorStore(client=qdrant, collection_name="q", embedding=embeddings)
        assert relevance_per_cosine(store) == 0.5
    finally:
        qdrant.close()
