"""In-place enrichment (issue 58) in LlamaIndex: with ``embed=True`` and a KB of the user's that
names an entity, the node keeps its text, carries its knowledge in metadata hidden from the LLM and
from LlamaIndex's embedding string, and holds the vector LlamaIndex's own HuggingFace embedding
gives its embedding string followed by the knowledge; updated with a KB that no longer knows the
entity, the knowledge is gone."""

from __future__ import annotations

import pytest
from llama_index.core.schema import MetadataMode, TextNode

from argus_ir.lineage import KNOWLEDGE_KEY
from argus_ir.testing import KNOWN_KB, KNOWN_TEXTS, cosine, minilm_path, write_passages
from argus_llamaindex import ArgusTransform

hf = pytest.importorskip("llama_index.embeddings.huggingface")

TEXTS = KNOWN_TEXTS
KB = KNOWN_KB


def _nodes() -> list[TextNode]:
    return [TextNode(id_=k, text=t, metadata={"place": "forum"}) for k, t in TEXTS.items()]


def test_the_node_keeps_its_text_and_embeds_its_string_and_knowledge(tmp_path):
    model = hf.HuggingFaceEmbedding(model_name=str(minilm_path()), device="cpu")
    out = ArgusTransform(embed=True, kb=write_passages(tmp_path / "kb.jsonl", KB))(_nodes())
    assert [(n.node_id, n.text) for n in out] == [(k, t) for k, t in TEXTS.items()]  # no view
    first = out[0]
    knowledge = first.metadata[KNOWLEDGE_KEY]
    assert knowledge == "Bled Castle is a medieval castle in Slovenia."
    # hidden from the LLM and from LlamaIndex's own string: argus writes it after that string
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert "Bled Castle is a medieval" not in first.get_content(metadata_mode=mode)
    string = first.get_content(metadata_mode=MetadataMode.EMBED)
    assert string.startswith("place: forum")
    ref = model.get_text_embedding(f"{string}\n{knowledge}")
    assert cosine(first.embedding, ref) >= 0.9999
    assert KNOWLEDGE_KEY not in out[2].metadata

    again = ArgusTransform(embed=True, kb=write_passages(tmp_path / "less.jsonl", KB[1:]))(out)
    assert KNOWLEDGE_KEY not in again[0].metadata and KNOWLEDGE_KEY in again[1].metadata
    plain = model.get_text_embedding(again[0].get_content(metadata_mode=MetadataMode.EMBED))
    assert cosine(again[0].embedding, plain) >= 0.9999


def test_without_embed_the_knowledge_is_a_view_beside_the_original(tmp_path):
    out = ArgusTransform(kb=write_passages(tmp_path / "kb.jsonl", KB))(_nodes())
    assert not any(KNOWLEDGE_KEY in n.metadata for n in out)
    assert {
        n.metadata["argus_source_id"] for n in out if n.metadata["argus_view"] != "original"
    } == {"d2"}  # the flagged entity only (Bled Castle is not flagged)
