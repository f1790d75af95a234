"""Replacing and deleting a document with its views: :func:`delete_sources`,
:class:`ArgusSourceCleaner`.

A view's id depends on its text, so writing a changed document again (``DuplicatePolicy.OVERWRITE``)
replaces the original but leaves its old views beside it, still answering with what the document
no longer says. Every entry argus writes names its source in ``meta["argus_source_id"]``: deleting
by that key removes a document and all its views, whatever their ids.

The cleaner deletes only what the incoming documents do not write again (an entry of their
sources whose id is not among theirs); the writer overwrites the rest in place. A process killed
between the two so leaves every unchanged entry where it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from argus_ir.collapse import source_id_of
from argus_ir.lineage import SOURCE_KEY
from haystack_integrations.components.rankers.argus._stores import aread, read, twin_store

__all__ = ["ArgusSourceCleaner", "adelete_sources", "delete_sources"]

logger = logging.getLogger(__name__)

_LINEAGE = f"meta.{SOURCE_KEY}"


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


@component
class ArgusSourceCleaner:
    """Delete from a store what it holds of the incoming documents' sources and they do not write
    again, before they are written.

    Put it right before a ``DocumentWriter`` with ``policy=DuplicatePolicy.OVERWRITE`` (after
    :class:`ArgusAugmenter`): for each source among the incoming documents (an original's own id,
    a view's ``argus_source_id``), the stored entries whose ids are not among the incoming ones
    (an updated document's old views) are deleted; the documents pass on unchanged and the writer
    overwrites the rest in place. An updated document so leaves no stale view behind, and a
    process killed between the cleaner and the writer leaves every unchanged entry in the store
    (a rerun completes the update). Every document of a source must come in the same run: an
    entry of the source that is not among them is deleted. To delete a document for good, call
    :func:`delete_sources`.

    In a pipeline it uses the store object of another component of the same class and settings
    (the writer's), as :class:`ArgusCollapser` does.

    Usage:
        >>> from haystack_integrations.components.augmenters.argus import ArgusSourceCleaner
        >>> pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))  # doctest: +SKIP
        >>> pipe.connect("embedder.documents", "cleaner.documents")  # doctest: +SKIP
        >>> pipe.connect("cleaner.documents", "writer.documents")  # doctest: +SKIP
    """

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
    def from_dict(cls, data: dict[str, Any]) -> ArgusSourceCleaner:
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], deleted=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Delete the stored entries of the documents' sources that they do not write again.

        :param documents: The documents about to be written (not modified).
        :returns: ``documents``, as they came, and ``deleted``: how many stored entries went.
        :raises ValueError: In a pipeline, a ``DocumentWriter`` after it that does not overwrite
            (the entries kept would be skipped, or refused as duplicates).
        """
        store = self._store()
        self._check_writer()
        stale = _held(store, _sources(documents)) - {doc.id for doc in documents}
        if stale:
            store.delete_documents(sorted(stale))
        return {"documents": documents, "deleted": len(stale)}

    @component.output_types(documents=list[Document], deleted=int)
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Async :meth:`run`.

        :param documents: The documents about to be written (not modified).
        :returns: As :meth:`run`.
        """
        store = self._store()
        self._check_writer()
        stale = await _aheld(store, _sources(documents)) - {doc.id for doc in documents}
        await _adelete(store, stale)
        return {"documents": documents, "deleted": len(stale)}

    def _check_writer(self) -> None:
        """Refuse a ``DocumentWriter`` fed by this cleaner that does not overwrite."""
        pipeline = getattr(self, "__haystack_added_to_pipeline__", None)
        name = getattr(self, "__component_name__", None)
        if pipeline is None or name is None:
            return
        for _, receiver, edge in pipeline.graph.out_edges(name, data=True):
            writer = pipeline.get_component(receiver)
            if edge["from_socket"].name != "documents" or not any(
                cls.__name__ == "DocumentWriter" for cls in type(writer).__mro__
            ):
                continue
            policy = getattr(writer, "policy", None)
            if policy != DuplicatePolicy.OVERWRITE:
                raise ValueError(
                    f"ArgusSourceCleaner keeps the stored entries its documents write again, so "
                    f"the writer after it must overwrite them: {receiver!r} has policy={policy}; "
                    "use DocumentWriter(..., policy=DuplicatePolicy.OVERWRITE)"
                )

    def _store(self) -> DocumentStore:
        if not self._shared:
            pipeline = getattr(self, "__haystack_added_to_pipeline__", None)
            if pipeline is not None:
                self._shared = True
                self.document_store = (
                    twin_store(pipeline, self.document_store) or self.document_store
                )
        return self.document_store


def _sources(documents: list[Document]) -> list[str]:
    return [source_id_of(doc.id, doc.meta) for doc in documents]
