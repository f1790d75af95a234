"""In-place enrichment (issue 58) in Haystack: with ``embed=True`` and a KB of the user's that
names an entity, the document keeps its content and holds the vector Haystack's own
``SentenceTransformersDocumentEmbedder`` gives it with the knowledge after the content; updated
with a KB that no longer knows the entity, the knowledge is gone."""

from __future__ import annotations

from dataclasses import replace

from haystack import Document
from haystack.utils import ComponentDevice

from argus_ir.lineage import KNOWLEDGE_KEY
from argus_ir.testing import KNOWN_KB, KNOWN_TEXTS, cosine, minilm_path, write_passages
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
)

TEXTS = KNOWN_TEXTS
KB = KNOWN_KB
TEXT = {"meta_fields_to_embed": ["title"], "prefix": "passage: ", "suffix": " (end)"}


def _docs() -> list[Document]:
    return [Document(id=k, content=t, meta={"title": "A post"}) for k, t in TEXTS.items()]


def test_the_document_keeps_its_content_and_embeds_it_with_its_knowledge(tmp_path):
    augmenter = ArgusAugmenter(embed=True, kb=write_passages(tmp_path / "kb.jsonl", KB), **TEXT)
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
    assert cosine(out[0].embedding, ref.embedding) >= 0.9999

    less = ArgusAugmenter(embed=True, kb=write_passages(tmp_path / "less.jsonl", KB[1:]), **TEXT)
    less.warm_up()
    again = less.run(_docs())["documents"]
    assert KNOWLEDGE_KEY not in again[0].meta and KNOWLEDGE_KEY in again[1].meta
    (plain,) = embedder.run([replace(again[0], embedding=None)])["documents"]
    assert cosine(again[0].embedding, plain.embedding) >= 0.9999
