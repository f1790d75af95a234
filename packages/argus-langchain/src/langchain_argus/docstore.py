"""The docstore half of LangChain's parent-document patterns: :class:`ArgusDocstore`."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables.config import run_in_executor
from langchain_core.stores import BaseStore
from langchain_core.vectorstores import VectorStore

from argus_ir.collapse import (
    Resolved,
    Steps,
    aread_originals,
    is_view_entry,
    read_originals,
    resolve_sources,
    same_scope,
    warn_refused,
)
from argus_ir.errors import ArgusInputError, StoreReadError
from langchain_argus._reads import _shown_ids, aread_by_ids, read_by_ids
from langchain_argus.retriever import STORE_KEYS, _doc_id, _own_originals

__all__ = ["ArgusDocstore"]

logger = logging.getLogger(__name__)

_Entry = tuple[str, Document]
"""An entry read for a key: the key (its id in the store) and the document stored under it."""


class ArgusDocstore(BaseStore[str, Document]):
    """A LangChain docstore that reads documents from the vector store itself, by id.

    Give it to ``MultiVectorRetriever`` or ``ParentDocumentRetriever`` as ``docstore``, over the
    same vector store they search: the parent documents live in that store next to the entries
    that point at them, with no second copy to keep in step.

    Keys are entry ids. ``mget`` reads the entry stored under each key with ``get_by_ids``; an
    original (or any document without argus lineage) is returned as it is; an argus *view* is
    returned as its source's original, under the rule every argus adapter applies
    (:func:`argus_ir.collapse.resolve_sources`): only when that original carries the view's
    metadata (lineage keys, ``id_key`` and the keys a store adds aside). A view whose original
    does not, or whose original the store does not hold, maps to ``None``; a refused view is
    logged. So a view that passed the search's filter never brings in a document the filter
    excludes, and a view with hand-written lineage lifts nothing. Within one ``mget``, a source
    reached by several keys is returned for the first of them only (``None`` for the others),
    so a retriever that lists hits in rank order returns each original once, at its best rank.

    ``mset`` writes documents into the vector store under their keys, each with its own key in
    ``metadata[id_key]``: ``MultiVectorRetriever`` (whose ``id_key`` must be the same) then maps
    a hit on a parent to the parent itself, and a hit on a view to the view's key, which ``mget``
    resolves. Add argus's output through ``mset`` (``docstore.mset([(d.id, d) for d in docs])``)
    to search it with ``MultiVectorRetriever``; ``ParentDocumentRetriever.add_documents`` calls
    ``mset`` for its parents itself. ``mdelete`` deletes by id. Listing keys is not something a
    vector store offers: ``yield_keys`` raises ``NotImplementedError``.

    Reads that fail raise :class:`~argus_ir.errors.StoreReadError` (an outage is not an absent
    document). The async methods use the store's async API, or the sync one in a worker thread
    for a store built for sync calls only (langchain-postgres's ``PGVector`` without an async
    engine).

    Args:
        vectorstore: The store to read and write; it must implement ``get_by_ids``.
        id_key: The metadata key ``mset`` writes each entry's own key under (default
            ``"doc_id"``, ``MultiVectorRetriever``'s default ``id_key``); ``None`` writes none.

    Raises:
        ArgusInputError: The store has no ``get_by_ids``.

    Example:
        >>> docstore = ArgusDocstore(store)  # doctest: +SKIP
        >>> docstore.mset([(d.id, d) for d in argus.transform_documents(docs)])  # doctest: +SKIP
        >>> retriever = MultiVectorRetriever(vectorstore=store, docstore=docstore)  # doctest: +SKIP
        >>> retriever.invoke("the actor who starred in Casablanca")  # doctest: +SKIP
    """

    def __init__(self, vectorstore: VectorStore, *, id_key: str | None = "doc_id") -> None:
        if type(vectorstore).get_by_ids is VectorStore.get_by_ids:
            raise ArgusInputError(
                f"{type(vectorstore).__name__} cannot read documents by id (its get_by_ids is "
                "not implemented): ArgusDocstore reads every document it returns that way"
            )
        if id_key is not None and (not isinstance(id_key, str) or not id_key):
            raise ArgusInputError(f"id_key must be a non-empty string or None, got {id_key!r}")
        self.vectorstore = vectorstore
        self.id_key = id_key
        self._ignore = (*STORE_KEYS, *((id_key,) if id_key else ()))

    # reading -----------------------------------------------------------------------------------

    def mget(self, keys: Sequence[str]) -> list[Document | None]:
        keys = list(keys)
        return self._answer(keys, self._resolve(keys))

    async def amget(self, keys: Sequence[str]) -> list[Document | None]:
        if getattr(self.vectorstore, "async_mode", None) is False:
            return await run_in_executor(None, self.mget, keys)
        keys = list(keys)
        return self._answer(keys, await self._aresolve(keys))

    def _resolve(self, keys: list[str]) -> dict[str, tuple[str, Document]]:
        """Each key that resolves, with its source's id and original (:meth:`_by_key`)."""
        entries = self._entries(keys, self._read(_wanted(keys)))
        resolved, fetched = read_originals(
            self._steps(entries), self._read_originals, lambda d: d.metadata
        )
        return self._by_key(resolved, fetched)

    async def _aresolve(self, keys: list[str]) -> dict[str, tuple[str, Document]]:
        """:meth:`_resolve` through the store's async API."""
        entries = self._entries(keys, await self._aread(_wanted(keys)))
        resolved, fetched = await aread_originals(
            self._steps(entries), self._aread_originals, lambda d: d.metadata
        )
        return self._by_key(resolved, fetched)

    def _read(self, ids: list[str]) -> list[Document]:
        if not ids:
            return []
        try:
            return read_by_ids(self.vectorstore, ids)
        except Exception as exc:  # an outage is not "no such document": never answer None on it
            raise self._failed(ids, exc) from exc

    async def _aread(self, ids: list[str]) -> list[Document]:
        if not ids:
            return []
        try:
            return await aread_by_ids(self.vectorstore, ids)
        except Exception as exc:  # as in _read
            raise self._failed(ids, exc) from exc

    def _read_originals(self, ids: list[str]) -> dict[str, Document]:
        return _own_originals(self.vectorstore, self._read(ids), ids)

    async def _aread_originals(self, ids: list[str]) -> dict[str, Document]:
        return _own_originals(self.vectorstore, await self._aread(ids), ids)

    def _entries(self, keys: list[str], found: Sequence[Document]) -> list[_Entry]:
        """The entry stored under each distinct key, in the keys' order: a view, or an original
        of its own id. An entry whose ``argus_source_id`` names another document is left out (and
        logged), as keys not found are: under a key, an entry is that key's document or nothing,
        whatever its metadata claims."""
        by_id = _own_originals(self.vectorstore, found, keys)
        for doc in found:
            doc_id = _doc_id(doc)
            if doc_id is not None and is_view_entry(doc.metadata, doc_id):
                by_id.setdefault(doc_id, doc)
        return [(key, by_id[key]) for key in dict.fromkeys(keys) if key in by_id]

    def _steps(self, entries: list[_Entry]) -> Steps[_Entry]:
        """The core's rule over the entries, as hits in the keys' order (no scores)."""
        return resolve_sources(
            entries,
            id_of=lambda e: e[0],
            metadata_of=lambda e: e[1].metadata,
            score_of=lambda e: None,
            ignore_keys=self._ignore,
        )

    def _answer(
        self, keys: list[str], by_key: Mapping[str, tuple[str, Document]]
    ) -> list[Document | None]:
        """Each key's original; ``None`` for a key not found, refused, dropped or repeated."""
        out: list[Document | None] = []
        served: set[str] = set()
        for key in keys:
            found = by_key.get(key)
            if found is None or found[0] in served:
                out.append(None)
                continue
            served.add(found[0])
            out.append(found[1])
        return out

    def _by_key(
        self, resolved: Resolved[_Entry], fetched: Mapping[str, Document]
    ) -> dict[str, tuple[str, Document]]:
        """Each key that resolved: its source's id and original (as given to ``mset``); the
        refused and dropped views are logged."""
        by_key: dict[str, tuple[str, Document]] = {}
        for f in resolved.sources:
            original = self._unstamped(
                f.original[1] if f.original is not None else fetched[f.source_id]
            )
            for key, _ in f.hits:
                by_key[key] = (f.source_id, original)
        warn_refused(logger, resolved.refused)
        if resolved.dropped:
            logger.warning(
                "%d view(s) map to no document: the store does not hold their source's original "
                "(%s)",
                len(resolved.dropped),
                ", ".join(map(repr, resolved.dropped)),
            )
        return by_key

    # the hits that name a parent ---------------------------------------------------------------

    def parents_of(self, hits: Sequence[Document], id_key: str = "doc_id") -> list[Document]:
        """The parents the hits of a search name in ``metadata[id_key]``, each once, in the order
        of the first hit that may bring it in.

        ``mget`` sees keys only, so whoever writes an entry straight into the store with another
        document's id in ``id_key`` gets that document from a plain ``MultiVectorRetriever``,
        whatever filter the search ran with. Here the hit itself is put to the scope rule: it
        brings in its key's document only when that document (the original, for a view's key)
        carries the hit's metadata, ``id_key``, argus's lineage and the keys a store adds aside
        (:func:`argus_ir.collapse.same_scope`), which every entry that a parent's own ``mset``,
        ``ParentDocumentRetriever``'s children or argus's views write does. A refused hit is
        logged. :class:`~langchain_argus.parents.ArgusMultiVectorRetriever` and
        :class:`~langchain_argus.parents.ArgusParentDocumentRetriever` call this.
        """
        return self._in_scope(hits, id_key, self._resolve(_named(hits, id_key)))

    async def aparents_of(self, hits: Sequence[Document], id_key: str = "doc_id") -> list[Document]:
        """:meth:`parents_of` through the store's async API."""
        if getattr(self.vectorstore, "async_mode", None) is False:
            return await run_in_executor(None, self.parents_of, hits, id_key)
        return self._in_scope(hits, id_key, await self._aresolve(_named(hits, id_key)))

    def _in_scope(
        self,
        hits: Sequence[Document],
        id_key: str,
        by_key: Mapping[str, tuple[str, Document]],
    ) -> list[Document]:
        ignore = (*STORE_KEYS, id_key, *((self.id_key,) if self.id_key else ()))
        out: list[Document] = []
        served: set[str] = set()
        refused: list[str] = []
        for hit in hits:
            key = (hit.metadata or {}).get(id_key)
            found = by_key.get(key) if isinstance(key, str) else None
            if found is None or found[0] in served:
                continue
            if not same_scope(hit.metadata, found[1].metadata, ignore):
                refused.append(f"{_doc_id(hit) or '(no id)'} -> {key}")
                continue
            served.add(found[0])
            out.append(found[1])
        if refused:
            logger.warning(
                "%d hit(s) name a parent whose metadata they do not carry; the parent is not "
                "brought in by them (hit -> %s): %s",
                len(refused),
                id_key,
                _shown_ids(refused),
            )
        return out

    def _unstamped(self, doc: Document) -> Document:
        """The document as it was given to ``mset``: without the ``id_key`` it wrote."""
        doc_id = _doc_id(doc)
        meta = doc.metadata or {}
        if self.id_key is None or self.id_key not in meta or meta[self.id_key] != doc_id:
            return doc
        rest = {k: v for k, v in meta.items() if k != self.id_key}
        return doc.model_copy(update={"metadata": rest, "id": doc_id})

    def _failed(self, ids: list[str], exc: BaseException) -> StoreReadError:
        shown = _shown_ids(ids)
        return StoreReadError(
            f"{type(self.vectorstore).__name__}.get_by_ids failed ({type(exc).__name__}: {exc}) "
            f"reading {len(ids)} document(s) for ArgusDocstore ({shown})"
        )

    # writing -----------------------------------------------------------------------------------

    def _stamped(self, pairs: Sequence[tuple[str, Document]]) -> tuple[list[Document], list[str]]:
        docs, ids = [], []
        for key, doc in pairs:
            if not isinstance(key, str) or not key:
                raise ArgusInputError(f"ArgusDocstore keys are entry ids (strings), got {key!r}")
            meta: dict[str, Any] = dict(doc.metadata or {})
            if self.id_key is not None:
                meta[self.id_key] = key
            docs.append(doc.model_copy(update={"id": key, "metadata": meta}))
            ids.append(key)
        return docs, ids

    def mset(self, key_value_pairs: Sequence[tuple[str, Document]]) -> None:
        docs, ids = self._stamped(list(key_value_pairs))
        if docs:
            self.vectorstore.add_documents(docs, ids=ids)

    async def amset(self, key_value_pairs: Sequence[tuple[str, Document]]) -> None:
        if getattr(self.vectorstore, "async_mode", None) is False:
            await run_in_executor(None, self.mset, key_value_pairs)
            return
        docs, ids = self._stamped(list(key_value_pairs))
        if docs:
            await self.vectorstore.aadd_documents(docs, ids=ids)

    def mdelete(self, keys: Sequence[str]) -> None:
        if keys:
            self.vectorstore.delete(ids=list(keys))

    async def amdelete(self, keys: Sequence[str]) -> None:
        if getattr(self.vectorstore, "async_mode", None) is False:
            await run_in_executor(None, self.mdelete, keys)
        elif keys:
            await self.vectorstore.adelete(ids=list(keys))

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        raise NotImplementedError(
            "ArgusDocstore cannot list keys: a vector store has no generic listing of its ids"
        )


def _named(hits: Sequence[Document], id_key: str) -> list[str]:
    """The keys the hits name in ``id_key``, each once, in rank order."""
    named = ((h.metadata or {}).get(id_key) for h in hits)
    return list(dict.fromkeys(k for k in named if isinstance(k, str) and k))


def _wanted(keys: list[str]) -> list[str]:
    return [k for k in dict.fromkeys(keys) if isinstance(k, str) and k]
