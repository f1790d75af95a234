"""Shared fixtures of the store tests: the scenario corpus augmented and embedded once per session
(one augmenter, one embedding model), and the queries' embeddings with the text embedder that
made them."""

from __future__ import annotations

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # offline tests: before haystack loads

from dataclasses import dataclass
from typing import Any

import pytest
from haystack import Document

from argus_ir.testing import SCENARIO, minilm_path
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
)

MODEL = str(minilm_path())
# questions the views answer (the KB text their documents lack) and plainer ones
QUERIES = (
    SCENARIO.query,
    "the physicist who discovered polonium and radium",
    "the Danish physicist who developed the model of the atom",
    "the Roman general and dictator",
    "the last active ruler of the Ptolemaic Kingdom",
    "the composer of the Brandenburg Concertos",
    "the capital of Nepal",
    "the Brazilian footballer called the King of football",
    "the island off the coast of Tanzania known for spices",
    "notebooks that are still radioactive",
    "a film crew working in the heat of an Indian city",
    "the German city where Bach was cantor",
)


@dataclass
class Augmented:
    """The scenario corpus through argus and the embedder, with what made it."""

    documents: list[Document]  # originals with their lineage, each followed by its views
    queries: dict[str, list[float]]
    augmenter: ArgusAugmenter
    embedder: SentenceTransformersDocumentEmbedder
    text_embedder: SentenceTransformersTextEmbedder

    def embed(self, documents: list[Document]) -> list[Document]:
        """Augment and embed more documents (an update)."""
        out = self.augmenter.run(documents=documents)["documents"]
        return self.embedder.run(documents=out)["documents"]

    def embed_query(self, text: str) -> list[float]:
        """A query's embedding (the session's text embedder, already warm)."""
        return self.text_embedder.run(text=text)["embedding"]


@pytest.fixture(scope="session")
def augmented() -> Augmented:
    augmenter = ArgusAugmenter(progress_bar=False, **SCENARIO.settings)
    embedder = SentenceTransformersDocumentEmbedder(
        model=MODEL, local_files_only=True, progress_bar=False
    )
    embedder.warm_up()
    corpus = [Document(id=doc_id, content=text) for doc_id, text in SCENARIO.documents]
    out: dict[str, Any] = augmenter.run(documents=corpus)
    assert out["stats"]["views"] > 0
    documents = embedder.run(documents=out["documents"])["documents"]
    text_embedder = SentenceTransformersTextEmbedder(
        model=MODEL, local_files_only=True, progress_bar=False
    )
    text_embedder.warm_up()
    queries = {q: text_embedder.run(text=q)["embedding"] for q in QUERIES}
    return Augmented(documents, queries, augmenter, embedder, text_embedder)
