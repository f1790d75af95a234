"""The independent reference the adapters' store tests check their collapse against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, is_view_entry, rank_sources
from argus_ir.lineage import SOURCE_KEY

__all__ = ["cosine_reference"]


def cosine_reference(
    ids: Sequence[str],
    vectors: Any,
    metadatas: Sequence[Mapping[str, Any] | None],
    query: Any,
    *,
    top_k: int,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> list[tuple[str, float, str]]:
    """What a collapsing retriever must return over a store's whole contents: the cosine of the
    query vector with every stored entry's vector (numpy, not the store's own scoring), folded by
    lineage with :func:`argus_ir.collapse.rank_sources`.

    Args:
        ids, vectors, metadatas: Every entry in the store (its id, embedding and metadata).
        query: The query's embedding.
        top_k: Sources to keep.
        view_discount: The collapse's view discount.

    Returns:
        ``(source id, score, best hit id)`` triples, best first.
    """
    matrix = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    cosine = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))
    # an original is keyed by its source (the id it may be stored under can differ), a view by its id
    keys, real, source_of = [], {}, {}
    for entry_id, meta in zip(ids, metadatas, strict=True):
        source = str((meta or {}).get(SOURCE_KEY) or entry_id)
        key = entry_id if is_view_entry(meta, entry_id) else source
        keys.append(key)
        real[key] = entry_id
        source_of[key] = source
    hits = zip(keys, cosine.tolist(), strict=True)
    ranked = rank_sources(hits, source_of, top_k=top_k, view_discount=view_discount)
    return [(source, score, real[best]) for source, score, best in ranked]
