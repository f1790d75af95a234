"""The query-time step: :class:`ArgusCollapser`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, SourceHits, fold_hits, rank_sources

__all__ = ["ArgusCollapser"]


@component
class ArgusCollapser:
    """Fold retrieved argus views into their source documents; one result per source.

    Put it after the retriever (ask the retriever for more documents than you need: views crowd
    the top ranks). Each source scores as its best hit (or the sum, ``how="sum"``), every view's
    score less ``view_discount``, and comes out as the *original* document with that score: taken
    from the hits when the original was retrieved itself, else read from ``document_store`` by id;
    without a store, the best view stands in.

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
    ) -> None:
        """Create the component.

        :param top_k: Source documents to return (``None``: all).
        :param how: ``"max"`` or ``"sum"`` of a source's hit scores.
        :param view_discount: Subtracted from every view's score before folding, so a view lifts
            its source only when it beats the original by more than this (default:
            ``argus_ir.collapse.DEFAULT_VIEW_DISCOUNT``; unused when hits carry no scores).
        :param document_store: Where to read originals that were not retrieved themselves.
        :raises ValueError: An unknown ``how``, ``top_k`` below 1, or a negative or non-finite
            ``view_discount`` (:class:`argus_ir.errors.ArgusInputError`).
        """
        if how not in ("max", "sum"):
            raise ValueError(f"how must be 'max' or 'sum', got {how!r}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        rank_sources((), view_discount=view_discount)  # the core's check, run on no hits
        self.top_k = top_k
        self.how = how
        self.view_discount = view_discount
        self.document_store = document_store

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (the store with its own ``to_dict``)."""
        return default_to_dict(
            self,
            top_k=self.top_k,
            how=self.how,
            view_discount=self.view_discount,
            document_store=self.document_store,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArgusCollapser:
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """Fold views into sources.

        :param documents: Retrieved documents, in the retriever's order (with scores when it gives
            them; without scores the retriever's order ranks the sources).
        :param top_k: Override the component's ``top_k``.
        :returns: ``documents``: one original per source, best first, with its folded score.
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
        fetched: dict[str, Document] = {}
        if missing and self.document_store is not None:
            reader = getattr(self.document_store, "filter_documents_async", None)
            if reader is None:
                fetched = self._fetch(missing)
            else:
                docs = await reader(filters=_by_ids(missing))
                fetched = {d.id: d for d in docs}
        return {"documents": [_result(f, fetched) for f in folded]}

    def _fold(self, documents: list[Document], top_k: int | None) -> list[SourceHits[Document]]:
        return fold_hits(
            documents,
            id_of=lambda d: d.id,
            metadata_of=lambda d: d.meta,
            score_of=lambda d: d.score,
            how=self.how,
            top_k=self.top_k if top_k is None else top_k,
            view_discount=self.view_discount,
        )

    def _fetch(self, ids: list[str]) -> dict[str, Document]:
        if not ids or self.document_store is None:
            return {}
        return {d.id: d for d in self.document_store.filter_documents(filters=_by_ids(ids))}


def _by_ids(ids: list[str]) -> dict[str, Any]:
    return {"field": "id", "operator": "in", "value": ids}


def _result(folded: SourceHits[Document], fetched: dict[str, Document]) -> Document:
    doc = folded.original or fetched.get(folded.source_id) or folded.best
    return doc if folded.score is None else replace(doc, score=folded.score)
