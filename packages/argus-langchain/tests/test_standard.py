"""LangChain's own standard retriever tests (``langchain-tests``) against ``ArgusRetriever``.

The retriever searches a real store: langchain-postgres's ``PGVector`` on the session's
PostgreSQL server (a sync store: ``ainvoke`` runs the sync path in a worker thread), holding the
scenario corpus augmented once, originals and views. The standard suite builds the retriever with
default settings but the store, so its ``k`` checks (constructor and ``invoke``) count sources.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from argus_ir.testing import SCENARIO
from argus_ir.testing.postgres import postgres_server
from langchain_argus import ArgusRetriever

pytestmark = pytest.mark.anyio  # the suite's async test runs on anyio's asyncio backend


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def pgvector(tmp_path_factory, embeddings: Embeddings, augmented: list[Document]) -> Any:
    from langchain_postgres import PGVector

    folder = str(tmp_path_factory.mktemp("standard"))
    name = "s_" + hashlib.sha1(folder.encode(), usedforsecurity=False).hexdigest()[:20]
    store = PGVector(
        embeddings=embeddings,
        collection_name="argus-standard",
        connection=postgres_server().database(name).sqlalchemy_url("psycopg"),
        use_jsonb=True,
    )
    store.add_documents(augmented)
    yield store
    store._engine.dispose()


class TestArgusRetrieverStandard(RetrieversIntegrationTests):
    store: Any = None

    @pytest.fixture(autouse=True)
    def _store(self, pgvector: Any) -> None:
        type(self).store = pgvector  # the standard fixtures read the properties below

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return ArgusRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vectorstore": self.store}

    @property
    def retriever_query_example(self) -> str:
        return SCENARIO.query
