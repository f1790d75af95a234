"""The independent reference the adapters' store tests check their collapse against."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, is_view_entry, rank_sources
from argus_ir.lineage import ARGUS_KEYS, SOURCE_KEY

__all__ = ["cosine_reference"]


def cosine_reference(
    ids: Sequence[str],
    vectors: Any,
    metadatas: Sequence[Mapping[str, Any] | None],
    query: Any,
    *,
    top_k: int,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
    where: Callable[[Mapping[str, Any]], bool] | None = None,
) -> list[tuple[str, float, str]]:
    """What a collapsing retriever must return over a store's whole contents: the cosine of the
    query vector with every stored entry's vector (numpy, not the store's own scoring), folded by
    lineage with :func:`argus_ir.collapse.rank_sources`.

    The boundary rule is applied here on its own terms (not through the code it checks): only
    entries ``where`` admits are hits; a view counts only when the store holds an original of its
    source whose metadata, lineage keys aside, equals the view's; a source whose original the
    store does not hold is left out.

    Args:
        ids, vectors, metadatas: Every entry in the store (its id, embedding and metadata).
        query: The query's embedding.
        top_k: Sources to keep.
        view_discount: The collapse's view discount.
        where: The query's metadata filter, as a predicate (``None``: every entry).

    Returns:
        ``(source id, score, best hit id)`` triples, best first.
    """
    matrix = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    cosine = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))

    def own(meta: Mapping[str, Any] | None) -> dict[str, Any]:
        return {k: v for k, v in (meta or {}).items() if k not in ARGUS_KEYS}

    originals: dict[str, list[dict[str, Any]]] = {}  # source -> the metadata of its originals
    for entry_id, meta in zip(ids, metadatas, strict=True):
        if not is_view_entry(meta, entry_id):
            originals.setdefault(str((meta or {}).get(SOURCE_KEY) or entry_id), []).append(
                own(meta)
            )
    # an original is keyed by its source (the id it may be stored under can differ), a view by its id
    keys, real, source_of, scores = [], {}, {}, []
    for entry_id, meta, score in zip(ids, metadatas, cosine.tolist(), strict=True):
        if where is not None and not where(meta or {}):
            continue
        source = str((meta or {}).get(SOURCE_KEY) or entry_id)
        view = is_view_entry(meta, entry_id)
        if view and own(meta) not in originals.get(source, []):
            continue  # another scope's view, or one whose original is gone
        key = entry_id if view else source
        keys.append(key)
        scores.append(score)
        real[key] = entry_id
        source_of[key] = source
    hits = zip(keys, scores, strict=True)
    ranked = rank_sources(hits, source_of, top_k=top_k, view_discount=view_discount)
    return [(source, score, real[best]) for source, score, best in ranked]
