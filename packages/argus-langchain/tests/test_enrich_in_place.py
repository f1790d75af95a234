"""In-place enrichment (issue 58) in LangChain: with ``embed=True`` and a KB of the user's that
names an entity, the store keeps the original's text byte for byte and the vector LangChain's own
``HuggingFaceEmbeddings`` gives its text followed by the knowledge; updated with a KB that no
longer knows the entity, the knowledge and its effect on the vector are gone."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.lineage import KNOWLEDGE_KEY
from argus_ir.testing import KNOWN_KB, KNOWN_TEXTS, cosine, minilm_path, write_passages
from langchain_argus import ArgusDocumentTransformer

hf = pytest.importorskip("langchain_huggingface")

TEXTS = KNOWN_TEXTS
KB = KNOWN_KB


def test_the_store_keeps_the_text_and_the_vector_of_text_and_knowledge(tmp_path):
    base = hf.HuggingFaceEmbeddings(model_name=str(minilm_path()), model_kwargs={"device": "cpu"})
    docs = [
        Document(page_content=t, metadata={"n": i}, id=k) for i, (k, t) in enumerate(TEXTS.items())
    ]
    transformer = ArgusDocumentTransformer(embed=True, kb=write_passages(tmp_path / "kb.jsonl", KB))
    store = InMemoryVectorStore(transformer.embeddings(base))
    out = transformer.transform_documents(docs)
    store.add_documents(out)
    assert [(d.id, d.page_content) for d in out] == [
        (d.id, d.page_content) for d in docs
    ]  # no view
    knowledge = store.store["d1"]["metadata"][KNOWLEDGE_KEY]
    assert knowledge == "Bled Castle is a medieval castle in Slovenia."
    assert store.store["d1"]["text"] == TEXTS["d1"]
    (ref,) = base.embed_documents([f"{TEXTS['d1']}\n{knowledge}"])
    assert cosine(store.store["d1"]["vector"], ref) >= 0.9999
    assert KNOWLEDGE_KEY not in store.store["d3"]["metadata"]

    # the source updated with a KB that no longer knows the castle: knowledge and its vector gone
    less = ArgusDocumentTransformer(embed=True, kb=write_passages(tmp_path / "less.jsonl", KB[1:]))
    store.embedding = less.embeddings(base)
    store.add_documents(less.transform_documents(docs))
    assert KNOWLEDGE_KEY not in store.store["d1"]["metadata"]
    (plain,) = base.embed_documents([TEXTS["d1"]])
    assert cosine(store.store["d1"]["vector"], plain) >= 0.9999
    assert KNOWLEDGE_KEY in store.store["d2"]["metadata"]


def test_without_embed_the_knowledge_is_a_view_beside_the_original(tmp_path):
    docs = [Document(page_content=t, id=k) for k, t in TEXTS.items()]
    out = ArgusDocumentTransformer(
        kb=write_passages(tmp_path / "kb.jsonl", KB)
    ).transform_documents(docs)
    assert not any(KNOWLEDGE_KEY in d.metadata for d in out)
    views = [d for d in out if d.metadata["argus_view"] != "original"]
    assert {d.metadata["argus_source_id"] for d in views} == {
        "d2"
    }  # the flagged entity only (Bled Castle is not flagged)
