"""What a retrieved node's score means, read from the vector store behind it.

Collapse takes the view discount as a margin of cosine similarity. Most LlamaIndex stores score
by similarity already; llama-index-vector-stores-chroma reports ``exp(-distance)`` instead: the
right order, on a nonlinear scale (near a cosine of 0.5 a 0.02 step in it is about 0.03 of cosine). The
postprocessor turns each score back into a cosine-equivalent relevance before folding.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from argus_ir.collapse import COSINE_FROM_DISTANCE

__all__ = ["SCORES", "chroma_space", "is_chroma", "relevance_of"]

SCORES = ("auto", "similarity", "chroma")

# Chroma's distance for each space as a cosine of unit-length vectors
_CHROMA_COSINE = COSINE_FROM_DISTANCE


def _same(score: float) -> float:
    return score


def is_chroma(store: Any) -> bool:
    """Whether ``store`` is (a subclass of) llama-index's ``ChromaVectorStore``."""
    return any(cls.__name__ == "ChromaVectorStore" for cls in type(store).__mro__)


def chroma_space(store: Any) -> str:
    """The distance space of a ``ChromaVectorStore``'s collection (Chroma's default: ``"l2"``).

    Read from the collection's configuration (chromadb 1.x), else its ``hnsw:space`` metadata.
    """
    collection = getattr(store, "client", None)  # the store's chromadb Collection
    config = getattr(collection, "configuration", None)
    if isinstance(config, dict):
        for index in ("hnsw", "spann"):
            space = (config.get(index) or {}).get("space")
            if space:
                return str(space)
    metadata = getattr(collection, "metadata", None)
    if isinstance(metadata, dict) and metadata.get("hnsw:space"):
        return str(metadata["hnsw:space"])
    return "l2"


def relevance_of(scores: str, store: Any) -> Callable[[float], float]:
    """How to turn a node's score into a cosine-equivalent relevance (higher is better).

    Args:
        scores: ``"similarity"`` (kept as they are), ``"chroma"`` (``exp(-distance)`` turned
            back into a cosine by the collection's space; a cosine space when ``store`` is not
            a ``ChromaVectorStore``) or ``"auto"`` (``"chroma"`` when ``store`` is a
            ``ChromaVectorStore``, else ``"similarity"``).
        store: The vector store the nodes came from, or ``None``.

    Raises:
        ValueError: ``"chroma"`` when the space is not ``cosine``, ``l2`` or ``ip``.
    """
    if scores == "similarity" or (scores == "auto" and (store is None or not is_chroma(store))):
        return _same
    space = chroma_space(store) if store is not None and is_chroma(store) else "cosine"
    if space not in _CHROMA_COSINE:
        raise ValueError(
            f"cannot read Chroma scores of the space {space!r} (one of {sorted(_CHROMA_COSINE)}); "
            "set ArgusPostprocessor(scores='similarity')"
        )
    distance_to_cosine = _CHROMA_COSINE[space]

    def relevance(score: float) -> float:
        # the store's score is exp(-d): d = -ln(score); a score of 0 is the largest distance
        return distance_to_cosine(-math.log(max(score, sys.float_info.min)))

    return relevance
