"""Any search as the KB: a framework's vector store, retriever or index answering by surface form.

Users often hold their knowledge already: a product wiki in a vector store, an ontology behind a
retriever. :class:`SearchKB` makes any ``search(query, k) -> hits`` a
:class:`~argus_ir.kb.KnowledgeBase`: a flagged mention's surface form is the query, each hit
becomes a :class:`~argus_ir.kb.Passage` whose id is the store's own id (so a view's lineage,
``argus_kb_id``, points back into the store). The adapters build one from their framework's
objects (a LangChain ``VectorStore`` or ``BaseRetriever``, a Haystack retriever component or
in-memory document store, a LlamaIndex retriever or index).

The ``fingerprint`` names the store's content in view ids and settings cards: the same
fingerprint with other content gives views the same ids, so give a new one when the store
changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from argus_ir._lru import LRU
from argus_ir.errors import ArgusInputError
from argus_ir.kb.reference import DEFAULT_K_AUG, LOOKUP_CACHE_SIZE, Passage
from argus_ir.text.grounding import normalize

__all__ = ["SearchKB"]

_KNOWS_DEPTH = 3
"""Hits asked for at least, so a titled passage just below the top is still found first."""

Search = Callable[[str, int], Sequence[tuple[Passage, float]]]
"""``(query, k) -> [(passage, score), ...]`` best first."""


class SearchKB:
    """A search function as a KB (see the module).

    Args:
        search: ``(query, k) -> [(Passage, score), ...]``, best first.
        fingerprint: The content's identity (view ids and settings cards carry it).
        name: What the stats and messages call it.

    A hit titled with the surface form itself comes first (the store is asked for at least three
    hits to find it). Lookups are cached per normalised surface form and ``k``; a search that
    raises is not cached (the remedy reports the document and keeps its original).
    """

    def __init__(self, search: Search, *, fingerprint: str, name: str = "store") -> None:
        if not fingerprint:
            raise ArgusInputError("a search KB needs a fingerprint naming its content")
        self.search = search
        self.fingerprint = fingerprint
        self.name = name
        self._seen: dict[str, Passage] = {}
        self._cache: LRU[tuple[str, int], list[tuple[Passage, float]]] = LRU(LOOKUP_CACHE_SIZE)

    def __len__(self) -> int:
        """Passages seen so far (a store's size is its own business)."""
        return len(self._seen)

    def passage(self, passage_id: str) -> Passage | None:
        """A passage some lookup returned (``None`` for any other id)."""
        return self._seen.get(passage_id)

    def knows(self, surface: str) -> bool:
        """Whether one of the top hits is titled with the surface form itself."""
        hits = self.lookup(surface, _KNOWS_DEPTH)
        return bool(hits) and normalize(hits[0][0].title) == normalize(surface)

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """The store's top ``k`` hits for the surface form, as passages with their scores."""
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        # one search per form for every k up to the depth knows() asks: a store is asked once
        depth = max(k, _KNOWS_DEPTH)
        key = (normalize(surface), depth)
        hit = self._cache.get(key)
        if hit is not None:
            return hit[:k]
        result = []
        for passage, score in list(self.search(surface, depth)):
            if not isinstance(passage, Passage):
                raise ArgusInputError(
                    f"{self.name}: search returned {type(passage).__name__}, not a Passage"
                )
            if not (passage.title.strip() or passage.text.strip()):
                continue  # an empty hit describes nothing
            self._seen.setdefault(passage.id, passage)
            result.append((passage, float(score)))
        # a passage titled with the form itself comes first, as in the BM25 KB
        titled = [r for r in result if normalize(r[0].title) == key[0]]
        result = titled[:1] + [r for r in result if r not in titled[:1]]
        self._cache[key] = result
        return result[:k]
