"""collapse(): hand-worked rankings and a brute-force check over random hit lists (plain folding,
``view_discount=0``; the discount has its own tests in test_design_options.py)."""

from __future__ import annotations

import math
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from argus_ir.collapse import collapse as _collapse
from argus_ir.collapse import fold_hits
from argus_ir.errors import ArgusInputError

collapse = partial(_collapse, view_discount=0.0)

HITS = [("d1#v1", 0.9), ("d2", 0.8), ("d1", 0.5), ("d3#v1", 0.8), ("d3", 0.1)]
SOURCE = {"d1#v1": "d1", "d3#v1": "d3"}


def test_max_by_hand():
    assert collapse(HITS, SOURCE) == [("d1", 0.9), ("d2", 0.8), ("d3", 0.8)]


def test_sum_by_hand():
    ranked = collapse(HITS, SOURCE, how="sum")
    assert [s for s, _ in ranked] == ["d1", "d3", "d2"]
    assert [round(v, 9) for _, v in ranked] == [1.4, 0.9, 0.8]


def test_function_mapping_and_top_k():
    ranked = collapse(HITS, lambda h: h.split("#")[0], top_k=2)
    assert ranked == [("d1", 0.9), ("d2", 0.8)]
    assert collapse(HITS, SOURCE, top_k=0) == []


def test_without_a_mapping_every_hit_is_a_source():
    assert collapse([("a", 1.0), ("b", 2.0)]) == [("b", 2.0), ("a", 1.0)]


def test_bad_input():
    with pytest.raises(ArgusInputError, match="how must be one of"):
        collapse(HITS, how="mean")
    with pytest.raises(ArgusInputError, match="top_k must be >= 0"):
        collapse(HITS, top_k=-1)
    with pytest.raises(ArgusInputError, match="hit 'x' has a score of nan"):
        collapse([("x", math.nan)])


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "a#1", "a#2", "b", "b#1", "c"]), st.integers(-50, 50)),
        max_size=30,
    )
)
def test_max_equals_brute_force(hits):
    ranked = collapse(hits, lambda h: h.split("#")[0])
    sources = {h.split("#")[0] for h, _ in hits}
    expected = {s: max(v for h, v in hits if h.split("#")[0] == s) for s in sources}
    assert dict(ranked) == expected
    scores = [v for _, v in ranked]
    assert scores == sorted(scores, reverse=True)


def test_an_original_stored_under_another_id_folds_with_its_views_by_lineage():
    """A record manager re-keys entries by content hash: the original is found by its lineage."""
    hits = [
        ("v1", {"argus_source_id": "d1", "argus_view": "descriptor"}, 0.90),
        ("h-9f2", {"argus_source_id": "d1", "argus_view": "original"}, 0.89),
        ("d2", None, 0.80),
    ]
    folded = fold_hits(
        hits, id_of=lambda h: h[0], metadata_of=lambda h: h[1], score_of=lambda h: h[2]
    )
    assert [(f.source_id, f.score) for f in folded] == [("d1", 0.89), ("d2", 0.80)]
    assert folded[0].original == hits[1]  # not discounted, and it is the source's own entry
    assert [h[0] for h in folded[0].hits] == ["h-9f2", "v1"]  # 0.89 beats 0.90 - 0.02
