"""Embed once (issue 53): ``ArgusDocumentTransformer(embed=True)`` and ``transformer.embeddings(base)``
against LangChain's own ``HuggingFaceEmbeddings``, in a store and through ``index()``."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, aindex, index
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.errors import ArgusInputError
from argus_ir.testing import LEAD_QUERIES, lead_documents, minilm_path
from langchain_argus import ArgusDocumentTransformer, ArgusEmbeddings
from langchain_argus.embeddings import PendingVectors

hf = pytest.importorskip("langchain_huggingface")

QUERIES = LEAD_QUERIES


class Counting(hf.HuggingFaceEmbeddings):  # type: ignore[misc, name-defined]
    """LangChain's own HuggingFaceEmbeddings, counting the document texts it embeds."""

    embedded: list[str] = []  # noqa: RUF012 (a pydantic field)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


def _documents() -> list[Document]:
    return [
        Document(
            page_content=f"{meta['title']}\n{text}" if meta["title"] else text, metadata=meta, id=i
        )
        for i, text, meta in lead_documents(160)
    ]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def base() -> Counting:
    return Counting(model_name=str(minilm_path()), model_kwargs={"device": "cpu"})


@pytest.fixture(scope="module")
def once(base: Counting):
    """The embed-once path as the docs write it: a store built with transformer.embeddings."""
    transformer = ArgusDocumentTransformer(embed=True)
    store = InMemoryVectorStore(transformer.embeddings(base))
    docs = transformer.transform_documents(_documents())
    base.embedded.clear()
    store.add_documents(docs)
    return transformer, store, docs, list(base.embedded)


@pytest.fixture(scope="module")
def twice(base: Counting):
    """The embed-twice path: the same transform without vectors, the store embedding it all."""
    store = InMemoryVectorStore(base)
    docs = ArgusDocumentTransformer(precision="fp32").transform_documents(_documents())
    store.add_documents(docs)
    return store, docs


def test_the_store_embeds_nothing_and_holds_the_models_own_vectors(once, base):
    transformer, store, docs, embedded = once
    assert embedded == []  # not one document text reached the model
    assert len(transformer._pending) == 0  # every vector handed out, then dropped
    views = [d for d in docs if d.metadata["argus_view"] != "original"]
    assert len(views) >= 5 and len(docs) == 160 + len(views)
    got = np.array([store.store[d.id]["vector"] for d in docs])
    ref = np.array(base._embed([d.page_content for d in docs], base.encode_kwargs))
    cos = _cos(got, ref)
    assert cos.min() >= 0.9999, [docs[i].id for i in np.nonzero(cos < 0.9999)[0]]


def test_queries_rank_the_same_top_ten_as_embedding_twice(once, twice):
    _, store, docs, _ = once
    twice_store, twice_docs = twice
    assert [(d.id, d.page_content) for d in docs] == [(d.id, d.page_content) for d in twice_docs]
    for query in QUERIES:
        a = [d.id for d in store.similarity_search(query, k=10)]
        b = [d.id for d in twice_store.similarity_search(query, k=10)]
        assert a == b, query


def test_a_different_base_model_is_refused_naming_both():
    transformer = ArgusDocumentTransformer(embed=True)
    mpnet = hf.HuggingFaceEmbeddings.model_construct(
        model_name="sentence-transformers/all-mpnet-base-v2"
    )
    with pytest.raises(ArgusInputError, match=r"all-mpnet-base-v2.*all-MiniLM-L6-v2"):
        transformer.embeddings(mpnet)
    with pytest.raises(ArgusInputError, match="prompt"):
        prompted = hf.HuggingFaceEmbeddings.model_construct(
            model_name=str(minilm_path()), encode_kwargs={"prompt": "passage: "}
        )
        transformer.embeddings(prompted)
    with pytest.raises(ArgusInputError, match="embed=False"):
        ArgusDocumentTransformer().embeddings(mpnet)


def test_a_truncated_dimension_is_refused_at_construction():
    """``model_kwargs={"truncate_dim": 64}``: 64-d vectors from the store's embeddings beside
    argus's 384-d ones used to fail only at search time, as a numpy shape error."""
    truncated = hf.HuggingFaceEmbeddings(
        model_name=str(minilm_path()), model_kwargs={"device": "cpu", "truncate_dim": 64}
    )
    with pytest.raises(ArgusInputError, match=r"model_kwargs\['truncate_dim'\]"):
        ArgusDocumentTransformer(embed=True).embeddings(truncated)


def test_a_wrapper_is_checked_through():
    """``CacheBackedEmbeddings`` over another model is refused naming the wrapper and the model
    inside; over the retriever's own model it is accepted and its vectors pass the probe."""
    from langchain_classic.embeddings import CacheBackedEmbeddings
    from langchain_core.stores import InMemoryByteStore

    transformer = ArgusDocumentTransformer(embed=True)
    mpnet = hf.HuggingFaceEmbeddings.model_construct(
        model_name="sentence-transformers/all-mpnet-base-v2"
    )
    cached = CacheBackedEmbeddings.from_bytes_store(
        mpnet, InMemoryByteStore(), namespace="m", key_encoder="sha256"
    )
    with pytest.raises(
        ArgusInputError, match=r"CacheBackedEmbeddings \(over HuggingFaceEmbeddings\).*mpnet"
    ):
        transformer.embeddings(cached)
    own = hf.HuggingFaceEmbeddings(model_name=str(minilm_path()), model_kwargs={"device": "cpu"})
    ok = CacheBackedEmbeddings.from_bytes_store(
        own, InMemoryByteStore(), namespace="o", key_encoder="sha256"
    )
    assert isinstance(transformer.embeddings(ok), ArgusEmbeddings)


def test_an_embedder_that_names_no_model_is_checked_by_one_vector():
    """An embedder with no readable model is put to one test sentence: another space or another
    size is refused, naming what differs; ``verify=False`` opts out explicitly."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    transformer = ArgusDocumentTransformer(embed=True)
    with pytest.raises(ArgusInputError, match=r"cosine away.*verify=False"):
        transformer.embeddings(DeterministicFakeEmbedding(size=384))
    with pytest.raises(ArgusInputError, match=r"64-dimensional.*384-dimensional"):
        transformer.embeddings(DeterministicFakeEmbedding(size=64))
    unchecked = transformer.embeddings(DeterministicFakeEmbedding(size=384), verify=False)
    assert isinstance(unchecked, ArgusEmbeddings)


def test_other_texts_and_queries_go_to_the_base(base):
    transformer = ArgusDocumentTransformer(embed=True)
    embeddings = transformer.embeddings(base)
    base.embedded.clear()
    vector = embeddings.embed_documents(["a text argus never saw"])[0]
    assert base.embedded == ["a text argus never saw"]
    assert np.allclose(vector, embeddings.embed_query("a text argus never saw"), atol=1e-6)
    assert isinstance(embeddings, ArgusEmbeddings) and embeddings.model_name == base.model_name


def test_index_with_a_record_manager_sync_and_async_embeds_once(base):
    for run in ("sync", "async"):
        transformer = ArgusDocumentTransformer(embed=True, precision="fp32")
        store = InMemoryVectorStore(transformer.embeddings(base))
        manager = InMemoryRecordManager(namespace=f"embed-once-{run}")
        manager.create_schema()
        documents = _documents()[:40]
        base.embedded.clear()
        if run == "sync":
            docs = transformer.transform_documents(documents)
            result = index(docs, manager, store, cleanup="full", source_id_key="argus_source_id")
        else:
            docs = asyncio.run(transformer.atransform_documents(documents))
            result = asyncio.run(
                aindex(docs, manager, store, cleanup="full", source_id_key="argus_source_id")
            )
        assert result["num_added"] == len(docs) and base.embedded == [], run
        assert len(transformer._pending) == 0, run
        # a rerun over the same output finds everything indexed: nothing to embed, nothing held
        again = index(docs, manager, store, cleanup="full", source_id_key="argus_source_id")
        assert again["num_added"] == 0 and again["num_skipped"] == len(docs)


def test_pending_vectors_are_bounded_and_handed_out_once_per_put():
    pending = PendingVectors(max_pending=3)
    vec = [np.full(2, i, dtype=np.float32) for i in range(5)]
    pending.put(["a", "b", "a"], vec[:3])  # "a" twice: handed out twice
    assert len(pending) == 3
    assert pending.take("a") is not None and pending.take("a") is not None
    assert pending.take("a") is None and len(pending) == 1
    pending.put(["c", "d", "e"], vec[2:])  # over the cap: the oldest ("b") goes
    assert len(pending) == 3 and pending.dropped == 1 and pending.take("b") is None
    assert [float(pending.take(t)[0]) for t in "cde"] == [2.0, 3.0, 4.0]
    with pytest.raises(ArgusInputError):
        PendingVectors(0)


def test_a_store_over_the_cap_still_gets_every_vector(base):
    transformer = ArgusDocumentTransformer(embed=True, max_pending=10, precision="fp32")
    store = InMemoryVectorStore(transformer.embeddings(base))
    docs = transformer.transform_documents(_documents()[:30])
    base.embedded.clear()
    store.add_documents(docs)
    assert len(base.embedded) == len(docs) - 10  # the dropped ones, embedded by the base
    assert len(store.store) == len(docs)
