"""langchain-argus: the shared adapter contract, the end-to-end scenario and the async path."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.integration import Record
from argus_ir.testing import SCENARIO, AdapterContract, minilm_path
from langchain_argus import ArgusDocumentTransformer, ArgusRetriever, collapse_documents


class MiniLM(Embeddings):
    """The offline all-MiniLM-L6-v2 through sentence-transformers (what HuggingFaceEmbeddings does)."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(minilm_path()), device="cpu")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(texts, normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="module")
def embeddings() -> MiniLM:
    return MiniLM()


class TestContract(AdapterContract):
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
    assert "argus_view" not in found[0].metadata


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


def test_store_without_get_by_ids_returns_the_best_view(embeddings):
    class NoFetch(InMemoryVectorStore):
        def get_by_ids(self, ids):  # type: ignore[override]
            raise NotImplementedError

    transformer = ArgusDocumentTransformer(**SCENARIO.settings)
    views = [d for d in transformer.transform_documents(_corpus()) if "argus_view" in d.metadata]
    store = NoFetch(embedding=embeddings)
    store.add_documents(views)  # only views indexed: the original cannot come from the hits
    found = ArgusRetriever(vectorstore=store, k=1).invoke(SCENARIO.query)
    assert found[0].metadata["argus_source_id"] == SCENARIO.target
