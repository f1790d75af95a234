"""SearchKB: any search function as the KB (the adapters' stores are tested in their packages)."""

from __future__ import annotations

import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.kb import KnowledgeBase, Passage, match_titles
from argus_ir.kb.search import SearchKB

HITS = {
    "quarkon": [
        (Passage("w9", "Quarkon 2 launch", "The second Quarkon shipped in 2024."), 0.9),
        (Passage("w7", "Quarkon", "Battery controller for e-bikes.", "battery controller"), 0.8),
        (Passage("w0", "", "   "), 0.7),  # an empty hit describes nothing
        (Passage("w8", "Lumora", "Lighting line."), 0.1),
    ],
}


def _kb(calls: list[tuple[str, int]]) -> SearchKB:
    def search(query: str, k: int) -> list[tuple[Passage, float]]:
        calls.append((query, k))
        return HITS.get(query.lower(), [])[:k]

    return SearchKB(search, fingerprint="wiki-v1", name="wiki")


def test_the_titled_hit_comes_first_and_empty_hits_are_dropped():
    calls: list[tuple[str, int]] = []
    kb = _kb(calls)
    assert isinstance(kb, KnowledgeBase)
    assert [p.id for p, _ in kb.lookup("Quarkon", 2)] == ["w7", "w9"]
    assert calls == [("Quarkon", 3)]  # at least three asked, so a titled second hit is found
    assert kb.lookup("QUARKON ", 2) == kb.lookup("Quarkon", 2) and len(calls) == 1  # cached
    assert kb.passage("w7").description == "battery controller"
    assert kb.passage("w0") is None and kb.passage("nope") is None
    assert kb.knows("quarkon") and not kb.knows("Lumora") and not kb.knows("Vienna")
    assert [q for q, _ in calls] == ["Quarkon", "Lumora", "Vienna"]  # not Quarkon a second time
    assert [p.id for p, _ in kb.lookup("Quarkon", 1)] == ["w7"] and len(calls) == 3


def test_title_matching_keeps_the_named_hit_alone():
    titled = match_titles(_kb([]), "title")
    assert [p.id for p, _ in titled.lookup("Quarkon", 2)] == ["w7"]
    assert titled.lookup("Lumora") == []  # a hit, but not by that name


def test_bad_searches_and_settings_are_named():
    with pytest.raises(ArgusInputError, match="fingerprint"):
        SearchKB(lambda q, k: [], fingerprint="")
    bad = SearchKB(lambda q, k: [("w1", 1.0)], fingerprint="x", name="my-store")
    with pytest.raises(ArgusInputError, match="my-store: search returned str"):
        bad.lookup("anything")
    with pytest.raises(ArgusInputError, match="k must be"):
        _kb([]).lookup("Quarkon", 0)
