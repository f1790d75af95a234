"""The statistics of the bias audit: one setting's paired t-test of D1's scores against D2's,
with the mean difference, the effect size and the share of pairs D1 wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BiasStat:
    """One setting under one retriever.

    Attributes:
        n: Pairs.
        t: Paired t statistic of ``score(D1) - score(D2)`` (``nan`` when every difference is equal).
        p: Two-sided p-value.
        mean_diff: Mean of the differences.
        d_z: Effect size, mean difference over its standard deviation (``t / sqrt(n)``).
        d1_wins: Share of pairs where D1 scores higher (the foil setting's accuracy).
    """

    setting: str
    retriever: str
    n: int
    t: float
    p: float
    mean_diff: float
    d_z: float
    d1_wins: float


def paired_stat(setting: str, retriever: str, s1: np.ndarray, s2: np.ndarray) -> BiasStat:
    """Paired t-test (``scipy.stats.ttest_rel``) of D1's scores against D2's."""
    from scipy import stats

    s1 = np.asarray(s1, dtype=np.float64)
    s2 = np.asarray(s2, dtype=np.float64)
    diff = s1 - s2
    n = len(diff)
    if n < 2 or np.allclose(diff, diff[0]):
        t, p = math.nan, 1.0
    else:
        res = stats.ttest_rel(s1, s2)
        t, p = float(res.statistic), float(res.pvalue)
    sd = float(diff.std(ddof=1)) if n > 1 else 0.0
    mean = float(diff.mean()) if n else 0.0
    d_z = mean / sd if sd > 0 else math.nan
    wins = float((diff > 0).mean()) if n else math.nan
    return BiasStat(setting, retriever, n, t, p, mean, d_z, wins)
