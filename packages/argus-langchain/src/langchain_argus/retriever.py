"""The query-time step: :class:`ArgusRetriever` and :func:`collapse_documents`."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import Field, field_validator, model_validator

from argus_ir.collapse import (
    DEFAULT_VIEW_DISCOUNT,
    Resolved,
    SourceHits,
    Steps,
    aread_originals,
    fold_hits,
    is_view_entry,
    rank_sources,
    read_originals,
    resolve_sources,
    source_id_of,
    warn_refused,
)
from argus_ir.errors import ArgusInputError, StoreReadError
from argus_ir.lineage import SOURCE_KEY
from langchain_argus._reads import _shown_ids, aread_by_ids, read_by_ids
from langchain_argus._scores import hint, relevance_per_cosine

__all__ = ["ArgusRetriever", "StoreReadError", "collapse_documents"]

logger = logging.getLogger(__name__)


def collapse_documents(
    hits: Sequence[tuple[Document, float]] | Sequence[Document],
    *,
    top_k: int | None = None,
    how: str = "max",
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> list[SourceHits[Document]]:
    """Fold hits on originals and views into one entry per source document.

    Args:
        hits: ``(document, score)`` pairs (higher is better: similarities or relevance scores,
            not distances), or documents in rank order. A hit's source is its
            ``metadata["argus_source_id"]``, else its id: ``Document.id``, else
            ``metadata["_id"]`` (where langchain-qdrant puts it); a hit with none of them is its
            own source (``source_id`` ``""``), never merged with another.
        top_k: Keep this many sources.
        how: ``"max"`` (a source scores as its best hit) or ``"sum"``.
        view_discount: Subtracted from every view's score before folding, so a view lifts its
            source only when it beats the original by more than this (default
            :data:`argus_ir.collapse.DEFAULT_VIEW_DISCOUNT`; unused when hits carry no scores).

    Returns:
        One :class:`argus_ir.collapse.SourceHits` per source, best first: ``source_id``,
        ``score``, its ``hits`` and the ``original`` when the original itself was among them.

    Raises:
        argus_ir.errors.ArgusInputError: A negative or non-finite ``view_discount`` (also when the
            hits carry no scores), an unknown ``how``, or a score that is not a finite number.
    """
    _check_view_discount(view_discount)
    keyed, anonymous = _hits(hits)
    folded = fold_hits(
        keyed,
        id_of=lambda t: t[2],
        metadata_of=lambda t: t[0].metadata,
        score_of=lambda t: t[1],
        how=how,
        top_k=top_k,
        view_discount=view_discount,
    )
    return [
        SourceHits(
            "" if f.source_id in anonymous else f.source_id,
            f.score,
            tuple(doc for doc, _, _ in f.hits),
            None if f.original is None else f.original[0],
        )
        for f in folded
    ]


_Hit = tuple[Document, float | None, str]
"""A hit as folded: the document, its score and its key (its id, or one of this call's own for
a hit without: never shown, never asked of the store)."""

STORE_KEYS = ("_id", "_collection_name")
"""Metadata keys a store adds to the documents it returns (langchain-qdrant), not the user's."""


def _hits(
    hits: Sequence[tuple[Document, float]] | Sequence[Document],
) -> tuple[list[_Hit], set[str]]:
    """The hits with their keys, and the keys made for hits without an id (each its own group;
    a per-call token, so no metadata can name one)."""
    token = uuid.uuid4().hex
    out: list[_Hit] = []
    anonymous: set[str] = set()
    pairs = ((h, None) if isinstance(h, Document) else (h[0], float(h[1])) for h in hits)
    for pos, (doc, score) in enumerate(pairs):
        key = _doc_id(doc)
        if key is None:
            key = f"\0{token}-{pos}"
            anonymous.add(key)
        out.append((doc, score, key))
    return out, anonymous


class ArgusRetriever(BaseRetriever):
    """Search a vector store that holds argus views; return one original document per source.

    It asks the store for ``fetch_k`` hits with scores, folds views into their source document
    by their ``argus_source_id`` (best score by default) and returns the top ``k`` sources as the
    *original* documents: taken from the hits when the original was retrieved itself, else fetched
    (``fetch_originals``, by default the store's ``get_by_ids`` with the source ids). A source
    whose original the store does not hold is dropped, never served by one of its views; the
    next source takes its place and the count is logged (a warning on the
    ``langchain_argus.retriever`` logger). A read that fails raises instead (see "Fetching").
    It returns documents, without scores (LangChain's retriever interface has none);
    ``collapse_documents`` gives the folded scores. A document is returned with the id the
    store gave it (langchain-qdrant's ``metadata["_id"]`` included), never one taken from
    ``argus_source_id``: a store that returns no ids (LanceDB) gives documents without.

    Boundaries: a view folds into its source only when the source's original carries the view's
    metadata (lineage keys aside), so a view that passed ``search_kwargs``' filter never brings in
    a document the filter excludes, and a view with hand-written lineage lifts nothing it does
    not match; a refused view counts for nothing and is logged (``docs/adapters.md``).

    Scores: the hits come from ``similarity_search_with_relevance_scores`` (higher is better),
    because ``similarity_search_with_score`` returns *distances* (lower is better) in Chroma,
    FAISS or PGVector and *similarities* in others. A store without a relevance function (its
    ``_select_relevance_score_fn`` raises ``NotImplementedError``, as ``InMemoryVectorStore``'s
    does) is asked for ``similarity_search_with_score`` instead, taken as similarities.
    ``view_discount`` is a margin on cosine similarity, converted to the store's relevance scale
    for the stores whose convention is known (``InMemoryVectorStore``, Chroma, FAISS, Qdrant,
    PGVector, LanceDB; see ``docs/langchain.md``); for another store declare
    ``relevance_per_cosine``, else the first query raises
    :class:`~argus_ir.errors.ArgusInputError` naming the setting (with ``view_discount=0``
    nothing needs converting). A store without relevance scores whose raw scores are not known
    to be similarities is refused the same way (distances would rank backwards).

    Fetching: when ``get_by_ids`` raises (the server is down; langchain-chroma's pydantic
    ``ValidationError`` for an entry stored without metadata), the query raises
    :class:`StoreReadError` naming the store, the ids and the cause: a failed read is not an
    absent document. An entry that ``get_by_ids`` returns is the original of the id it is
    stored under only when its ``argus_source_id`` is absent or that id.
    A store that has no ``get_by_ids`` at all (LanceDB) is refused at construction unless
    ``fetch_originals`` is given. A store built for sync calls only (langchain-postgres's
    ``PGVector`` without an async engine) is searched in a worker thread by ``ainvoke``.

    Example:
        >>> retriever = ArgusRetriever(vectorstore=store, k=4)  # doctest: +SKIP
        >>> retriever.invoke("who starred in Casablanca?")  # doctest: +SKIP
    """

    vectorstore: VectorStore
    """The store the originals and their views were added to."""
    k: int = 4
    """Source documents to return."""
    fetch_k: int | None = None
    """Hits to fetch before folding (default ``max(20, 5 * k)``: views crowd the top ranks)."""
    how: str = "max"
    """``"max"`` or ``"sum"`` of a source's hit scores."""
    view_discount: float = DEFAULT_VIEW_DISCOUNT
    """Subtracted from every view's relevance score before folding: a view lifts its source only
    when it beats the original by more than this (default:
    ``argus_ir.collapse.DEFAULT_VIEW_DISCOUNT``, a margin on cosine similarity)."""
    relevance_per_cosine: float | None = None
    """How far the store's relevance score moves per unit of cosine similarity (1.0 when its
    relevance scores are cosines), to put ``view_discount`` on the store's scale. Default: known
    for ``InMemoryVectorStore``, Chroma, FAISS and Qdrant (``langchain_argus._scores``)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Passed on to the store's search (a filter, for instance)."""
    fetch_originals: Callable[[list[str]], Sequence[Document]] | None = None
    """Fetches originals by source id, for a store that keeps them under other ids (LangChain's
    ``index()`` keys entries by a content hash): given source ids, it returns the originals it
    finds, in any order; each is matched by its ``argus_source_id`` (else its id) and views among
    them are ignored. Default: the store's ``get_by_ids``. See ``docs/langchain.md``, "Stores"."""

    @field_validator("view_discount")
    @classmethod
    def _check_discount(cls, value: float) -> float:
        _check_view_discount(value)
        return value

    @field_validator("relevance_per_cosine")
    @classmethod
    def _check_slope(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value < math.inf:
            raise ValueError(f"relevance_per_cosine must be a finite number > 0, got {value!r}")
        return value

    @model_validator(mode="after")
    def _check(self) -> ArgusRetriever:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        store_type = type(self.vectorstore)
        if self.fetch_originals is None and store_type.get_by_ids is VectorStore.get_by_ids:
            raise _no_get_by_ids(self.vectorstore)  # every query would risk dropping sources
        if self.how not in ("max", "sum"):
            raise ValueError(f"how must be 'max' or 'sum', got {self.how!r}")
        return self

    def _discount(self, search: dict[str, Any]) -> float:
        """``view_discount`` on the store's relevance scale (``search``: the search's keywords)."""
        if self.view_discount == 0:
            return 0.0
        slope = self.relevance_per_cosine
        if slope is None:
            slope = relevance_per_cosine(self.vectorstore, search)
        if slope is None:
            raise ArgusInputError(
                f"cannot tell how {type(self.vectorstore).__name__}'s relevance scores relate to "
                "cosine similarity, the scale view_discount is a margin on: pass "
                "ArgusRetriever(relevance_per_cosine=...), or view_discount=0. "
                f"{hint(self.vectorstore)}"
            )
        return self.view_discount * slope

    def _check_plain_scores(self) -> None:
        """A store without relevance scores is asked for its raw scores, which are similarities
        only where that is known (``InMemoryVectorStore``) or declared (``relevance_per_cosine``):
        a store that gives distances would be ranked backwards."""
        if self.relevance_per_cosine is None and not isinstance(
            self.vectorstore, InMemoryVectorStore
        ):
            raise ArgusInputError(
                f"{type(self.vectorstore).__name__} gives no relevance scores, and its raw scores "
                "may be distances (lower is better), which would rank backwards: if they are "
                "similarities, declare ArgusRetriever(relevance_per_cosine=...) (1.0 for cosines)"
            )

    def _fetch_k(self, k: int) -> int:
        return self.fetch_k if self.fetch_k is not None else max(20, 5 * k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = int(kwargs.pop("k", self.k))
        search = {**self.search_kwargs, **kwargs}
        try:
            hits = self.vectorstore.similarity_search_with_relevance_scores(
                query, k=self._fetch_k(k), **search
            )
        except NotImplementedError:  # no relevance function
            self._check_plain_scores()
            hits = self.vectorstore.similarity_search_with_score(
                query, k=self._fetch_k(k), **search
            )
        keyed, anonymous = _hits(hits)
        resolved, fetched = read_originals(
            self._resolve(keyed, k, search),
            lambda ids: self._fetch([i for i in ids if i not in anonymous]),
            lambda d: d.metadata,
        )
        return _finish(resolved, fetched)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        if getattr(self.vectorstore, "async_mode", None) is False:
            # a store built for sync calls only (langchain-postgres's PGVector without an async
            # engine): the sync path, in a worker thread
            return await run_in_executor(
                None,
                self._get_relevant_documents,
                query,
                run_manager=run_manager.get_sync(),
                **kwargs,
            )
        k = int(kwargs.pop("k", self.k))
        search = {**self.search_kwargs, **kwargs}
        try:
            hits = await self.vectorstore.asimilarity_search_with_relevance_scores(
                query, k=self._fetch_k(k), **search
            )
        except NotImplementedError:  # no relevance function
            self._check_plain_scores()
            hits = await self.vectorstore.asimilarity_search_with_score(
                query, k=self._fetch_k(k), **search
            )
        keyed, anonymous = _hits(hits)
        resolved, fetched = await aread_originals(
            self._resolve(keyed, k, search),
            lambda ids: self._afetch([i for i in ids if i not in anonymous]),
            lambda d: d.metadata,
        )
        return _finish(resolved, fetched)

    def _resolve(self, hits: list[_Hit], k: int, search: dict[str, Any]) -> Steps[_Hit]:
        """The core's :func:`~argus_ir.collapse.resolve_sources` over the scored hits."""
        return resolve_sources(
            hits,
            id_of=lambda t: t[2],
            metadata_of=lambda t: t[0].metadata,
            score_of=lambda t: t[1],
            how=self.how,
            top_k=k,
            view_discount=self._discount(search),
            ignore_keys=STORE_KEYS,
        )

    def _fetch(self, ids: list[str]) -> dict[str, Document]:
        if not ids:
            return {}
        if self.fetch_originals is not None:
            return _originals(self.fetch_originals(ids))
        try:
            found = read_by_ids(self.vectorstore, ids)
        except NotImplementedError as exc:
            raise _no_get_by_ids(self.vectorstore) from exc
        except Exception as exc:  # an outage is not "no such document": never drop on it
            raise _read_failed(self.vectorstore, ids, exc) from exc
        return _own_originals(self.vectorstore, found, ids)

    async def _afetch(self, ids: list[str]) -> dict[str, Document]:
        if not ids:
            return {}
        if self.fetch_originals is not None:
            return _originals(await run_in_executor(None, self.fetch_originals, ids))
        try:
            found = await aread_by_ids(self.vectorstore, ids)
        except NotImplementedError as exc:
            raise _no_get_by_ids(self.vectorstore) from exc
        except Exception as exc:  # as in _fetch
            raise _read_failed(self.vectorstore, ids, exc) from exc
        return _own_originals(self.vectorstore, found, ids)


def _doc_id(doc: Document) -> str | None:
    """A document's store id: ``Document.id``, else ``metadata["_id"]`` (langchain-qdrant)."""
    if doc.id:
        return doc.id
    fallback = (doc.metadata or {}).get("_id")
    return None if fallback is None or fallback == "" else str(fallback)


def _originals(docs: Sequence[Document]) -> dict[str, Document]:
    """What ``fetch_originals`` found, by the source id it was asked for (the hook looked it up
    by ``argus_source_id``: under ``index()`` originals have ids of their own); views are left
    out."""
    out: dict[str, Document] = {}
    for doc in docs:
        if not is_view_entry(doc.metadata):
            source = source_id_of(_doc_id(doc) or "", doc.metadata)
            if source:
                out.setdefault(source, doc)
    return out


def _own_originals(
    store: VectorStore, docs: Sequence[Document], ids: list[str]
) -> dict[str, Document]:
    """What ``get_by_ids(ids)`` returned, by id: an entry is the original of the id it is
    stored under, when its lineage agrees (no ``argus_source_id``, or that id) and it is no view.
    An entry whose ``argus_source_id`` names another document is the original of neither (that
    key is metadata anyone can write) and is logged."""
    wanted = set(ids)
    out: dict[str, Document] = {}
    for doc in docs:
        doc_id = _doc_id(doc)
        if doc_id not in wanted or is_view_entry(doc.metadata, doc_id):
            continue
        claimed = (doc.metadata or {}).get(SOURCE_KEY)
        if claimed is not None and claimed != "" and str(claimed) != doc_id:
            logger.warning(
                "%s holds %r with argus_source_id %r, another document's: not taken as the "
                "original of either",
                type(store).__name__,
                doc_id,
                claimed,
            )
            continue
        out.setdefault(doc_id, doc)
    return out


def _finish(resolved: Resolved[_Hit], fetched: Mapping[str, Document]) -> list[Document]:
    """Each source's original, from its hits or as read; refused views and drops are logged."""
    out = []
    for f in resolved.sources:
        doc = f.original[0] if f.original is not None else fetched[f.source_id]
        store_id = _doc_id(doc)
        if not doc.id and store_id:  # langchain-qdrant's id, in metadata["_id"]
            doc = doc.model_copy(update={"id": store_id})
        out.append(doc)
    warn_refused(logger, resolved.refused)
    if resolved.dropped:
        logger.warning(
            "%d source(s) dropped: only their views were retrieved and the store does not hold "
            "their originals (deleted, or stored under other ids: see "
            "ArgusRetriever.fetch_originals)",
            len(resolved.dropped),
        )
    return out


def _no_get_by_ids(store: VectorStore) -> ArgusInputError:
    return ArgusInputError(
        f"{type(store).__name__} cannot read documents by id (its get_by_ids is not "
        "implemented), so a source retrieved only through its views cannot be served: pass "
        "ArgusRetriever(fetch_originals=...), a function from source ids to their originals "
        "(docs/langchain.md, 'Stores', has one for LanceDB)"
    )


def _read_failed(store: VectorStore, ids: list[str], exc: BaseException) -> StoreReadError:
    shown = _shown_ids(ids)
    return StoreReadError(
        f"{type(store).__name__}.get_by_ids failed ({type(exc).__name__}: {exc}) reading the "
        f"originals of {len(ids)} source(s) retrieved only through their views ({shown}); "
        "the query fails rather than answer without them"
    )


def _check_view_discount(value: float) -> None:
    """Raise the core's :class:`~argus_ir.errors.ArgusInputError` for a bad ``view_discount``."""
    rank_sources((), view_discount=value)  # the core's check, run on no hits
