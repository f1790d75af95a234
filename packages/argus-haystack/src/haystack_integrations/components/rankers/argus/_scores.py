"""What a retriever's ``Document.score`` means, read from the store behind it.

Collapse ranks higher-is-better. Stores differ: chroma-haystack puts Chroma's raw *distance* in
``Document.score`` for every metric (lower is better); pgvector-haystack gives a similarity for
``cosine_similarity`` and ``inner_product`` but the plain Euclidean *distance* for
``l2_distance``; Qdrant and the in-memory store give similarities. The collapser turns each score
into a relevance before folding, so the view discount is taken on one scale: cosine similarity
for unit-length embeddings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argus_ir.collapse import COSINE_FROM_DISTANCE

__all__ = ["SCORES", "relevance_of"]

SCORES = ("auto", "similarity", "distance")

# Chroma's distance for each space, turned back into the cosine of unit-length vectors
_CHROMA = COSINE_FROM_DISTANCE


def _same(score: float) -> float:
    return score


def _one_minus(score: float) -> float:
    return 1.0 - score


def _from_l2(score: float) -> float:
    """The cosine of two unit vectors at plain Euclidean distance ``score`` (d² = 2 - 2 cos)."""
    return 1.0 - score * score / 2.0


# pgvector-haystack's vector_function -> its score turned into the cosine of unit vectors
_PGVECTOR: dict[str, Callable[[float], float]] = {
    "cosine_similarity": _same,
    "inner_product": _same,
    "l2_distance": _from_l2,
}


def _is_pgvector(store: Any) -> bool:
    """A ``PgvectorDocumentStore``, or a subclass of it (a cloud connector's, say)."""
    return any(cls.__name__ == "PgvectorDocumentStore" for cls in type(store).__mro__)


def _chroma_space(store: Any) -> str | None:
    """The space of a Chroma store's collection: the live collection's, else its settings'."""
    collection = getattr(store, "_collection", None)  # set once the store has been used
    live = getattr(collection, "metadata", None) if collection is not None else None
    if isinstance(live, dict) and live.get("hnsw:space"):
        return str(live["hnsw:space"])
    params = store.to_dict().get("init_parameters", {})
    chosen = (params.get("metadata") or {}).get("hnsw:space")  # wins over distance_function
    space = chosen or params.get("distance_function")
    return None if space is None else str(space)


def _is_chroma(store: Any) -> bool:
    if type(store).__name__ == "ChromaDocumentStore":
        return True
    to_dict = getattr(store, "to_dict", None)  # a wrapper that serialises as a Chroma store
    try:
        kind = to_dict().get("type", "") if callable(to_dict) else ""
    except Exception:  # a store that cannot serialise is not read as Chroma
        return False
    return str(kind).endswith("ChromaDocumentStore")


def relevance_of(scores: str, store: Any) -> Callable[[float], float]:
    """How to turn a retriever's score into a relevance (higher is better).

    Args:
        scores: ``"similarity"`` (kept as they are), ``"distance"`` (the store's metric when it
            is a Chroma or pgvector store, else ``1 - score``) or ``"auto"`` (a Chroma store's
            distances by its space, a pgvector store's scores by its ``vector_function``:
            ``l2_distance`` gives ``1 - d²/2``, the others are similarities; any other store, or
            none, gives similarities).
        store: The collapser's document store, or ``None``.

    Raises:
        ValueError: A Chroma store whose space is not ``cosine``, ``l2`` or ``ip`` under
            ``"auto"``, or a pgvector store of an unknown ``vector_function``: its scores cannot
            be read, so ``scores`` must be set.
    """
    if scores == "similarity":
        return _same
    if store is not None and _is_pgvector(store):
        function = str(getattr(store, "vector_function", ""))
        if function in _PGVECTOR:
            return _PGVECTOR[function]
        raise ValueError(
            f"cannot tell what the scores of PgvectorDocumentStore(vector_function={function!r}) "
            f"mean (known: {sorted(_PGVECTOR)}); set ArgusCollapser(scores='similarity') or "
            "scores='distance'"
        )
    chroma = store is not None and _is_chroma(store)
    if not chroma:
        return _one_minus if scores == "distance" else _same
    space = _chroma_space(store)
    if space is not None and space in _CHROMA:
        return _CHROMA[space]
    if scores == "distance":
        return _one_minus
    raise ValueError(
        f"cannot tell what the scores of {type(store).__name__} mean: its space is {space!r}, "
        f"not one of {sorted(_CHROMA)}; set ArgusCollapser(scores='distance') or "
        "scores='similarity'"
    )
