"""Fold retrieval hits over augmented views back to the documents they came from.

argus indexes support views *beside* each original document; a retriever then returns views and
originals alike. Every consumer (evaluation, the framework adapters) must rank *source documents*,
so this one function does the folding: each source gets the best score among its hits (``"max"``,
the default) or the sum of them (``"sum"``), and sources are ranked by that score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from argus_ir.errors import ArgusInputError

__all__ = ["SOURCE_KEY", "collapse"]

SOURCE_KEY = "argus_source_id"
"""Metadata key that names a view's source document (an original is its own source)."""

_HOW = ("max", "sum")


def collapse(
    hits: Iterable[tuple[str, float]],
    source_of: Mapping[str, str] | Callable[[str], str] | None = None,
    *,
    how: str = "max",
    top_k: int | None = None,
) -> list[tuple[str, float]]:
    """Rank source documents from hits on documents and their views.

    Args:
        hits: ``(hit id, score)`` pairs, higher is better, in any order.
        source_of: Maps a hit id to its source id (a mapping, whose missing ids are their own
            source, or a function); ``None`` treats every hit as a source.
        how: ``"max"`` (a source scores as its best hit) or ``"sum"``.
        top_k: Keep the first ``top_k`` sources (``None``: all).

    Returns:
        ``(source id, score)`` pairs, best first; ties keep the order in which the sources first
        appear in ``hits``.

    Raises:
        ArgusInputError: Unknown ``how``, a negative ``top_k`` or a score that is not a finite
            number (the message names the hit).

    Example:
        >>> collapse([("d1#view0", 0.9), ("d2", 0.8), ("d1", 0.5)], {"d1#view0": "d1"})
        [('d1', 0.9), ('d2', 0.8)]
    """
    if how not in _HOW:
        raise ArgusInputError(f"how must be one of {_HOW}, got {how!r}")
    if top_k is not None and top_k < 0:
        raise ArgusInputError(f"top_k must be >= 0, got {top_k}")
    if source_of is None:
        resolve: Callable[[str], str] = str
    elif callable(source_of):
        resolve = source_of
    else:
        mapping = source_of
        resolve = lambda hit_id: mapping.get(hit_id, hit_id)  # noqa: E731
    best: dict[str, float] = {}
    for hit_id, score in hits:
        value = float(score)
        if value != value or value in (float("inf"), float("-inf")):
            raise ArgusInputError(f"hit {hit_id!r} has a score of {score!r}")
        src = resolve(hit_id)
        if src not in best:
            best[src] = value
        elif how == "max":
            best[src] = max(best[src], value)
        else:
            best[src] += value
    order = {src: i for i, src in enumerate(best)}
    ranked = sorted(best.items(), key=lambda item: (-item[1], order[item[0]]))
    return ranked if top_k is None else ranked[:top_k]
