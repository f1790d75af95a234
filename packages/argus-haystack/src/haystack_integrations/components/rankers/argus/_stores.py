"""What the argus components need from a document store, asked the way each store accepts.

Not every store takes every filter: chroma-haystack takes only ``==`` on ids. A batch is asked
with one ``in`` filter (or ``get_documents_by_id``), and value by value with ``==`` when the store
refuses it. A read that fails raises (naming the store): only a read that succeeds and finds
nothing may leave a value out. :func:`twin_store` finds the live store a pipeline's other
components hold.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError

from argus_ir.errors import StoreReadError

__all__ = ["DocumentStoreReadError", "aread", "read", "twin_store"]

logger = logging.getLogger(__name__)


class DocumentStoreReadError(StoreReadError, DocumentStoreError):
    """A read of a Haystack document store that failed: Haystack's ``DocumentStoreError``, and
    argus's :class:`~argus_ir.errors.StoreReadError` as LangChain and LlamaIndex raise it."""


def read(store: Any, field: str, values: Sequence[str]) -> dict[str, list[Document]]:
    """The stored entries whose ``field`` (``"id"`` or ``"meta.<key>"``) is one of ``values``.

    Args:
        store: A Haystack document store.
        field: The filter field.
        values: The values asked for.

    Returns:
        For each value that matched, its entries.

    Raises:
        DocumentStoreReadError: A read failed (the store is down, say); the message names the
            store. It is a ``DocumentStoreError`` and a ``StoreReadError``.
    """
    wanted = list(dict.fromkeys(values))
    if not wanted:
        return {}
    try:
        return _read(store, field, wanted)
    except Exception as exc:
        raise DocumentStoreReadError(
            f"could not read from {type(store).__name__} the entries whose {field} is one of "
            f"{len(wanted)} value(s) ({type(exc).__name__}: {exc}); nothing was left out for it"
        ) from exc


def _read(store: Any, field: str, wanted: list[str]) -> dict[str, list[Document]]:
    by_id = getattr(store, "get_documents_by_id", None)
    if field == "id" and callable(by_id):
        try:
            return _group(by_id(wanted), field, wanted)
        except Exception as exc:  # the filters below may still work
            logger.debug("get_documents_by_id failed (%s: %s)", type(exc).__name__, exc)
    try:
        return _group(store.filter_documents(filters=_any_of(field, wanted)), field, wanted)
    except (FilterError, ValueError) as exc:
        logger.debug(
            "%s refused an 'in' filter on %s (%s: %s); asking value by value",
            type(store).__name__,
            field,
            type(exc).__name__,
            exc,
        )
    found: dict[str, list[Document]] = {}
    for value in wanted:  # a failed read raises: its value is not known to be gone
        one = {"field": field, "operator": "==", "value": value}
        found.update(_group(store.filter_documents(filters=one), field, [value]))
    return found


async def aread(store: Any, field: str, values: Sequence[str]) -> dict[str, list[Document]]:
    """:func:`read` through the store's async readers; on any failure, the sync path."""
    wanted = list(dict.fromkeys(values))
    if not wanted:
        return {}
    by_id = getattr(store, "get_documents_by_id_async", None)
    reader = getattr(store, "filter_documents_async", None)
    try:
        if field == "id" and callable(by_id):
            return _group(await by_id(wanted), field, wanted)
        if callable(reader):
            return _group(await reader(filters=_any_of(field, wanted)), field, wanted)
    except Exception as exc:  # e.g. Chroma's async needs an HTTP client
        logger.debug(
            "%s's async reader failed (%s: %s); reading synchronously",
            type(store).__name__,
            type(exc).__name__,
            exc,
        )
    return await asyncio.to_thread(read, store, field, wanted)


def _any_of(field: str, values: list[str]) -> dict[str, Any]:
    return {"field": field, "operator": "in", "value": values}


def _group(docs: list[Document], field: str, values: list[str]) -> dict[str, list[Document]]:
    wanted = set(values)
    out: dict[str, list[Document]] = {}
    for doc in docs:
        value = doc.id if field == "id" else doc.meta.get(field.removeprefix("meta."))
        if value in wanted:
            out.setdefault(value, []).append(doc)
    return out


def twin_store(pipeline: Any, store: Any) -> Any | None:
    """Another component's store of the same class that serialises as ``store`` does.

    After ``Pipeline.loads`` every component holds its own copy of a store; an embedded store
    (Qdrant's local mode) opens its folder for one client only, so the copies must not both open.
    """
    try:
        mine = store.to_dict()
        for _, other in pipeline.walk():
            for name in ("document_store", "_document_store"):  # retrievers use either
                candidate = getattr(other, name, None)
                if candidate is None or candidate is store:  # this component's own, or shared
                    continue
                if type(candidate) is type(store) and candidate.to_dict() == mine:
                    return candidate
    except Exception as exc:  # a store that cannot serialise is not compared
        logger.debug("could not compare document stores (%s: %s)", type(exc).__name__, exc)
    return None
