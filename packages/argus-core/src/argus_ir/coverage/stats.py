"""The statistics of semantic coverage: how much of the corpus's strata a query set touches (MSC,
document-weighted coverage, Jensen-Shannon divergence), per-query scores averaged per query and
per stratum, and bootstrap win rates of one retriever over another.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from argus_ir.coverage.strata import NO_ENTITIES, Strata


def coverage_metrics(
    strata: Strata, query_vectors: Mapping[str, Mapping[int, float]]
) -> dict[str, Any]:
    """MSC, document-weighted coverage and the JS divergence of queries from the corpus.

    Returns:
        ``msc``, ``document_coverage``, ``js_divergence``, ``touched`` (stratum ids), and per
        stratum ``documents`` and ``queries`` (summed coverage weight).
    """
    from scipy.spatial.distance import jensenshannon

    k = len(strata)
    docs = np.zeros(k)
    for c in strata.doc_primary.values():
        if c != NO_ENTITIES:
            docs[c] += 1
    weight = np.zeros(k)
    for vec in query_vectors.values():
        for c, w in vec.items():
            weight[c] += w
    touched = [c for c in range(k) if weight[c] > 0]
    placed = docs.sum()
    if k and placed and weight.sum():
        js = float(jensenshannon(weight / weight.sum(), docs / placed, base=2) ** 2)
    else:
        js = math.nan
    return {
        "strata": k,
        "msc": len(touched) / k if k else math.nan,
        "document_coverage": float(docs[touched].sum() / placed) if placed else math.nan,
        "js_divergence": js,
        "touched": touched,
        "documents": docs.astype(int).tolist(),
        "queries": weight.round(4).tolist(),
    }


def stratified_means(
    scores: Mapping[str, float], primary: Mapping[str, int]
) -> tuple[float, float, dict[int, list[float]]]:
    """``(micro, macro, per-stratum scores)`` of one retriever's per-query scores.

    Micro weighs every query equally; macro every stratum that has a query.
    """
    groups: dict[int, list[float]] = {}
    for q, v in scores.items():
        groups.setdefault(primary.get(q, NO_ENTITIES), []).append(float(v))
    if not groups:
        return math.nan, math.nan, {}
    micro = float(np.mean([v for vs in groups.values() for v in vs]))
    macro = float(np.mean([np.mean(vs) for vs in groups.values()]))
    return micro, macro, groups


def bootstrap_win_rate(
    a: Mapping[str, float],
    b: Mapping[str, float],
    primary: Mapping[str, int],
    *,
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """How often ``a`` beats ``b`` over bootstrap resamples of the queries (ties count half).

    Each resample draws the queries both have with replacement; ``micro`` compares the plain
    means, ``macro`` the means of per-stratum means.
    """
    qids = sorted(set(a) & set(b))
    if not qids:
        return {"micro": math.nan, "macro": math.nan}
    rng = np.random.default_rng(seed)
    x = np.array([a[q] for q in qids])
    y = np.array([b[q] for q in qids])
    strata = np.array([primary.get(q, NO_ENTITIES) for q in qids])
    labels, index = np.unique(strata, return_inverse=True)
    wins = {"micro": 0.0, "macro": 0.0}
    for _ in range(samples):
        pick = rng.integers(0, len(qids), len(qids))
        dx, dy = x[pick].mean(), y[pick].mean()
        wins["micro"] += 1.0 if dx > dy else 0.5 if dx == dy else 0.0
        groups = index[pick]
        counts = np.bincount(groups, minlength=len(labels))
        present = counts > 0
        mx = (np.bincount(groups, x[pick], len(labels))[present] / counts[present]).mean()
        my = (np.bincount(groups, y[pick], len(labels))[present] / counts[present]).mean()
        wins["macro"] += 1.0 if mx > my else 0.5 if mx == my else 0.0
    return {k: v / samples for k, v in wins.items()}
