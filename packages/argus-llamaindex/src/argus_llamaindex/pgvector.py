"""A ``PGVectorStore`` that keeps one row per node id: :class:`UpsertingPGVectorStore`.

llama-index-vector-stores-postgres's ``add`` appends a row for every node, whatever the table
holds; an ``IngestionPipeline`` writes the store before its docstore, so a run killed between the
two, or two pipelines at once, add every node again and the table holds it twice. This store's
``add`` replaces the rows of the ids it writes, and the rows of the documents it writes that came
from another version of them, in one transaction taken under a lock of the table's own, so a rerun
or a second writer leaves each node once, and each document in one version.

Needs ``pip install llama-index-vector-stores-postgres`` (tested with 0.9.0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    from llama_index.vector_stores.postgres import PGVectorStore
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "argus_llamaindex.pgvector needs llama-index-vector-stores-postgres: "
        "pip install llama-index-vector-stores-postgres"
    ) from exc
from llama_index.core.schema import BaseNode, NodeRelationship
from sqlalchemy import cast, delete, func, select, text, tuple_
from sqlalchemy.dialects.postgresql import JSONB

__all__ = ["UpsertingPGVectorStore"]

# one writer at a time per table: a transaction-scoped advisory lock keyed by the table's name
_LOCK = text("SELECT pg_advisory_xact_lock(hashtext(:key))")
_SETUP = "argus:pgvector-setup"


class UpsertingPGVectorStore(PGVectorStore):
    """``PGVectorStore`` whose ``add`` upserts by node id: a node added again replaces its row.

    Everything else (constructor, ``from_params``, queries, ``delete``) is ``PGVectorStore``'s.
    The rows of the ids being added are deleted and the nodes inserted in one transaction, under
    an advisory lock of the table's own (``pg_advisory_xact_lock``), so two writers at once
    neither interleave nor both insert: each id ends in one row, the last writer's. Plain
    ``PGVectorStore`` writers on the same table do not take the lock.

    A document's other versions go in the same transaction: the rows of a ``ref_doc_id`` being
    written whose ``SOURCE`` relationship carries another hash of that document than the nodes
    added (the chunks of an older text, and their views) are deleted. An ``IngestionPipeline``
    deletes a changed document itself, when its docstore knows the old version; this covers the
    writes its docstore does not know of (a docstore lost to a crash, a second pipeline with a
    docstore of its own), so the document ends in one version, the last writer's. Rows without a
    source hash, and the rows of documents not being written, are left alone.

    Example:
        >>> store = UpsertingPGVectorStore.from_params(  # doctest: +SKIP
        ...     database="docs", host="localhost", port=5432, user="argus", password="...",
        ...     table_name="docs", embed_dim=384)
        >>> pipeline = IngestionPipeline(  # doctest: +SKIP
        ...     transformations=[ArgusTransform(embed=True)],
        ...     docstore=SimpleDocumentStore(), vector_store=store)
    """

    @classmethod
    def class_name(cls) -> str:
        return "UpsertingPGVectorStore"

    def _lock_key(self) -> str:
        return f"argus:{self.schema_name}.{self._table_class.__tablename__}"

    def _sessions(self) -> Any:
        maker: Any = self._session  # a sessionmaker, typed upstream as the session it makes
        return maker()

    def _async_sessions(self) -> Any:
        maker: Any = self._async_session
        return maker()

    def _initialize(self) -> None:
        """``PGVectorStore``'s setup (schema, extension, table), one process at a time: its
        check-then-create steps race when two first-time writers start together."""
        if self._is_initialized:
            return
        self._connect()
        engine: Any = self._engine  # made by _connect
        with engine.connect() as conn:  # a session-level lock, released on every path
            conn.execute(text("SELECT pg_advisory_lock(hashtext(:key))"), {"key": _SETUP})
            try:
                super()._initialize()
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(hashtext(:key))"), {"key": _SETUP})

    def _replace(self, nodes: Sequence[BaseNode]) -> tuple[list[Any], list[Any]]:
        """The statements deleting the rows ``nodes`` replace, and their new rows (one per id:
        the last node given, as a second ``add`` of it would leave it)."""
        last = list({n.node_id: n for n in nodes}.values())
        table = self._table_class
        remove = [delete(table).where(table.node_id.in_([n.node_id for n in last]))]
        versions = {
            (n.source_node.node_id, n.source_node.hash)
            for n in last
            if n.source_node is not None and n.source_node.hash
        }
        if versions:  # the rows of these documents written from another version of them
            ref = table.metadata_["ref_doc_id"].astext
            content = cast(table.metadata_["_node_content"].astext, JSONB)
            written = content[("relationships", NodeRelationship.SOURCE.value, "hash")].astext
            remove.append(
                delete(table).where(
                    ref.in_(sorted({doc for doc, _ in versions})),
                    written.is_not(None),
                    tuple_(ref, written).not_in(sorted(versions)),
                )
            )
        return remove, [self._node_to_table_row(n) for n in last]

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Write ``nodes``, replacing every row their ids already have and the rows of their
        documents' other versions.

        Returns:
            The nodes' ids, in order.
        """
        self._initialize()
        remove, rows = self._replace(nodes)
        if not rows:
            return []
        with self._sessions() as session, session.begin():
            session.execute(_LOCK, {"key": self._lock_key()})
            for statement in remove:
                session.execute(statement)
            session.add_all(rows)
        return [n.node_id for n in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """:meth:`add` through the async engine."""
        self._initialize()
        remove, rows = self._replace(nodes)
        if not rows:
            return []
        async with self._async_sessions() as session, session.begin():
            await session.execute(_LOCK, {"key": self._lock_key()})
            for statement in remove:
                await session.execute(statement)
            session.add_all(rows)
        return [n.node_id for n in nodes]

    def remove_duplicates(self) -> int:
        """Keep the last-written row of every node id and delete the others: the repair of a
        table that plain ``PGVectorStore`` writes left with an id in several rows.

        Returns:
            How many rows were deleted.
        """
        self._initialize()
        table = self._table_class
        newest = select(func.max(table.id)).group_by(table.node_id)
        with self._sessions() as session, session.begin():
            session.execute(_LOCK, {"key": self._lock_key()})
            result = session.execute(delete(table).where(table.id.not_in(newest)))
        return int(getattr(result, "rowcount", 0) or 0)
