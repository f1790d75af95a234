"""Faults at query time against PostgreSQL + pgvector: the server stopped between the search and
the postprocessor's read of the originals (issue 54, item 5).

A server of the test's own (``private_postgres_server``), so it can be stopped; the session's one
augment of the shared scenario (``conftest.corpus``) is its content.
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import QueryBundle
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import SCENARIO
from argus_ir.testing.postgres import PostgresServer, private_postgres_server
from argus_llamaindex import ArgusPostprocessor

TABLE = "argus_faults"
EMBED_DIM = 384  # all-MiniLM-L6-v2


def _pgvector(server: PostgresServer) -> PGVectorStore:
    sync_url, async_url = server.sqlalchemy_url("psycopg2"), server.sqlalchemy_url("asyncpg")
    return PGVectorStore(
        connection_string=sync_url,
        async_connection_string=async_url,
        table_name=TABLE,
        embed_dim=EMBED_DIM,
        engine=create_engine(sync_url),
        async_engine=create_async_engine(async_url, poolclass=NullPool),
    )


def test_item_5_server_stopped_between_search_and_fetch_raises_naming_the_store(
    corpus, embed_model
):
    """Issue 54, item 5: the hits are views only, so the originals are read from the store; with
    the server stopped that read fails, and the postprocessor raises, naming the store and its
    table (it returned no node, with a warning that the originals may have been deleted). A read
    that succeeds and finds nothing still drops the source (``test_stores.py``); started again,
    the same hits fold to their originals."""
    query = SCENARIO.query
    bundle = QueryBundle(query, embedding=embed_model.get_text_embedding(query))
    with private_postgres_server() as pg:
        store = _pgvector(pg.server.database("faults"))
        context = StorageContext.from_defaults(vector_store=store)
        index = VectorStoreIndex(
            list(corpus.nodes), storage_context=context, embed_model=embed_model
        )
        hits = index.as_retriever(similarity_top_k=2).retrieve(bundle)
        assert all(h.node.metadata[VIEW_KEY] != "original" for h in hits)  # views only
        sources = list(dict.fromkeys(h.node.metadata[SOURCE_KEY] for h in hits))
        post = ArgusPostprocessor(top_k=2, index=index)

        pg.stop()
        with pytest.raises(RuntimeError, match=f"PGVectorStore.*{TABLE}") as raised:
            post.postprocess_nodes(hits)
        assert "retry" in str(raised.value)
        with pytest.raises(RuntimeError, match=f"PGVectorStore.*{TABLE}"):
            asyncio.run(post.apostprocess_nodes(hits))

        pg.start()
        store._engine.dispose()  # the pool's connections died with the server
        found = post.postprocess_nodes(hits)
        assert [n.node.node_id for n in found] == sources
        assert [n.node.get_content() for n in found] == [corpus.texts[s] for s in sources]
        store._engine.dispose()
