"""The context check (beyond the paper): drop KB passages about another sense of the name."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from argus_ir._lru import LRU
from argus_ir.errors import ArgusInputError
from argus_ir.kb import Passage
from argus_ir.remedy.texts import masked_passage

__all__ = ["CONTEXT_CACHE_SIZE", "DEFAULT_CONTEXT_THRESHOLD", "ContextCheck"]

CONTEXT_CACHE_SIZE = 20_000
"""Passage vectors a :class:`ContextCheck` keeps (least recently used forgotten first)."""

DEFAULT_CONTEXT_THRESHOLD = 0.15
"""A starting point for :class:`ContextCheck`, set from a handful of hand-checked pairs under MiniLM."""


class ContextCheck:
    """Drops KB passages about another sense of the name (beyond the paper).

    A passage is kept when the cosine between the document's vector and the passage's vector is at
    least ``threshold``. The passage is embedded with the words of its title and of the entity's
    surface form removed: the name is shared by construction, and leaving it in lets the name alone
    carry the similarity ("half past nine" then looks close to the album *Half Past Nine*).

    Args:
        embed: Texts -> ``(n, dim)`` document vectors from the same retriever that produced the
            diagnoses' ``doc_vector`` (e.g. ``encoder.embed_documents``).
        threshold: Lowest cosine to keep a passage (:data:`DEFAULT_CONTEXT_THRESHOLD` is a starting
            point, not a tuned value).

    Passage vectors are cached per (passage, surface form), the last
    :data:`CONTEXT_CACHE_SIZE` of them.
    """

    def __init__(
        self, embed: Callable[[list[str]], np.ndarray], threshold: float = DEFAULT_CONTEXT_THRESHOLD
    ) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ArgusInputError(f"the context threshold is a cosine in [-1, 1], got {threshold}")
        self.embed = embed
        self.threshold = float(threshold)
        self._vectors: LRU[tuple[str, str], np.ndarray] = LRU(CONTEXT_CACHE_SIZE)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_vectors": LRU(CONTEXT_CACHE_SIZE)}

    def prepare(self, pairs: Iterable[tuple[Passage, str]]) -> None:
        """Embed the (passage, surface form) pairs not seen yet, in one batch."""
        new = {(p.id, s): masked_passage(p, s) for p, s in pairs if (p.id, s) not in self._vectors}
        if not new:
            return
        vectors = np.asarray(self.embed(list(new.values())), np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        for key, vector in zip(new, vectors):
            self._vectors[key] = vector

    def similarity(self, doc_vector: np.ndarray, passage: Passage, surface: str) -> float:
        """Cosine between the document and the passage with the name masked."""
        self.prepare([(passage, surface)])
        vector = self._vectors.get((passage.id, surface))
        assert vector is not None  # prepare() just made it the most recent entry
        norm = float(np.linalg.norm(doc_vector))
        return float(vector @ doc_vector) / (norm or 1.0)

    def keeps(self, doc_vector: np.ndarray, passage: Passage, surface: str) -> bool:
        return self.similarity(doc_vector, passage, surface) >= self.threshold
