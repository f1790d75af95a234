"""Indexing, updating and deleting argus output with a record manager: :func:`index_sources`,
:func:`delete_sources`.

LangChain's ``index()`` keeps a store and a record manager in step, but two of its ways leave
argus output wrong. With ``cleanup="incremental"`` it cleans up batch by batch, so a source whose
original and views straddle a batch has its later entries deleted and added again on every run
(and lost if the run stops in between). And a delete that removed entries from the store but not
yet their records (a crash between the two steps) leaves records that make every later
``index()`` skip those entries, which are no longer there. :func:`index_sources` cleans up once,
after every batch, and first forgets the records of its sources' entries the store no longer
holds; :func:`delete_sources` deletes a source's entries before their records, so a crash leaves
only records that the next :func:`index_sources` or :func:`delete_sources` puts right.
:func:`aindex_sources` and :func:`adelete_sources` do the same with ``aindex()`` and the store's
and record manager's async methods.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from itertools import islice
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.indexing import IndexingResult, RecordManager, aindex, index
from langchain_core.vectorstores import VectorStore

from argus_ir.errors import ArgusInputError
from argus_ir.lineage import SOURCE_KEY

__all__ = ["adelete_sources", "aindex_sources", "delete_sources", "index_sources"]

logger = logging.getLogger(__name__)

_CLEANUP = {"incremental": "scoped_full", "full": "full", None: None}


def index_sources(
    documents: Iterable[Document],
    record_manager: RecordManager,
    vector_store: VectorStore,
    *,
    cleanup: Literal["incremental", "full"] | None = "incremental",
    batch_size: int = 100,
    **kwargs: Any,
) -> IndexingResult:
    """Index argus output (originals and their views) with LangChain's ``index()``, grouped by
    ``argus_source_id``.

    Running it twice over the same documents adds and deletes nothing, at any ``batch_size``.
    Before each batch, the records of its sources whose entries the store no longer holds (left
    by a delete that stopped half-way) are forgotten, so those entries are added again instead
    of being skipped.

    Args:
        documents: What :class:`~langchain_argus.ArgusDocumentTransformer` returned (every
            document must carry ``argus_source_id``).
        record_manager: The record manager kept beside the store.
        vector_store: The store. It must upsert by id (Chroma, Qdrant, PGVector do), so that a
            run stopped after writing entries but before recording them is completed by the
            next run rather than doubled.
        cleanup: ``"incremental"``: the outdated entries of every source given (an updated
            document's old original and views) are deleted after the last batch (``index()``'s
            ``"scoped_full"``; its own ``"incremental"`` cleans up per batch). ``"full"``: every
            entry of a source not given is deleted as well. ``None``: nothing is deleted.
        batch_size: Documents per batch.
        **kwargs: Passed on to ``index()`` (``force_update``, ``key_encoder``,
            ``cleanup_batch_size``, ``upsert_kwargs``).

    Returns:
        ``index()``'s counts: ``num_added``, ``num_updated``, ``num_skipped``, ``num_deleted``.

    Raises:
        ArgusInputError: An unknown ``cleanup``, or a ``source_id_key`` or ``cleanup`` of
            ``index()``'s own in ``kwargs``.

    Example:
        >>> from langchain_argus import index_sources
        >>> index_sources(argus.transform_documents(docs), manager, store)  # doctest: +SKIP
        {'num_added': 24, 'num_updated': 0, 'num_skipped': 0, 'num_deleted': 0}
    """
    settings = _settings(cleanup, batch_size, kwargs)
    checked = _forgetting_missing(documents, record_manager, vector_store, batch_size)
    return index(checked, record_manager, vector_store, **settings)


async def aindex_sources(
    documents: Iterable[Document] | AsyncIterable[Document],
    record_manager: RecordManager,
    vector_store: VectorStore,
    *,
    cleanup: Literal["incremental", "full"] | None = "incremental",
    batch_size: int = 100,
    **kwargs: Any,
) -> IndexingResult:
    """:func:`index_sources` with ``aindex()``: the same grouping, cleanup and check of the
    records, through the store's and the record manager's async methods.

    Args:
        documents: What the transformer returned, as a list or an async iterable.
        record_manager: The record manager (its async methods: ``SQLRecordManager`` with
            ``async_mode=True``).
        vector_store: The store (``aadd_documents``, ``adelete``, ``aget_by_ids``).
        cleanup: As for :func:`index_sources`.
        batch_size: Documents per batch.
        **kwargs: Passed on to ``aindex()``.

    Returns:
        ``aindex()``'s counts.

    Raises:
        ArgusInputError: As for :func:`index_sources`.
    """
    settings = _settings(cleanup, batch_size, kwargs)
    checked = _aforgetting_missing(documents, record_manager, vector_store, batch_size)
    return await aindex(checked, record_manager, vector_store, **settings)


def _settings(cleanup: Any, batch_size: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``index()``'s (and ``aindex()``'s) settings for argus output, after checking the caller's."""
    if cleanup not in _CLEANUP:
        raise ArgusInputError(f"cleanup must be 'incremental', 'full' or None, got {cleanup!r}")
    if "source_id_key" in kwargs:
        raise ArgusInputError("index_sources groups by argus_source_id; drop source_id_key")
    if batch_size < 1:
        raise ArgusInputError(f"batch_size must be >= 1, got {batch_size}")
    return {
        "cleanup": _CLEANUP[cleanup],
        "source_id_key": SOURCE_KEY,
        "batch_size": batch_size,
        **kwargs,
    }


def delete_sources(
    vector_store: VectorStore,
    record_manager: RecordManager,
    source_ids: Iterable[str],
    *,
    batch_size: int = 1000,
) -> int:
    """Delete documents and all their views from a store indexed by :func:`index_sources` (or
    ``index()`` with ``source_id_key="argus_source_id"``).

    Each batch of the sources' keys is deleted from the store first, then from the record
    manager. Stopped between the two, it leaves records of entries that are gone, never an entry
    no record lists: calling it again finishes the delete, and :func:`index_sources` adds such a
    source again if it is given it. (Records first would leave entries that no cleanup can find.)

    Args:
        vector_store: The store.
        record_manager: Its record manager.
        source_ids: The ids of the documents to delete (their ``argus_source_id``).
        batch_size: Keys per round.

    Returns:
        How many entries were deleted (originals and views).

    Example:
        >>> from langchain_argus import delete_sources
        >>> delete_sources(store, manager, ["doc-7"])  # doctest: +SKIP
        3
    """
    sources = list(dict.fromkeys(source_ids))
    deleted = 0
    while sources and (keys := record_manager.list_keys(group_ids=sources, limit=batch_size)):
        if vector_store.delete(keys) is False:
            raise RuntimeError(f"{type(vector_store).__name__}.delete failed for {len(keys)} ids")
        record_manager.delete_keys(keys)
        deleted += len(keys)
    return deleted


async def adelete_sources(
    vector_store: VectorStore,
    record_manager: RecordManager,
    source_ids: Iterable[str],
    *,
    batch_size: int = 1000,
) -> int:
    """:func:`delete_sources` through the store's and the record manager's async methods: the
    entries of each batch of keys first, then their records.

    Returns:
        How many entries were deleted (originals and views).
    """
    sources = list(dict.fromkeys(source_ids))
    deleted = 0
    while sources and (
        keys := await record_manager.alist_keys(group_ids=sources, limit=batch_size)
    ):
        if await vector_store.adelete(keys) is False:
            raise RuntimeError(f"{type(vector_store).__name__}.adelete failed for {len(keys)} ids")
        await record_manager.adelete_keys(keys)
        deleted += len(keys)
    return deleted


def _forgetting_missing(
    documents: Iterable[Document], manager: RecordManager, store: VectorStore, batch_size: int
) -> Iterator[Document]:
    """The documents, in batches as ``index()`` reads them; before each, the records of its
    sources' keys that the store does not hold are deleted."""
    if type(store).get_by_ids is VectorStore.get_by_ids:  # it cannot tell (LanceDB)
        logger.debug("%s has no get_by_ids: records are not checked", type(store).__name__)
        yield from documents
        return
    docs = iter(documents)
    while batch := list(islice(docs, batch_size)):
        sources = _sources(batch)
        keys = manager.list_keys(group_ids=sources) if sources else []
        if keys:
            missing = _missing(keys, store.get_by_ids(keys), store)
            if missing:
                manager.delete_keys(missing)
        yield from batch


async def _aforgetting_missing(
    documents: Iterable[Document] | AsyncIterable[Document],
    manager: RecordManager,
    store: VectorStore,
    batch_size: int,
) -> AsyncIterator[Document]:
    """:func:`_forgetting_missing` with the async methods, over a list or an async iterable."""
    checks = type(store).aget_by_ids is not VectorStore.aget_by_ids or (
        type(store).get_by_ids is not VectorStore.get_by_ids
    )  # the default aget_by_ids runs get_by_ids
    batch: list[Document] = []
    async for document in _aiter(documents):
        batch.append(document)
        if len(batch) == batch_size:
            await _aforget(batch, manager, store, checks)
            for done in batch:
                yield done
            batch = []
    if batch:
        await _aforget(batch, manager, store, checks)
        for done in batch:
            yield done


async def _aforget(
    batch: list[Document], manager: RecordManager, store: VectorStore, checks: bool
) -> None:
    sources = _sources(batch) if checks else []
    keys = await manager.alist_keys(group_ids=sources) if sources else []
    if keys:
        missing = _missing(keys, await store.aget_by_ids(keys), store)
        if missing:
            await manager.adelete_keys(missing)


async def _aiter(documents: Iterable[Document] | AsyncIterable[Document]) -> AsyncIterator[Any]:
    if isinstance(documents, AsyncIterable):
        async for document in documents:
            yield document
    else:
        for document in documents:
            yield document


def _sources(batch: list[Document]) -> list[str]:
    """The batch's ``argus_source_id`` values, sorted (empty and missing ones left out)."""
    return sorted(map(str, {d.metadata.get(SOURCE_KEY) for d in batch} - {None, ""}))


def _missing(keys: list[str], held: list[Document], store: VectorStore) -> list[str]:
    """The keys whose entries the store did not return; logged when there are any."""
    there = {d.id for d in held}
    missing = [k for k in keys if k not in there]
    if missing:
        logger.warning(
            "%d record(s) of entries %s no longer holds (a delete that stopped half-way?): "
            "forgotten, so they are indexed again",
            len(missing),
            type(store).__name__,
        )
    return missing
