"""Shared fixtures of the argus-llamaindex tests: the offline MiniLM embedding, loaded once."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.embeddings import BaseEmbedding
from pydantic import PrivateAttr

from argus_ir.testing import minilm_path


class MiniLM(BaseEmbedding):
    """The offline all-MiniLM-L6-v2 through sentence-transformers."""

    _model: Any = PrivateAttr()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2", **kwargs)
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(minilm_path()), device="cpu")

    def _embed(self, texts: list[str]) -> list[list[float]]:
        return self._model.encode(texts, normalize_embeddings=True).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)


@pytest.fixture(scope="session")
def embed_model() -> MiniLM:
    return MiniLM()
