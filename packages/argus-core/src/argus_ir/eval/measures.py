"""Retrieval measures of a run against the qrels, computed with ``ir-measures``.

:data:`METRICS` is what every condition reports; :func:`score_run` gives the aggregate and the
per-query values the paired tests (:mod:`argus_ir.eval.significance`) compare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from argus_ir._optional import require

__all__ = ["METRICS", "score_run"]


METRICS = ("nDCG@5", "nDCG@10", "nDCG@20", "nDCG@50", "R@10", "R@50")
"""What every condition reports (the paper's nDCG cut-offs plus recall)."""


def score_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Aggregate and per-query metrics with ``ir-measures`` (queries missing from ``run`` score 0).

    Returns:
        ``(aggregate, per_query)``: metric -> mean over the qrels' queries, and query -> metric ->
        value.
    """
    ir_measures = require("ir_measures", "eval")
    parsed = [ir_measures.parse_measure(m) for m in metrics]
    names = {m: str(m) for m in parsed}
    per_query: dict[str, dict[str, float]] = {q: dict.fromkeys(metrics, 0.0) for q in qrels}
    full_run = {q: dict(run.get(q, {})) for q in qrels}
    for q in full_run:
        if not full_run[q]:
            full_run[q] = {"__none__": 0.0}  # an empty ranking still counts as a query
    for m in ir_measures.iter_calc(parsed, qrels, full_run):
        per_query[m.query_id][names[m.measure]] = float(m.value)
    n = max(len(per_query), 1)
    aggregate = {name: sum(v[name] for v in per_query.values()) / n for name in metrics}
    return aggregate, per_query


def _metric(per_query: Mapping[str, Mapping[str, float]], metric: str) -> dict[str, float]:
    return {q: float(v[metric]) for q, v in per_query.items()}
