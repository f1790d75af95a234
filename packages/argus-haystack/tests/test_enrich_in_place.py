"""In-place enrichment (issue 58) in Haystack: with ``embed=True`` and a KB of the user's that
names an entity, the document keeps its content and holds the vector Haystack's own
``SentenceTransformersDocumentEmbedder`` gives it with the knowledge after the content; updated
with a KB that no longer knows the entity, the knowledge is gone."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from haystack import Document
from haystack.utils import ComponentDevice

from argus_ir.lineage import KNOWLEDGE_KEY
from argus_ir.testing import minilm_path
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
)

TEXTS = {
    "d1": "We spent a week near Bled Castle with old friends and ate far too much cake.",
    "d2": "My cousin got married at Phoenix Symphony Hall last weekend and the party went on until dawn.",
    "d3": "Nothing much happened on the long drive home yesterday.",
}  # fmt: skip
KB = [
    {"id": "k1", "title": "Bled Castle", "text": "Bled Castle is a medieval castle in Slovenia."},
    {"id": "k2", "title": "Phoenix Symphony Hall", "text": "A concert hall in Arizona, United States."},
]  # fmt: skip
TEXT = {"meta_fields_to_embed": ["title"], "prefix": "passage: ", "suffix": " (end)"}


def _kb(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return str(path)


def _docs() -> list[Document]:
    return [Document(id=k, content=t, meta={"title": "A post"}) for k, t in TEXTS.items()]


def _cos(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_the_document_keeps_its_content_and_embeds_it_with_its_knowledge(tmp_path):
    augmenter = ArgusAugmenter(embed=True, kb=_kb(tmp_path / "kb.jsonl", KB), **TEXT)
    augmenter.warm_up()
    out = augmenter.run(_docs())["documents"]
    assert [(d.id, d.content) for d in out] == [(k, t) for k, t in TEXTS.items()]  # no view
    knowledge = out[0].meta[KNOWLEDGE_KEY]
    assert knowledge == "Bled Castle is a medieval castle in Slovenia."
    embedder = SentenceTransformersDocumentEmbedder(
        model=str(minilm_path()), device=ComponentDevice.from_str("cpu"), **TEXT
    )
    embedder.warm_up()
    # Haystack's embedder over the same document with the knowledge after its content
    enriched = replace(out[0], content=f"{out[0].content}\n{knowledge}", embedding=None)
    (ref,) = embedder.run([enriched])["documents"]
    assert _cos(out[0].embedding, ref.embedding) >= 0.9999

    less = ArgusAugmenter(embed=True, kb=_kb(tmp_path / "less.jsonl", KB[1:]), **TEXT)
    less.warm_up()
    again = less.run(_docs())["documents"]
    assert KNOWLEDGE_KEY not in again[0].meta and KNOWLEDGE_KEY in again[1].meta
    (plain,) = embedder.run([replace(again[0], embedding=None)])["documents"]
    assert _cos(again[0].embedding, plain.embedding) >= 0.9999
