"""What a retriever's ``Document.score`` means, read from the store behind it.

Collapse ranks higher-is-better. Stores differ: chroma-haystack puts Chroma's raw *distance* in
``Document.score`` for every metric (lower is better); pgvector-haystack gives a similarity for
``cosine_similarity`` and ``inner_product`` but the plain Euclidean *distance* for
``l2_distance``, by the *retriever's* function (which overrides the store's, at init or per run),
and ``PgvectorKeywordRetriever`` gives ``ts_rank_cd`` (higher is better); Qdrant and the in-memory
store give similarities. Between a retriever and the collapser, a joiner or a ranker may pass the
retriever's scores on or give its own; the pipeline's graph says which retrievers are upstream.
The collapser turns each score into a relevance before folding, so the view discount is taken on
one scale: cosine similarity for unit-length embeddings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus_ir.collapse import COSINE_FROM_DISTANCE

__all__ = [
    "SCORES",
    "Feed",
    "PgvectorReading",
    "check_order",
    "pgvector_reading",
    "relevance_of",
]

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


def _is_a(thing: Any, name: str) -> bool:
    """``thing`` is of the class ``name``, or of a subclass of it (a cloud connector's, say)."""
    return any(cls.__name__ == name for cls in type(thing).__mro__)


def _is_pgvector(store: Any) -> bool:
    return _is_a(store, "PgvectorDocumentStore")


@dataclass(frozen=True)
class PgvectorReading:
    """How pgvector scores are read, and whether the hits come in the retriever's order.

    Attributes:
        relevance: The score turned into a relevance (higher is better).
        best_first_high: Whether the best hit has the highest score (similarities,
            ``ts_rank_cd``) or the lowest (``l2_distance``).
        what: Who scored, for messages (the retriever or store, and its function).
        ordered: Whether the hits come straight from the retriever, best first, so that an order
            against the reading gives away a function the collapser was not told of; hits that
            passed another component (a joiner, a ranker) come in that component's order.
    """

    relevance: Callable[[float], float]
    best_first_high: bool
    what: str
    ordered: bool = True


@dataclass(frozen=True)
class Feed:
    """In a pipeline, what feeds the collapser's ``documents``.

    Attributes:
        name: The feeding component's name in the pipeline.
        component: The feeding component.
        upstream: Every component upstream of the collapser's ``documents``, the feeding one
            first, as ``(name, component)`` pairs.
    """

    name: str
    component: Any
    upstream: tuple[tuple[str, Any], ...] = ()


def _is_retriever(component: Any) -> bool:
    return _is_a(component, "PgvectorEmbeddingRetriever") or _is_a(
        component, "PgvectorKeywordRetriever"
    )


def _reading(function: Any, what: str) -> PgvectorReading:
    if function not in _PGVECTOR:
        raise ValueError(
            f"cannot tell what the scores of {what} mean (known: {sorted(_PGVECTOR)}); set "
            "ArgusCollapser(scores='similarity') or scores='distance'"
        )
    return PgvectorReading(_PGVECTOR[str(function)], function != "l2_distance", what)


def _function_of(scorer: Any, vector_function: str | None, what: str) -> PgvectorReading:
    """The reading of the scores ``scorer`` (a pgvector embedding retriever, or a store) gives,
    run with ``vector_function`` when it was given one for the run."""
    function = vector_function or getattr(scorer, "vector_function", None)
    if function is None and hasattr(scorer, "document_store"):
        function = scorer.document_store.vector_function  # a retriever without one: its store's
    if vector_function is not None:
        return _reading(function, f"{what}, run with vector_function={vector_function!r}")
    return _reading(function, f"{what} (vector_function={function!r})")


def _straight(retriever: Any, vector_function: str | None) -> PgvectorReading:
    """The reading of a pgvector retriever's own scores."""
    if vector_function is None and _is_a(retriever, "PgvectorKeywordRetriever"):
        # ts_rank_cd, ordered best first (higher is better), whatever the store's function
        return PgvectorReading(_same, True, f"{type(retriever).__name__} (ts_rank_cd)")
    if _is_a(retriever, "PgvectorEmbeddingRetriever"):
        owner = type(retriever.document_store).__name__
        return _function_of(retriever, vector_function, f"{type(retriever).__name__} over {owner}")
    return _function_of(retriever.document_store, vector_function, type(retriever).__name__)


def pgvector_reading(
    scores: str, store: Any, feed: Feed | None, vector_function: str | None = None
) -> PgvectorReading | None:
    """The reading of pgvector scores (``None``: not pgvector, or ``scores`` says
    ``"similarity"``, which is taken as said).

    A pgvector retriever that feeds the collapser is read by its own function (or
    ``ts_rank_cd``); outside a pipeline, by the collapser's store. Behind another component
    (:func:`_behind`), the pgvector retrievers upstream say what the scores can be.

    Args:
        scores: The collapser's ``scores`` (``"auto"`` and ``"distance"`` read a pgvector
            retriever's scores by its function alike).
        store: The collapser's document store, or ``None``.
        feed: What feeds the collapser's documents in a pipeline, or ``None``.
        vector_function: The function the retriever was run with, when it was given per run.

    Raises:
        ValueError: A ``vector_function`` this module cannot read, or scores behind another
            component that cannot be told apart (the message names it and what to set).
    """
    if scores == "similarity":
        return None
    if feed is not None and _is_retriever(feed.component):
        return _straight(feed.component, vector_function)
    if feed is not None:
        return _behind(scores, store, feed, vector_function)
    if store is not None and _is_pgvector(store):
        return _function_of(store, vector_function, type(store).__name__)
    if vector_function is not None:
        return _reading(vector_function, f"the retriever, run with {vector_function=}")
    return None


def _is_rank_fusion(component: Any) -> bool:
    """A ``DocumentJoiner`` that scores by reciprocal rank fusion: from each retriever's order,
    which a pgvector retriever gives best first whatever its function."""
    mode = getattr(component, "join_mode", None)
    mode = getattr(mode, "value", mode)
    return _is_a(component, "DocumentJoiner") and mode == "reciprocal_rank_fusion"


def _behind(
    scores: str, store: Any, feed: Feed, vector_function: str | None
) -> PgvectorReading | None:
    """The reading of hits that reach the collapser through another component than a pgvector
    retriever (a joiner, a ranker): that component passed the retrievers' scores on or gave its
    own, higher is better (a ranker's, a rank fusion's), and in its own order.

    Similarities from every pgvector retriever upstream (the collapser's store stands in when no
    retriever is found): both kinds are higher-is-better, so they are taken as they are. A rank
    fusion's scores likewise. ``l2_distance`` upstream: the collapser cannot tell distances from
    a ranker's scores, so ``scores="distance"`` says distances; else it refuses, naming the
    component and what to set.
    """
    found = [
        (name, _straight(component, vector_function))
        for name, component in feed.upstream
        if _is_retriever(component)
    ]
    if not found and store is not None and _is_pgvector(store):
        found = [("", _function_of(store, vector_function, type(store).__name__))]
    if not found:
        return None
    via = f"{feed.name!r} ({type(feed.component).__name__})"
    named = ", ".join(f"{name!r}: {r.what}" if name else r.what for name, r in found)
    what = f"{via}, behind {named}"
    if all(r.best_first_high for _, r in found) or _is_rank_fusion(feed.component):
        return PgvectorReading(_same, True, what, ordered=False)
    if scores == "distance" and not any(r.best_first_high for _, r in found):
        return PgvectorReading(_from_l2, False, what, ordered=False)
    raise ValueError(
        f"ArgusCollapser's documents come from {via}, behind {named}: their scores may still "
        f"be l2 distances (lower is better) or scores {feed.name!r} gave them, and the collapser "
        "cannot tell which. Set ArgusCollapser(scores='similarity') when "
        f"{feed.name!r} scores the documents itself, higher is better (a cross-encoder ranker), "
        "or scores='distance' when it passes the l2 distances on (a DocumentJoiner "
        "concatenating or merging, SentenceTransformersDiversityRanker, LostInTheMiddleRanker); "
        "or join with DocumentJoiner(join_mode='reciprocal_rank_fusion'), or retrieve with "
        "vector_function='cosine_similarity'"
    )


def check_order(reading: PgvectorReading, scores: list[float]) -> None:
    """Refuse hits ordered against the reading: a pgvector retriever returns its best hit first,
    so similarities that rise (or distances that fall) from first to last were scored by another
    function than the one read (a ``vector_function`` given to the retriever's ``run``).

    Raises:
        ValueError: The order contradicts the reading; says what to set.
    """
    if not reading.ordered or len(scores) < 2 or scores[0] == scores[-1]:
        return
    if (scores[0] > scores[-1]) == reading.best_first_high:
        return
    rise = "rise" if scores[-1] > scores[0] else "fall"
    raise ValueError(
        f"the hits' scores {rise} from {scores[0]:.6g} to {scores[-1]:.6g}, which {reading.what} "
        "does not give (it returns its best hit first): were they scored by another "
        "vector_function, given to the retriever's run? Give the collapser the same for that "
        "run: pipeline.run({'retriever': {..., 'vector_function': f}, 'collapser': "
        "{'vector_function': f}})"
    )


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


def relevance_of(
    scores: str, store: Any, feed: Feed | None = None, vector_function: str | None = None
) -> Callable[[float], float]:
    """How to turn a retriever's score into a relevance (higher is better).

    Args:
        scores: ``"similarity"`` (kept as they are), ``"distance"`` (the store's metric when it
            is a Chroma or pgvector store, else ``1 - score``) or ``"auto"`` (a Chroma store's
            distances by its space, a pgvector store's scores by its ``vector_function``:
            ``l2_distance`` gives ``1 - d²/2``, the others are similarities; any other store, or
            none, gives similarities).
        store: The collapser's document store, or ``None``.
        feed: What feeds the collapser in a pipeline, when known: a pgvector retriever's own
            function (or ``ts_rank_cd``) wins over the store's (:func:`pgvector_reading`).
        vector_function: The function a pgvector retriever was run with, when given per run.

    Raises:
        ValueError: A Chroma store whose space is not ``cosine``, ``l2`` or ``ip`` under
            ``"auto"``, or a pgvector store of an unknown ``vector_function``: its scores cannot
            be read, so ``scores`` must be set.
    """
    if scores == "similarity":
        return _same
    pgvector = pgvector_reading(scores, store, feed, vector_function)
    if pgvector is not None:
        return pgvector.relevance
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
