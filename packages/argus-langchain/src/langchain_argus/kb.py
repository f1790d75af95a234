"""A LangChain vector store or retriever as argus's KB: :func:`store_kb`."""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from argus_ir.kb import Passage
from argus_ir.kb.search import SearchKB
from argus_ir.runners.integration import is_view

__all__ = ["is_store", "store_kb"]


def is_store(kb: Any) -> bool:
    """Whether ``kb`` is a LangChain object :func:`store_kb` can wrap."""
    return isinstance(kb, VectorStore | BaseRetriever)


def store_kb(kb: VectorStore | BaseRetriever, fingerprint: str | None = None) -> SearchKB:
    """Wrap a vector store (``similarity_search_with_score``, else ``similarity_search``) or a
    retriever (``invoke``; its own ``k`` applies, the first ``k_aug`` hits are kept).

    A hit's passage: id = the document's ``id`` (else a hash of its text), title = its
    ``metadata["title"]``, text = ``page_content``, description = ``metadata["description"]``.
    Views argus wrote into the same store are skipped (a view is no knowledge).

    Args:
        kb: The store or retriever.
        fingerprint: The content's identity in view ids (default: the object's class); give a new
            one when the store's content changes.
    """
    if isinstance(kb, VectorStore):
        store = kb

        def search(query: str, k: int) -> list[tuple[Passage, float]]:
            try:  # twice k: argus's own views in the store are dropped below
                hits = store.similarity_search_with_score(query, k=2 * k)
            except NotImplementedError:
                hits = [(d, 0.0) for d in store.similarity_search(query, k=2 * k)]
            return [(_passage(d), float(s)) for d, s in hits if not is_view(d.metadata)]

    elif isinstance(kb, BaseRetriever):
        retriever = kb

        def search(query: str, k: int) -> list[tuple[Passage, float]]:
            docs = [d for d in retriever.invoke(query) if not is_view(d.metadata)]
            return [(_passage(d), float(len(docs) - i)) for i, d in enumerate(docs[:k])]

    else:
        raise TypeError(f"kb must be a VectorStore or BaseRetriever, got {type(kb).__name__}")
    name = f"langchain:{type(kb).__module__}.{type(kb).__qualname__}"
    return SearchKB(search, fingerprint=fingerprint or name, name=name)


def _passage(doc: Document) -> Passage:
    meta = doc.metadata
    pid = doc.id or str(meta.get("id") or "")
    if not pid:
        pid = (
            "sha256:" + hashlib.sha256(doc.page_content.encode("utf-8", "replace")).hexdigest()[:16]
        )
    title = meta.get("title")
    description = meta.get("description")
    return Passage(
        pid,
        title if isinstance(title, str) else "",
        doc.page_content,
        description if isinstance(description, str) else "",
    )
