"""Mentions found by the KB's own names (issue 58): a span the KB names in full is a mention even
where spaCy cuts it; NER keeps what the KB does not name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus_ir.text.mentions import Mention
from argus_ir.text.names import KB_NAME_LABEL, NameMatcher, users_names

TEXT = "We saw the Roman amphitheatre of Leptis Magna, then Helensvale railway station and Paris."
NAMES = [
    "Roman amphitheatre of Leptis Magna",
    "Leptis Magna",
    "Helensvale railway station",
    "Bled Castle",
]


def test_the_longest_name_at_each_place_is_found():
    matcher = NameMatcher.from_names(NAMES)
    spans = matcher.find(TEXT)
    assert [TEXT[a:b] for a, b in spans] == [
        "Roman amphitheatre of Leptis Magna",  # not the shorter name inside it
        "Helensvale railway station",
    ]
    assert matcher.find("we saw bled castle") == []  # a name starts with a capital
    assert NameMatcher.from_names([]).find(TEXT) == []


def test_names_of_one_word_are_left_to_ner_and_memory_is_eight_bytes_a_name():
    matcher = NameMatcher.from_names(["Paris", *NAMES, *NAMES])
    assert len(matcher) == 4 and matcher.hashes.dtype == np.uint64
    assert matcher.hashes.nbytes == 8 * len(matcher)


def _at(text: str, surface: str, label: str) -> Mention:
    start = text.index(surface)
    return Mention(start, start + len(surface), surface, label)


def test_a_name_replaces_the_mentions_it_covers_and_never_cuts_one():
    matcher = NameMatcher.from_names(NAMES)
    ner = [_at(TEXT, "Leptis Magna", "GPE"), _at(TEXT, "Paris", "GPE")]
    merged = matcher.merge(TEXT, ner)
    assert [(m.text, m.label) for m in merged] == [
        ("Roman amphitheatre of Leptis Magna", "GPE"),  # the cut mention, whole, its label kept
        ("Helensvale railway station", KB_NAME_LABEL),  # NER missed it
        ("Paris", "GPE"),  # NER's, the KB does not name it
    ]
    # a NER mention that reaches past the name stands: the name would cut it
    text = "She visited Bled Castle Museum Shop today."
    ner = [_at(text, "Bled Castle Museum Shop", "FAC")]
    assert NameMatcher.from_names(NAMES).merge(text, ner) == ner


def test_only_the_users_own_kb_lends_its_names(tmp_path):
    from argus_ir.kb.shipped import match_titles, resolve_kb

    path = tmp_path / "kb.jsonl"
    rows = [{"id": "v", "title": "Helensvale railway station", "text": "A station in Australia."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    matcher = users_names(match_titles(resolve_kb(str(path)), "checked"))
    assert matcher is not None and len(matcher) == 1
    assert users_names(resolve_kb("wikipedia")) is None


def test_argus_finds_the_whole_venue_its_kb_names(tmp_path):
    pytest.importorskip("spacy")
    from argus_ir import Argus

    path = tmp_path / "kb.jsonl"
    rows = [{"id": "v", "title": "Helensvale railway station", "text": "A station in Australia."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    doc = "We waited two hours at Helensvale railway station for a train that never came."
    (plain,) = Argus().diagnose([("d", doc)])
    (named,) = Argus(kb=str(path)).diagnose([("d", doc)])
    assert "Helensvale railway station" not in [e.surface for e in plain.entities]
    assert "Helensvale railway station" in [e.surface for e in named.entities]
