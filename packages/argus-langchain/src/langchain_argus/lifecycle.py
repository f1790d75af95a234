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
only records that the next :func:`index_sources` or :func:`delete_sources` puts right (both
forget the records of entries the store no longer holds: FAISS refuses to delete those ids).
:func:`aindex_sources` and :func:`adelete_sources` do the same with ``aindex()`` and the store's
and record manager's async methods.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Generator, Iterable, Iterator
from itertools import islice
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.indexing import IndexingResult, RecordManager, aindex, index
from langchain_core.vectorstores import VectorStore

from argus_ir.errors import ArgusInputError
from argus_ir.lineage import SOURCE_KEY
from langchain_argus.retriever import _doc_id

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
            ``index()``'s own in ``kwargs``; a document without ``argus_source_id`` (not
            through the transformer), named by its id or position, before any of its batch is
            written.

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
    To finish, each batch's keys are first looked up with the store's ``get_by_ids``, as
    :func:`index_sources` does: the records of entries the store no longer holds are forgotten,
    and only the entries it holds are deleted (FAISS's ``delete`` raises on an id it does not
    hold). A store without ``get_by_ids`` (LanceDB) is given every key.

    Args:
        vector_store: The store.
        record_manager: Its record manager.
        source_ids: The ids of the documents to delete (their ``argus_source_id``).
        batch_size: Keys per round.

    Returns:
        How many entries were deleted from the store (originals and views); records of entries
        already gone are forgotten without being counted.

    Example:
        >>> from langchain_argus import delete_sources
        >>> delete_sources(store, manager, ["doc-7"])  # doctest: +SKIP
        3
    """
    steps = _deleting(
        list(dict.fromkeys(source_ids)), vector_store, _checks(vector_store), batch_size
    )
    return int(_run(steps, _calls(vector_store, record_manager)))


async def adelete_sources(
    vector_store: VectorStore,
    record_manager: RecordManager,
    source_ids: Iterable[str],
    *,
    batch_size: int = 1000,
) -> int:
    """:func:`delete_sources` through the store's and the record manager's async methods: the
    records of entries already gone first, then the entries of each batch of keys, then their
    records.

    Returns:
        How many entries were deleted from the store (originals and views).
    """
    sources = list(dict.fromkeys(source_ids))
    steps = _deleting(sources, vector_store, _achecks(vector_store), batch_size)
    return int(await _arun(steps, _acalls(vector_store, record_manager)))


# one body for sync and async: the steps yield each call they need, a driver makes it -----------

_Call = tuple[str, tuple[Any, ...]]


def _calls(store: VectorStore, manager: RecordManager) -> dict[str, Any]:
    return {
        "list_keys": lambda sources, limit: manager.list_keys(group_ids=sources, limit=limit),
        "get_by_ids": store.get_by_ids,
        "delete": store.delete,
        "delete_keys": manager.delete_keys,
    }


def _acalls(store: VectorStore, manager: RecordManager) -> dict[str, Any]:
    return {
        "list_keys": lambda sources, limit: manager.alist_keys(group_ids=sources, limit=limit),
        "get_by_ids": store.aget_by_ids,
        "delete": store.adelete,
        "delete_keys": manager.adelete_keys,
    }


def _run(steps: Generator[_Call, Any, Any], calls: dict[str, Any]) -> Any:
    """Make each call ``steps`` yields, sending back its result; ``steps``' return value."""
    try:
        name, args = next(steps)
        while True:
            name, args = steps.send(calls[name](*args))
    except StopIteration as done:
        return done.value


async def _arun(steps: Generator[_Call, Any, Any], calls: dict[str, Any]) -> Any:
    """:func:`_run` with the async calls, each awaited."""
    try:
        name, args = next(steps)
        while True:
            name, args = steps.send(await calls[name](*args))
    except StopIteration as done:
        return done.value


def _deleting(
    sources: list[str], store: VectorStore, checks: bool, batch_size: int
) -> Generator[_Call, Any, int]:
    """The steps of :func:`delete_sources`: per batch of keys, the records of entries already
    gone forgotten, then the entries deleted, then their records. Returns the entries deleted."""
    deleted = 0
    while sources:
        keys = yield ("list_keys", (sources, batch_size))
        if not keys:
            break
        if checks:
            missing = _missing(keys, (yield ("get_by_ids", (keys,))), store, _DELETING)
            if missing:
                yield ("delete_keys", (missing,))  # their entries are gone already
                keys = _without(keys, missing)
        if keys:
            if (yield ("delete", (keys,))) is False:
                raise RuntimeError(f"{type(store).__name__} failed to delete {len(keys)} ids")
            yield ("delete_keys", (keys,))
        deleted += len(keys)
    return deleted


def _forgetting(
    batch: list[Document], start: int, store: VectorStore, checks: bool
) -> Generator[_Call, Any, None]:
    """The check before each batch of :func:`index_sources`: the batch's lineage, then the
    records of its sources' keys that the store does not hold are forgotten."""
    _check_lineage(batch, start)
    sources = _sources(batch) if checks else []
    keys = (yield ("list_keys", (sources, None))) if sources else []
    if keys:
        missing = _missing(keys, (yield ("get_by_ids", (keys,))), store, _INDEXING)
        if missing:
            yield ("delete_keys", (missing,))


def _forgetting_missing(
    documents: Iterable[Document], manager: RecordManager, store: VectorStore, batch_size: int
) -> Iterator[Document]:
    """The documents, in batches as ``index()`` reads them; before each, its documents' lineage
    is checked and the records of its sources' keys that the store does not hold are deleted."""
    checks = _checks(store)
    if not checks:  # it cannot tell (LanceDB)
        logger.debug("%s has no get_by_ids: records are not checked", type(store).__name__)
    calls = _calls(store, manager)
    docs = iter(documents)
    start = 0
    while batch := list(islice(docs, batch_size)):
        _run(_forgetting(batch, start, store, checks), calls)
        start += len(batch)
        yield from batch


async def _aforgetting_missing(
    documents: Iterable[Document] | AsyncIterable[Document],
    manager: RecordManager,
    store: VectorStore,
    batch_size: int,
) -> AsyncIterator[Document]:
    """:func:`_forgetting_missing` with the async methods, over a list or an async iterable."""
    checks = _achecks(store)
    batch: list[Document] = []
    start = 0
    async for document in _aiter(documents):
        batch.append(document)
        if len(batch) == batch_size:
            await _aforget(batch, start, manager, store, checks)
            for done in batch:
                yield done
            start += len(batch)
            batch = []
    if batch:
        await _aforget(batch, start, manager, store, checks)
        for done in batch:
            yield done


async def _aforget(
    batch: list[Document], start: int, manager: RecordManager, store: VectorStore, checks: bool
) -> None:
    await _arun(_forgetting(batch, start, store, checks), _acalls(store, manager))


async def _aiter(documents: Iterable[Document] | AsyncIterable[Document]) -> AsyncIterator[Any]:
    if isinstance(documents, AsyncIterable):
        async for document in documents:
            yield document
    else:
        for document in documents:
            yield document


def _checks(store: VectorStore) -> bool:
    """Whether the store can say which entries it holds (LanceDB has no ``get_by_ids``)."""
    return type(store).get_by_ids is not VectorStore.get_by_ids


def _achecks(store: VectorStore) -> bool:
    """:func:`_checks` for ``aget_by_ids`` (the default one runs ``get_by_ids``)."""
    return type(store).aget_by_ids is not VectorStore.aget_by_ids or _checks(store)


def _check_lineage(batch: list[Document], start: int) -> None:
    """Raise on the batch's first document without ``argus_source_id`` (``start``: the position
    of the batch's first document in the input). ``index()`` would fail on it with a bare
    ``KeyError``, naming no document."""
    for position, doc in enumerate(batch, start):
        if (doc.metadata or {}).get(SOURCE_KEY) is None:
            which = (
                f"document {doc.id!r} (position {position})"
                if doc.id
                else f"the document at position {position} (it has no id)"
            )
            raise ArgusInputError(
                f"{which} has no {SOURCE_KEY} in its metadata: index_sources and "
                "aindex_sources index argus output. Pass the documents through "
                "ArgusDocumentTransformer (transform_documents) first, and index what it returns"
            )


def _sources(batch: list[Document]) -> list[str]:
    """The batch's ``argus_source_id`` values, sorted (empty and missing ones left out)."""
    return sorted(map(str, {d.metadata.get(SOURCE_KEY) for d in batch} - {None, ""}))


_INDEXING = "forgotten, so they are indexed again"
_DELETING = "forgotten, and only the entries it holds are deleted"


def _missing(keys: list[str], held: list[Document], store: VectorStore, then: str) -> list[str]:
    """The keys whose entries the store did not return; logged when there are any.

    An entry's id is its ``Document.id``, else ``metadata["_id"]`` (langchain-qdrant's
    ``get_by_ids`` sets only that one), compared as a UUID when it is one (Qdrant returns a point
    id in its canonical spelling). When an entry comes back with neither, the store cannot tell
    which keys it holds: none is taken as missing."""
    there: set[str] = set()
    for doc in held:
        doc_id = _doc_id(doc)
        if doc_id is None:
            logger.debug(
                "%s returned entries without ids: records are not checked", type(store).__name__
            )
            return []
        there.add(_canonical(doc_id))
    missing = [k for k in keys if _canonical(k) not in there]
    if missing:
        logger.warning(
            "%d record(s) of entries %s no longer holds (a delete that stopped half-way?): %s",
            len(missing),
            type(store).__name__,
            then,
        )
    return missing


def _without(keys: list[str], dropped: list[str]) -> list[str]:
    gone = set(dropped)
    return [k for k in keys if k not in gone]


def _canonical(key: str) -> str:
    """A key as a store compares it: a UUID in its canonical spelling, any other key as it is."""
    try:
        return str(uuid.UUID(key))
    except ValueError:
        return key
