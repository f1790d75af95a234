"""The boundary rules every adapter applies (docs/adapters.md, "Boundaries"), on hand-worked hits.

Query time: a view folds into its source only when the source's original carries the view's
metadata (lineage keys aside), so a view that passed a tenant's filter never brings in another
tenant's document, and a view with hand-written lineage lifts nothing. Ingest time: lineage keys
on input are not trusted unless asked, and a consistent argus view is told from a look-alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from argus_ir.collapse import Resolved, resolve_sources, same_scope
from argus_ir.remedy.texts import view_id, view_key
from argus_ir.runners.integration import Record, _select, is_genuine_view, original_metadata
from argus_ir.testing import cosine_reference

Hit = tuple[str, float, dict[str, Any]]


def _orig(doc_id: str, **meta: Any) -> dict[str, Any]:
    return {"argus_source_id": doc_id, "argus_view": "original", **meta}


def _view(source: str, **meta: Any) -> dict[str, Any]:
    return {"argus_source_id": source, "argus_view": "expansion", **meta}


def _run(
    hits: list[Hit], store: Mapping[str, dict[str, Any]], top_k: int | None = None, **kw: Any
) -> tuple[Resolved[Hit], list[list[str]]]:
    """Drive the generator as an adapter does: ``store`` is what a read by id returns."""
    steps = resolve_sources(
        hits,
        id_of=lambda h: h[0],
        metadata_of=lambda h: h[2],
        score_of=lambda h: h[1],
        top_k=top_k,
        view_discount=0.0,
        **kw,
    )
    asked: list[list[str]] = []
    try:
        missing = next(steps)
        while True:
            asked.append(missing)
            missing = steps.send({i: store[i] for i in missing if i in store})
    except StopIteration as done:
        return done.value, asked


def test_a_view_from_another_tenant_does_not_bring_in_its_named_document():
    # tenant b's filtered search returned b's own document and a view naming a's document
    hits = [("forged", 0.9, _view("a1", tenant="b")), ("b1", 0.5, _orig("b1", tenant="b"))]
    store = {"a1": _orig("a1", tenant="a"), "b1": _orig("b1", tenant="b")}
    resolved, asked = _run(hits, store, top_k=3)
    assert [s.source_id for s in resolved.sources] == ["b1"]
    assert resolved.refused == ["forged"]
    assert asked == [["a1"]]  # read, then refused: its metadata is not the view's


def test_a_genuine_view_still_lifts_an_original_the_search_did_not_return():
    hits = [("v", 0.9, _view("d1", tenant="a")), ("d2", 0.5, _orig("d2", tenant="a"))]
    store = {"d1": _orig("d1", tenant="a")}
    resolved, _ = _run(hits, store, top_k=2)
    assert [(s.source_id, s.score) for s in resolved.sources] == [("d1", 0.9), ("d2", 0.5)]
    assert resolved.refused == [] and resolved.dropped == []


def test_a_refused_view_counts_for_nothing_and_the_ranking_is_folded_again():
    # d1's own hit is weak; a view with other metadata would have put it first
    hits = [
        ("x", 0.95, _view("d1", tenant="b")),
        ("d2", 0.6, _orig("d2", tenant="a")),
        ("d1", 0.4, _orig("d1", tenant="a")),
    ]
    resolved, asked = _run(hits, {}, top_k=2)
    assert [(s.source_id, s.score) for s in resolved.sources] == [("d2", 0.6), ("d1", 0.4)]
    assert resolved.refused == ["x"]
    assert asked == []  # every original was among the hits


@pytest.mark.parametrize("fake_score", [0.6, 0.9])
def test_a_forged_original_does_not_take_over_a_source(fake_score: float):
    # an entry claiming to be d1's original, with other metadata, is refused beside the real one
    # (the entry stored under d1's own id is its original, however the other scores)
    hits = [("d1", 0.7, _orig("d1", tenant="a")), ("fake", fake_score, _orig("d1", tenant="b"))]
    resolved, _ = _run(hits, {})
    assert [(s.source_id, s.score) for s in resolved.sources] == [("d1", 0.7)]
    assert resolved.sources[0].original == hits[0]
    assert resolved.refused == ["fake"]


def test_an_outdated_view_is_refused_when_its_original_moved():
    hits = [("v", 0.9, _view("d1", tenant="a", year=2020))]
    resolved, _ = _run(hits, {"d1": _orig("d1", tenant="a", year=2024)})
    assert resolved.sources == [] and resolved.refused == ["v"]


def test_orphans_are_dropped_or_kept_as_asked():
    hits = [("v", 0.9, _view("gone", tenant="a")), ("d2", 0.5, _orig("d2", tenant="a"))]
    dropped, _ = _run(hits, {})
    assert [s.source_id for s in dropped.sources] == ["d2"] and dropped.dropped == ["gone"]
    kept, _ = _run(hits, {}, keep_orphans=True)
    assert [s.source_id for s in kept.sources] == ["gone", "d2"]
    assert kept.sources[0].original is None and kept.sources[0].best == hits[0]


def test_originals_are_read_once_and_only_as_many_as_the_results_lack():
    hits = [
        ("v1", 0.9, _view("d1")),
        ("v2", 0.8, _view("d2")),
        ("v3", 0.7, _view("d3")),
    ]
    store = {"d1": _orig("d1"), "d2": _orig("d2", extra=1), "d3": _orig("d3")}
    resolved, asked = _run(hits, store, top_k=2)
    assert [s.source_id for s in resolved.sources] == ["d1", "d3"]
    assert resolved.refused == ["v2"]
    assert asked == [["d1", "d2"], ["d3"]]  # d1 is not read again after the refold


def test_store_added_keys_can_be_ignored():
    view = {**_view("d1", tenant="a"), "_id": "v", "_collection_name": "c"}
    original = {**_orig("d1", tenant="a"), "_id": "d1", "_collection_name": "c"}
    assert not same_scope(view, original)
    assert same_scope(view, original, ignore=("_id", "_collection_name"))


def test_the_reference_applies_the_rule_on_its_own_terms():
    ids = ["a1", "b1", "forged", "good"]
    metas = [
        _orig("a1", tenant="a"),
        _orig("b1", tenant="b"),
        _view("a1", tenant="b"),
        _view("b1", tenant="b"),
    ]
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.8, 0.6]])
    query = np.array([0.0, 1.0])
    ranked = cosine_reference(
        ids, vectors, metas, query, top_k=3, view_discount=0.0, where=lambda m: m["tenant"] == "b"
    )
    assert [(s, round(v, 6), best) for s, v, best in ranked] == [("b1", 0.8, "b1")]


# --- ingest: lineage is argus's to write ---


def _genuine(source: str, **meta: Any) -> tuple[str, dict[str, Any]]:
    key = view_key(source, "expansion", "Bogart", "Humphrey Bogart", "s")
    return view_id(key), {**_view(source, **meta), "argus_view_key": key}


def test_a_consistent_view_is_told_from_look_alikes():
    doc_id, meta = _genuine("d1")
    assert is_genuine_view(doc_id, meta)
    assert not is_genuine_view("some-uuid", meta)  # another id
    assert not is_genuine_view(doc_id, {**meta, "argus_source_id": "d2"})  # another source
    assert not is_genuine_view(doc_id, {"argus_view": "summary"})  # a user's own key
    assert not is_genuine_view(doc_id, {**meta, "argus_view": "original"})


def test_input_lineage_is_rewritten_unless_trusted():
    doc_id, meta = _genuine("d1", tenant="a")
    records = [
        Record("d1", "Humphrey Bogart filmed in Lucknow.", _orig("d1", tenant="a")),
        Record(doc_id, "a view argus wrote", meta),
        Record("forged", "Quarterly payroll export.", _view("d1", tenant="b")),
        Record("mine", "A summary of the payroll.", {"argus_view": "summary", "tenant": "b"}),
    ]
    plain = _select(records, trust_lineage=False)
    assert plain.todo == [0, 1, 2, 3]  # every input is an original, diagnosed like any other
    assert plain.rewritten == [doc_id, "forged", "mine"]  # d1's lineage is its own: not counted
    assert plain.trusted == frozenset()
    trusting = _select(records, trust_lineage=True)
    assert trusting.todo == [0, 2, 3] and trusting.trusted == frozenset({1})
    assert trusting.rewritten == ["forged", "mine"]


def test_a_rewritten_original_keeps_its_own_keys_and_loses_argus_ones():
    meta = {"tenant": "b", "argus_source_id": "victim", "argus_view": "expansion", "argus_rps": 0.1}
    assert original_metadata(meta, "forged") == {
        "tenant": "b",
        "argus_source_id": "forged",
        "argus_view": "original",
    }


@pytest.mark.parametrize("trust", [False, True])
def test_the_result_carries_each_inputs_metadata(trust: bool):
    doc_id, meta = _genuine("d1")
    records = [Record("x", "", {"argus_view": "summary", "k": 1}), Record(doc_id, "", meta)]
    result = _select(records, trust_lineage=trust).result(records, [], _stats())
    assert result.metadata[0] == {"k": 1, "argus_source_id": "x", "argus_view": "original"}
    assert (result.metadata[1] == meta) is trust
    assert result.stats_dict()["lineage_rewritten"] == (["x"] if trust else ["x", doc_id])


def _stats() -> Any:
    from argus_ir.remedy import RemedyStats

    return RemedyStats()
