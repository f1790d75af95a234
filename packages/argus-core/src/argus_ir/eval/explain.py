"""Per-query diagnosis of a remedy: which view of which document moved into or out of the top k.

``argus evaluate`` compares a remedy's ranking with the original index's ranking query by query;
this module says *why* a query's metric changed. :func:`explain_query` takes both rankings of one
query (sources folded as :func:`argus_ir.collapse.collapse` folds them, each with the id of the
entry that gave its score) and what is known of every entry (:class:`EntryInfo`), and records each
source that entered or left the top ``k`` (:class:`MovedSource`) with one mechanism and any number
of flags. :func:`summarize` counts them over a dataset; :func:`explain_markdown` writes the report.
The records live in :mod:`argus_ir.eval.explain_records` and the report in
:mod:`argus_ir.eval.explain_report`; this module exports them too.

Only sources that cross the top-``k`` boundary are recorded: a query can lose nDCG@10 by a
reordering inside the top 10 alone (:func:`summarize` counts such queries).

**Mechanisms** (exactly one per moved source; :data:`MECHANISMS`). "Relevant" means a grade above
0 in the judgements; an unjudged source has grade 0.

- ``"view lifts relevant"``: a relevant source entered and its remedy score came from one of its
  views: the remedy working.
- ``"view lifts unrelated"``: a source that is not relevant entered and its remedy score came from
  one of its views.
- ``"original entered"``: a source entered on its own original's score (others fell, or a tie
  broke the other way). With max folding over originals that embed identically it does not happen.
- ``"relevant fell"``: a relevant source left and its remedy score is lower than its original score
  by more than :data:`SCORE_TOLERANCE`. Max folding cannot do it; other fusions can.
- ``"relevant pushed out"``: any other relevant source that left: its own score did not drop,
  others rose past it. A source missing from the remedy's ranking counts here (its score is
  unknown there, and with max folding it cannot have dropped).
- ``"unrelated fell"`` / ``"unrelated pushed out"``: the same two for a source that is not relevant.

**Flags** (any of :data:`FLAGS`, in that order, on a moved source whose remedy score came from a
view; never on one scored by its original):

- ``"query names the passage"``: the view's passage title, the title without a trailing
  ``"(qualifier)"``, or one of the view's entity surface forms occurs in the query text, whole
  words, case-insensitive. On a ``"view lifts unrelated"`` move this is the famous-entity case: a
  document that merely mentions the query's entity gets that entity's passage and outranks the
  relevant originals.
- ``"wrong-sense passage"``: the passage title equals none of the view's entity surface forms,
  compared case- and whitespace-normalised as :meth:`argus_ir.kb.ReferenceKB.lookup` compares
  them, so the lookup found no passage titled with the entity and fell back to a lexical
  neighbour. A disambiguated title (``"Mercury (planet)"`` for ``"Mercury"``) counts, since the
  lookup treats it as a neighbour too. Not set when the title or the entity is unknown.
- ``"hidden view"``: the entry is marked :attr:`EntryInfo.hidden`: its source alone fills the
  retriever's input window, the view is cut before its added text and embeds (nearly) as the
  original, so its move is noise rather than the remedy.

Example:
    >>> entries = {"d2#v": EntryInfo("d2#v", "d2", "expansion", entity="Obama", passage_title="Obama")}
    >>> ex = explain_query(
    ...     "q1", "Obama's mother", {"d1": 1},
    ...     before=[("d1", 0.8, "d1"), ("d2", 0.5, "d2")],
    ...     after=[("d2", 0.9, "d2#v"), ("d1", 0.8, "d1")],
    ...     entries=entries, k=1,
    ... )
    >>> [(m.source_id, m.mechanism, m.flags) for m in ex.moved]
    [('d2', 'view lifts unrelated', ('query names the passage',)), ('d1', 'relevant pushed out', ())]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from numbers import Integral, Real
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.eval.explain_records import (
    ENTRY_KINDS,
    EXCERPT_CHARS,
    FLAGS,
    HIDDEN,
    LIFTS_RELEVANT,
    LIFTS_UNRELATED,
    MECHANISMS,
    NAMES_PASSAGE,
    ORIGINAL_ENTERED,
    OUTCOMES,
    RELEVANT_FELL,
    RELEVANT_PUSHED,
    SCORE_TOLERANCE,
    UNRELATED_FELL,
    UNRELATED_PUSHED,
    WRONG_SENSE,
    EntryInfo,
    MovedSource,
    QueryExplanation,
    Ranking,
)
from argus_ir.eval.explain_report import explain_markdown
from argus_ir.remedy import ORIGINAL
from argus_ir.text.grounding import normalize

__all__ = [
    "ENTRY_KINDS",
    "EXCERPT_CHARS",
    "FLAGS",
    "MECHANISMS",
    "OUTCOMES",
    "SCORE_TOLERANCE",
    "EntryInfo",
    "MovedSource",
    "QueryExplanation",
    "Ranking",
    "explain_markdown",
    "explain_query",
    "summarize",
]

_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def explain_query(
    qid: str,
    query_text: str,
    relevant: Mapping[str, int],
    before: Ranking,
    after: Ranking,
    entries: Mapping[str, EntryInfo],
    *,
    k: int = 10,
    before_metric: float | None = None,
    after_metric: float | None = None,
    metric: str = "",
) -> QueryExplanation:
    """Record every source that entered or left the top ``k`` of one query, and why.

    Args:
        qid: The query id (named in error messages).
        query_text: The query (searched for the names of lifting passages).
        relevant: Source id -> relevance grade for this query (unjudged sources are grade 0).
        before: The original index's ranking; every source must be scored by its original.
        after: The remedy's ranking.
        entries: Entry id -> :class:`EntryInfo` for the entries named in the rankings; an entry
            left out is read as an original, which only a source's own id can be.
        k: The cut-off.
        before_metric: The query's metric on the original index.
        after_metric: Its metric under the remedy.
        metric: The metric's name, for the report.

    Returns:
        The explanation; ``moved`` is empty when the two top-``k`` sets are the same.

    Raises:
        ArgusInputError: ``k < 1``; a malformed ranking row, a score that is not a finite number,
            a ranking that is not best first or names a source twice; an entry missing from
            ``entries`` that is not its source's own id, or one that belongs to another source; a
            view in ``before``; a grade or metric that is not a number (each message names the
            query and the entry or source).

    Example:
        >>> ex = explain_query("q", "x", {"a": 1}, [("a", 0.5, "a")], [("a", 0.5, "a")], {}, k=1)
        >>> ex.moved
        ()
    """
    where = f"query {qid!r}"
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise ArgusInputError(f"{where}: k must be an integer >= 1, got {k!r}")
    grades: dict[str, int] = {}
    for doc, grade in relevant.items():
        if isinstance(grade, bool) or not isinstance(grade, Integral):
            raise ArgusInputError(f"{where}: grade of {doc!r} must be an integer, got {grade!r}")
        grades[doc] = int(grade)
    for name, value in (("before_metric", before_metric), ("after_metric", after_metric)):
        if value is not None and not _finite(value):
            raise ArgusInputError(f"{where}: {name} must be a finite number, got {value!r}")
    ranked_before = _read_ranking(before, "before", where, entries)
    ranked_after = _read_ranking(after, "after", where, entries)
    for src, _, info in ranked_before:
        if info.is_view:
            raise ArgusInputError(
                f"{where}: the before ranking scores {src!r} by {info.kind} view "
                f"{info.entry_id!r}; it must be the original index's ranking"
            )
    at_before = {src: (rank, score) for rank, (src, score, _) in enumerate(ranked_before, 1)}
    at_after = {src: (rank, score, info) for rank, (src, score, info) in enumerate(ranked_after, 1)}
    top_before = {src for src, _, _ in ranked_before[:k]}
    top_after = {src for src, _, _ in ranked_after[:k]}
    entered = [src for src, _, _ in ranked_after[:k] if src not in top_before]
    left = [src for src, _, _ in ranked_before[:k] if src not in top_after]
    moved = []
    for direction, sources in (("in", entered), ("out", left)):
        for src in sources:
            rank_b, score_b = at_before.get(src, (None, None))
            rank_a, score_a, info = at_after.get(src, (None, None, None))
            ranks = (rank_b, rank_a)
            scores = (score_b, score_a)
            grade = grades.get(src, 0)
            moved.append(_moved(src, direction, grade, query_text, ranks, scores, info))
    ins = [m for m in moved if m.direction == "in"]
    outs = sorted(
        (m for m in moved if m.direction == "out"),
        key=lambda m: (m.rank_after is None, m.rank_after or 0, m.rank_before or 0),
    )
    return QueryExplanation(
        qid,
        query_text,
        int(k),
        (*ins, *outs),
        None if before_metric is None else float(before_metric),
        None if after_metric is None else float(after_metric),
        metric,
    )


def _read_ranking(
    ranking: Ranking, name: str, where: str, entries: Mapping[str, EntryInfo]
) -> list[tuple[str, float, EntryInfo]]:
    """Check one ranking and resolve its entries."""
    out: list[tuple[str, float, EntryInfo]] = []
    seen: set[str] = set()
    last = math.inf
    for pos, row in enumerate(ranking, 1):
        try:
            src, score, entry_id = row
        except (TypeError, ValueError):
            raise ArgusInputError(
                f"{where}: {name} ranking row {pos} is {row!r}; expected "
                "(source id, score, entry id)"
            ) from None
        if not isinstance(src, str) or not isinstance(entry_id, str):
            raise ArgusInputError(
                f"{where}: {name} ranking row {pos} has ids {src!r}, {entry_id!r}; ids are strings"
            )
        if not _finite(score):
            raise ArgusInputError(f"{where}: {name} ranking gives {src!r} a score of {score!r}")
        value = float(score)
        if value > last:
            raise ArgusInputError(
                f"{where}: {name} ranking is not best first ({src!r} at rank {pos} scores "
                f"{value} after {last})"
            )
        if src in seen:
            raise ArgusInputError(f"{where}: {name} ranking names source {src!r} twice")
        info = entries.get(entry_id)
        if info is None:
            if entry_id != src:
                raise ArgusInputError(
                    f"{where}: {name} ranking scores source {src!r} by entry {entry_id!r}, which "
                    "is not in entries (only a source's own original may be left out)"
                )
            info = EntryInfo(src, src, ORIGINAL)
        elif info.entry_id != entry_id:
            raise ArgusInputError(
                f"{where}: entries[{entry_id!r}] describes entry {info.entry_id!r}"
            )
        elif info.source_id != src:
            raise ArgusInputError(
                f"{where}: {name} ranking scores source {src!r} by entry {entry_id!r}, which "
                f"belongs to source {info.source_id!r}"
            )
        seen.add(src)
        last = value
        out.append((src, value, info))
    return out


def _moved(
    src: str,
    direction: str,
    grade: int,
    query_text: str,
    ranks: tuple[int | None, int | None],
    scores: tuple[float | None, float | None],
    info: EntryInfo | None,
) -> MovedSource:
    """Classify one source that crossed the boundary (the rules of the module docstring)."""
    score_b, score_a = scores
    by_view = info is not None and info.is_view
    if direction == "in":
        if not by_view:
            mechanism = ORIGINAL_ENTERED
        else:
            mechanism = LIFTS_RELEVANT if grade > 0 else LIFTS_UNRELATED
    else:
        fell = score_a is not None and score_b is not None and score_a < score_b - SCORE_TOLERANCE
        if grade > 0:
            mechanism = RELEVANT_FELL if fell else RELEVANT_PUSHED
        else:
            mechanism = UNRELATED_FELL if fell else UNRELATED_PUSHED
    margin = None
    flags: tuple[str, ...] = ()
    if by_view and info is not None:
        flags = _flags(info, query_text)
        if score_a is not None and score_b is not None:
            margin = score_a - score_b
    return MovedSource(
        src, direction, mechanism, grade, *ranks, score_b, score_a, info, margin, flags
    )


def _flags(info: EntryInfo, query_text: str) -> tuple[str, ...]:
    """The flags of a view (the rules of the module docstring)."""
    title = info.passage_title
    surfaces = info.surfaces
    flags = []
    query = normalize(query_text)
    names = (title, _QUALIFIER.sub("", title), *surfaces)
    if any(_occurs(normalize(name), query) for name in names):
        flags.append(NAMES_PASSAGE)
    if title.strip() and surfaces and normalize(title) not in {normalize(s) for s in surfaces}:
        flags.append(WRONG_SENSE)
    if info.hidden:
        flags.append(HIDDEN)
    return tuple(flags)


def _occurs(name: str, text: str) -> bool:
    """Whether normalised ``name`` (with a letter or digit) occurs in ``text`` as whole words."""
    if not any(ch.isalnum() for ch in name):
        return False
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _finite(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def summarize(
    explanations: Iterable[QueryExplanation], *, tolerance: float = 1e-9, top: int = 10
) -> dict[str, Any]:
    """Count outcomes, mechanisms and flags over many queries.

    Args:
        explanations: One per query (from :func:`explain_query`).
        tolerance: A metric change of at most this is ``"unchanged"``.
        top: Passage titles listed among the unrelated lifts.

    Returns:
        A JSON-ready dict: ``queries``; the number of queries per outcome (``lost``, ``gained``,
        ``unchanged``, ``unscored``) and of those that lost or gained with no source crossing the
        boundary (``lost_without_moves``, ``gained_without_moves``); ``moves``; ``mechanisms``
        and ``flags``, each name -> outcome of the move's query -> moves, plus ``all`` (every
        name of :data:`MECHANISMS` and :data:`FLAGS`, zeros included); ``unrelated_lifts``: the
        ``"view lifts unrelated"`` moves, the distinct KB passages (by id) and entities
        (normalised) behind them, how many carry ``"query names the passage"`` and their share
        (``None`` when there are none), and the ``top`` most frequent passage titles as
        ``{"title", "moves"}``, most first, ties by title; ``view_moves_by_match``: the moves
        scored by a view per match kind of its first passage (:attr:`EntryInfo.match`), each
        with its lifts of relevant and unrelated sources and its ``"wrong-sense passage"``
        flags (a place found inside a venue's name trips that flag by design: its title is the
        place, not the venue); and ``k``, ``metric`` and
        ``tolerance`` (``k`` and ``metric`` ``None`` unless every query shares them).

    Raises:
        ArgusInputError: A negative ``tolerance`` or ``top``.

    Example:
        >>> summarize([QueryExplanation("q1", "text", 10, (), 0.5, 0.25)])["lost"]
        1
    """
    if not _finite(tolerance) or tolerance < 0:
        raise ArgusInputError(f"tolerance must be a number >= 0, got {tolerance!r}")
    if top < 0:
        raise ArgusInputError(f"top must be >= 0, got {top}")
    items = list(explanations)
    columns = (*OUTCOMES, "all")
    outcomes: Counter[str] = Counter()
    silent: Counter[str] = Counter()
    mechanisms = {name: dict.fromkeys(columns, 0) for name in MECHANISMS}
    flags = {name: dict.fromkeys(columns, 0) for name in FLAGS}
    lifts: list[MovedSource] = []
    by_match: dict[str, dict[str, int]] = {}
    for ex in items:
        outcome = ex.outcome(tolerance)
        outcomes[outcome] += 1
        if not ex.moved:
            silent[outcome] += 1
        for m in ex.moved:
            if m.entry is not None and m.entry.is_view:
                row = by_match.setdefault(
                    m.entry.match,
                    {"moves": 0, LIFTS_RELEVANT: 0, LIFTS_UNRELATED: 0, WRONG_SENSE: 0},
                )
                row["moves"] += 1
                row[LIFTS_RELEVANT] += m.mechanism == LIFTS_RELEVANT
                row[LIFTS_UNRELATED] += m.mechanism == LIFTS_UNRELATED
                row[WRONG_SENSE] += WRONG_SENSE in m.flags
            for name, table in ((m.mechanism, mechanisms), *((f, flags) for f in m.flags)):
                row = table.setdefault(name, dict.fromkeys(columns, 0))
                row[outcome] += 1
                row["all"] += 1
            if m.mechanism == LIFTS_UNRELATED:
                lifts.append(m)
    passages: set[str] = set()
    entities: set[str] = set()
    titles: Counter[str] = Counter()
    named = 0
    for m in lifts:
        info = m.entry
        if info is None:  # a lift always has its entry; kept for the type checker
            continue
        ids = [p for p in info.kb_id.split("|") if p]
        passages.update(ids or ([info.passage_title] if info.passage_title else []))
        entities.update(normalize(s) for s in info.surfaces)
        titles[info.passage_title or (ids[0] if ids else "(unknown)")] += 1
        named += NAMES_PASSAGE in m.flags
    ks = {ex.k for ex in items}
    metrics = {ex.metric for ex in items}
    return {
        "queries": len(items),
        **{outcome: outcomes[outcome] for outcome in OUTCOMES},
        "lost_without_moves": silent["lost"],
        "gained_without_moves": silent["gained"],
        "moves": sum(len(ex.moved) for ex in items),
        "mechanisms": mechanisms,
        "flags": flags,
        "view_moves_by_match": dict(sorted(by_match.items(), key=lambda kv: -kv[1]["moves"])),
        "unrelated_lifts": {
            "moves": len(lifts),
            "passages": len(passages),
            "entities": len(entities),
            "query_names_passage": named,
            "query_names_passage_share": named / len(lifts) if lifts else None,
            "top_passages": [
                {"title": title, "moves": n}
                for title, n in sorted(titles.items(), key=lambda item: (-item[1], item[0]))[:top]
            ],
        },
        "k": ks.pop() if len(ks) == 1 else None,
        "metric": (metrics.pop() or None) if len(metrics) == 1 else None,
        "tolerance": tolerance,
    }
