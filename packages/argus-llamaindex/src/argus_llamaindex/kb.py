"""A LlamaIndex retriever or index as argus's KB: :func:`store_kb`."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.indices.base import BaseIndex
from llama_index.core.schema import MetadataMode, NodeWithScore

from argus_ir.kb import Passage
from argus_ir.kb.search import SearchKB
from argus_ir.runners.integration import is_view

__all__ = ["is_store", "store_kb"]


def is_store(kb: Any) -> bool:
    """Whether ``kb`` is a LlamaIndex object :func:`store_kb` can wrap."""
    return isinstance(kb, BaseRetriever | BaseIndex)


def store_kb(kb: BaseRetriever | BaseIndex, fingerprint: str | None = None) -> SearchKB:
    """Wrap a retriever (``retrieve``; its own top k applies) or an index (asked through
    ``as_retriever(similarity_top_k=...)``).

    A hit's passage: id = the node id, title = ``metadata["title"]``, text = the node's text
    without metadata, description = ``metadata["description"]``. Views argus wrote into the same
    index are skipped.

    Args:
        kb: The retriever or index.
        fingerprint: The content's identity in view ids (default: the object's class); give a new
            one when the index's content changes.
    """
    if isinstance(kb, BaseIndex):
        index = kb

        def hits(query: str, k: int) -> list[NodeWithScore]:
            return list(index.as_retriever(similarity_top_k=2 * k).retrieve(query))

    elif isinstance(kb, BaseRetriever):
        retriever = kb

        def hits(query: str, k: int) -> list[NodeWithScore]:
            return list(retriever.retrieve(query))

    else:
        raise TypeError(f"kb must be a LlamaIndex retriever or index, got {type(kb).__name__}")

    def search(query: str, k: int) -> list[tuple[Passage, float]]:
        found = [h for h in hits(query, k) if not is_view(h.node.metadata)]
        return [(_passage(h), float(h.score or 0.0)) for h in found]

    name = f"llamaindex:{type(kb).__module__}.{type(kb).__qualname__}"
    return SearchKB(search, fingerprint=fingerprint or name, name=name)


def _passage(hit: NodeWithScore) -> Passage:
    meta = hit.node.metadata
    title, description = meta.get("title"), meta.get("description")
    return Passage(
        hit.node.node_id,
        title if isinstance(title, str) else "",
        hit.node.get_content(metadata_mode=MetadataMode.NONE),
        description if isinstance(description, str) else "",
    )
