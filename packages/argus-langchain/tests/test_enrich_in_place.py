"""In-place enrichment (issue 58) in LangChain: with ``embed=True`` and a KB of the user's that
names an entity, the store keeps the original's text byte for byte and the vector LangChain's own
``HuggingFaceEmbeddings`` gives its text followed by the knowledge; updated with a KB that no
longer knows the entity, the knowledge and its effect on the vector are gone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.lineage import KNOWLEDGE_KEY
from argus_ir.testing import minilm_path
from langchain_argus import ArgusDocumentTransformer

hf = pytest.importorskip("langchain_huggingface")

TEXTS = {
    "d1": "We spent a week near Bled Castle with old friends and ate far too much cake.",
    "d2": "My cousin got married at Phoenix Symphony Hall last weekend and the party went on until dawn.",
    "d3": "Nothing much happened on the long drive home yesterday.",
}  # fmt: skip
KB = [
    {"id": "k1", "title": "Bled Castle", "text": "Bled Castle is a medieval castle in Slovenia."},
    {"id": "k2", "title": "Phoenix Symphony Hall", "text": "A concert hall in Arizona, United States."},
]  # fmt: skip


def _kb(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return str(path)


def _cos(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_the_store_keeps_the_text_and_the_vector_of_text_and_knowledge(tmp_path):
    base = hf.HuggingFaceEmbeddings(model_name=str(minilm_path()), model_kwargs={"device": "cpu"})
    docs = [
        Document(page_content=t, metadata={"n": i}, id=k) for i, (k, t) in enumerate(TEXTS.items())
    ]
    transformer = ArgusDocumentTransformer(embed=True, kb=_kb(tmp_path / "kb.jsonl", KB))
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
    assert _cos(store.store["d1"]["vector"], ref) >= 0.9999
    assert KNOWLEDGE_KEY not in store.store["d3"]["metadata"]

    # the source updated with a KB that no longer knows the castle: knowledge and its vector gone
    less = ArgusDocumentTransformer(embed=True, kb=_kb(tmp_path / "less.jsonl", KB[1:]))
    store.embedding = less.embeddings(base)
    store.add_documents(less.transform_documents(docs))
    assert KNOWLEDGE_KEY not in store.store["d1"]["metadata"]
    (plain,) = base.embed_documents([TEXTS["d1"]])
    assert _cos(store.store["d1"]["vector"], plain) >= 0.9999
    assert KNOWLEDGE_KEY in store.store["d2"]["metadata"]


def test_without_embed_the_knowledge_is_a_view_beside_the_original(tmp_path):
    docs = [Document(page_content=t, id=k) for k, t in TEXTS.items()]
    out = ArgusDocumentTransformer(kb=_kb(tmp_path / "kb.jsonl", KB)).transform_documents(docs)
    assert not any(KNOWLEDGE_KEY in d.metadata for d in out)
    views = [d for d in out if d.metadata["argus_view"] != "original"]
    assert {d.metadata["argus_source_id"] for d in views} == {
        "d2"
    }  # the flagged entity only (Bled Castle is not flagged)
