"""The Retrieval Probability Score (paper §3.2, App. B.3).

For a target entity ``x`` and each related entity ``t`` (a 1-hop neighbour), the query is ``e_t`` and
the candidates are ``x`` plus ``N - 1`` neutrals drawn uniformly from the entities that are not 1-hop
linked to ``t`` (and are not ``t``). ``Hit_k(x, t)`` says whether ``x`` ranks in the top ``k`` by cosine;
``RPS_k(x)`` is the mean hit over ``x``'s related entities.

All that a ranking needs is, per (target, query) pair, how many *eligible* neutrals score above ``x``
(``n_above``) out of how many are eligible (``n_eligible``): a uniform draw of ``N - 1`` of them then
puts a hypergeometric number above ``x``. That gives two labels:

- :func:`sampled_hits` draws the neutrals explicitly (the paper's estimator, seeded);
- :func:`expected_hits` is the exact expectation of ``Hit_k`` over the draw (no sampling noise).

Ties: a neutral scoring exactly as ``x`` does not outrank it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from argus_ir.audit.entities import EntityGraph
from argus_ir.errors import ArgusInputError

__all__ = [
    "PairStats",
    "Reliability",
    "expected_hits",
    "normalize_rows",
    "pair_stats",
    "rps_by_target",
    "sampled_hits",
    "split_half_reliability",
    "variance_reliability",
]


@dataclass(frozen=True, eq=False)
class PairStats:
    """Ranking facts for every (target, related entity) pair.

    Attributes:
        target: Index of the target entity ``x`` per pair.
        query: Index of the related entity ``t`` whose vector is the query.
        score: ``cos(e_t, e_x)``.
        n_above: Eligible neutrals scoring strictly above ``x``.
        n_eligible: Eligible neutrals for the query (``n - 1 - deg(t)``).
    """

    target: np.ndarray
    query: np.ndarray
    score: np.ndarray
    n_above: np.ndarray
    n_eligible: np.ndarray

    def __len__(self) -> int:
        return int(self.target.size)


@dataclass(frozen=True)
class Reliability:
    """Split-half reliability of RPS over each entity's related set.

    Attributes:
        half_r: Mean Pearson correlation between the two halves' RPS across entities.
        spearman_brown: Reliability of the full-set RPS (``2r / (1 + r)``).
        ceiling: ``sqrt(spearman_brown)``: the highest Pearson correlation any predictor can reach
            against this noisy label (the correlation of the label with its own noise-free value).
        n_entities: Entities with at least two related entities (the ones that can be split).
        all_reliability: Reliability of the label over *every* target, single-relation ones
            included, from :func:`variance_reliability` (NaN where not computed).
        all_ceiling: ``sqrt(all_reliability)``: the Pearson ceiling for a test split drawn from
            all targets, as probes are tested.
    """

    half_r: float
    spearman_brown: float
    ceiling: float
    n_entities: int
    all_reliability: float = float("nan")
    all_ceiling: float = float("nan")


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows (zero rows stay zero) as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def _pairs(graph: EntityGraph, targets: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    deg = graph.degree()
    tgt = np.arange(graph.n) if targets is None else np.asarray(targets, dtype=np.int64)
    tgt = tgt[deg[tgt] > 0]
    target = np.repeat(tgt, deg[tgt])
    query = np.concatenate([graph.neighbors(int(i)) for i in tgt]) if tgt.size else target
    order = np.lexsort((target, query))  # grouped by query, then target
    return target[order], query[order]


def _eligible_mask(graph: EntityGraph, t: int) -> np.ndarray:
    mask = np.ones(graph.n, dtype=bool)
    mask[t] = False
    mask[graph.neighbors(t)] = False
    return mask


def pair_stats(
    vectors: np.ndarray,
    graph: EntityGraph,
    targets: Sequence[int] | np.ndarray | None = None,
    *,
    chunk: int = 512,
) -> PairStats:
    """Score every (target, related) pair against its eligible neutral pool.

    Args:
        vectors: ``(n, d)`` entity embeddings, index-aligned with ``graph``.
        graph: 1-hop relations.
        targets: Entities to audit (default: every entity with a neighbour).
        chunk: Queries scored per matrix product.

    Returns:
        One row per pair, grouped by query.
    """
    if vectors.shape[0] != graph.n:
        raise ArgusInputError(f"{vectors.shape[0]} vectors for a graph of {graph.n} entities")
    unit = normalize_rows(vectors)
    target, query = _pairs(graph, None if targets is None else np.asarray(targets))
    score = np.empty(target.size, dtype=np.float32)
    n_above = np.empty(target.size, dtype=np.int64)
    n_eligible = np.empty(target.size, dtype=np.int64)
    queries, starts = np.unique(query, return_index=True)
    bounds = np.append(starts, query.size)
    for c0 in range(0, queries.size, chunk):
        block = queries[c0 : c0 + chunk]
        sims = unit[block] @ unit.T  # (chunk, n)
        for j, t in enumerate(block):
            lo, hi = bounds[c0 + j], bounds[c0 + j + 1]
            row = sims[j]
            pool = np.sort(row[_eligible_mask(graph, int(t))])
            s_x = row[target[lo:hi]]
            score[lo:hi] = s_x
            n_above[lo:hi] = pool.size - np.searchsorted(pool, s_x, side="right")
            n_eligible[lo:hi] = pool.size
    return PairStats(target, query, score, n_above, n_eligible)


def expected_hits(stats: PairStats, k: int, n_neutrals: int) -> np.ndarray:
    """Exact ``E[Hit_k]`` per pair over the uniform draw of ``N - 1`` neutrals.

    ``x`` is a hit when fewer than ``k`` drawn neutrals score above it; the number drawn from the
    ``n_above`` is hypergeometric. Pools smaller than ``N - 1`` are used whole.
    """
    from scipy.stats import hypergeom

    _check_k_n(k, n_neutrals)
    draws = np.minimum(n_neutrals - 1, stats.n_eligible)
    return hypergeom.cdf(k - 1, stats.n_eligible, stats.n_above, draws).astype(np.float64)


def sampled_hits(
    vectors: np.ndarray,
    graph: EntityGraph,
    stats: PairStats,
    ks: Sequence[int],
    n_neutrals: int,
    *,
    seed: int = 0,
    on_draw: Callable[[int, int, np.ndarray], None] | None = None,
) -> dict[int, np.ndarray]:
    """Empirical ``Hit_k`` per pair with explicitly drawn neutral pools (one draw serves every k).

    Args:
        vectors: ``(n, d)`` entity embeddings.
        graph: 1-hop relations (defines eligibility).
        stats: Pairs from :func:`pair_stats` on the same vectors and graph.
        ks: Cutoffs.
        n_neutrals: Pool size ``N`` (the target plus ``N - 1`` neutrals).
        seed: Seed of the draw.
        on_draw: Called as ``on_draw(target, query, neutral_indices)`` for every pair (for audits
            of the sampler itself).

    Returns:
        ``{k: hits}`` with ``hits`` a 0/1 float array aligned with ``stats``.
    """
    for k in ks:
        _check_k_n(k, n_neutrals)
    rng = np.random.default_rng(seed)
    unit = normalize_rows(vectors)
    above = np.empty(len(stats), dtype=np.int64)
    queries, starts = np.unique(stats.query, return_index=True)
    bounds = np.append(starts, stats.query.size)
    for j, t in enumerate(queries):
        lo, hi = bounds[j], bounds[j + 1]
        eligible = np.nonzero(_eligible_mask(graph, int(t)))[0]
        scores = unit[eligible] @ unit[int(t)]
        size = min(n_neutrals - 1, eligible.size)
        for p in range(lo, hi):
            draw = rng.choice(eligible.size, size=size, replace=False)
            if on_draw is not None:
                on_draw(int(stats.target[p]), int(t), eligible[draw])
            above[p] = int(np.count_nonzero(scores[draw] > stats.score[p]))
    return {k: (above < k).astype(np.float64) for k in ks}


def rps_by_target(stats: PairStats, hits: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean hit per target.

    Returns:
        ``(targets, rps)``: sorted target indices and their RPS.
    """
    sums = np.bincount(stats.target, weights=hits, minlength=n)
    counts = np.bincount(stats.target, minlength=n)
    targets = np.nonzero(counts)[0]
    return targets, sums[targets] / counts[targets]


def split_half_reliability(
    stats: PairStats, hits: np.ndarray, *, n_splits: int = 50, seed: int = 0
) -> Reliability:
    """Estimate how reproducible RPS is from one half of each entity's related set to the other.

    For every entity with at least two related entities, its pairs are split at random into two
    halves; the Pearson correlation between the halves' mean hits across entities, averaged over
    ``n_splits`` random splits, is corrected to full length with the Spearman-Brown formula.
    """
    rng = np.random.default_rng(seed)
    order = np.argsort(stats.target, kind="stable")
    tgt = stats.target[order]
    h = np.asarray(hits, dtype=np.float64)[order]
    uniq, starts, counts = np.unique(tgt, return_index=True, return_counts=True)
    keep = counts >= 2
    uniq, starts, counts = uniq[keep], starts[keep], counts[keep]
    if uniq.size < 3:
        return Reliability(float("nan"), float("nan"), float("nan"), int(uniq.size))
    rs = []
    group = np.repeat(np.arange(uniq.size), counts)
    compact_starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank_in_group = np.arange(group.size) - np.repeat(compact_starts, counts)
    first = rank_in_group < np.repeat(counts // 2, counts)
    hv = h[np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts)])]
    for _ in range(n_splits):
        # shuffle inside each group (sort by group, then a random key); groups keep their slots
        hp = hv[np.lexsort((rng.random(group.size), group))]
        a = np.bincount(group[first], weights=hp[first], minlength=uniq.size) / (counts // 2)
        b = np.bincount(group[~first], weights=hp[~first], minlength=uniq.size) / (
            counts - counts // 2
        )
        if a.std() == 0 or b.std() == 0:
            continue
        rs.append(float(np.corrcoef(a, b)[0, 1]))
    if not rs:
        return Reliability(float("nan"), float("nan"), float("nan"), int(uniq.size))
    r = float(np.mean(rs))
    sb = 2 * r / (1 + r) if r > -1 else float("nan")
    ceiling = float(np.sqrt(sb)) if sb > 0 else 0.0
    return Reliability(r, float(sb), ceiling, int(uniq.size))


def variance_reliability(stats: PairStats, hits: np.ndarray) -> float:
    """Reliability of per-target RPS over all targets, from one-way variance components.

    Each target's RPS is the mean of its ``n_i`` pair hits. With ``s2_w`` the pooled within-target
    variance of hits (from targets with at least two pairs), the noise variance of target ``i``'s
    mean is ``s2_w / n_i``; the reliability is ``1 - mean_i(s2_w / n_i) / var(RPS)``, the share of
    the label's variance that is not sampling noise of its related set. Unlike the split-half
    estimate it covers targets with a single related entity, whose labels are the noisiest, so it
    is the ceiling that applies to a test split drawn from all targets.

    Returns:
        The reliability, clipped at 0; NaN when no target has two pairs or the labels are constant.
    """
    h = np.asarray(hits, dtype=np.float64)
    counts = np.bincount(stats.target)
    sums = np.bincount(stats.target, weights=h)
    present = counts > 0
    means = np.zeros(counts.size)
    means[present] = sums[present] / counts[present]
    dev2 = np.bincount(stats.target, weights=(h - means[stats.target]) ** 2)
    n = counts[present]
    multi = n >= 2
    y = means[present]
    if not multi.any() or y.var() == 0:
        return float("nan")
    s2_w = dev2[present][multi].sum() / (n[multi] - 1).sum()
    return max(0.0, float(1.0 - np.mean(s2_w / n) / y.var()))


def _check_k_n(k: int, n_neutrals: int) -> None:
    if n_neutrals < 2:
        raise ArgusInputError(f"the pool size N must be at least 2, got {n_neutrals}")
    if not 1 <= k <= n_neutrals:
        raise ArgusInputError(f"k must be in [1, N={n_neutrals}], got {k}")
