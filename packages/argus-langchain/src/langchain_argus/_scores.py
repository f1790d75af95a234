"""How far a store's relevance score moves per unit of cosine similarity (the view discount's scale).

``view_discount`` is a margin on cosine similarity. LangChain's relevance scores are cosine only in
some stores; for unit-length embeddings the known ones are linear in the cosine, ``a + b·cos``, so
the discount is ``b × view_discount`` on their scale:

- ``InMemoryVectorStore`` (no relevance function; its scores are cosines): b = 1;
- Chroma, ``"cosine"`` or ``"ip"`` space: relevance 1 − d = cos, b = 1; ``"l2"`` (its default):
  1 − d/√2 of the squared distance 2 − 2·cos, b = √2;
- FAISS, Euclidean (its default; squared distances): b = √2; cosine strategy: b = 1;
- Qdrant (langchain-qdrant), ``COSINE``: (1 + cos)/2, b = 1/2;
- PGVector (langchain-postgres), ``COSINE`` (its default): 1 − d = cos, b = 1. Its ``EUCLIDEAN``
  relevance, 1 − √(2 − 2·cos)/√2 of the plain distance, and ``MAX_INNER_PRODUCT``, which folds
  negative cosines back up, are not linear in the cosine: not known;
- LanceDB (langchain-community), by its ``distance`` and the ``metrics`` the search is given
  (the table's metric; squared L2 when none): ``distance="cosine"`` with the L2 metric gives
  1 − (2 − 2·cos) = 2·cos − 1, b = 2, and with ``metrics="cosine"`` cos, b = 1; ``distance="l2"``
  (its default) gives b = √2 with the L2 metric and 1/√2 with ``metrics="cosine"``; ``"ip"`` (an
  exact match scores −0) and a ``relevance_score_fn`` of your own are not known.

Any other store or space: ``None`` (the retriever asks you to declare it, with :func:`hint`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

__all__ = ["hint", "relevance_per_cosine"]

_SQRT2 = math.sqrt(2.0)


def relevance_per_cosine(store: Any, search: Mapping[str, Any] | None = None) -> float | None:
    """``b`` for a store whose relevance scores are ``a + b·cos`` (see the module), else ``None``.

    Args:
        store: The vector store.
        search: The keywords its searches are given (LanceDB's ``metrics`` changes the scale).
    """
    if isinstance(store, InMemoryVectorStore):
        return 1.0
    name, package = type(store).__name__, type(store).__module__.split(".")[0]
    if (name, package) == ("LanceDB", "langchain_community"):
        return _lancedb(store, search or {})
    try:
        fn = store._select_relevance_score_fn()
    except (NotImplementedError, ValueError, AttributeError):
        return None
    if name == "QdrantVectorStore" and package == "langchain_qdrant":
        return 0.5 if str(getattr(store, "distance", "")).lower().endswith("cosine") else None
    if (name, package) == ("PGVector", "langchain_postgres"):
        return 1.0 if fn == VectorStore._cosine_relevance_score_fn else None
    chroma = (name, package) == ("Chroma", "langchain_chroma")
    if not chroma and (name, package) != ("FAISS", "langchain_community"):
        return None
    if fn == VectorStore._cosine_relevance_score_fn:
        return 1.0
    if fn == VectorStore._euclidean_relevance_score_fn:
        return _SQRT2
    if chroma and fn == VectorStore._max_inner_product_relevance_score_fn:
        return 1.0  # Chroma's "ip" distance is 1 − dot, under 1 for any two unit vectors
    return None


def _lancedb(store: Any, search: Mapping[str, Any]) -> float | None:
    if getattr(store, "override_relevance_score_fn", None) is not None:
        return None
    metric = str(search.get("metrics") or "l2").lower()
    if metric not in ("l2", "cosine", "dot"):
        return None
    distance = str(getattr(store, "distance", "l2")).lower()
    squared_l2 = metric == "l2"  # 2 − 2·cos; "cosine" and "dot" give 1 − cos for unit vectors
    if distance == "cosine":
        return 2.0 if squared_l2 else 1.0
    if distance == "l2":
        return _SQRT2 if squared_l2 else 1.0 / _SQRT2
    return None


def hint(store: Any) -> str:
    """What to set for a store whose scale is not known: a line for the usual ones."""
    name = type(store).__name__
    if name == "PGVector":
        return (
            "PGVector's relevance is cosine with distance_strategy=DistanceStrategy.COSINE (its "
            "default; relevance_per_cosine=1.0); EUCLIDEAN and MAX_INNER_PRODUCT are not linear "
            "in the cosine: use COSINE, or view_discount=0"
        )
    if name == "LanceDB":
        return (
            "LanceDB's relevance follows its distance= and the search's metrics=: "
            "distance='cosine' with search_kwargs={'metrics': 'cosine'} gives the cosine "
            "(relevance_per_cosine=1.0); distance='ip' and a relevance_score_fn of your own are "
            "not known"
        )
    return (
        "relevance_per_cosine is b when the store's relevance is a + b·cos for unit vectors "
        "(1.0 when it is the cosine; langchain-qdrant's COSINE: 0.5)"
    )
