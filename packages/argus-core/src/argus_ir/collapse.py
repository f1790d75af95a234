"""Fold retrieval hits over augmented views back to the documents they came from.

argus indexes support views *beside* each original document; a retriever then returns views and
originals alike. Every consumer (evaluation, the framework adapters) must rank *source documents*,
so this one function does the folding: each source gets the best score among its hits (``"max"``,
the default) or the sum of them (``"sum"``), and sources are ranked by that score.
:func:`fold_hits` does the same over a framework's own hit objects and keeps them, grouped.

``view_discount`` damps the views: a view's score counts minus this margin, so a view moves its
source only when it beats the original (and the other documents) by more than the margin. Under
plain max folding, a source with many views holds many draws and rises by chance alone; the
margin takes that away while a view that is much closer to the query still lifts its source.
:data:`DEFAULT_VIEW_DISCOUNT` is the default of every consumer (evaluation and the adapters).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from argus_ir.errors import ArgusInputError
from argus_ir.lineage import ARGUS_KEYS, SOURCE_KEY, VIEW_KEY

__all__ = [
    "COSINE_FROM_DISTANCE",
    "DEFAULT_VIEW_DISCOUNT",
    "SOURCE_KEY",
    "Resolved",
    "SourceHits",
    "aread_originals",
    "collapse",
    "fold_hits",
    "is_view_entry",
    "rank_sources",
    "read_originals",
    "resolve_sources",
    "same_scope",
    "scope",
    "source_id_of",
    "warn_refused",
]

T = TypeVar("T")
U = TypeVar("U")


_HOW = ("max", "sum")

DEFAULT_VIEW_DISCOUNT = 0.02
"""What a view's score loses before folding, by default (0 is the paper's plain best score).

Chosen on the dev queries of three sets under MiniLM's cosine scores (``docs/benchmarks.md``,
"Remedy design"); a retriever whose scores spread wider may want a larger margin."""


COSINE_FROM_DISTANCE: Mapping[str, Callable[[float], float]] = {
    "cosine": lambda d: 1.0 - d,
    "l2": lambda d: 1.0 - d / 2.0,
    "ip": lambda d: 1.0 - d,
}
"""A vector store's distance in each of the usual spaces (Chroma's names) turned back into the
cosine similarity of unit-length vectors, the scale :data:`DEFAULT_VIEW_DISCOUNT` is a margin on:
cosine ``d = 1 - cos``; ``l2`` is the *squared* Euclidean distance, ``d = 2 - 2 cos``; inner
product ``d = 1 - <q, x>``. The adapters that fold a store's distances convert them with it."""


def collapse(
    hits: Iterable[tuple[str, float]],
    source_of: Mapping[str, str] | Callable[[str], str] | None = None,
    *,
    how: str = "max",
    top_k: int | None = None,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> list[tuple[str, float]]:
    """Rank source documents from hits on documents and their views.

    Args:
        hits: ``(hit id, score)`` pairs, higher is better, in any order.
        source_of: Maps a hit id to its source id (a mapping, whose missing ids are their own
            source, or a function); ``None`` treats every hit as a source.
        how: ``"max"`` (a source scores as its best hit) or ``"sum"``.
        top_k: Keep the first ``top_k`` sources (``None``: all).
        view_discount: Subtracted from the score of every view (a hit whose source is another
            id) before folding; 0 keeps scores as they are.

    Returns:
        ``(source id, score)`` pairs, best first; ties keep the order in which the sources first
        appear in ``hits``.

    Raises:
        ArgusInputError: Unknown ``how``, a negative ``top_k`` or ``view_discount``, or a score
            that is not a finite number (the message names the hit).

    Example:
        >>> collapse([("d1#view0", 0.9), ("d2", 0.8), ("d1", 0.5)], {"d1#view0": "d1"})
        [('d1', 0.9), ('d2', 0.8)]
        >>> collapse([("d1#view0", 0.9), ("d2", 0.8), ("d1", 0.5)], {"d1#view0": "d1"},
        ...          view_discount=0.5)
        [('d2', 0.8), ('d1', 0.5)]
    """
    return [
        (src, score)
        for src, score, _ in rank_sources(
            hits, source_of, how=how, top_k=top_k, view_discount=view_discount
        )
    ]


def rank_sources(
    hits: Iterable[tuple[str, float]],
    source_of: Mapping[str, str] | Callable[[str], str] | None = None,
    *,
    how: str = "max",
    top_k: int | None = None,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> list[tuple[str, float, str]]:
    """:func:`collapse`, with the hit that gave each source its score.

    Returns:
        ``(source id, score, best hit id)`` triples, best first (under ``"sum"`` the best hit is
        the one with the highest discounted score).
    """
    if how not in _HOW:
        raise ArgusInputError(f"how must be one of {_HOW}, got {how!r}")
    if top_k is not None and top_k < 0:
        raise ArgusInputError(f"top_k must be >= 0, got {top_k}")
    discount = float(view_discount)
    if not discount >= 0.0 or discount == float("inf"):
        raise ArgusInputError(f"view_discount must be a finite number >= 0, got {view_discount!r}")
    if source_of is None:
        resolve: Callable[[str], str] = str
    elif callable(source_of):
        resolve = source_of
    else:
        mapping = source_of
        resolve = lambda hit_id: mapping.get(hit_id, hit_id)  # noqa: E731
    total: dict[str, float] = {}
    best: dict[str, tuple[float, str]] = {}
    for hit_id, score in hits:
        value = float(score)
        if value != value or value in (float("inf"), float("-inf")):
            raise ArgusInputError(f"hit {hit_id!r} has a score of {score!r}")
        src = resolve(hit_id)
        if src != hit_id:
            value -= discount
        if src not in best:
            best[src] = (value, hit_id)
            total[src] = value
            continue
        if value > best[src][0]:
            best[src] = (value, hit_id)
        total[src] = max(total[src], value) if how == "max" else total[src] + value
    order = {src: i for i, src in enumerate(best)}
    ranked = sorted(
        ((src, total[src], best[src][1]) for src in best),
        key=lambda item: (-item[1], order[item[0]]),
    )
    return ranked if top_k is None else ranked[:top_k]


@dataclass(frozen=True)
class SourceHits(Generic[T]):
    """The hits of one source document, folded.

    Attributes:
        source_id: The source document's id.
        score: Its folded score (``None`` when the hits carried no scores).
        hits: Its hits (the original and/or views), best first (as folding counted them, views
            less their discount).
        original: The source's own entry among the hits, if it was retrieved itself (the one
            stored under the source's id when several entries claim to be its original).
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


def is_view_entry(metadata: Mapping[str, Any] | None, hit_id: str | None = None) -> bool:
    """Whether an index entry is a support view: its ``argus_view`` names a remedy kind.

    An entry with ``argus_view = "original"``, or without lineage (an original indexed before
    argus), is an original whatever id the store gave it. One whose ``argus_source_id`` names
    another entry but has no ``argus_view`` (lineage written by hand) is a view when its id,
    ``hit_id``, is given.
    """
    meta = metadata or {}
    kind = meta.get(VIEW_KEY)
    if kind is not None:
        return kind != "original"  # argus_ir.remedy.ORIGINAL
    source = meta.get(SOURCE_KEY)
    return hit_id is not None and source is not None and source != "" and str(source) != hit_id


def fold_hits(
    hits: Iterable[T],
    *,
    id_of: Callable[[T], str],
    metadata_of: Callable[[T], Mapping[str, Any] | None],
    score_of: Callable[[T], float | None],
    how: str = "max",
    top_k: int | None = None,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> list[SourceHits[T]]:
    """Group framework hits (documents, nodes) by source; rank sources as :func:`collapse` does.

    The adapters call this with their own document type. When any hit has no score, sources are
    ranked by the position of their first hit (the retriever's order) and ``how`` is not used.

    Args:
        hits: Retrieved entries, in the retriever's order.
        id_of: A hit's id.
        metadata_of: A hit's metadata: ``argus_source_id`` names its source (else the hit's id
            is), ``argus_view`` tells a view from an original (:func:`is_view_entry`), so an
            original a store keeps under another id still folds with its views.
        score_of: A hit's score, or ``None``.
        how: ``"max"`` or ``"sum"``, as in :func:`collapse`.
        top_k: Keep the first ``top_k`` sources (``None``: all).
        view_discount: As in :func:`collapse`, subtracted from views' scores (not used when the
            hits carry no scores).

    Raises:
        ArgusInputError: As :func:`collapse`.
    """
    items = list(hits)
    sources = [source_id_of(id_of(hit), metadata_of(hit)) for hit in items]
    views = [is_view_entry(metadata_of(hit), id_of(hit)) for hit in items]
    groups: dict[str, list[tuple[int, T]]] = {}
    for pos, (hit, src) in enumerate(zip(items, sources)):
        groups.setdefault(src, []).append((pos, hit))
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
        # an original is keyed by its source's id; a view by its position (it may repeat ids)
        keys = [f"\0{pos}" if view else src for pos, (src, view) in enumerate(zip(sources, views))]
        view_of = {key: src for key, src in zip(keys, sources) if key != src}
        ranked = [
            (src, score)
            for src, score, _ in rank_sources(
                zip(keys, (float(s) for s in scores)),  # type: ignore[arg-type]
                view_of,
                how=how,
                top_k=top_k,
                view_discount=view_discount,
            )
        ]
    out = []

    def counted(pos: int, hit: T) -> float:  # a hit's score as folding counted it
        value = float(scores[pos] or 0.0)
        return value - view_discount if views[pos] else value

    for src, score in ranked:
        members = groups[src]
        if score is not None:
            members = sorted(members, key=lambda m: (-counted(*m), m[0]))
        originals = [hit for pos, hit in members if not views[pos]]
        # the entry stored under the source's own id is its original; else the best-scoring one
        original = next((h for h in originals if id_of(h) == src), None)
        if original is None and originals:
            original = originals[0]
        out.append(SourceHits(src, score, tuple(hit for _, hit in members), original))
    return out


def scope(metadata: Mapping[str, Any] | None, ignore: Collection[str] = ()) -> dict[str, Any]:
    """What a metadata filter can see of an entry: its metadata without argus's lineage keys and
    without ``ignore`` (keys a store adds to what it returns, such as langchain-qdrant's ``_id``)."""
    return {k: v for k, v in (metadata or {}).items() if k not in ARGUS_KEYS and k not in ignore}


def same_scope(
    view: Mapping[str, Any] | None,
    original: Mapping[str, Any] | None,
    ignore: Collection[str] = (),
) -> bool:
    """Whether a view and an original carry the same metadata, lineage keys aside.

    argus copies an original's metadata onto each of its views, so the two are equal for every
    view argus wrote (and not yet outdated by a change to the original). Equal metadata means
    any metadata filter that let the view through lets the original through too: this is the
    test :func:`resolve_sources` puts every view to before it folds into its source.
    """
    return scope(view, ignore) == scope(original, ignore)


@dataclass
class Resolved(Generic[T]):
    """What :func:`resolve_sources` returns.

    Attributes:
        sources: The ranked sources, best first; each has its original among its hits or among
            the originals read for it (unless ``keep_orphans``).
        refused: Ids of views that were not folded: their metadata differs from their source's
            original (a view from another scope, hand-written or outdated lineage).
        dropped: Sources whose original could not be read (deleted, or another store's): they
            are left out, never served by a view.
    """

    sources: list[SourceHits[T]]
    refused: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def resolve_sources(
    hits: Iterable[T],
    *,
    id_of: Callable[[T], str],
    metadata_of: Callable[[T], Mapping[str, Any] | None],
    score_of: Callable[[T], float | None],
    how: str = "max",
    top_k: int | None = None,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
    ignore_keys: Collection[str] = (),
    keep_orphans: bool = False,
) -> Generator[list[str], Mapping[str, Mapping[str, Any] | None], Resolved[T]]:
    """Fold hits into sources as :func:`fold_hits` does, never widening what the hits may show.

    The rule every adapter applies (``docs/adapters.md``, "Boundaries"): a view folds into its
    source only when the source's original carries the same metadata as the view
    (:func:`same_scope`), whether the original is among the hits or has to be read from the store.
    A view that passed the query's metadata filter therefore only ever brings in an original
    that passes the same filter; a view that names a document of another scope (a forged or
    outdated lineage) is refused and counts for nothing.

    It is a generator, so one loop serves a framework's sync and async reads: it yields the ids
    of the sources whose originals it needs (only as many as the results still lack, in ranking
    order) and is sent back ``{source id: the original's metadata}`` for those found (missing or
    ``None``: not found). When a refused view changes the ranking it folds again, reading only
    originals it has not read yet.

    Args:
        hits, id_of, metadata_of, score_of, how, view_discount: As :func:`fold_hits`.
        top_k: Sources to return (``None``: all).
        ignore_keys: Metadata keys the store adds to what it returns (left out of the test).
        keep_orphans: Keep a source whose original cannot be read, served by its best view (a
            caller with no store to read from); by default it is dropped.

    Returns:
        The :class:`Resolved` sources, with the refused views and dropped sources.
    """
    items = list(hits)
    if top_k is not None and top_k < 0:
        raise ArgusInputError(f"top_k must be >= 0, got {top_k}")
    read: dict[str, Mapping[str, Any] | None] = {}
    refused: set[int] = set()
    while True:
        live = [(pos, hit) for pos, hit in enumerate(items) if pos not in refused]
        folded = fold_hits(
            live,
            id_of=lambda h: id_of(h[1]),
            metadata_of=lambda h: metadata_of(h[1]),
            score_of=lambda h: score_of(h[1]),
            how=how,
            view_discount=view_discount,
        )
        wanted = len(folded) if top_k is None else top_k
        out: list[SourceHits[tuple[int, T]]] = []
        dropped: list[str] = []
        again = False
        start = 0
        while len(out) < wanted and start < len(folded) and not again:
            batch = folded[start : start + wanted - len(out)]
            start += len(batch)
            missing = [f.source_id for f in batch if f.original is None and f.source_id not in read]
            if missing:
                got = yield missing
                for source_id in missing:
                    read[source_id] = (got or {}).get(source_id)
            for f in batch:
                if f.original is not None:
                    original: Mapping[str, Any] | None = metadata_of(f.original[1]) or {}
                else:
                    original = read.get(f.source_id)
                if original is None:
                    if keep_orphans:
                        out.append(f)
                    else:
                        dropped.append(f.source_id)
                    continue
                bad = [
                    pos
                    for pos, hit in f.hits
                    if (f.original is None or pos != f.original[0])
                    and not same_scope(metadata_of(hit), original, ignore_keys)
                ]
                if bad:
                    refused.update(bad)
                    again = True  # the source's score (and so the ranking) changes: fold again
                else:
                    out.append(f)
        if not again:
            return Resolved(
                [
                    SourceHits(
                        f.source_id,
                        f.score,
                        tuple(hit for _, hit in f.hits),
                        None if f.original is None else f.original[1],
                    )
                    for f in out
                ],
                [id_of(items[pos]) for pos in sorted(refused)],
                dropped,
            )


Steps = Generator[list[str], Mapping[str, Mapping[str, Any] | None], Resolved[T]]
"""What :func:`resolve_sources` returns: a generator of the ids whose originals it needs."""


def read_originals(
    steps: Steps[T],
    read: Callable[[list[str]], Mapping[str, U]],
    metadata_of: Callable[[U], Mapping[str, Any] | None],
) -> tuple[Resolved[T], dict[str, U]]:
    """Run :func:`resolve_sources`' steps, reading each batch of originals with ``read``
    (source ids to the originals found, by source id).

    Returns:
        The resolved sources and every original read, by source id.
    """
    fetched: dict[str, U] = {}
    try:
        missing = next(steps)
        while True:
            fetched.update(read(missing))
            missing = steps.send({i: metadata_of(fetched[i]) for i in missing if i in fetched})
    except StopIteration as done:
        return done.value, fetched


async def aread_originals(
    steps: Steps[T],
    read: Callable[[list[str]], Awaitable[Mapping[str, U]]],
    metadata_of: Callable[[U], Mapping[str, Any] | None],
) -> tuple[Resolved[T], dict[str, U]]:
    """:func:`read_originals` with an async ``read``."""
    fetched: dict[str, U] = {}
    try:
        missing = next(steps)
        while True:
            fetched.update(await read(missing))
            missing = steps.send({i: metadata_of(fetched[i]) for i in missing if i in fetched})
    except StopIteration as done:
        return done.value, fetched


def warn_refused(log: logging.Logger, refused: Collection[str]) -> None:
    """The one warning every adapter gives for the views a query refused (none: no warning)."""
    if refused:
        log.warning(
            "%d view(s) not folded: their metadata differs from their source's original (a view "
            "from another scope, or lineage argus did not write): %s",
            len(refused),
            ", ".join(map(repr, refused)),
        )
