"""Shared fixtures of the langchain-argus tests: the offline MiniLM embedding, loaded once."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings

from argus_ir.testing import minilm_path


class MiniLM(Embeddings):
    """The offline all-MiniLM-L6-v2 through sentence-transformers (what HuggingFaceEmbeddings does)."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(minilm_path()), device="cpu")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(texts, normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="session")
def embeddings() -> MiniLM:
    return MiniLM()
