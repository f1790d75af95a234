"""The query-time step: :class:`ArgusCollapser`."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore
from haystack.errors import FilterError

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, SourceHits, fold_hits, rank_sources
from haystack_integrations.components.rankers.argus._scores import SCORES, relevance_of

__all__ = ["ArgusCollapser"]

logger = logging.getLogger(__name__)


@component
class ArgusCollapser:
    """Fold retrieved argus views into their source documents; one result per source.

    Put it after the retriever (ask the retriever for more documents than you need: views crowd
    the top ranks). Each source scores as its best hit (or the sum, ``how="sum"``), every view's
    score less ``view_discount``, and comes out as the *original* document with that score: taken
    from the hits when the original was retrieved itself, else read from ``document_store`` by id;
    without a store, or when the store cannot return it, the best view stands in.

    Scores are read as relevance, higher is better: ``scores="auto"`` turns a Chroma store's
    distances into relevance (cosine similarity for unit-length embeddings) and keeps any other
    store's scores; the results carry the folded relevance.

    Usage:
        >>> from haystack_integrations.components.rankers.argus import ArgusCollapser
        >>> collapser = ArgusCollapser(top_k=5, document_store=store)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        top_k: int | None = None,
        how: str = "max",
        view_discount: float = DEFAULT_VIEW_DISCOUNT,
        document_store: DocumentStore | None = None,
        scores: str = "auto",
    ) -> None:
        """Create the component.

        :param top_k: Source documents to return (``None``: all).
        :param how: ``"max"`` or ``"sum"`` of a source's hit scores.
        :param view_discount: Subtracted from every view's score before folding, so a view lifts
            its source only when it beats the original by more than this (default:
            ``argus_ir.collapse.DEFAULT_VIEW_DISCOUNT``; unused when hits carry no scores).
        :param document_store: Where to read originals that were not retrieved themselves (and,
            under ``scores="auto"``, what the retriever's scores mean).
        :param scores: What ``Document.score`` is: ``"similarity"`` (higher is better, kept),
            ``"distance"`` (lower is better: a Chroma store's by its space, any other
            ``1 - score``) or ``"auto"`` (a Chroma ``document_store`` gives distances by its
            space, ``cosine``: ``1 - d``, ``l2``: ``1 - d/2``, ``ip``: ``1 - d``; any other store,
            or none, gives similarities).
        :raises ValueError: An unknown ``how`` or ``scores``, ``top_k`` below 1, a negative or
            non-finite ``view_discount`` (:class:`argus_ir.errors.ArgusInputError`), or
            ``scores="auto"`` with a Chroma store of an unknown space (say what its scores are).
        """
        if how not in ("max", "sum"):
            raise ValueError(f"how must be 'max' or 'sum', got {how!r}")
        if scores not in SCORES:
            raise ValueError(f"scores must be one of {SCORES}, got {scores!r}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        rank_sources((), view_discount=view_discount)  # the core's check, run on no hits
        self.top_k = top_k
        self.how = how
        self.view_discount = view_discount
        self.document_store = document_store
        self.scores = scores
        relevance_of(scores, document_store)  # an unreadable store fails here, not at query time

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (the store with its own ``to_dict``)."""
        return default_to_dict(
            self,
            top_k=self.top_k,
            how=self.how,
            view_discount=self.view_discount,
            document_store=self.document_store,
            scores=self.scores,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArgusCollapser:
        """Deserialise the component (a YAML without ``scores`` reads it as ``"auto"``)."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """Fold views into sources.

        :param documents: Retrieved documents, in the retriever's order (with scores when it gives
            them; without scores the retriever's order ranks the sources).
        :param top_k: Override the component's ``top_k``.
        :returns: ``documents``: one original per source, best first, with its folded relevance.
        :raises ValueError: ``scores="auto"`` and a Chroma store of an unknown space.
        """
        folded = self._fold(documents, top_k)
        missing = [f.source_id for f in folded if f.original is None]
        fetched = self._fetch(missing)
        return {"documents": [_result(f, fetched) for f in folded]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, documents: list[Document], top_k: int | None = None
    ) -> dict[str, Any]:
        """Async :meth:`run`.

        :param documents: Retrieved documents, in the retriever's order.
        :param top_k: Override the component's ``top_k``.
        :returns: As :meth:`run`.
        """
        folded = self._fold(documents, top_k)
        missing = [f.source_id for f in folded if f.original is None]
        fetched = await self._fetch_async(missing)
        return {"documents": [_result(f, fetched) for f in folded]}

    def _fold(self, documents: list[Document], top_k: int | None) -> list[SourceHits[Document]]:
        relevance = relevance_of(self.scores, self.document_store)
        return fold_hits(
            documents,
            id_of=lambda d: d.id,
            metadata_of=lambda d: d.meta,
            score_of=lambda d: None if d.score is None else relevance(d.score),
            how=self.how,
            top_k=self.top_k if top_k is None else top_k,
            view_discount=self.view_discount,
        )

    def _fetch(self, ids: list[str]) -> dict[str, Document]:
        """Read originals by id: ``get_documents_by_id``, else an ``in`` filter, else one ``==``
        filter per id (Chroma takes only ``==`` on ids). An id no way returns is logged; its best
        view stands in."""
        store = self.document_store
        if not ids or store is None:
            return {}
        by_id = getattr(store, "get_documents_by_id", None)
        if callable(by_id):
            try:
                return _found(by_id(ids), ids)
            except Exception as exc:  # the filters below may still work
                logger.debug("get_documents_by_id failed (%s: %s)", type(exc).__name__, exc)
        try:
            return _found(store.filter_documents(filters=_by_ids(ids)), ids)
        except (FilterError, ValueError) as exc:
            logger.debug(
                "%s refused an 'in' filter on id (%s: %s); reading ids one by one",
                type(store).__name__,
                type(exc).__name__,
                exc,
            )
        fetched: dict[str, Document] = {}
        for doc_id in ids:
            try:
                one = {"field": "id", "operator": "==", "value": doc_id}
                fetched.update(_found(store.filter_documents(filters=one), [doc_id]))
            except Exception as exc:  # one id must not sink the query
                logger.warning(
                    "could not read original %r from %s (%s: %s); its best view stands in",
                    doc_id,
                    type(store).__name__,
                    type(exc).__name__,
                    exc,
                )
        return fetched

    async def _fetch_async(self, ids: list[str]) -> dict[str, Document]:
        """:meth:`_fetch` through the store's async reader; on any failure, the sync path."""
        store = self.document_store
        if not ids or store is None:
            return {}
        reader = getattr(store, "filter_documents_async", None)
        if reader is not None:
            try:
                return _found(await reader(filters=_by_ids(ids)), ids)
            except Exception as exc:  # e.g. Chroma's async needs an HTTP client
                logger.debug(
                    "%s.filter_documents_async failed (%s: %s); reading synchronously",
                    type(store).__name__,
                    type(exc).__name__,
                    exc,
                )
        return await asyncio.to_thread(self._fetch, ids)


def _by_ids(ids: list[str]) -> dict[str, Any]:
    return {"field": "id", "operator": "in", "value": ids}


def _found(docs: list[Document], ids: list[str]) -> dict[str, Document]:
    wanted = set(ids)
    return {d.id: d for d in docs if d.id in wanted}


def _result(folded: SourceHits[Document], fetched: dict[str, Document]) -> Document:
    doc = folded.original or fetched.get(folded.source_id) or folded.best
    return doc if folded.score is None else replace(doc, score=folded.score)
