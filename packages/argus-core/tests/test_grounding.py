from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus_ir.errors import ArgusInputError
from argus_ir.text.grounding import Grounded, ground, normalize


def _check(g: Grounded, label: str) -> None:
    assert 0 <= g.start < g.end <= len(g.text)
    assert normalize(g.text[g.start : g.end]) == normalize(label)


def test_exact_match_keeps_paragraph() -> None:
    text = "Paris is the capital of France."
    g = ground("Paris", text)
    assert g == Grounded(text, 0, 5, "match")
    assert g.mention == "Paris"


def test_word_boundaries() -> None:
    g = ground("Art", "The party liked art.")
    assert g.rule == "match"
    assert g.mention == "art"
    assert g.start == len("The party liked ")
    # Only inside other words: prepend.
    assert ground("Art", "A party of artists.").rule == "prepended"
    assert ground("Art", "Artful").rule == "prepended"
    # Underscore and digits are word characters too.
    assert ground("art", "my_art and art2").rule == "prepended"


def test_labels_with_punctuation_at_the_edges() -> None:
    g = ground("C++", "Bjarne designed C++, a language.")
    assert g.mention == "C++"
    g = ground("Washington, D.C.", "It moved to Washington, D.C. in 1800.")
    assert g.mention == "Washington, D.C."
    g = ground("(band)", "the (band) played")
    assert g.mention == "(band)"


def test_case_folding() -> None:
    g = ground("new york city", "NEW YORK CITY is large.")
    assert (g.mention, g.rule) == ("NEW YORK CITY", "match")


def test_whitespace_runs() -> None:
    text = "born in New\t \u00a0York\n\nCity, a place"
    g = ground("  New York   City ", text)
    assert g.rule == "match"
    assert g.text == text
    assert g.mention == "New\t \u00a0York\n\nCity"
    _check(g, "New York City")


def test_label_whitespace_matches_any_run() -> None:
    g = ground("New\u2003York", "In New York.")
    assert g.mention == "New York"


def test_casefold_length_changes_map_back_to_original() -> None:
    # "ß" case-folds to "ss": offsets after it must still point into the original string.
    text = "Die Straße führt nach Weiß Stadt."
    g = ground("weiss stadt", text)
    assert g.rule == "match"
    assert g.mention == "Weiß Stadt"
    _check(g, "weiss stadt")
    g = ground("STRASSE", text)
    assert g.mention == "Straße"


def test_match_may_not_split_an_expanded_character() -> None:
    # "ß" -> "ss": a label "s" must not match half of it; "İ" -> "i" + combining dot.
    assert ground("s", "ß").rule == "prepended"
    assert ground("i", "İ x").rule == "prepended"
    g = ground("x", "İ x")
    assert g.mention == "x"
    assert g.start == 2


def test_combining_mark_after_match_is_not_a_boundary() -> None:
    text = "cafe\u0301 and cafe"
    g = ground("cafe", text)
    assert g.start == text.index(" cafe") + 1


def test_first_occurrence_wins() -> None:
    text = "Mercury is a planet. Mercury is also an element."
    g = ground("mercury", text)
    assert (g.start, g.end) == (0, 7)


def test_prepend_rule() -> None:
    text = "Nelson Rolihlahla Mandela was a South African statesman."
    g = ground(" Nelson Mandela ", text)
    assert g.rule == "prepended"
    assert g.text == "Nelson Mandela: " + text
    assert (g.start, g.end) == (0, len("Nelson Mandela"))
    _check(g, "Nelson Mandela")


@pytest.mark.parametrize("label", ["", "   ", "\t\n\u00a0"])
def test_empty_label_is_rejected(label: str) -> None:
    with pytest.raises(ArgusInputError, match="label"):
        ground(label, "Some paragraph.")


def test_non_string_inputs_are_rejected() -> None:
    with pytest.raises(ArgusInputError):
        ground(None, "text")  # type: ignore[arg-type]
    with pytest.raises(ArgusInputError):
        ground("x", None)  # type: ignore[arg-type]


def test_normalize() -> None:
    assert normalize("  A\u00a0\tB  ß ") == "a b ss"


_any_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),  # no lone surrogates
    max_size=60,
)
_label = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
).filter(lambda s: normalize(s) != "")


@settings(max_examples=400, deadline=None)
@given(before=_any_text, label=_label, after=_any_text, sep=st.sampled_from([" ", "\n", "\u00a0 "]))
def test_property_span_normalises_to_label(before: str, label: str, after: str, sep: str) -> None:
    paragraph = before + sep + label + sep + after
    g = ground(label, paragraph)
    _check(g, label)
    if g.rule == "match":
        assert g.text == paragraph
    else:
        assert g.text.endswith(paragraph)


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(alphabet=" .,;abcXYZßéİ\u00a0\t", max_size=30),
    word=st.text(alphabet="abcxyz", min_size=1, max_size=6),
    after=st.text(alphabet=" .,;abcXYZßéİ\u00a0\t", max_size=30),
)
def test_property_word_label_is_found_between_spaces(before: str, word: str, after: str) -> None:
    # A plain word with spaces on both sides is always found, whatever surrounds it.
    paragraph = before + " " + word.upper() + " " + after
    g = ground(word, paragraph)
    assert g.rule == "match"
    _check(g, word)
    assert g.start <= len(before) + 1
