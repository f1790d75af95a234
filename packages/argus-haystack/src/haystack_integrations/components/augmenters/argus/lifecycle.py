"""Replacing and deleting a document with its views: :func:`delete_sources`,
:class:`ArgusSourceCleaner`, :class:`ArgusSourceSweeper`.

A view's id names its source, entities and KB passages, so writing a changed document again
(``DuplicatePolicy.OVERWRITE``) replaces the original but can leave its old views beside it, still
answering with what the document no longer says. Every entry argus writes names its source in ``meta["argus_source_id"]``: deleting
by that key removes a document and all its views, whatever their ids.

The cleaner deletes only what the incoming documents do not write again (an entry of their
sources whose id is not among theirs); the writer overwrites the rest in place. A process killed
between the two so leaves every unchanged entry where it was.

Two updates of one source at once defeat any check made before the write: each cleaner reads the
store before the other's views are there. So the cleaner also stamps every entry of a source with
the version it belongs to (:data:`VERSION_KEY`, a hash of what the run writes for the source), and
the sweeper, after the writer, deletes each view whose version is not the one of the original the
store now holds. Whichever write of the original comes last, the sweep that follows it removes
every other version's views; a view of another version found before that sweep does not fold
(its meta differs from its original's, see :func:`argus_ir.collapse.same_scope`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from argus_ir.collapse import source_id_of
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.remedy import ORIGINAL
from haystack_integrations.components.rankers.argus._graph import linked
from haystack_integrations.components.rankers.argus._stores import aread, read, twin_store

__all__ = [
    "VERSION_KEY",
    "ArgusSourceCleaner",
    "ArgusSourceSweeper",
    "adelete_sources",
    "delete_sources",
]

logger = logging.getLogger(__name__)

_LINEAGE = f"meta.{SOURCE_KEY}"

VERSION_KEY = "argus_source_version"
"""The version of its source an entry was written with, set by :class:`ArgusSourceCleaner` on
each entry of a source: the first 16 hex digits of a SHA-256 of what the run writes for that
source (ids, texts, meta; not the embeddings). Not a lineage key: the collapser's scope check
compares it, so a view folds only into the original of its own version."""


def delete_sources(document_store: DocumentStore, source_ids: Iterable[str]) -> int:
    """Delete documents and every view of them from a store.

    Removes each entry whose ``meta["argus_source_id"]`` is one of ``source_ids`` (the original
    and its views) and each entry whose id is one of them (an original written without lineage).
    Asks with filters every store accepts (``==`` where a store refuses ``in``).

    Args:
        document_store: The store.
        source_ids: The ids of the documents to delete.

    Returns:
        How many entries were deleted.

    Usage:
        >>> from haystack_integrations.components.augmenters.argus import delete_sources
        >>> delete_sources(store, ["doc-7"])  # doctest: +SKIP
        3
    """
    sources = list(dict.fromkeys(source_ids))
    ids = _held(document_store, sources)
    if ids:
        document_store.delete_documents(sorted(ids))
    logger.debug("deleted %d entries of %d source(s)", len(ids), len(sources))
    return len(ids)


async def adelete_sources(document_store: DocumentStore, source_ids: Iterable[str]) -> int:
    """Async :func:`delete_sources`: the store's async methods where it has working ones (an
    embedded Qdrant store must not mix its sync and async clients), else the sync ones."""
    sources = list(dict.fromkeys(source_ids))
    ids = await _aheld(document_store, sources)
    await _adelete(document_store, ids)
    return len(ids)


def _held(store: DocumentStore, sources: list[str]) -> set[str]:
    """The ids of every stored entry of ``sources``: by lineage, and by id (an original written
    without lineage)."""
    if not sources:
        return set()
    ids = _ids(read(store, _LINEAGE, sources))
    ids.update(_ids(read(store, "id", [s for s in sources if s not in ids])))
    return ids


async def _aheld(store: DocumentStore, sources: list[str]) -> set[str]:
    """Async :func:`_held`."""
    if not sources:
        return set()
    ids = _ids(await aread(store, _LINEAGE, sources))
    ids.update(_ids(await aread(store, "id", [s for s in sources if s not in ids])))
    return ids


async def _adelete(store: DocumentStore, ids: set[str]) -> None:
    if not ids:
        return
    delete = getattr(store, "delete_documents_async", None)
    try:
        if not callable(delete):
            raise NotImplementedError
        await delete(sorted(ids))
    except Exception as exc:  # e.g. Chroma's async needs an HTTP client
        logger.debug(
            "async delete failed (%s: %s); deleting synchronously", type(exc).__name__, exc
        )
        await asyncio.to_thread(store.delete_documents, sorted(ids))


def _ids(found: dict[str, list[Document]]) -> set[str]:
    return {doc.id for docs in found.values() for doc in docs}


class _OnStore:
    """What the cleaner and the sweeper share: the store they act on, serialised with its own
    ``to_dict``, and, in a pipeline, the store object of another component of the same class and
    settings (:meth:`_live_store`)."""

    def __init__(self, document_store: DocumentStore) -> None:
        """Create the component.

        :param document_store: The store the documents are written to.
        """
        self.document_store = document_store
        self._shared = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (the store with its own ``to_dict``)."""
        return default_to_dict(self, document_store=self.document_store)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _live_store(self) -> DocumentStore:
        """The component's store; in a pipeline, from its first run, another component's store
        object of the same class and settings (a YAML-loaded pipeline holds copies)."""
        if not self._shared:
            pipeline = getattr(self, "__haystack_added_to_pipeline__", None)
            if pipeline is not None:
                self._shared = True
                self.document_store = (
                    twin_store(pipeline, self.document_store) or self.document_store
                )
        return self.document_store


@component
class ArgusSourceCleaner(_OnStore):
    """Delete from a store what it holds of the incoming documents' sources and they do not write
    again, before they are written; stamp each entry with its source's version.

    Put it right before a ``DocumentWriter`` with ``policy=DuplicatePolicy.OVERWRITE`` (after
    :class:`ArgusAugmenter`), and :class:`ArgusSourceSweeper` after the writer: for each source
    among the incoming documents (an original's own id, a view's ``argus_source_id``), the
    stored entries whose ids are not among the incoming ones (an updated document's old views)
    are deleted; the writer overwrites the rest in place. An updated document so leaves no stale
    view behind, and a process killed between the cleaner and the writer leaves every unchanged
    entry in the store (a rerun completes the update). Every document of a source must come in
    the same run: an entry of the source that is not among them is deleted. To delete a document
    for good, call :func:`delete_sources`.

    The documents pass on as copies whose meta gains :data:`VERSION_KEY` (the same for every
    entry of a source, and again the same when the same documents come again), originals before
    views: written in that order, no view of a version is stored before its original, which the
    sweeper relies on when two updates of a source run at once.

    In a pipeline it uses the store object of another component of the same class and settings
    (the writer's), as :class:`ArgusCollapser` does.

    Usage:
        >>> from haystack_integrations.components.augmenters.argus import ArgusSourceCleaner
        >>> pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))  # doctest: +SKIP
        >>> pipe.connect("embedder.documents", "cleaner.documents")  # doctest: +SKIP
        >>> pipe.connect("cleaner.documents", "writer.documents")  # doctest: +SKIP
    """

    @component.output_types(documents=list[Document], deleted=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Delete the stored entries of the documents' sources that they do not write again.

        :param documents: The documents about to be written (not modified).
        :returns: ``documents``: copies stamped with their source's version, originals first;
            ``deleted``: how many stored entries went.
        :raises ValueError: In a pipeline, a ``DocumentWriter`` after it that does not overwrite
            (the entries kept would be skipped, or refused as duplicates).
        """
        store = self._live_store()
        self._check_writer()
        stale = _held(store, _sources(documents)) - {doc.id for doc in documents}
        if stale:
            store.delete_documents(sorted(stale))
        return {"documents": _stamped(documents), "deleted": len(stale)}

    @component.output_types(documents=list[Document], deleted=int)
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Async :meth:`run`.

        :param documents: The documents about to be written (not modified).
        :returns: As :meth:`run`.
        """
        store = self._live_store()
        self._check_writer()
        stale = await _aheld(store, _sources(documents)) - {doc.id for doc in documents}
        await _adelete(store, stale)
        return {"documents": _stamped(documents), "deleted": len(stale)}

    def _check_writer(self) -> None:
        """Refuse a ``DocumentWriter`` fed by this cleaner that does not overwrite."""
        for receiver, writer in linked(self, "documents", feeding=False):
            if not any(cls.__name__ == "DocumentWriter" for cls in type(writer).__mro__):
                continue
            policy = getattr(writer, "policy", None)
            if policy != DuplicatePolicy.OVERWRITE:
                raise ValueError(
                    f"ArgusSourceCleaner keeps the stored entries its documents write again, so "
                    f"the writer after it must overwrite them: {receiver!r} has policy={policy}; "
                    "use DocumentWriter(..., policy=DuplicatePolicy.OVERWRITE)"
                )


@component
class ArgusSourceSweeper(_OnStore):
    """After the writer, delete the views of the written documents' sources that belong to another
    version than the original the store now holds.

    Two updates of one source at once (two processes, or two pipelines) each run
    :class:`ArgusSourceCleaner` before either writes, so neither cleaner sees the other's views:
    the store would end with the original written last and both versions' views. The cleaner
    stamps every entry with its source's version (:data:`VERSION_KEY`); the sweeper reads each
    source's entries after the write and deletes every view whose version differs from the stored
    original's. Each process's sweep follows its own write, so the sweep after the last write of
    the original removes every other version's views, whatever the interleaving; an earlier sweep
    that sees another version's original deletes its own views. It deletes with a filter on the
    source and the stale version where the store can, so a view another process rewrote in the
    meantime (same id, current version) stays; else by id.

    Connect the cleaner's ``documents`` to it and the writer's ``documents_written``, which
    makes it run after the writer. In a pipeline it uses the store object of another component of
    the same class and settings, as the cleaner does.

    Usage:
        >>> from haystack_integrations.components.augmenters.argus import ArgusSourceSweeper
        >>> pipe.add_component("sweeper", ArgusSourceSweeper(document_store=store))  # doctest: +SKIP
        >>> pipe.connect("cleaner.documents", "sweeper.documents")  # doctest: +SKIP
        >>> pipe.connect("writer.documents_written", "sweeper.documents_written")  # doctest: +SKIP
    """

    @component.output_types(deleted=int)
    def run(self, documents: list[Document], documents_written: int) -> dict[str, Any]:
        """Delete the views of the documents' sources whose version is not their original's.

        :param documents: The documents written (the cleaner's output); only their sources are
            read.
        :param documents_written: The writer's count; only orders the sweep after the write.
        :returns: ``deleted``: how many stored views went.
        """
        store = self._live_store()
        sources = list(dict.fromkeys(_sources(documents)))
        found = read(store, _LINEAGE, sources)
        _merge(found, read(store, "id", _without_original(found, sources)))
        deleted = 0
        for source, version, ids in _stale_versions(found):
            deleted += _sweep(store, source, version, ids)
        return {"deleted": deleted}

    @component.output_types(deleted=int)
    async def run_async(self, documents: list[Document], documents_written: int) -> dict[str, Any]:
        """Async :meth:`run`.

        :param documents: As :meth:`run`.
        :param documents_written: As :meth:`run`.
        :returns: As :meth:`run`.
        """
        store = self._live_store()
        sources = list(dict.fromkeys(_sources(documents)))
        found = await aread(store, _LINEAGE, sources)
        _merge(found, await aread(store, "id", _without_original(found, sources)))
        deleted = 0
        for source, version, ids in _stale_versions(found):
            deleted += await _asweep(store, source, version, ids)
        return {"deleted": deleted}


def _sources(documents: list[Document]) -> list[str]:
    return [source_id_of(doc.id, doc.meta) for doc in documents]


def _version(documents: list[Document]) -> str:
    """A source's version in this run: a hash of its entries' ids, texts and meta (the version
    key aside), in id order; the same documents give the same version on every run."""
    digest = hashlib.sha256()
    for doc in sorted(documents, key=lambda d: d.id):
        meta = {k: v for k, v in doc.meta.items() if k != VERSION_KEY}
        entry = json.dumps([doc.id, doc.content, meta], sort_keys=True, default=str)
        digest.update(entry.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def _stamped(documents: list[Document]) -> list[Document]:
    """Copies of ``documents`` with their source's version in meta, originals first (stable)."""
    sources = _sources(documents)
    by_source: dict[str, list[Document]] = {}
    for doc, source in zip(documents, sources, strict=True):
        by_source.setdefault(source, []).append(doc)
    versions = {source: _version(docs) for source, docs in by_source.items()}
    out = [
        (doc.id != source, replace(doc, meta={**doc.meta, VERSION_KEY: versions[source]}))
        for doc, source in zip(documents, sources, strict=True)
    ]
    return [doc for _, doc in sorted(out, key=lambda pair: pair[0])]


def _without_original(found: dict[str, list[Document]], sources: list[str]) -> list[str]:
    """The sources whose original is not among ``found`` (one written without lineage)."""
    return [s for s in sources if not any(doc.id == s for doc in found.get(s, []))]


def _merge(found: dict[str, list[Document]], more: dict[str, list[Document]]) -> None:
    for source, docs in more.items():
        held = {doc.id for doc in found.get(source, [])}
        found.setdefault(source, []).extend(doc for doc in docs if doc.id not in held)


def _stale_versions(found: dict[str, list[Document]]) -> list[tuple[str, Any, list[str]]]:
    """``(source, version, view ids)`` for each version of a source's views other than its
    stored original's; a source whose original is not stored is left alone (it is being
    deleted, or its update has not written it yet)."""
    out: list[tuple[str, Any, list[str]]] = []
    for source, entries in found.items():
        original = next((doc for doc in entries if doc.id == source), None)
        if original is None:
            continue
        current = original.meta.get(VERSION_KEY)
        stale: dict[Any, list[str]] = {}
        for doc in entries:
            version = doc.meta.get(VERSION_KEY)
            if doc.id != source and version != current:
                stale.setdefault(version, []).append(doc.id)
        out.extend((source, version, sorted(ids)) for version, ids in stale.items())
    return out


def _stale_filter(source: str, version: str) -> dict[str, Any]:
    """The views of ``source`` of ``version``: what is stale, and nothing rewritten since."""
    return {
        "operator": "AND",
        "conditions": [
            {"field": _LINEAGE, "operator": "==", "value": source},
            {"field": f"meta.{VERSION_KEY}", "operator": "==", "value": version},
            {"field": f"meta.{VIEW_KEY}", "operator": "!=", "value": ORIGINAL},
        ],
    }


def _sweep(store: DocumentStore, source: str, version: Any, ids: list[str]) -> int:
    """Delete a source's views of a stale version: by filter where the store can (a view
    rewritten since with the current version is kept), else (or for views without a version,
    which not every store can filter on) by id."""
    by_filter = getattr(store, "delete_by_filter", None)
    if version is not None and callable(by_filter):
        try:
            return int(by_filter(_stale_filter(source, version)))
        except Exception as exc:  # a store that refuses the filter: by id
            logger.debug("delete_by_filter failed (%s: %s); by id", type(exc).__name__, exc)
    store.delete_documents(ids)
    return len(ids)


async def _asweep(store: DocumentStore, source: str, version: Any, ids: list[str]) -> int:
    """Async :func:`_sweep`: the store's async filter delete where it works, else the sync one."""
    by_filter = getattr(store, "delete_by_filter_async", None)
    if version is not None and callable(by_filter):
        try:
            return int(await by_filter(_stale_filter(source, version)))
        except Exception as exc:  # e.g. Chroma's async needs an HTTP client
            logger.debug("async delete_by_filter failed (%s: %s)", type(exc).__name__, exc)
    return await asyncio.to_thread(_sweep, store, source, version, ids)
