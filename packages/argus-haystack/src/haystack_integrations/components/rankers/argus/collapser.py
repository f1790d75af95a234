"""The query-time step: :class:`ArgusCollapser`."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore

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
from argus_ir.errors import ArgusInputError
from haystack_integrations.components.rankers.argus._graph import linked, upstream
from haystack_integrations.components.rankers.argus._scores import (
    SCORES,
    Feed,
    check_order,
    pgvector_reading,
    relevance_of,
)
from haystack_integrations.components.rankers.argus._splits import POSITION_KEYS
from haystack_integrations.components.rankers.argus._stores import aread, read, twin_store

__all__ = ["ArgusCollapser"]

logger = logging.getLogger(__name__)


@component
class ArgusCollapser:
    """Fold retrieved argus views into their source documents; one result per source.

    Put it after the retriever (ask the retriever for more documents than you need: views crowd
    the top ranks). Hits fold by lineage: a hit's source is its ``meta["argus_source_id"]`` (else
    its id), and it is a view when its ``meta["argus_view"]`` names a remedy. Each source scores as
    its best hit (or the sum, ``how="sum"``), every view's score less ``view_discount``, and comes
    out as the *original* document with that score: taken from the hits when the original was
    retrieved itself, else read from ``document_store`` by id. A source the store no longer holds
    (its views outlived it) is dropped, never served by a view; without a store the best view
    stands in.

    In a pipeline, the collapser uses the store object of another component (the retriever) when
    that store is of the same class and serialises the same: after ``Pipeline.loads`` each
    component holds its own copy, and an embedded store (Qdrant's local mode) opens its folder for
    one client only.

    Scores are read as relevance, higher is better: ``scores="auto"`` turns a Chroma store's
    distances, and a pgvector retriever's ``l2_distance``, into relevance (cosine similarity for
    unit-length embeddings) and keeps any other store's scores; the results carry the folded
    relevance. A pgvector retriever's scores are read by the retriever's own ``vector_function``
    (in a pipeline, the retriever that feeds the collapser; a ``PgvectorKeywordRetriever``'s
    ``ts_rank_cd`` as it is); one given to the retriever's ``run`` is given to the collapser's
    ``run`` too, and hits ordered against the function read are refused. Behind another
    component (a ``DocumentJoiner``, a ranker) the scores are that component's, or the
    retrievers' passed on: similarities upstream, or a reciprocal rank fusion, are taken as they
    are; ``l2_distance`` upstream is refused unless ``scores`` says what the component gives
    (the message names it).

    Boundaries: a view folds into its source only when the source's original carries the view's
    meta (lineage keys aside, and the keys Haystack's splitters write to place a piece, with
    ``page_number``: a view carries none of them), so a view that passed the retriever's filters
    never brings in a document those filters exclude; a view that fails the test is not folded
    and is logged (``docs/adapters.md``, "Boundaries").

    When argus ran over the pieces that ``AutoMergingRetriever`` or ``SentenceWindowRetriever``
    widen (leaves, splits), put the collapser before them, so that they see originals only
    (``docs/haystack.md``, "Combining with AutoMergingRetriever / SentenceWindowRetriever").

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
            under ``scores="auto"``, what the retriever's scores mean). In a pipeline, a
            component's store of the same class and settings is used in its place.
        :param scores: What ``Document.score`` is: ``"similarity"`` (higher is better, kept),
            ``"distance"`` (lower is better: a Chroma store's by its space, a pgvector store's
            ``l2_distance`` as ``1 - d²/2``, any other ``1 - score``) or ``"auto"`` (a Chroma
            ``document_store`` gives distances by its space, ``cosine``: ``1 - d``, ``l2``:
            ``1 - d/2``, ``ip``: ``1 - d``; a pgvector store gives similarities for
            ``cosine_similarity`` and ``inner_product`` and a plain Euclidean distance for
            ``l2_distance``, read as ``1 - d²/2``; any other store, or none, gives
            similarities).
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
        self._shared = False  # whether the pipeline has been searched for a twin of the store
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
    def run(
        self,
        documents: list[Document],
        top_k: int | None = None,
        vector_function: str | None = None,
    ) -> dict[str, Any]:
        """Fold views into sources.

        :param documents: Retrieved documents, in the retriever's order (with scores when it gives
            them; without scores the retriever's order ranks the sources).
        :param top_k: Override the component's ``top_k``.
        :param vector_function: The ``vector_function`` a pgvector retriever was given for this
            run (``cosine_similarity``, ``inner_product``, ``l2_distance``); without it, the
            retriever's own, else the store's.
        :returns: ``documents``: one original per source, best first, with its folded relevance.
        :raises ValueError: ``scores="auto"`` and a Chroma store of an unknown space; pgvector
            hits ordered against the function read (a per-run function the collapser was not
            given); hits from a component between an ``l2_distance`` retriever and the
            collapser, under ``"auto"`` (say with ``scores`` whether they are distances).
        """
        self._share_store()
        resolved, fetched = read_originals(
            self._resolve(documents, top_k, vector_function), self._fetch, lambda d: d.meta
        )
        return {"documents": self._results(resolved, fetched)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        documents: list[Document],
        top_k: int | None = None,
        vector_function: str | None = None,
    ) -> dict[str, Any]:
        """Async :meth:`run`.

        :param documents: Retrieved documents, in the retriever's order.
        :param top_k: Override the component's ``top_k``.
        :param vector_function: As :meth:`run`.
        :returns: As :meth:`run`.
        """
        self._share_store()
        resolved, fetched = await aread_originals(
            self._resolve(documents, top_k, vector_function), self._fetch_async, lambda d: d.meta
        )
        return {"documents": self._results(resolved, fetched)}

    def _share_store(self) -> None:
        """Use the pipeline's live store in place of this component's copy of it, once."""
        if self._shared or self.document_store is None:
            return
        pipeline = getattr(self, "__haystack_added_to_pipeline__", None)
        if pipeline is None:
            return  # not (yet) in a pipeline: look again at the next run
        self._shared = True
        twin = twin_store(pipeline, self.document_store)
        if twin is not None:
            logger.debug("ArgusCollapser shares the pipeline's %s", type(twin).__name__)
            self.document_store = twin

    def _feed(self) -> Feed | None:
        """In a pipeline, the component whose output is this collapser's ``documents``, with
        every component upstream of it (the scores' reading depends on them)."""
        feeding = linked(self, "documents", feeding=True)
        if not feeding:
            return None
        name, component = feeding[0]
        return Feed(name, component, tuple(upstream(self, "documents")))

    def _results(
        self, resolved: Resolved[Document], fetched: dict[str, Document]
    ) -> list[Document]:
        """One document per source, with its folded score; refused views and drops are logged."""
        out = []
        for f in resolved.sources:
            doc = f.original or fetched.get(f.source_id) or f.best  # a view only without a store
            out.append(doc if f.score is None else replace(doc, score=f.score))
        warn_refused(logger, resolved.refused)
        if resolved.dropped:
            logger.warning(
                "dropped %d source(s) retrieved only through views whose original %s does not "
                "return (deleted? delete its views with delete_sources): %s",
                len(resolved.dropped),
                type(self.document_store).__name__,
                resolved.dropped,
            )
        return out

    def _resolve(
        self, documents: list[Document], top_k: int | None, vector_function: str | None
    ) -> Steps[Document]:
        """The core's :func:`~argus_ir.collapse.resolve_sources` over the retrieved documents."""
        k = self.top_k if top_k is None else top_k
        if k is not None and k < 0:
            raise ArgusInputError(f"top_k must be >= 0, got {k}")
        feed = self._feed()
        pgvector = pgvector_reading(self.scores, self.document_store, feed, vector_function)
        if pgvector is not None:
            check_order(pgvector, [d.score for d in documents if d.score is not None])
        relevance = relevance_of(self.scores, self.document_store, feed, vector_function)
        return resolve_sources(
            documents,
            id_of=lambda d: d.id,
            metadata_of=lambda d: d.meta,
            score_of=lambda d: None if d.score is None else relevance(d.score),
            how=self.how,
            top_k=k,
            view_discount=self.view_discount,
            ignore_keys=POSITION_KEYS,  # where a split sits: a view has none of its original's
            keep_orphans=self.document_store is None,
        )

    def _fetch(self, ids: list[str]) -> dict[str, Document]:
        """Read originals by id, with the filters the store accepts."""
        if self.document_store is None:
            return {}
        return _first(read(self.document_store, "id", ids))

    async def _fetch_async(self, ids: list[str]) -> dict[str, Document]:
        """:meth:`_fetch` through the store's async readers; on any failure, the sync path."""
        if self.document_store is None:
            return {}
        return _first(await aread(self.document_store, "id", ids))


def _first(found: dict[str, list[Document]]) -> dict[str, Document]:
    return {doc_id: docs[0] for doc_id, docs in found.items()}
