"""RPS against a hand-computed example, and the sampler's invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest

from argus_ir.audit import rps
from argus_ir.audit.entities import EntityGraph


def _angles(*degrees: float) -> np.ndarray:
    r = np.deg2rad(degrees)
    return np.stack([np.cos(r), np.sin(r)], axis=1)


@pytest.fixture
def toy():
    # 0 = x at 0 deg; 1 = t at 10 deg; 2 at 5; 3 at 90; 4 at 180; 5 at 25.
    vectors = _angles(0, 10, 5, 90, 180, 25)
    graph = EntityGraph.from_edges(6, [(0, 1), (1, 3)])
    return vectors, graph


def test_pair_stats_by_hand(toy):
    vectors, graph = toy
    st = rps.pair_stats(vectors, graph)
    got = {
        (int(x), int(t)): (int(a), int(m))
        for x, t, a, m in zip(st.target, st.query, st.n_above, st.n_eligible)
    }
    # query 1 (neighbours 0, 3): eligible {2, 4, 5}; query 0 (neighbour 1): eligible {2, 3, 4, 5};
    # query 3 (neighbour 1): eligible {0, 2, 4, 5}.
    assert got == {
        (0, 1): (1, 3),  # only 2 (5 deg) beats x=0 for the 10-deg query
        (3, 1): (2, 3),  # 2 and 5 beat 3 (90 deg)
        (1, 0): (1, 4),  # only 2 beats t=1 for the 0-deg query
        (1, 3): (1, 4),  # for the 90-deg query: 5 (25 deg) beats 1 (10 deg)
    }
    score = float(st.score[(st.target == 0) & (st.query == 1)][0])
    assert score == pytest.approx(math.cos(math.radians(10)), abs=1e-6)


def test_expected_rps_by_hand(toy):
    vectors, graph = toy
    st = rps.pair_stats(vectors, graph)
    # N = 3: two neutrals drawn from the eligible pool.
    h1 = rps.expected_hits(st, 1, 3)
    targets, r1 = rps.rps_by_target(st, h1, graph.n)
    # x=0: hit iff neutral 2 not drawn from {2,4,5}: C(2,2)/C(3,2) = 1/3.
    # x=1: pairs (1,0): 2 not drawn from 4 -> C(3,2)/C(4,2) = 1/2; (1,3) likewise 1/2.
    # x=3: two above among three, two drawn -> never a hit.
    assert targets.tolist() == [0, 1, 3]
    np.testing.assert_allclose(r1, [1 / 3, 1 / 2, 0.0])
    _, r2 = rps.rps_by_target(st, rps.expected_hits(st, 2, 3), graph.n)
    # k=2: x=3 misses only when both 2 and 5 are drawn (1 of 3 draws).
    np.testing.assert_allclose(r2, [1.0, 1.0, 2 / 3])


def test_sampled_equals_expected_when_the_whole_pool_is_drawn(toy):
    vectors, graph = toy
    st = rps.pair_stats(vectors, graph)
    n_big = 10  # larger than any pool: every eligible neutral is drawn
    for k in (1, 2):
        sampled = rps.sampled_hits(vectors, graph, st, [k], n_big, seed=3)[k]
        np.testing.assert_array_equal(sampled, rps.expected_hits(st, k, n_big))


def test_sampled_converges_to_expected(toy):
    vectors, graph = toy
    st = rps.pair_stats(vectors, graph)
    draws = np.mean(
        [rps.sampled_hits(vectors, graph, st, [1], 3, seed=s)[1] for s in range(400)], axis=0
    )
    np.testing.assert_allclose(draws, rps.expected_hits(st, 1, 3), atol=0.08)


def test_no_neutral_is_a_neighbour_of_its_query():
    rng = np.random.default_rng(0)
    n = 300
    edges = {tuple(sorted(map(int, rng.integers(0, n, 2)))) for _ in range(900)}
    graph = EntityGraph.from_edges(n, list(edges))
    vectors = rng.normal(size=(n, 8))
    st = rps.pair_stats(vectors, graph)
    seen = 0

    def check(target: int, query: int, neutrals: np.ndarray) -> None:
        nonlocal seen
        nbrs = set(graph.neighbors(query).tolist())
        assert query not in set(neutrals.tolist())
        assert target not in set(neutrals.tolist())
        assert not nbrs & set(neutrals.tolist())
        assert len(set(neutrals.tolist())) == neutrals.size  # without replacement
        seen += 1

    rps.sampled_hits(vectors, graph, st, [5], 100, seed=1, on_draw=check)
    assert seen == len(st) > 0


def test_random_geometry_sits_at_chance():
    rng = np.random.default_rng(1)
    n = 2000
    graph = EntityGraph.from_edges(n, [(i, (i * 7 + 1) % n) for i in range(n)])
    st = rps.pair_stats(rng.normal(size=(n, 32)), graph)
    assert rps.expected_hits(st, 20, 200).mean() == pytest.approx(20 / 200, abs=0.02)


def test_seeded_draws_repeat(toy):
    vectors, graph = toy
    st = rps.pair_stats(vectors, graph)
    a = rps.sampled_hits(vectors, graph, st, [1], 3, seed=7)[1]
    b = rps.sampled_hits(vectors, graph, st, [1], 3, seed=7)[1]
    np.testing.assert_array_equal(a, b)


def test_bad_k_and_n(toy):
    vectors, graph = toy
    st = rps.pair_stats(vectors, graph)
    with pytest.raises(ValueError, match="k must be"):
        rps.expected_hits(st, 5, 3)
    with pytest.raises(ValueError, match="at least 2"):
        rps.expected_hits(st, 1, 1)


def test_split_half_reliability_sees_signal_and_noise():
    rng = np.random.default_rng(2)
    n_t, per = 400, 8
    true = rng.uniform(0, 1, n_t)
    target = np.repeat(np.arange(n_t), per)
    st = rps.PairStats(
        target=target,
        query=np.arange(target.size),
        score=np.zeros(target.size),
        n_above=np.zeros(target.size, dtype=np.int64),
        n_eligible=np.ones(target.size, dtype=np.int64),
    )
    signal = rps.split_half_reliability(st, (rng.random(target.size) < true[target]).astype(float))
    noise = rps.split_half_reliability(st, rng.random(target.size))
    assert signal.spearman_brown > 0.6
    assert signal.ceiling == pytest.approx(math.sqrt(signal.spearman_brown))
    assert abs(noise.spearman_brown) < 0.2


def _pairs_of(target):
    target = np.asarray(target)
    return rps.PairStats(
        target=target,
        query=np.arange(target.size),
        score=np.zeros(target.size),
        n_above=np.zeros(target.size, dtype=np.int64),
        n_eligible=np.ones(target.size, dtype=np.int64),
    )


def test_variance_reliability_by_hand():
    # target 0: hits 1, 0 (mean .5); target 1: 1, 1, 1 (mean 1); target 2: one hit of 0 (mean 0)
    st = _pairs_of([0, 0, 1, 1, 1, 2])
    hits = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    # pooled within variance: squared deviations .25 + .25 + 0 over (2-1) + (3-1) dof = 0.5 / 3
    s2_w = 0.5 / 3
    means = np.array([0.5, 1.0, 0.0])
    expected = 1 - np.mean(s2_w / np.array([2, 3, 1])) / means.var()
    assert rps.variance_reliability(st, hits) == pytest.approx(expected)


def test_variance_reliability_matches_the_simulated_truth_and_counts_single_pairs():
    rng = np.random.default_rng(3)
    n_t = 3000
    sizes = rng.choice([1, 2, 4, 8], size=n_t)
    true = rng.beta(0.7, 1.5, n_t)
    target = np.repeat(np.arange(n_t), sizes)
    hits = (rng.random(target.size) < true[target]).astype(float)
    st = _pairs_of(target)
    label = np.bincount(target, weights=hits) / sizes
    truth = np.corrcoef(label, true)[0, 1] ** 2  # share of label variance that is signal
    assert rps.variance_reliability(st, hits) == pytest.approx(truth, abs=0.04)
    # the split-half estimate only sees targets with two or more pairs: a higher number here
    assert rps.split_half_reliability(st, hits).spearman_brown > truth + 0.05
    assert math.isnan(rps.variance_reliability(_pairs_of([0, 1, 2]), np.array([1.0, 0, 1])))
