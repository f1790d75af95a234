"""Shared fixtures of the langchain-argus tests: the offline MiniLM embedding, loaded once, and
the shared scenario corpus augmented once for the store tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import FORGED, SCENARIO, SCENARIO_QUERIES, minilm_path
from langchain_argus import ArgusDocumentTransformer

_QUERIES = tuple(SCENARIO_QUERIES)

# UUID ids: Qdrant takes only UUIDs or unsigned integers as point ids
_UUIDS = {
    name: str(uuid.uuid5(uuid.NAMESPACE_URL, f"argus-scenario/{name}"))
    for name, _ in SCENARIO.documents
}


class MiniLM(Embeddings):
    """The offline all-MiniLM-L6-v2 through sentence-transformers (what HuggingFaceEmbeddings does)."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(minilm_path()), device="cpu")
        self._cache: dict[str, list[float]] = {}  # the store tests embed the same texts often

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        new = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if new:
            vectors = self.model.encode(new, normalize_embeddings=True).tolist()
            self._cache.update(zip(new, vectors))
        return [list(self._cache[t]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="session")
def embeddings() -> MiniLM:
    return MiniLM()


def scenario_documents() -> list[Document]:
    """The scenario corpus as LangChain documents with UUID ids and a little metadata."""
    return [
        Document(page_content=text, id=_UUIDS[name], metadata={"lang": "en", "name": name})
        for name, text in SCENARIO.documents
    ]


@pytest.fixture(scope="session")
def queries() -> tuple[str, ...]:
    """Twelve queries over the scenario corpus (the store tests check each against cosine)."""
    return _QUERIES


@pytest.fixture(scope="session")
def scenario_ids() -> dict[str, str]:
    """The scenario's document names and the UUIDs the store tests give them as ids."""
    return dict(_UUIDS)


@pytest.fixture(scope="session")
def transformer() -> ArgusDocumentTransformer:
    return ArgusDocumentTransformer(**SCENARIO.settings)


@pytest.fixture(scope="session")
def augmented(transformer: ArgusDocumentTransformer) -> list[Document]:
    """The scenario corpus through the transformer: originals, then their views (one run)."""
    return list(transformer.transform_documents(scenario_documents()))


@pytest.fixture(scope="session")
def tenant_b() -> Callable[[str], tuple[list[Document], list[Document]]]:
    """Issue 47's forged-lineage cases for a victim document of tenant a: what tenant b sends
    through the ingest step (a forged view, a user's own ``argus_view``) and what it writes
    straight into the store (a forged view)."""

    def cases(victim: str) -> tuple[list[Document], list[Document]]:
        forged = {"tenant": "b", SOURCE_KEY: victim, VIEW_KEY: "expansion"}
        ingest = [
            Document(id=str(uuid.uuid4()), page_content=FORGED.payroll, metadata=forged),
            Document(
                id=str(uuid.uuid4()),
                page_content=FORGED.summary,
                metadata={"tenant": "b", VIEW_KEY: "summary"},
            ),
        ]
        direct = [Document(id=str(uuid.uuid4()), page_content=FORGED.lisbon, metadata=dict(forged))]
        return ingest, direct

    return cases


@pytest.fixture(scope="session")
def async_twin() -> Callable[[Any], Any]:
    """The async twin of a store: most stores serve both; a langchain-postgres ``PGVector`` built
    on a sync engine serves only sync calls, so an async ``PGVector`` over the same database and
    collection (no pooled connection, so none outlives the event loop of an ``asyncio.run``)."""

    def twin(store: Any) -> Any:
        if getattr(store, "async_mode", None) is not False:
            return store
        from langchain_postgres import PGVector
        from sqlalchemy.ext.asyncio import create_async_engine
        from sqlalchemy.pool import NullPool

        url = store._engine.url.render_as_string(hide_password=False)
        return PGVector(
            embeddings=store.embeddings,
            collection_name=store.collection_name,
            connection=create_async_engine(url, poolclass=NullPool),
            use_jsonb=True,
        )

    return twin
