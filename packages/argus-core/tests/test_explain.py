"""explain: per-query moves and mechanisms on hand-made rankings whose answers are worked by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.eval.explain import (
    FLAGS,
    MECHANISMS,
    EntryInfo,
    QueryExplanation,
    explain_markdown,
    explain_query,
    summarize,
)
from argus_ir.kb import Passage


def view(entry_id, source_id, entity, title, *, kind="expansion", hidden=False):
    return EntryInfo(
        entry_id, source_id, kind, entity=entity, kb_id=title, passage_title=title, hidden=hidden
    )


# -- one query --------------------------------------------------------------------------------


def test_relevant_source_lifted_by_its_view():
    # d3 (relevant) rises from 3rd to 2nd on its view's 0.85 (its original scored 0.5) and
    # pushes the unrelated d2 out of the top 2
    entries = {"d3#v0": view("d3#v0", "d3", "Ebola", "Ebola")}
    before = [("d1", 0.9, "d1"), ("d2", 0.8, "d2"), ("d3", 0.5, "d3")]
    after = [("d1", 0.9, "d1"), ("d3", 0.85, "d3#v0"), ("d2", 0.8, "d2")]
    ex = explain_query("q1", "vaccine trials", {"d3": 2}, before, after, entries, k=2)
    assert [(m.source_id, m.direction, m.mechanism) for m in ex.moved] == [
        ("d3", "in", "view lifts relevant"),
        ("d2", "out", "unrelated pushed out"),
    ]
    lifted, pushed = ex.moved
    assert (lifted.rank_before, lifted.rank_after, lifted.grade) == (3, 2, 2)
    assert (lifted.score_before, lifted.score_after) == (0.5, 0.85)
    assert lifted.entry == entries["d3#v0"]
    assert lifted.margin == pytest.approx(0.35)
    assert lifted.flags == ()
    assert (pushed.rank_before, pushed.rank_after, pushed.grade) == (2, 3, 0)
    assert pushed.entry is not None and pushed.entry.kind == "original"
    assert pushed.margin is None
    assert ex.entered == (lifted,) and ex.left == (pushed,)


def test_famous_entity_lifts_unrelated_and_pushes_relevant_out():
    # x only mentions Obama; its view carries the "Barack Obama" passage the query names
    entries = {"x#v1": view("x#v1", "x", "Barack Obama", "Barack Obama")}
    before = [("r1", 0.7, "r1"), ("r2", 0.6, "r2"), ("x", 0.4, "x")]
    after = [("x", 0.75, "x#v1"), ("r1", 0.7, "r1"), ("r2", 0.6, "r2")]
    ex = explain_query(
        "q2",
        "What did BARACK OBAMA sign in 2010?",
        {"r1": 1, "r2": 1},
        before,
        after,
        entries,
        k=2,
    )
    lift, out = ex.moved
    assert (lift.source_id, lift.mechanism, lift.flags) == (
        "x",
        "view lifts unrelated",
        ("query names the passage",),
    )
    assert (lift.rank_before, lift.rank_after) == (3, 1)
    assert lift.margin == pytest.approx(0.35)
    assert (out.source_id, out.mechanism, out.relevant) == ("r2", "relevant pushed out", True)
    assert (out.rank_before, out.rank_after, out.score_before, out.score_after) == (2, 3, 0.6, 0.6)
    assert out.flags == ()


@pytest.mark.parametrize(
    ("query", "entity", "title", "named"),
    [
        ("obamacare costs", "Obama", "Obama", False),  # whole words only
        ("Obama's mother", "Obama", "Obama", True),
        ("mercury retrograde", "Hg", "Mercury (planet)", True),  # title without its qualifier
        ("who founded jaguar?", "Jaguar", "Jaguar Cars", True),  # the entity is named
        ("sports cars", "Jaguar", "Jaguar Cars", False),
    ],
)
def test_query_names_the_passage(query, entity, title, named):
    entries = {"x#v": view("x#v", "x", entity, title)}
    ex = explain_query(
        "q",
        query,
        {},
        [("a", 0.5, "a"), ("x", 0.1, "x")],
        [("x", 0.6, "x#v"), ("a", 0.5, "a")],
        entries,
        k=1,
    )
    assert ("query names the passage" in ex.moved[0].flags) is named


@pytest.mark.parametrize(
    ("entity", "title", "wrong"),
    [
        ("Jaguar", "Jaguar Cars", True),  # the lookup fell back to a lexical neighbour
        ("Mercury", "Mercury (planet)", True),  # a disambiguated title is a neighbour too
        ("jaguar ", "JAGUAR", False),  # compared normalised, as the KB lookup does
        ("Apple|Jaguar", "jaguar", False),  # any of a merged view's entities
        ("", "Jaguar", False),  # entity unknown: no verdict
        ("Jaguar", "", False),  # passage unknown: no verdict
    ],
)
def test_wrong_sense_passage(entity, title, wrong):
    entries = {"x#v": view("x#v", "x", entity, title)}
    before = [("a", 0.5, "a"), ("x", 0.1, "x")]
    after = [("x", 0.6, "x#v"), ("a", 0.5, "a")]
    ex = explain_query("q", "unrelated words", {}, before, after, entries, k=1)
    assert ("wrong-sense passage" in ex.moved[0].flags) is wrong
    assert ex.moved[0].mechanism == "view lifts unrelated"  # a flag, not another mechanism


@pytest.mark.parametrize("hidden", [True, False])
def test_hidden_view_flag(hidden):
    entries = {"x#v": view("x#v", "x", "Ebola", "Ebola", hidden=hidden)}
    before = [("a", 0.5, "a"), ("x", 0.49, "x")]
    after = [("x", 0.5000001, "x#v"), ("a", 0.5, "a")]
    ex = explain_query("q", "something", {"x": 1}, before, after, entries, k=1)
    lift, out = ex.moved
    assert lift.mechanism == "view lifts relevant"
    assert ("hidden view" in lift.flags) is hidden
    assert out.flags == ()  # scored by its original: never flagged


def test_no_moves_when_the_top_k_keeps_its_members():
    entries = {"d2#v": view("d2#v", "d2", "Ebola", "Ebola")}
    before = [("d1", 0.9, "d1"), ("d2", 0.8, "d2"), ("d3", 0.5, "d3")]
    after = [("d2", 0.95, "d2#v"), ("d1", 0.9, "d1"), ("d3", 0.5, "d3")]  # reordered inside
    ex = explain_query("q", "ebola", {"d1": 1}, before, after, entries, k=2, before_metric=1.0)
    assert ex.moved == ()
    assert ex.delta is None and ex.outcome() == "unscored"


def test_relevant_and_unrelated_fell_under_a_fusion_that_lowers_scores():
    before = [("r", 0.9, "r"), ("u", 0.8, "u"), ("a", 0.7, "a"), ("b", 0.6, "b")]
    after = [("a", 0.7, "a"), ("b", 0.6, "b"), ("r", 0.5, "r")]
    # u is beyond the remedy's ranking: its score is unknown, so it counts as pushed out
    ex = explain_query("q", "text", {"r": 1}, before, after, {}, k=2)
    by_source = {m.source_id: m for m in ex.moved}
    assert by_source["a"].mechanism == "original entered"
    assert by_source["r"].mechanism == "relevant fell"
    assert by_source["u"].mechanism == "unrelated pushed out"
    assert by_source["u"].rank_after is None and by_source["u"].entry is None
    # left sources come by rank under the remedy, those beyond it last
    assert [m.source_id for m in ex.left] == ["r", "u"]
    # a drop within the tolerance is not a fall
    after = [("a", 0.95, "a#v"), ("b", 0.92, "b#v"), ("r", 0.9 - 1e-9, "r")]
    entries = {e: view(e, e[0], "Ebola", "Ebola") for e in ("a#v", "b#v")}
    ex = explain_query("q", "text", {"r": 1}, before, after, entries, k=2)
    assert {m.source_id: m.mechanism for m in ex.left}["r"] == "relevant pushed out"
    before = [("u", 0.9, "u"), ("a", 0.7, "a")]
    ex = explain_query("q", "text", {}, before, [("a", 0.7, "a"), ("u", 0.2, "u")], {}, k=1)
    assert ex.left[0].mechanism == "unrelated fell"


def test_entry_info_from_view_metadata():
    text = "Ebola virus disease is a viral haemorrhagic fever. " * 10
    meta = {
        "argus_source_id": "d1",
        "argus_view": "merged",
        "argus_entity": "Ebola|WHO",
        "argus_kb_id": "p1|p2",
    }
    info = EntryInfo.from_metadata(
        "d1#m", meta, passages={"p1": Passage("p1", "Ebola", text)}, hidden=True
    )
    assert (info.source_id, info.kind, info.surfaces, info.kb_id) == (
        "d1",
        "merged",
        ("Ebola", "WHO"),
        "p1|p2",
    )
    assert info.passage_title == "Ebola" and info.hidden
    assert info.passage_excerpt.startswith("Ebola virus disease is a viral")
    assert info.passage_excerpt.endswith("…") and len(info.passage_excerpt) <= 201
    assert EntryInfo.from_metadata("d1", None) == EntryInfo("d1", "d1", "original")
    by_function = EntryInfo.from_metadata(
        "d1#m", meta, passages={"p1": Passage("p1", "Ebola", text)}.get
    )
    assert by_function == EntryInfo.from_metadata(
        "d1#m", meta, passages={"p1": Passage("p1", "Ebola", text)}
    )
    assert EntryInfo.from_metadata("d1#m", meta, passages=lambda _: None).passage_title == ""


# -- many queries -----------------------------------------------------------------------------


def three_queries() -> list[QueryExplanation]:
    """Worked by hand: q1 loses (famous entity), q2 gains (remedy works), q3 is unchanged with
    two unrelated lifts, one through the same passage as q1 and one through a wrong sense."""
    obama = "Barack Obama"
    q1 = explain_query(
        "q1",
        "Barack Obama health care law",
        {"r1": 1, "r2": 1},
        [("r1", 0.7, "r1"), ("r2", 0.6, "r2"), ("x", 0.4, "x")],
        [("x", 0.75, "x#v"), ("r1", 0.7, "r1"), ("r2", 0.6, "r2")],
        {"x#v": view("x#v", "x", obama, obama)},
        k=2,
        before_metric=1.0,
        after_metric=0.6131,
        metric="nDCG@2",
    )
    q2 = explain_query(
        "q2",
        "vaccine trials",
        {"d3": 1},
        [("d1", 0.9, "d1"), ("d2", 0.8, "d2"), ("d3", 0.5, "d3")],
        [("d1", 0.9, "d1"), ("d3", 0.85, "d3#v"), ("d2", 0.8, "d2")],
        {"d3#v": view("d3#v", "d3", "Ebola", "Ebola")},
        k=2,
        before_metric=0.0,
        after_metric=0.6309,
        metric="nDCG@2",
    )
    q3 = explain_query(
        "q3",
        "health policy",
        {"r": 1},
        [("a", 0.5, "a"), ("b", 0.4, "b"), ("y", 0.3, "y"), ("z", 0.2, "z"), ("r", 0.1, "r")],
        [("y", 0.6, "y#v"), ("z", 0.55, "z#v"), ("a", 0.5, "a"), ("b", 0.4, "b"), ("r", 0.1, "r")],
        {
            "y#v": view("y#v", "y", obama, obama),
            "z#v": view("z#v", "z", "Jaguar", "Jaguar Cars"),
        },
        k=2,
        before_metric=0.0,
        after_metric=0.0,
        metric="nDCG@2",
    )
    return [q1, q2, q3]


def test_summarize_three_queries_by_hand():
    s = summarize(three_queries())
    assert (s["queries"], s["lost"], s["gained"], s["unchanged"], s["unscored"]) == (3, 1, 1, 1, 0)
    assert s["moves"] == 2 + 2 + 4
    assert (s["lost_without_moves"], s["gained_without_moves"]) == (0, 0)
    assert set(s["mechanisms"]) == set(MECHANISMS) and set(s["flags"]) == set(FLAGS)
    m = s["mechanisms"]
    assert m["view lifts unrelated"] == {
        "lost": 1,
        "gained": 0,
        "unchanged": 2,
        "unscored": 0,
        "all": 3,
    }
    assert m["relevant pushed out"] == {
        "lost": 1,
        "gained": 0,
        "unchanged": 0,
        "unscored": 0,
        "all": 1,
    }
    assert m["view lifts relevant"]["gained"] == m["view lifts relevant"]["all"] == 1
    assert (m["unrelated pushed out"]["gained"], m["unrelated pushed out"]["unchanged"]) == (1, 2)
    assert sum(row["all"] for row in m.values()) == s["moves"]
    f = s["flags"]
    assert (f["query names the passage"]["lost"], f["query names the passage"]["all"]) == (1, 1)
    assert (f["wrong-sense passage"]["unchanged"], f["wrong-sense passage"]["all"]) == (1, 1)
    assert f["hidden view"]["all"] == 0
    lifts = s["unrelated_lifts"]
    assert (lifts["moves"], lifts["passages"], lifts["entities"]) == (3, 2, 2)
    assert lifts["query_names_passage"] == 1
    assert lifts["query_names_passage_share"] == pytest.approx(1 / 3)
    assert lifts["top_passages"] == [
        {"title": "Barack Obama", "moves": 2},
        {"title": "Jaguar Cars", "moves": 1},
    ]
    assert (s["k"], s["metric"]) == (2, "nDCG@2")
    json.dumps(s)


def test_view_moves_are_counted_by_the_match_kind_of_their_passage():
    """By hand: q1's and q3's Obama views were matched by title, q2's Ebola view by alias, q3's
    Jaguar view by BM25 (a wrong sense); a view written before argus_kb_match is "unknown"."""
    kinds = {"x#v": "title", "d3#v": "alias", "y#v": "title", "z#v": "bm25"}

    def tagged(ex: QueryExplanation) -> QueryExplanation:
        moved = tuple(
            m
            if m.entry is None or not m.entry.is_view
            else replace(m, entry=replace(m.entry, kb_match=kinds[m.entry.entry_id]))
            for m in ex.moved
        )
        return replace(ex, moved=moved)

    s = summarize([tagged(ex) for ex in three_queries()])
    assert s["view_moves_by_match"] == {
        "title": {
            "moves": 2,
            "view lifts relevant": 0,
            "view lifts unrelated": 2,
            "wrong-sense passage": 0,
        },
        "alias": {
            "moves": 1,
            "view lifts relevant": 1,
            "view lifts unrelated": 0,
            "wrong-sense passage": 0,
        },
        "bm25": {
            "moves": 1,
            "view lifts relevant": 0,
            "view lifts unrelated": 1,
            "wrong-sense passage": 1,
        },
    }
    assert set(summarize(three_queries())["view_moves_by_match"]) == {"unknown"}
    text = explain_markdown([], s)
    assert "| title | 2 | 0 | 2 | 0 |" in text and "| bm25 | 1 | 0 | 1 | 1 |" in text
    meta = {"argus_source_id": "d", "argus_view": "descriptor", "argus_kb_match": "gazetteer|title"}
    assert EntryInfo.from_metadata("v", meta).match == "gazetteer"


def test_summarize_tolerance_and_unscored():
    tiny = QueryExplanation("t", "text", 10, (), 0.5, 0.5 + 1e-12)
    tiny_down = QueryExplanation("t2", "text", 10, (), 0.5, 0.5 - 1e-12)
    silent_loss = QueryExplanation("l", "text", 10, (), 0.5, 0.4)
    unscored = QueryExplanation("u", "text", 5)
    s = summarize([tiny, tiny_down, silent_loss, unscored])
    assert (s["lost"], s["gained"], s["unchanged"], s["unscored"]) == (1, 0, 2, 1)
    assert s["lost_without_moves"] == 1
    assert s["unrelated_lifts"]["query_names_passage_share"] is None
    assert s["k"] is None  # the queries do not share one k
    assert summarize([tiny], tolerance=0.0)["gained"] == 1
    with pytest.raises(ArgusInputError, match="tolerance"):
        summarize([tiny], tolerance=-1.0)


def test_markdown_report():
    explanations = three_queries()
    text = explain_markdown(explanations, summarize(explanations))
    for needle in (
        "q1",
        "Barack Obama health care law",
        "view lifts unrelated; query names the passage",
        "relevant pushed out",
        "view lifts relevant",
        "wrong-sense passage",
        "## Largest losses",
        "## Largest gains",
        "| x | 3 -> 1 | 0 |",
        "+0.3500",
    ):
        assert needle in text, needle
    # losses before gains; q3 is unchanged and gets no section of its own
    assert text.index("### q1") < text.index("### q2")
    assert "### q3" not in text
    brief = explain_markdown(explanations, summarize(explanations), limit=0)
    assert "### q1" not in brief
    assert "| view lifts unrelated | 1 | 0 | 2 | 3 |" in brief


def test_markdown_escapes_pipes_and_orders_losses():
    entries = {"x#m": view("x#m", "x", "Apple|Jaguar", "Jaguar", kind="merged")}
    big = explain_query(
        "big",
        "a",
        {},
        [("a", 0.5, "a"), ("x", 0.1, "x")],
        [("x", 0.6, "x#m"), ("a", 0.5, "a")],
        entries,
        k=1,
        before_metric=0.9,
        after_metric=0.1,
    )
    small = QueryExplanation("small", "b", 1, (), 0.9, 0.8)
    text = explain_markdown([small, big], summarize([small, big]))
    assert "Apple\\|Jaguar" in text
    assert text.index("### big") < text.index("### small")
    assert "No source crossed the top 1" in text


def test_to_dict_round_trips_through_json():
    for ex in three_queries():
        data = json.loads(json.dumps(ex.to_dict()))
        assert data["delta"] == pytest.approx(ex.delta)
        assert QueryExplanation.from_dict(data) == ex


# -- bad input --------------------------------------------------------------------------------

BEFORE = [("d1", 0.9, "d1"), ("d2", 0.5, "d2")]


def test_unknown_view_entry_is_named():
    after = [("d2", 0.95, "d2#v9"), ("d1", 0.9, "d1")]
    with pytest.raises(ArgusInputError, match=r"query 'q7'.*entry 'd2#v9'.*not in entries"):
        explain_query("q7", "text", {}, BEFORE, after, {}, k=1)


@pytest.mark.parametrize(
    ("before", "after", "entries", "match"),
    [
        (BEFORE, [("d2", 0.95, "d1#v")], {"d1#v": EntryInfo("d1#v", "d1", "expansion")},
         "entry 'd1#v', which belongs to source 'd1'"),
        ([("d1", 0.9, "d1#v")], [], {"d1#v": EntryInfo("d1#v", "d1", "expansion")},
         "before ranking scores 'd1' by expansion view 'd1#v'"),
        ([("d1", 0.5, "d1"), ("d2", 0.9, "d2")], [], {}, "not best first"),
        ([("d1", math.nan, "d1")], [], {}, "'d1' a score of nan"),
        ([("d1", 0.9, "d1"), ("d1", 0.5, "d1")], [], {}, "names source 'd1' twice"),
        ([("d1", 0.9)], [], {}, "row 1"),
        (BEFORE, [("d1", 0.9, "d1#v")], {"d1#v": EntryInfo("d1#x", "d1", "expansion")},
         r"entries\['d1#v'\] describes entry 'd1#x'"),
    ],
)  # fmt: skip
def test_bad_rankings(before, after, entries, match):
    with pytest.raises(ArgusInputError, match=match):
        explain_query("q", "text", {}, before, after, entries, k=1)


def test_bad_arguments():
    with pytest.raises(ArgusInputError, match="k must be an integer >= 1"):
        explain_query("q", "text", {}, BEFORE, BEFORE, {}, k=0)
    with pytest.raises(ArgusInputError, match="grade of 'd1'"):
        explain_query("q", "text", {"d1": "yes"}, BEFORE, BEFORE, {})  # type: ignore[dict-item]
    with pytest.raises(ArgusInputError, match="after_metric"):
        explain_query("q", "text", {}, BEFORE, BEFORE, {}, after_metric=math.inf)
    with pytest.raises(ArgusInputError, match="kind must be one of"):
        EntryInfo("d1#v", "d1", "paraphrase")
    with pytest.raises(ArgusInputError, match="an original is its own source"):
        EntryInfo("d1#v", "d1", "original")
    with pytest.raises(ArgusInputError, match="limit"):
        explain_markdown([], summarize([]), limit=-1)
