"""The statistics of the evaluation: paired tests between conditions and App. E.1's test.

Every remedy is compared with ``"original"`` query by query (:func:`paired_test`, with
:func:`half_width` for the interval the charts draw); :func:`rps_of_gold` compares the predicted
RPS of gold documents the original index retrieved with those it missed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Significance", "half_width", "paired_test", "rps_of_gold"]


@dataclass(frozen=True)
class Significance:
    """A paired comparison of one metric between a condition and ``original``.

    Attributes:
        delta: Mean difference (condition - original).
        t: Paired t statistic (``nan`` when every difference is equal).
        p: Two-sided p-value (1.0 when every difference is 0).
        n: Queries compared.
    """

    delta: float
    t: float
    p: float
    n: int


def paired_test(a: Mapping[str, float], b: Mapping[str, float]) -> Significance:
    """Paired t-test over the queries both have (``scipy.stats.ttest_rel``), ``b`` against ``a``."""
    from scipy import stats

    qids = sorted(set(a) & set(b))
    x = np.array([a[q] for q in qids], dtype=float)
    y = np.array([b[q] for q in qids], dtype=float)
    if len(qids) < 2:
        return Significance(float(np.mean(y - x)) if qids else 0.0, math.nan, 1.0, len(qids))
    diff = y - x
    if np.allclose(diff, diff[0]):
        return Significance(float(diff.mean()), math.nan, 1.0 if diff[0] == 0 else 0.0, len(qids))
    res = stats.ttest_rel(y, x)
    return Significance(float(diff.mean()), float(res.statistic), float(res.pvalue), len(qids))


def half_width(sig: Significance, level: float = 0.95) -> float:
    """Half the width of the ``level`` confidence interval of a paired mean difference.

    The standard error is ``delta / t`` of the paired t-test; no spread (``t`` undefined) gives 0.
    """
    from scipy import stats

    if sig.n < 2 or math.isnan(sig.t) or sig.t == 0:
        return 0.0
    return float(stats.t.ppf(0.5 + level / 2, sig.n - 1) * abs(sig.delta / sig.t))


def rps_of_gold(
    max_rps: Mapping[str, float],
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    k: int = 10,
) -> dict[str, Any]:
    """Appendix E.1: the highest predicted entity RPS of gold documents, retrieved vs missed.

    For every (query, relevant document) pair, the document counts as retrieved when it is in the
    query's top ``k`` of ``run`` (the original index). Documents without any entity are left out.
    Reports count, mean and median per group and a two-sided Mann-Whitney U test between them.

    Args:
        max_rps: Document id -> highest predicted RPS over its entities.
        qrels: Relevance judgements.
        run: The original index's ranking.
        k: The cut-off that decides "retrieved".
    """
    from scipy import stats

    groups: dict[str, list[float]] = {"retrieved": [], "missed": []}
    for qid, judged in qrels.items():
        top = sorted(run.get(qid, {}).items(), key=lambda item: -item[1])[:k]
        found = {doc for doc, _ in top}
        for doc, grade in judged.items():
            if grade > 0 and doc in max_rps:
                groups["retrieved" if doc in found else "missed"].append(max_rps[doc])
    out: dict[str, Any] = {"k": k}
    for name, values in groups.items():
        arr = np.array(values, dtype=float)
        out[name] = {
            "n": len(values),
            "mean": float(arr.mean()) if len(values) else None,
            "median": float(np.median(arr)) if len(values) else None,
        }
    if groups["retrieved"] and groups["missed"]:
        test = stats.mannwhitneyu(groups["retrieved"], groups["missed"], alternative="two-sided")
        out["mannwhitney_p"] = float(test.pvalue)
    return out
