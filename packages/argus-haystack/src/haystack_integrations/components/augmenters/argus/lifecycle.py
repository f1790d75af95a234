"""Replacing and deleting a document with its views: :func:`delete_sources`,
:class:`ArgusSourceCleaner`.

A view's id depends on its text, so writing a changed document again (``DuplicatePolicy.OVERWRITE``)
replaces the original but leaves its old views beside it, still answering with what the document
no longer says. Every entry argus writes names its source in ``meta["argus_source_id"]``: deleting
by that key removes a document and all its views, whatever their ids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore

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
    if not sources:
        return 0
    ids = _ids(read(document_store, _LINEAGE, sources))
    ids.update(_ids(read(document_store, "id", [s for s in sources if s not in ids])))
    if ids:
        document_store.delete_documents(sorted(ids))
    logger.debug("deleted %d entries of %d source(s)", len(ids), len(sources))
    return len(ids)


async def adelete_sources(document_store: DocumentStore, source_ids: Iterable[str]) -> int:
    """Async :func:`delete_sources`: the store's async methods where it has working ones (an
    embedded Qdrant store must not mix its sync and async clients), else the sync ones."""
    sources = list(dict.fromkeys(source_ids))
    if not sources:
        return 0
    ids = _ids(await aread(document_store, _LINEAGE, sources))
    ids.update(_ids(await aread(document_store, "id", [s for s in sources if s not in ids])))
    if ids:
        delete = getattr(document_store, "delete_documents_async", None)
        try:
            if not callable(delete):
                raise NotImplementedError
            await delete(sorted(ids))
        except Exception as exc:  # e.g. Chroma's async needs an HTTP client
            logger.debug(
                "async delete failed (%s: %s); deleting synchronously", type(exc).__name__, exc
            )
            await asyncio.to_thread(document_store.delete_documents, sorted(ids))
    return len(ids)


def _ids(found: dict[str, list[Document]]) -> set[str]:
    return {doc.id for docs in found.values() for doc in docs}


@component
class ArgusSourceCleaner:
    """Delete from a store what it holds of the incoming documents' sources, before they are
    written again.

    Put it right before the ``DocumentWriter`` (after :class:`ArgusAugmenter`): for each source
    among the incoming documents (an original's own id, a view's ``argus_source_id``) the stored
    original and all its views are deleted, then the documents pass on unchanged and the writer
    stores the new ones. An updated document so leaves no stale view behind. To delete a document
    for good, call :func:`delete_sources`.

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
        """Delete the stored entries of the documents' sources.

        :param documents: The documents about to be written (not modified).
        :returns: ``documents``, as they came, and ``deleted``: how many stored entries went.
        """
        deleted = delete_sources(self._store(), _sources(documents))
        return {"documents": documents, "deleted": deleted}

    @component.output_types(documents=list[Document], deleted=int)
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Async :meth:`run`.

        :param documents: The documents about to be written (not modified).
        :returns: As :meth:`run`.
        """
        deleted = await adelete_sources(self._store(), _sources(documents))
        return {"documents": documents, "deleted": deleted}

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
