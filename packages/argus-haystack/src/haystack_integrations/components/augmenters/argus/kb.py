"""A Haystack retriever component or in-memory document store as argus's KB."""

from __future__ import annotations

from typing import Any

from haystack import Document
from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name
from haystack.document_stores.in_memory import InMemoryDocumentStore

from argus_ir.kb import Passage
from argus_ir.kb.search import SearchKB
from argus_ir.runners.integration import is_view

__all__ = ["is_store", "kb_from_dict", "kb_to_dict", "store_kb"]


def _is_component(obj: Any) -> bool:
    return hasattr(obj, "__haystack_input__") or hasattr(type(obj), "__haystack_input__")


def is_store(kb: Any) -> bool:
    """Whether ``kb`` is a Haystack object :func:`store_kb` can wrap."""
    return isinstance(kb, InMemoryDocumentStore) or (
        _is_component(kb) and callable(getattr(kb, "run", None))
    )


def store_kb(kb: Any, fingerprint: str | None = None) -> SearchKB:
    """Wrap a retriever component (``run(query=..., top_k=...)`` returning ``documents``) or an
    :class:`~haystack.document_stores.in_memory.InMemoryDocumentStore` (its BM25 retrieval).

    A hit's passage: id = the document's id, title = ``meta["title"]``, text = ``content``,
    description = ``meta["description"]``. Views argus wrote into the same store are skipped.

    Args:
        kb: The component or store.
        fingerprint: The content's identity in view ids (default: the object's class); give a new
            one when the store's content changes.
    """
    if isinstance(kb, InMemoryDocumentStore):
        store = kb

        def hits(query: str, k: int) -> list[Document]:
            return store.bm25_retrieval(query, top_k=2 * k)  # argus's own views dropped below

    elif is_store(kb):
        retriever = kb

        def hits(query: str, k: int) -> list[Document]:
            return list(retriever.run(query=query, top_k=2 * k)["documents"])

    else:
        raise TypeError(
            f"kb must be a retriever component or an InMemoryDocumentStore, got {type(kb).__name__}"
        )

    def search(query: str, k: int) -> list[tuple[Passage, float]]:
        found = [d for d in hits(query, k) if not is_view(d.meta)]
        return [(_passage(d), float(d.score or 0.0)) for d in found]

    name = f"haystack:{type(kb).__module__}.{type(kb).__qualname__}"
    return SearchKB(search, fingerprint=fingerprint or name, name=name)


def _passage(doc: Document) -> Passage:
    title, description = doc.meta.get("title"), doc.meta.get("description")
    return Passage(
        doc.id,
        title if isinstance(title, str) else "",
        doc.content or "",
        description if isinstance(description, str) else "",
    )


def kb_to_dict(kb: Any) -> Any:
    """``kb`` for the component's init parameters: a component or store as its own dict."""
    if isinstance(kb, InMemoryDocumentStore):
        return kb.to_dict()
    if is_store(kb):
        return component_to_dict(kb, "kb")
    return kb


def kb_from_dict(data: Any) -> Any:
    """The inverse of :func:`kb_to_dict` (a plain value passes through)."""
    if not (isinstance(data, dict) and "type" in data):
        return data
    cls = import_class_by_name(data["type"])
    if hasattr(cls, "__haystack_input__"):
        return component_from_dict(cls, data, "kb")
    return cls.from_dict(data)  # type: ignore[attr-defined]
