"""The Markdown report of per-query explanations, for ``argus evaluate --explain``.

:func:`explain_markdown` writes the counts of :func:`argus_ir.eval.explain.summarize` and the
queries that lost and gained most, each with a table of its moved sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.eval.explain_records import _WS, OUTCOMES, QueryExplanation

__all__ = ["explain_markdown"]


def explain_markdown(
    explanations: Sequence[QueryExplanation], summary: Mapping[str, Any], *, limit: int = 20
) -> str:
    """A Markdown report: the mechanism counts, then the queries that lost and gained most.

    Args:
        explanations: One per query.
        summary: :func:`summarize` of the same explanations (its ``tolerance`` decides which
            queries lost or gained).
        limit: Queries listed in each of the two sections.

    Returns:
        The report: counts of mechanisms and flags by the outcome of their query, the unrelated
        lifts' most frequent passages, then the ``limit`` largest losses and the ``limit`` largest
        gains, each with a table of its moved sources.

    Raises:
        ArgusInputError: A negative ``limit``.
    """
    if limit < 0:
        raise ArgusInputError(f"limit must be >= 0, got {limit}")
    tolerance = float(summary.get("tolerance", 0.0))
    k = summary.get("k")
    metric = summary.get("metric") or "metric"
    cut = f"top {k}" if k is not None else "top k"
    lines = [
        "# Why queries moved",
        "",
        f"{summary['queries']} queries: {summary['lost']} lost, {summary['gained']} gained, "
        f"{summary['unchanged']} unchanged ({metric}, tolerance {tolerance:g})"
        + (f", {summary['unscored']} without metric values" if summary.get("unscored") else "")
        + f". {summary['moves']} sources moved into or out of the {cut}. "
        f"{summary['lost_without_moves']} losses and {summary['gained_without_moves']} gains "
        f"come from reordering inside the {cut} alone.",
        "",
    ]
    columns = [c for c in OUTCOMES if c != "unscored" or summary.get("unscored")]
    for title, key in (("mechanism", "mechanisms"), ("flag (moves scored by a view)", "flags")):
        rows = [(name, row) for name, row in summary[key].items() if row.get("all")]
        if not rows:
            continue
        lines += [
            f"| {title} | " + " | ".join(f"{c} queries" for c in columns) + " | all |",
            "|---" * (len(columns) + 2) + "|",
        ]
        lines += [
            f"| {name} | " + " | ".join(str(row.get(c, 0)) for c in columns) + f" | {row['all']} |"
            for name, row in rows
        ]
        lines.append("")
    by_match = summary.get("view_moves_by_match") or {}
    if by_match:
        lines += [
            "| match kind of the view's passage | moves scored by a view | lifts relevant "
            "| lifts unrelated | wrong-sense flag |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {_md(kind)} | {row['moves']} | {row['view lifts relevant']} "
            f"| {row['view lifts unrelated']} | {row['wrong-sense passage']} |"
            for kind, row in by_match.items()
        ]
        lines.append("")
    lifts = summary["unrelated_lifts"]
    if lifts["moves"]:
        share = lifts["query_names_passage_share"]
        lines += [
            f"Unrelated sources lifted by a view: {lifts['moves']}, through {lifts['passages']} "
            f"distinct passages and {lifts['entities']} distinct entities; the query names the "
            f"passage in {lifts['query_names_passage']} ({share:.0%}). Most frequent passages: "
            + ", ".join(f"{_md(p['title'])} ({p['moves']})" for p in lifts["top_passages"])
            + ".",
            "",
        ]
    scored = [ex for ex in explanations if ex.delta is not None]
    losses = sorted(
        (ex for ex in scored if ex.outcome(tolerance) == "lost"),
        key=lambda ex: (ex.delta or 0.0, ex.qid),
    )
    gains = sorted(
        (ex for ex in scored if ex.outcome(tolerance) == "gained"),
        key=lambda ex: (-(ex.delta or 0.0), ex.qid),
    )
    for heading, chosen in (("Largest losses", losses), ("Largest gains", gains)):
        if not chosen or not limit:
            continue
        lines += [f"## {heading}", ""]
        for ex in chosen[:limit]:
            lines += _query_section(ex)
    return "\n".join(lines).rstrip("\n") + "\n"


def _query_section(ex: QueryExplanation) -> list[str]:
    name = ex.metric or "metric"
    lines = [
        f"### {_md(ex.qid)}: {name} {ex.before_metric:.4f} -> {ex.after_metric:.4f} "
        f"({ex.delta:+.4f})",
        "",
        f"Query: {_md(ex.query)}",
        "",
    ]
    if not ex.moved:
        return [*lines, f"No source crossed the top {ex.k}; the ranking changed inside it.", ""]
    head = [
        "source",
        "rank before -> after",
        "grade",
        "mechanism",
        "entry",
        "entity",
        "passage",
        "score before -> after",
        "view - original",
    ]
    lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for m in ex.moved:
        info = m.entry
        mechanism = "; ".join((m.mechanism, *m.flags))
        cells = [
            m.source_id,
            f"{_rank(m.rank_before)} -> {_rank(m.rank_after)}",
            str(m.grade),
            mechanism,
            "" if info is None else info.kind,
            "" if info is None else info.entity,
            "" if info is None else info.passage_title,
            f"{_score(m.score_before)} -> {_score(m.score_after)}",
            "" if m.margin is None else f"{m.margin:+.4f}",
        ]
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    return [*lines, ""]


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _score(score: float | None) -> str:
    return "?" if score is None else f"{score:.4f}"


def _md(text: str) -> str:
    """One line of table-safe Markdown."""
    return _WS.sub(" ", text).strip().replace("|", "\\|")
