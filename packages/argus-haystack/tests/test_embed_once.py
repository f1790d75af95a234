"""Embed once (issue 53): ``ArgusAugmenter(embed=True)`` against Haystack's own
``SentenceTransformersDocumentEmbedder`` with the same text settings, in an in-memory store and in
an indexing pipeline without an embedder."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import ComponentDevice

from argus_ir.diagnose import readable_text
from argus_ir.runners.integration import AugmentResult
from argus_ir.testing import LEAD_QUERIES, lead_documents, minilm_path
from argus_ir.vectors import IndexEmbedder
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
)

MODEL = str(minilm_path())
QUERIES = LEAD_QUERIES
# the document embedder's text settings, the same on both paths (MiniLM normalises anyway)
TEXT = {
    "meta_fields_to_embed": ["title", "year"],
    "embedding_separator": " | ",
    "prefix": "passage: ",
    "suffix": " (end)",
    "normalize_embeddings": True,
}
BLOB = "blob-1"  # a document without content: the embedder embeds its meta fields and affixes


def _documents(n: int = 160) -> list[Document]:
    """``n`` documents with meta, some with a ``title`` of ``None`` or no ``year`` (the embedder
    skips those), then one without content."""
    docs = []
    for i, (doc_id, text, meta) in enumerate(lead_documents(n)):
        meta = dict(meta)
        if i % 5 == 0:
            meta["title"] = None
        if i % 7 == 0:
            del meta["year"]
        docs.append(Document(id=doc_id, content=text, meta=meta))
    return [*docs, Document(id=BLOB, meta={"title": "B", "year": 1})]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _store(docs: list[Document]) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(docs)
    return store


def _top10(store: InMemoryDocumentStore, query: list[float]) -> list[str]:
    hits = InMemoryEmbeddingRetriever(store, top_k=10).run(query_embedding=query)["documents"]
    return [doc.id for doc in hits]


@pytest.fixture(scope="module")
def queries() -> dict[str, list[float]]:
    embedder = SentenceTransformersTextEmbedder(
        model=MODEL,
        device=ComponentDevice.from_str("cpu"),
        local_files_only=True,
        progress_bar=False,
    )
    embedder.warm_up()
    return {q: embedder.run(text=q)["embedding"] for q in QUERIES}


@pytest.fixture(scope="module")
def once() -> tuple[list[Document], dict[str, Any]]:
    """The inputs and what ``ArgusAugmenter(embed=True)`` made of them."""
    docs = _documents()
    return docs, ArgusAugmenter(embed=True, progress_bar=False, **TEXT).run(documents=docs)


@pytest.fixture(scope="module")
def twice() -> tuple[list[Document], list[Document]]:
    """The embed-twice path: the same augmenter without vectors (an fp32 pass, as ``embed=True``
    runs it, so the same entities are flagged), then the document embedder."""
    out = ArgusAugmenter(precision="fp32", progress_bar=False, **TEXT).run(documents=_documents())
    embedder = SentenceTransformersDocumentEmbedder(
        model=MODEL,
        device=ComponentDevice.from_str("cpu"),
        local_files_only=True,
        progress_bar=False,
        **TEXT,
    )
    embedder.warm_up()
    return out["documents"], embedder.run(documents=out["documents"])["documents"]


def test_every_document_carries_the_vector_the_embedder_would_give(once, twice):
    docs, result = once
    out = result["documents"]
    views = [d for d in out if d.meta["argus_view"] != "original"]
    assert len(views) >= 5 and len(out) == len(docs) + len(views)
    _, reference = twice
    assert [d.id for d in reference] == [d.id for d in out]
    got = np.array([d.embedding for d in out])
    ref = np.array([d.embedding for d in reference])
    cos = _cos(got, ref)
    assert cos.min() >= 0.9999, [reference[i].id for i in np.nonzero(cos < 0.9999)[0]]
    assert np.allclose(np.linalg.norm(got, axis=1), np.linalg.norm(ref, axis=1), atol=1e-4)
    assert BLOB in {d.id for d in out}  # no content: its meta fields' vector, compared above
    assert all(d.embedding is None and "argus_view" not in d.meta for d in docs)  # inputs as given
    assert result["failed_documents"] == [] and result["stats"]["failures"] == []


def test_queries_rank_the_same_top_ten_as_embedding_twice(once, twice, queries):
    _, result = once
    _, reference = twice
    store_once, store_twice = _store(result["documents"]), _store(reference)
    for query, vector in queries.items():
        assert _top10(store_once, vector) == _top10(store_twice, vector), query


def test_without_embed_the_output_is_unchanged(once, twice):
    _, result = once
    plain, _ = twice
    assert all(d.embedding is None for d in plain)
    assert [replace(d, embedding=None) for d in result["documents"]] == plain


def test_a_writer_pipeline_needs_no_embedder(queries):
    store = InMemoryDocumentStore()
    indexing = Pipeline()
    indexing.add_component("argus", ArgusAugmenter(embed=True, progress_bar=False, **TEXT))
    indexing.add_component("writer", DocumentWriter(store))
    indexing.connect("argus.documents", "writer.documents")
    written = indexing.run({"argus": {"documents": _documents(40)}})["writer"]["documents_written"]
    stored = store.filter_documents()
    assert written == len(stored) > 40
    assert all(d.embedding is not None for d in stored)
    query = Pipeline()
    query.add_component(
        "embedder",
        SentenceTransformersTextEmbedder(model=MODEL, local_files_only=True, progress_bar=False),
    )
    query.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=10))
    query.connect("embedder.embedding", "retriever.query_embedding")
    hits = query.run({"embedder": {"text": QUERIES[4]}})["retriever"]["documents"]
    assert len(hits) == 10
    assert hits[0].id == _top10(store, queries[QUERIES[4]])[0]


def test_run_async_gives_the_same_vectors_as_run():
    augmenter = ArgusAugmenter(embed=True, progress_bar=False, **TEXT)
    docs = _documents(30)
    sync = augmenter.run(documents=docs)["documents"]
    done = asyncio.run(augmenter.run_async(documents=docs))["documents"]
    assert [d.id for d in done] == [d.id for d in sync]
    for a, b in zip(done, sync, strict=True):
        assert (a.embedding is None) == (b.embedding is None)
        assert a.embedding is None or np.allclose(a.embedding, b.embedding, atol=1e-5)


def test_with_plain_text_the_originals_take_the_pass_vectors(monkeypatch):
    encoded: list[str] = []
    encode = IndexEmbedder._encode

    def spy(self: IndexEmbedder, texts: list[str], show: bool) -> list[np.ndarray]:
        encoded.extend(texts)
        return encode(self, texts, show)

    monkeypatch.setattr(IndexEmbedder, "_encode", spy)
    docs = _documents(30)[:30]
    out = ArgusAugmenter(embed=True, progress_bar=False).run(documents=docs)["documents"]
    unread = [d.content for d in docs if readable_text(d.content) != d.content]
    views = [d.content for d in out if d.meta["argus_view"] != "original"]
    assert unread and views and sorted(encoded) == sorted({*unread, *views})
    assert all(d.embedding is not None for d in out)


def test_normalize_embeddings_scales_to_unit_length():
    vector = np.array([3.0, 4.0], dtype=np.float32)

    class Result(AugmentResult):
        def index_vectors(self, *args: Any, **kwargs: Any) -> list[np.ndarray | None]:
            return [vector]

    result = Result([], [], None)  # type: ignore[arg-type]
    doc = [Document(id="a", content="text")]
    scaled = ArgusAugmenter(embed=True, normalize_embeddings=True)._embed(doc, result)
    assert np.allclose(scaled[0].embedding, [0.6, 0.8])
    assert ArgusAugmenter(embed=True)._embed(doc, result)[0].embedding == [3.0, 4.0]


def test_the_text_settings_round_trip_through_dict_and_yaml():
    augmenter = ArgusAugmenter(
        embed=True,
        meta_fields_to_embed=["title"],
        embedding_separator="\n\n",
        prefix="passage: ",
        suffix="\t",
        normalize_embeddings=True,
    )
    data = augmenter.to_dict()
    params = data["init_parameters"]
    assert params["embed"] is True and params["meta_fields_to_embed"] == ["title"]
    assert (params["embedding_separator"], params["prefix"], params["suffix"]) == (
        "\n\n",
        "passage: ",
        "\t",
    )
    assert params["normalize_embeddings"] is True
    assert ArgusAugmenter.from_dict(data).to_dict() == data
    pipe = Pipeline()
    pipe.add_component("argus", augmenter)
    loaded = Pipeline.loads(pipe.dumps()).get_component("argus")
    assert loaded.to_dict() == data and loaded._argus.embed
    assert ArgusAugmenter().to_dict()["init_parameters"]["embed"] is False
    with pytest.raises(ValueError, match="meta_fields_to_embed"):
        ArgusAugmenter(meta_fields_to_embed="title")  # type: ignore[arg-type]


def test_a_text_the_tokenizer_refuses_gets_no_vector_and_is_reported():
    docs = [
        Document(id="ok", content="Marie Curie studied radioactivity in Paris."),
        Document(id="bad", content="A lone \ud800 surrogate in a text about Paris."),
    ]
    out = ArgusAugmenter(embed=True, progress_bar=False).run(documents=docs)
    vectors = {d.id: d.embedding for d in out["documents"]}
    assert vectors["ok"] is not None and vectors["bad"] is None
    assert [d.id for d in out["failed_documents"]] == ["bad"]
    assert ("bad", "vector") in {(i, r.split(":")[0]) for i, r in out["stats"]["failures"]}


@pytest.mark.parametrize(
    "settings",
    [TEXT, {"meta_fields_to_embed": ["title", "flag", "count"]}, {}],
    ids=["affixes-and-separator", "meta-defaults", "defaults"],
)
def test_the_string_embedded_is_the_installed_embedders(twice, settings):
    """``ArgusAugmenter._text_to_embed`` against the string the installed
    ``SentenceTransformersDocumentEmbedder`` builds for the same documents (read from its model's
    input, the model run as usual): ``meta_fields_to_embed`` (missing, ``None``, falsy and
    non-string values), ``embedding_separator``, ``prefix``, ``suffix``, a document without
    content. A change upstream fails here instead of changing vectors without a word."""
    plain, _ = twice
    extra = [
        Document(id="x1", content="Bach in Leipzig.", meta={"title": "", "flag": False}),
        Document(id="x2", content="", meta={"title": 0, "count": 3, "year": None}),
        Document(id="x3", content="Curie", meta={"title": ["a", "b"], "flag": True}),
    ]
    docs = [*plain, *extra]
    embedder = SentenceTransformersDocumentEmbedder(
        model=MODEL,
        device=ComponentDevice.from_str("cpu"),
        local_files_only=True,
        progress_bar=False,
        **settings,
    )
    embedder.warm_up()
    backend = embedder.embedding_backend
    seen: list[str] = []
    embed = backend.embed

    def spy(data: list[str], **kwargs: Any) -> Any:
        seen.extend(data)
        return embed(data, **kwargs)

    backend.embed = spy  # the cached backend: put it back for the other tests
    try:
        embedder.run(documents=docs)
    finally:
        del backend.embed
    ours = ArgusAugmenter(**settings)
    assert seen == [ours._text_to_embed(d) for d in docs]
    assert len(seen) == len(docs) > 40
