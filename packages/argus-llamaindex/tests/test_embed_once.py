"""Embed once (issue 53): ``ArgusTransform(embed=True)`` against LlamaIndex's own
``HuggingFaceEmbedding``, in a ``VectorStoreIndex`` and an ``IngestionPipeline`` with a store."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import numpy as np
import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import BaseNode, Document, ImageNode, MetadataMode, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from pydantic import ValidationError

from argus_ir.testing import LEAD_QUERIES, lead_documents, minilm_path
from argus_llamaindex import ArgusTransform

hf = pytest.importorskip("llama_index.embeddings.huggingface")

QUERIES = LEAD_QUERIES
MEDIA = ("image-1", "blob-1")  # nodes without text: no text vector


class Counting(hf.HuggingFaceEmbedding):  # type: ignore[misc, name-defined]
    """LlamaIndex's own HuggingFaceEmbedding, counting the document texts it embeds."""

    embedded: ClassVar[list[str]] = []

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return super()._get_text_embeddings(texts)

    def _get_text_embedding(self, text: str) -> list[float]:
        self.embedded.append(text)
        return super()._get_text_embedding(text)


def _nodes(n: int = 160) -> list[BaseNode]:
    """``n`` nodes with metadata LlamaIndex puts in the embedded string in four ways, then two
    nodes without text."""
    out: list[BaseNode] = []
    for i, (doc_id, text, meta) in enumerate(lead_documents(n)):
        common: dict[str, Any] = {"id_": doc_id, "text": text, "metadata": meta}
        if i % 4 == 0:  # the default template, one key kept out
            out.append(Document(**common, excluded_embed_metadata_keys=["group"]))
        elif i % 4 == 1:  # a template and separator of its own
            node = TextNode(**common, excluded_embed_metadata_keys=["group", "year"])
            node.metadata_template = "{key} = {value}"
            node.metadata_separator = " | "
            out.append(node)
        elif i % 4 == 2:  # a text template of its own
            out.append(TextNode(**common, text_template="[{metadata_str}]\n{content}"))
        else:  # every key kept out: the node embeds its bare text
            out.append(Document(**common, excluded_embed_metadata_keys=list(meta)))
    out.append(ImageNode(id_=MEDIA[0], image_url="file:///tmp/x.png", metadata={"title": "A"}))
    out.append(Document(id_=MEDIA[1], metadata={"title": "B"}))
    return out


def _texts(nodes: list[BaseNode]) -> list[BaseNode]:
    return [node for node in nodes if node.node_id not in MEDIA]


def _embedded(nodes: list[BaseNode]) -> list[str]:
    return [node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _top10(index: VectorStoreIndex, query: str) -> list[str]:
    return [hit.node.node_id for hit in index.as_retriever(similarity_top_k=10).retrieve(query)]


@pytest.fixture(scope="module")
def model() -> Counting:
    return Counting(model_name=str(minilm_path()), device="cpu")


@pytest.fixture(scope="module")
def once() -> tuple[list[BaseNode], list[BaseNode]]:
    """The inputs and what ``ArgusTransform(embed=True)`` made of them."""
    nodes = _nodes()
    return nodes, ArgusTransform(embed=True)(nodes)


@pytest.fixture(scope="module")
def twice(model: Counting) -> tuple[list[BaseNode], list[BaseNode]]:
    """The embed-twice path: the same transform without vectors (an fp32 pass, as ``embed=True``
    runs it, so the same entities are flagged), then the embedding model as the next transform
    (copies of the text nodes, embedded as LlamaIndex embeds them)."""
    plain = ArgusTransform(precision="fp32")(_nodes())
    return plain, model([node.model_copy() for node in _texts(plain)])


def test_every_node_carries_the_vector_llamaindex_would_embed(once, twice):
    nodes, out = once
    _, reference = twice
    views = [n for n in out if n.metadata["argus_view"] != "original"]
    assert len(views) >= 5 and len(out) == len(nodes) + len(views)
    texts = _texts(out)
    strings = _embedded(texts)
    # the metadata is in what LlamaIndex embeds, in each of the four ways
    assert sum("title: " in s for s in strings) and sum("title = " in s for s in strings)
    assert sum(s.startswith("[") for s in strings) and sum(
        n.text == s for n, s in zip(texts, strings)
    )
    assert _embedded(reference) == strings  # the model embedded the same strings
    got = np.array([n.embedding for n in texts])
    ref = np.array([n.embedding for n in reference])
    cos = _cos(got, ref)
    assert cos.min() >= 0.9999, [texts[i].node_id for i in np.nonzero(cos < 0.9999)[0]]
    assert all(n.embedding is None for n in out if n.node_id in MEDIA)  # no text, no vector
    assert all(n.embedding is None for n in nodes)  # the inputs are not modified


def test_queries_rank_the_same_top_ten_as_embedding_twice(once, twice, model):
    _, out = once
    _, reference = twice
    assert [n.node_id for n in _texts(out)] == [n.node_id for n in reference]
    index_once = VectorStoreIndex(_texts(out), embed_model=model)
    index_twice = VectorStoreIndex(reference, embed_model=model)
    for query in QUERIES:
        assert _top10(index_once, query) == _top10(index_twice, query), query


def test_the_index_embeds_no_document_text(once, model):
    _, out = once
    model.embedded.clear()
    index = VectorStoreIndex(_texts(out), embed_model=model)
    assert model.embedded == []  # every node came with its vector
    assert len(_top10(index, QUERIES[0])) == 10  # queries still go to the model
    bare = [n.model_copy(update={"embedding": None}) for n in _texts(out)[:5]]
    VectorStoreIndex(bare, embed_model=model)
    assert model.embedded == _embedded(bare)  # the spy sees what the index embeds


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_pipeline_with_a_vector_store_needs_no_embed_model(once, run):
    _, full = once
    store = SimpleVectorStore()
    pipeline = IngestionPipeline(transformations=[ArgusTransform(embed=True)], vector_store=store)
    nodes = _nodes(40)
    out = pipeline.run(nodes=nodes) if run == "sync" else asyncio.run(pipeline.arun(nodes=nodes))
    stored = store.data.embedding_dict
    assert set(stored) == {n.node_id for n in _texts(out)} and len(stored) > 40
    assert all(stored[n.node_id] == n.embedding for n in _texts(out))
    known = {n.node_id: n.embedding for n in full}
    ids = [i for i in stored if i in known]
    assert len(ids) >= 40  # every original (and the views both runs made)
    cos = _cos(np.array([stored[i] for i in ids]), np.array([known[i] for i in ids]))
    assert cos.min() >= 0.9999


def test_passed_through_nodes_get_vectors_and_stay_as_they_came(once):
    _, out = once
    cut = next(i for i in range(12, len(out)) if out[i].metadata["argus_view"] == "original")
    given = [n.model_copy(update={"embedding": None}) for n in out[:cut]]
    views = [n for n in given if n.metadata["argus_view"] != "original"]
    assert views  # argus's own views, given back in
    again = ArgusTransform(embed=True, trust_lineage=True)(given)
    assert [n.node_id for n in again] == [n.node_id for n in given]  # nothing new
    assert all(n.embedding is None for n in given)  # copied, not modified
    assert all(a is not b for a, b in zip(again, given, strict=True))
    by_id = {n.node_id: n for n in out}
    for node in again:
        assert np.allclose(node.embedding, by_id[node.node_id].embedding, atol=1e-5)


def test_an_unknown_setting_is_refused_naming_it():
    with pytest.raises(ValidationError, match="tua"):
        ArgusTransform(tua=0.2)
    with pytest.raises(ValidationError, match="embedd"):
        ArgusTransform.from_dict({**ArgusTransform().to_dict(), "embedd": True})
    data = ArgusTransform(embed=True, tau=0.2).to_dict()
    clone = ArgusTransform.from_dict(data)  # its own dict (with class_name) still loads
    assert clone.embed and clone.tau == 0.2 and clone.to_dict() == data
    assert data != ArgusTransform(tau=0.2).to_dict()  # the cache key follows embed


def test_without_embed_the_output_is_unchanged(once, twice):
    _, out = once
    plain, _ = twice
    assert all(n.embedding is None for n in plain)
    strip = {"embedding"}
    assert [n.model_dump(exclude=strip) for n in plain] == [
        n.model_dump(exclude=strip) for n in out
    ]


def test_a_text_the_tokenizer_refuses_gets_no_vector_and_is_reported():
    nodes = [
        TextNode(id_="ok", text="Marie Curie studied radioactivity in Paris."),
        TextNode(id_="bad", text="A lone \ud800 surrogate in a text about Paris."),
    ]
    transform = ArgusTransform(embed=True)
    vectors = {n.node_id: n.embedding for n in transform(nodes)}
    assert vectors["ok"] is not None and vectors["bad"] is None
    failures = transform.last_stats["failures"]
    assert ("bad", "vector") in {(i, r.split(":")[0]) for i, r in failures}
