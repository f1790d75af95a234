"""Shared fixtures of the argus-llamaindex tests: the offline MiniLM embedding, loaded once, and
the store tests' corpus: the shared scenario, augmented and embedded once per session."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.schema import BaseNode, Document
from pydantic import PrivateAttr

from argus_ir.testing import SCENARIO, minilm_path
from argus_llamaindex import ArgusTransform


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


# the twelve queries of the store tests: every topic of the corpus; a view answers some better than
# its original, and the scale of the discount decides the third and fourth (a view beats a rival
# by between 0.02 and about 0.04 of cosine)
QUERIES = (
    SCENARIO.query,
    "the Danish physicist who developed the model of the atom",
    "a German baroque composer of church cantatas",
    "Niels Bohr and Einstein",
    "the last active ruler of the Ptolemaic Kingdom",
    "a city in a Himalayan valley with cool spring air",
    "the physicist who discovered polonium and radium",
    "the Roman general and dictator",
    "the Brazilian footballer who scored a thousand goals",
    "an island off the coast of Tanzania",
    "the capital of Uttar Pradesh",
    "critics at a film festival premiere",
)


@pytest.fixture(scope="session")
def queries() -> tuple[str, ...]:
    """The store tests' twelve queries (each checked against the cosine reference)."""
    return QUERIES


# Qdrant takes only UUIDs (or unsigned integers) as point ids: the scenario's documents get UUIDs
_NAMESPACE = uuid.UUID("0b9f4d8e-3c1a-4f6b-8e2d-7a5c9b1e4f30")


def doc_uuid(name: str) -> str:
    """The store tests' id of the scenario document ``name`` (``"film-1"``)."""
    return str(uuid.uuid5(_NAMESPACE, name))


@dataclass(frozen=True)
class Corpus:
    """The scenario under UUID ids, through ``ArgusTransform`` and the embedding.

    Attributes:
        nodes: Originals and views, embedded.
        texts: Each original's text by its id.
        names: Each original's scenario name (``"film-1"``) by its id.
        transform: The transform that made them (its models loaded).
    """

    nodes: tuple[BaseNode, ...]
    texts: dict[str, str]
    names: dict[str, str]
    transform: ArgusTransform

    def id(self, name: str) -> str:
        return doc_uuid(name)


@pytest.fixture(scope="session")
def corpus(embed_model) -> Corpus:
    """One augment of the shared scenario for every store test."""
    documents = [Document(id_=doc_uuid(name), text=text) for name, text in SCENARIO.documents]
    transform = ArgusTransform(**SCENARIO.settings)
    nodes = embed_model(transform(documents))
    return Corpus(
        nodes=tuple(nodes),
        texts={d.id_: d.text for d in documents},
        names={doc_uuid(name): name for name, _ in SCENARIO.documents},
        transform=transform,
    )
