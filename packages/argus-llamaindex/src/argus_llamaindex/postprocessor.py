"""The query-time step: :class:`ArgusPostprocessor`."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import Field, field_validator

from argus_ir.collapse import (
    DEFAULT_VIEW_DISCOUNT,
    Resolved,
    Steps,
    aread_originals,
    rank_sources,
    read_originals,
    resolve_sources,
    warn_refused,
)
from argus_ir.errors import StoreReadError
from argus_llamaindex._scores import SCORES, relevance_of

__all__ = ["ArgusPostprocessor"]

logger = logging.getLogger(__name__)


class ArgusPostprocessor(BaseNodePostprocessor):
    """Fold retrieved argus views into their source nodes; one result per source.

    Retrieve more nodes than you need (``similarity_top_k``: views crowd the top ranks); each
    source scores as its best hit (or the sum, ``how="sum"``), every view's score less
    ``view_discount``, and comes out as the *original* node: from the hits when the original was
    retrieved itself, else read by id from ``vector_store`` (a store that holds the text, such as
    Chroma or Qdrant, where the index keeps no docstore), then from ``docstore``; ``index=``
    gives both. A source whose original every store read found missing (deleted) is dropped,
    never served by one of its views; the next source takes its place, and the drop is logged at
    WARNING. A read that fails (the store down, a refused query) is not taken for a missing
    original: when no other store has the original, the call raises.

    Scores: the view discount is a margin of cosine similarity, so every score is read as a
    cosine-equivalent relevance first (``scores``). Results carry their folded score on that scale.

    Raises:
        StoreReadError: From ``postprocess_nodes`` (a ``RuntimeError``): an original outside the hits could not be read
            (the message names the store and its table or collection; the store's exception is
            its cause).

    Example:
        >>> retriever = index.as_retriever(similarity_top_k=20)  # doctest: +SKIP
        >>> nodes = ArgusPostprocessor(top_k=4, index=index).postprocess_nodes(
        ...     retriever.retrieve("who starred in Casablanca?"))  # doctest: +SKIP
    """

    top_k: int | None = Field(default=None, description="Source nodes to return (None: all).")
    how: str = Field(default="max", description="max or sum of a source's hit scores.")
    view_discount: float = Field(
        default=DEFAULT_VIEW_DISCOUNT,
        description="Subtracted from every view's relevance before folding: a view lifts its "
        "source only when it beats the original by more than this (a cosine margin).",
    )
    scores: str = Field(
        default="auto",
        description="What node scores mean: 'similarity' (cosine-like, kept), 'chroma' "
        "(llama-index's Chroma store's exp(-distance), turned back into a cosine by the "
        "collection's space) or 'auto' ('chroma' when the vector store is a ChromaVectorStore, "
        "else 'similarity').",
    )
    docstore: Any = Field(default=None, exclude=True, description="Where originals are read.")
    vector_store: Any = Field(
        default=None,
        exclude=True,
        description="The vector store the nodes come from: originals are read from it when it "
        "holds text (get_nodes), and 'auto' scores follow it.",
    )
    index: Any = Field(
        default=None,
        exclude=True,
        description="An index whose vector_store and docstore stand in for unset ones.",
    )

    @field_validator("view_discount")
    @classmethod
    def _check_discount(cls, value: float) -> float:
        rank_sources((), view_discount=value)  # the core's check, run on no hits
        return value

    @field_validator("top_k")
    @classmethod
    def _check_top_k(cls, value: int | None) -> int | None:
        rank_sources((), top_k=value)
        return value

    @field_validator("scores")
    @classmethod
    def _check_scores(cls, value: str) -> str:
        if value not in SCORES:
            raise ValueError(f"scores must be one of {SCORES}, got {value!r}")
        return value

    @classmethod
    def class_name(cls) -> str:
        return "ArgusPostprocessor"

    def _stores(self) -> tuple[Any, Any]:
        """The vector store and the docstore: the ones given, else the index's."""
        vector_store, docstore = self.vector_store, self.docstore
        if self.index is not None:  # `is None`, not `or`: a store may be falsy when empty
            if vector_store is None:
                vector_store = getattr(self.index, "vector_store", None)
            if docstore is None:
                docstore = getattr(self.index, "docstore", None)
        return vector_store, docstore

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        vector_store, docstore = self._stores()

        def read(ids: list[str]) -> dict[str, BaseNode]:
            reads = _Reads()
            found = _from_vector_store(vector_store, ids, reads)
            found.update(_from_docstore(docstore, [i for i in ids if i not in found], reads))
            reads.check(found)
            return found

        resolved, fetched = read_originals(
            self._resolve(nodes, vector_store), read, lambda n: n.metadata
        )
        return _results(resolved, fetched, vector_store, docstore)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """As :meth:`_postprocess_nodes`, reading originals with the store's async ``aget_nodes``
        (a Qdrant store given only an ``AsyncQdrantClient`` has no synchronous read)."""
        vector_store, docstore = self._stores()

        async def read(ids: list[str]) -> dict[str, BaseNode]:
            reads = _Reads()
            found = await _from_vector_store_async(vector_store, ids, reads)
            found.update(_from_docstore(docstore, [i for i in ids if i not in found], reads))
            reads.check(found)
            return found

        resolved, fetched = await aread_originals(
            self._resolve(nodes, vector_store), read, lambda n: n.metadata
        )
        return _results(resolved, fetched, vector_store, docstore)

    def _resolve(self, nodes: list[NodeWithScore], vector_store: Any) -> Steps[NodeWithScore]:
        """The core's :func:`~argus_ir.collapse.resolve_sources` over the retrieved nodes."""
        relevance = relevance_of(self.scores, vector_store)
        return resolve_sources(
            nodes,
            id_of=lambda n: n.node.node_id,
            metadata_of=lambda n: n.node.metadata,
            score_of=lambda n: None if n.score is None else relevance(n.score),
            how=self.how,
            top_k=self.top_k,
            view_discount=self.view_discount,
        )


def _results(
    resolved: Resolved[NodeWithScore],
    fetched: Mapping[str, BaseNode],
    vector_store: Any,
    docstore: Any,
) -> list[NodeWithScore]:
    """Each source's original node with its folded score; refused views and drops are logged."""
    out = [
        NodeWithScore(
            node=f.original.node if f.original is not None else fetched[f.source_id],
            score=f.score,
        )
        for f in resolved.sources
    ]
    warn_refused(logger, resolved.refused)
    if resolved.dropped:
        logger.warning(
            "dropped %d source(s) retrieved only through views whose original is not in %s "
            "(deleted): %s",
            len(resolved.dropped),
            _where(vector_store, docstore),
            ", ".join(map(repr, resolved.dropped)),
        )
    return out


def _where(vector_store: Any, docstore: Any) -> str:
    named = [type(s).__name__ for s in (vector_store, docstore) if s is not None]
    return " or ".join(named) if named else "any store: give vector_store=, docstore= or index="


class _Reads:
    """The originals read for one query, and the reads that failed (by store, with the ids the
    failed read was asked for): a failed read says nothing about whether an original exists."""

    def __init__(self) -> None:
        self.failed: list[tuple[Any, list[str], BaseException]] = []

    def check(self, fetched: Mapping[str, BaseNode]) -> None:
        """Raise when an id whose read failed was found in no store: its source must not be
        dropped as though its original were deleted. Ids another store served are logged."""
        for store, ids, exc in self.failed:
            unread = [i for i in ids if i not in fetched]
            if unread:
                raise StoreReadError(
                    f"ArgusPostprocessor could not read the originals of {len(unread)} "
                    f"source(s) from {_name(store)}: {type(exc).__name__}: {exc} (ids: "
                    f"{', '.join(map(repr, unread))}). A failed read is not taken for a deleted "
                    "original: retry once the store answers."
                ) from exc
            logger.warning(
                "%s could not read %d id(s) (%s: %s); another store had them",
                _name(store),
                len(ids),
                type(exc).__name__,
                exc,
            )


def _name(store: Any) -> str:
    """The store's class, and its table or collection where it has one."""
    for attr in ("table_name", "collection_name"):
        value = getattr(store, attr, None)
        if isinstance(value, str) and value:
            return f"{type(store).__name__} ({attr.split('_')[0]} {value!r})"
    collection = getattr(getattr(store, "_collection", None), "name", None)  # Chroma
    if isinstance(collection, str):
        return f"{type(store).__name__} (collection {collection!r})"
    return type(store).__name__


def _from_vector_store(store: Any, ids: list[str], reads: _Reads) -> dict[str, BaseNode]:
    """Originals read by id from a store that holds text; a failed read is noted in ``reads``."""
    if not ids or store is None or not getattr(store, "stores_text", False):
        return {}
    try:
        return _by_id(store.get_nodes(node_ids=ids), ids)
    except NotImplementedError:  # the store cannot read by id: the docstore may
        return {}
    except Exception as exc:  # the docstore may have them; else the query raises
        reads.failed.append((store, ids, exc))
        return {}


async def _from_vector_store_async(
    store: Any, ids: list[str], reads: _Reads
) -> dict[str, BaseNode]:
    """:func:`_from_vector_store` through the store's ``aget_nodes``."""
    if not ids or store is None or not getattr(store, "stores_text", False):
        return {}
    try:
        return _by_id(await store.aget_nodes(node_ids=ids), ids)
    except NotImplementedError:
        return {}
    except Exception as exc:
        reads.failed.append((store, ids, exc))
        return {}


def _from_docstore(docstore: Any, ids: list[str], reads: _Reads) -> dict[str, BaseNode]:
    found: dict[str, BaseNode] = {}
    if docstore is None or not ids:
        return found
    try:
        for node_id in ids:
            node = docstore.get_node(node_id, raise_error=False)
            if node is not None:
                found[node_id] = node
    except Exception as exc:
        reads.failed.append((docstore, [i for i in ids if i not in found], exc))
    return found


def _by_id(nodes: list[BaseNode], ids: list[str]) -> dict[str, BaseNode]:
    # only the asked ids: a store given no ids may return everything
    wanted = set(ids)
    return {n.node_id: n for n in nodes if n.node_id in wanted}
