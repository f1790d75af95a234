"""The vocabulary and records of a per-query explanation (:mod:`argus_ir.eval.explain`).

What an index entry is (:class:`EntryInfo`), one source that crossed a query's top-``k`` boundary
(:class:`MovedSource`) and one query's explanation (:class:`QueryExplanation`), with the names of
the mechanisms, flags and outcomes they carry; each record reads back its own JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.lineage import ENTITY_KEY, KB_ID_KEY, KB_MATCH_KEY, SOURCE_KEY, VIEW_KEY
from argus_ir.remedy import ORIGINAL

__all__ = [
    "ENTRY_KINDS",
    "EXCERPT_CHARS",
    "FLAGS",
    "HIDDEN",
    "LIFTS_RELEVANT",
    "LIFTS_UNRELATED",
    "MECHANISMS",
    "NAMES_PASSAGE",
    "ORIGINAL_ENTERED",
    "OUTCOMES",
    "RELEVANT_FELL",
    "RELEVANT_PUSHED",
    "SCORE_TOLERANCE",
    "UNRELATED_FELL",
    "UNRELATED_PUSHED",
    "WRONG_SENSE",
    "EntryInfo",
    "MovedSource",
    "QueryExplanation",
    "Ranking",
]

ENTRY_KINDS = (ORIGINAL, "expansion", "merged", "descriptor", "focus", "synthesis")
"""What an index entry can be: an original document or a view of one remedy."""

LIFTS_RELEVANT = "view lifts relevant"
LIFTS_UNRELATED = "view lifts unrelated"
ORIGINAL_ENTERED = "original entered"
RELEVANT_FELL = "relevant fell"
RELEVANT_PUSHED = "relevant pushed out"
UNRELATED_FELL = "unrelated fell"
UNRELATED_PUSHED = "unrelated pushed out"
MECHANISMS = (
    LIFTS_RELEVANT,
    LIFTS_UNRELATED,
    ORIGINAL_ENTERED,
    RELEVANT_FELL,
    RELEVANT_PUSHED,
    UNRELATED_FELL,
    UNRELATED_PUSHED,
)
"""The mechanism vocabulary (:mod:`argus_ir.eval.explain`'s docstring gives each rule)."""

NAMES_PASSAGE = "query names the passage"
WRONG_SENSE = "wrong-sense passage"
HIDDEN = "hidden view"
FLAGS = (NAMES_PASSAGE, WRONG_SENSE, HIDDEN)
"""Flags of a move scored by a view (:mod:`argus_ir.eval.explain`'s docstring gives each rule)."""

OUTCOMES = ("lost", "gained", "unchanged", "unscored")
"""How a query's metric changed (``"unscored"``: no metric values given)."""

SCORE_TOLERANCE = 1e-6
"""A score lower than the original's by at most this is not lower: the same vector scored in two
index matrices can differ in its last bits."""

EXCERPT_CHARS = 200
"""Characters of passage text an :class:`EntryInfo` built by :meth:`EntryInfo.from_metadata` keeps."""

Ranking = Sequence[tuple[str, float, str]]
"""``(source id, folded score, id of the entry that gave the score)``, best first."""

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class EntryInfo:
    """What is known of one index entry: an original document or one of its views.

    Attributes:
        entry_id: The entry's id in the index.
        source_id: The document it belongs to (an original is its own source).
        kind: ``"original"`` or the remedy that made the view (:data:`ENTRY_KINDS`).
        entity: The flagged surface form(s), ``"|"``-joined as in the view's ``argus_entity``.
        kb_id: The KB passage id(s), ``"|"``-joined as in ``argus_kb_id``.
        passage_title: The title of the (first) KB passage.
        passage_excerpt: The start of that passage's text.
        hidden: The source alone fills the retriever's input window, so the view is truncated
            before its added text.

    Raises:
        ArgusInputError: An unknown ``kind``, an empty id, or an original whose id is not its
            source's.

    Example:
        >>> EntryInfo("d1#v0", "d1", "expansion", entity="Obama", kb_id="Barack Obama").is_view
        True
    """

    entry_id: str
    source_id: str
    kind: str
    entity: str = ""
    kb_id: str = ""
    passage_title: str = ""
    passage_excerpt: str = ""
    hidden: bool = False
    kb_match: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ENTRY_KINDS:
            raise ArgusInputError(
                f"entry {self.entry_id!r}: kind must be one of {ENTRY_KINDS}, got {self.kind!r}"
            )
        if not self.entry_id or not self.source_id:
            raise ArgusInputError(
                f"an entry needs an entry id and a source id, got {self.entry_id!r} of "
                f"{self.source_id!r}"
            )
        if self.kind == ORIGINAL and self.entry_id != self.source_id:
            raise ArgusInputError(
                f"entry {self.entry_id!r} is an original but names source {self.source_id!r}; "
                "an original is its own source"
            )

    @property
    def is_view(self) -> bool:
        """Whether the entry is a view (anything but the original)."""
        return self.kind != ORIGINAL

    @property
    def surfaces(self) -> tuple[str, ...]:
        """The entity surface forms, one each."""
        return tuple(s for s in self.entity.split("|") if s.strip())

    @property
    def match(self) -> str:
        """How the view's first passage was matched to its entity (``argus_kb_match``, see
        :data:`argus_ir.kb.composite.MATCH_KINDS`), ``"unknown"`` for a view written before
        views said so."""
        return self.kb_match.split("|")[0] or "unknown"

    @classmethod
    def from_metadata(
        cls,
        entry_id: str,
        metadata: Mapping[str, Any] | None,
        *,
        passages: Mapping[str, Any] | Callable[[str], Any] | None = None,
        hidden: bool = False,
    ) -> EntryInfo:
        """Read an entry's lineage as :class:`~argus_ir.remedy.View` metadata carries it.

        Args:
            entry_id: The entry's id.
            metadata: Its metadata (``argus_source_id``, ``argus_view``, ``argus_entity``,
                ``argus_kb_id``, ``argus_kb_match``); ``None`` or no ``argus_view`` reads as an
                original.
            passages: KB passage id -> passage (anything with ``title`` and ``text``, such as
                :class:`~argus_ir.kb.Passage`), as a mapping or a function returning ``None``
                for an unknown id, for the title and excerpt of the first passage.
            hidden: Whether the view is cut before its added text.

        Raises:
            ArgusInputError: As the class does (a view without ``argus_view`` reads as an
                original of another source).

        Example:
            >>> meta = {"argus_source_id": "d1", "argus_view": "expansion", "argus_entity": "Obama"}
            >>> EntryInfo.from_metadata("d1#v0", meta).source_id
            'd1'
        """
        meta = metadata or {}
        source = meta.get(SOURCE_KEY)
        source_id = entry_id if source in (None, "") else str(source)
        kb_id = str(meta.get(KB_ID_KEY) or "")
        title = excerpt = ""
        first = kb_id.split("|")[0]
        passage = None
        if first and passages is not None:
            passage = passages(first) if callable(passages) else passages.get(first)
        if passage is not None:
            title = str(passage.title)
            excerpt = _excerpt(str(passage.text), EXCERPT_CHARS)
        return cls(
            entry_id,
            source_id,
            str(meta.get(VIEW_KEY) or ORIGINAL),
            str(meta.get(ENTITY_KEY) or ""),
            kb_id,
            title,
            excerpt,
            hidden,
            str(meta.get(KB_MATCH_KEY) or ""),
        )


@dataclass(frozen=True)
class MovedSource:
    """One source that entered or left a query's top ``k`` under the remedy.

    Attributes:
        source_id: The source document.
        direction: ``"in"`` (entered the top ``k``) or ``"out"`` (left it).
        mechanism: One of :data:`MECHANISMS`.
        grade: Its relevance grade for the query (0 when unjudged).
        rank_before: Its 1-based rank in the original index (``None``: beyond the ranking).
        rank_after: Its rank under the remedy (``None``: beyond the ranking).
        score_before: Its score in the original index, i.e. its original's score.
        score_after: Its folded score under the remedy.
        entry: The entry that gave ``score_after`` (``None`` when the source is beyond the
            remedy's ranking).
        margin: ``score_after - score_before`` when ``entry`` is a view and both are known: by how
            much the view beat the source's own original (after any view discount the folding
            applied, since both are folded scores).
        flags: Any of :data:`FLAGS`.
    """

    source_id: str
    direction: str
    mechanism: str
    grade: int
    rank_before: int | None
    rank_after: int | None
    score_before: float | None
    score_after: float | None
    entry: EntryInfo | None
    margin: float | None = None
    flags: tuple[str, ...] = ()

    @property
    def relevant(self) -> bool:
        """Whether the source is relevant to the query (grade above 0)."""
        return self.grade > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``entry`` as a dict or ``None``)."""
        out = asdict(self)
        out["flags"] = list(self.flags)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MovedSource:
        """Read back :meth:`to_dict`."""
        entry = data.get("entry")
        return cls(
            **{
                **data,
                "entry": None if entry is None else EntryInfo(**entry),
                "flags": tuple(data.get("flags", ())),
            }
        )


@dataclass(frozen=True)
class QueryExplanation:
    """Why one query's metric changed: the sources that crossed its top-``k`` boundary.

    Attributes:
        qid: The query id.
        query: The query text.
        k: The cut-off.
        moved: Sources that entered (by rank under the remedy), then sources that left (by rank
            under the remedy, those beyond its ranking last).
        before_metric: The query's metric on the original index (``None``: not given).
        after_metric: Its metric under the remedy.
        metric: The metric's name (``""``: not given).

    Example:
        >>> QueryExplanation("q1", "text", 10, (), 0.5, 0.25, "nDCG@10").delta
        -0.25
    """

    qid: str
    query: str
    k: int
    moved: tuple[MovedSource, ...] = ()
    before_metric: float | None = None
    after_metric: float | None = None
    metric: str = ""

    @property
    def delta(self) -> float | None:
        """``after_metric - before_metric`` (``None`` unless both are known)."""
        if self.before_metric is None or self.after_metric is None:
            return None
        return self.after_metric - self.before_metric

    @property
    def entered(self) -> tuple[MovedSource, ...]:
        """The sources that entered the top ``k``."""
        return tuple(m for m in self.moved if m.direction == "in")

    @property
    def left(self) -> tuple[MovedSource, ...]:
        """The sources that left the top ``k``."""
        return tuple(m for m in self.moved if m.direction == "out")

    def outcome(self, tolerance: float = 0.0) -> str:
        """``"lost"``, ``"gained"``, ``"unchanged"`` (``|delta| <= tolerance``) or ``"unscored"``."""
        delta = self.delta
        if delta is None:
            return "unscored"
        if delta < -tolerance:
            return "lost"
        return "gained" if delta > tolerance else "unchanged"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with ``delta``."""
        return {
            "qid": self.qid,
            "query": self.query,
            "k": self.k,
            "metric": self.metric,
            "before_metric": self.before_metric,
            "after_metric": self.after_metric,
            "delta": self.delta,
            "moved": [m.to_dict() for m in self.moved],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryExplanation:
        """Read back :meth:`to_dict`.

        Raises:
            ArgusInputError: A field is missing (the message names it).
        """
        try:
            return cls(
                str(data["qid"]),
                data["query"],
                int(data["k"]),
                tuple(MovedSource.from_dict(m) for m in data["moved"]),
                data.get("before_metric"),
                data.get("after_metric"),
                data.get("metric", ""),
            )
        except (KeyError, TypeError) as exc:
            raise ArgusInputError(f"not a query explanation: {exc!r} ({sorted(data)})") from None


def _excerpt(text: str, limit: int) -> str:
    """The start of ``text``, whitespace collapsed, cut at a word within ``limit`` characters."""
    flat = _WS.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip() + "…"
