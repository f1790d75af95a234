"""Fold retrieval hits over augmented views back to the documents they came from.

argus indexes support views *beside* each original document; a retriever then returns views and
originals alike. Every consumer (evaluation, the framework adapters) must rank *source documents*,
so this one function does the folding: each source gets the best score among its hits (``"max"``,
the default) or the sum of them (``"sum"``), and sources are ranked by that score.
:func:`fold_hits` does the same over a framework's own hit objects and keeps them, grouped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from argus_ir.errors import ArgusInputError

__all__ = ["SOURCE_KEY", "SourceHits", "collapse", "fold_hits", "source_id_of"]

T = TypeVar("T")

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


@dataclass(frozen=True)
class SourceHits(Generic[T]):
    """The hits of one source document, folded.

    Attributes:
        source_id: The source document's id.
        score: Its folded score (``None`` when the hits carried no scores).
        hits: Its hits (the original and/or views), best first.
        original: The source's own entry among the hits, if it was retrieved itself.
    """

    source_id: str
    score: float | None
    hits: tuple[T, ...]
    original: T | None

    @property
    def best(self) -> T:
        """The best-scoring hit of this source."""
        return self.hits[0]


def source_id_of(hit_id: str, metadata: Mapping[str, Any] | None) -> str:
    """The source of an index entry: its ``argus_source_id`` metadata, else the entry itself."""
    source = (metadata or {}).get(SOURCE_KEY)
    return hit_id if source is None or source == "" else str(source)


def fold_hits(
    hits: Iterable[T],
    *,
    id_of: Callable[[T], str],
    metadata_of: Callable[[T], Mapping[str, Any] | None],
    score_of: Callable[[T], float | None],
    how: str = "max",
    top_k: int | None = None,
) -> list[SourceHits[T]]:
    """Group framework hits (documents, nodes) by source; rank sources as :func:`collapse` does.

    The adapters call this with their own document type. When any hit has no score, sources are
    ranked by the position of their first hit (the retriever's order) and ``how`` is not used.

    Args:
        hits: Retrieved entries, in the retriever's order.
        id_of: A hit's id.
        metadata_of: A hit's metadata (where ``argus_source_id`` names a view's source).
        score_of: A hit's score, or ``None``.
        how: ``"max"`` or ``"sum"``, as in :func:`collapse`.
        top_k: Keep the first ``top_k`` sources (``None``: all).

    Raises:
        ArgusInputError: As :func:`collapse`.
    """
    items = list(hits)
    groups: dict[str, list[tuple[int, T]]] = {}
    for pos, hit in enumerate(items):
        groups.setdefault(source_id_of(id_of(hit), metadata_of(hit)), []).append((pos, hit))
    scores = [score_of(hit) for hit in items]
    if any(s is None for s in scores):
        ranked: list[tuple[str, float | None]] = [(src, None) for src in groups]
        if top_k is not None:
            if top_k < 0:
                raise ArgusInputError(f"top_k must be >= 0, got {top_k}")
            ranked = ranked[:top_k]
    else:
        for hit, s in zip(items, scores):
            value = float(s)  # type: ignore[arg-type]
            if value != value or value in (float("inf"), float("-inf")):
                raise ArgusInputError(f"hit {id_of(hit)!r} has a score of {s!r}")
        pairs = [(f"{pos}", float(s)) for pos, s in enumerate(scores) if s is not None]
        by_pos = {f"{pos}": src for src, members in groups.items() for pos, _ in members}
        ranked = list(collapse(pairs, by_pos, how=how, top_k=top_k))
    out = []
    for src, score in ranked:
        members = groups[src]
        if score is not None:
            members = sorted(members, key=lambda m: (-float(scores[m[0]] or 0.0), m[0]))
        original = next((hit for _, hit in members if id_of(hit) == src), None)
        out.append(SourceHits(src, score, tuple(hit for _, hit in members), original))
    return out
