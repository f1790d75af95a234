"""How far a store's relevance score moves per unit of cosine similarity (the view discount's scale).

``view_discount`` is a margin on cosine similarity. LangChain's relevance scores are cosine only in
some stores; for unit-length embeddings the known ones are linear in the cosine, ``a + b·cos``, so
the discount is ``b × view_discount`` on their scale:

- ``InMemoryVectorStore`` (no relevance function; its scores are cosines): b = 1;
- Chroma, ``"cosine"`` or ``"ip"`` space: relevance 1 − d = cos, b = 1; ``"l2"`` (its default):
  1 − d/√2 of the squared distance 2 − 2·cos, b = √2;
- FAISS, Euclidean (its default; squared distances): b = √2; cosine strategy: b = 1;
- Qdrant (langchain-qdrant), ``COSINE``: (1 + cos)/2, b = 1/2.

Any other store or space: ``None`` (the retriever asks you to declare it).
"""

from __future__ import annotations

import math
from typing import Any

from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

__all__ = ["relevance_per_cosine"]


def relevance_per_cosine(store: Any) -> float | None:
    """``b`` for a store whose relevance scores are ``a + b·cos`` (see the module), else ``None``."""
    if isinstance(store, InMemoryVectorStore):
        return 1.0
    try:
        fn = store._select_relevance_score_fn()
    except (NotImplementedError, ValueError, AttributeError):
        return None
    name = type(store).__name__
    module = type(store).__module__
    if name == "QdrantVectorStore" and module.startswith("langchain_qdrant"):
        return 0.5 if str(getattr(store, "distance", "")).lower().endswith("cosine") else None
    package = module.split(".")[0]
    chroma = (name, package) == ("Chroma", "langchain_chroma")
    if not chroma and (name, package) != ("FAISS", "langchain_community"):
        return None
    if fn == VectorStore._cosine_relevance_score_fn:
        return 1.0
    if fn == VectorStore._euclidean_relevance_score_fn:
        return math.sqrt(2.0)
    if chroma and fn == VectorStore._max_inner_product_relevance_score_fn:
        return 1.0  # Chroma's "ip" distance is 1 − dot, under 1 for any two unit vectors
    return None
