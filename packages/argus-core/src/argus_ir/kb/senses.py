"""Which of the places sharing a name a text means, and how sure that is.

A gazetteer knows 34 Springfields and 18 Princetons. The functions here choose among the places a
name has (:class:`~argus_ir.kb.placetable.Place` rows) from the regions a text names: country
codes and ``US-XX`` states (``named``, see :meth:`argus_ir.kb.places.Gazetteer._regions`), and
say how much of the choice is sure:

- :func:`sense`: the place in a state the text names, else in a country it names, else a country
  or state, else the most populous;
- :func:`sure`: whether that town is the sense beyond reasonable doubt (against namesakes abroad);
- :func:`twinned`: whether a namesake in the same country is nearly as big and the text names
  neither's state, so that only the country is sure ("Princeton" beside "United States": the one
  in Florida has 39,308 people, the one in New Jersey 29,603);
- :func:`famous`: whether a town in a venue's name is the one the name means (no namesake, under
  any of its names, dwarfs it).
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from argus_ir.kb.placetable import Place

__all__ = ["SENSE_MARGIN", "famous", "named", "sense", "state_named", "sure", "twinned"]

SENSE_MARGIN = 3
"""A town is the sense of its name, in a text naming none of its senses' countries, only with at
least this many times the people of every namesake abroad (:func:`sure`); a namesake with more than
a third of its people in its own country makes it a twin (:func:`twinned`)."""


def named(place: Place, regions: Set[str]) -> bool:
    """Whether the text names the place's country or its (US) state."""
    return place.country in regions or state_named(place, regions)


def state_named(place: Place, regions: Set[str]) -> bool:
    """Whether the text names the place's state or region (``US-NJ``), not just its country."""
    return f"{place.country}-{place.admin1}" in regions


def sense(places: list[Place], regions: Set[str], own: Set[str | None] = frozenset()) -> Place:
    """The sense the text means: a place in a state it names (other than the name itself: "Georgia"
    names itself), else in a country it names, else a country or state (the US state where the
    text names another state: "Alabama to the northwest, Georgia to the north"), else the most
    populous."""
    others = frozenset(regions) - own
    states = any(r.startswith("US-") for r in others)
    return max(
        places,
        key=lambda p: (
            p.kind == "city" and state_named(p, others),
            named(p, regions) or (p.kind == "state" and states),
            p.kind != "city",
            p.kind == "state" and states,
            p.population,
        ),
    )


def sure(best: Place, places: Iterable[Place], regions: Set[str]) -> bool:
    """Whether ``best`` is the sense beyond reasonable doubt: the text names its country (or
    state), it is a country or region, or it has at least :data:`SENSE_MARGIN` times the people of
    every other town of that name in another country ("Bled"; not "Douglas", a town in Ireland, on
    the Isle of Man and in a dozen other places), and, for a US town, the text names no other state
    ("University Center" near "Michigan" is not the one in Virginia)."""
    if best.kind != "city" or named(best, regions):
        return True
    if best.country == "US" and any(r.startswith("US-") for r in regions):
        return False  # the text names another state: this one's namesake is likelier
    others = [p.population for p in places if p.kind == "city" and p.country != best.country]
    return not others or best.population >= SENSE_MARGIN * max(others)


def twinned(best: Place, places: Iterable[Place], regions: Set[str]) -> bool:
    """Whether a town of ``best``'s country in another state or region shares its name with more
    than a third of its people, and the text does not name ``best``'s state: then only the country
    is sure. Not for a place that is no town."""
    if best.kind != "city" or state_named(best, regions):
        return False
    return any(
        p.kind == "city"
        and p.gid != best.gid
        and p.country == best.country
        and p.admin1 != best.admin1
        and SENSE_MARGIN * p.population > best.population
        for p in places
    )


def famous(best: Place, namesakes: Iterable[Place], regions: Set[str]) -> bool:
    """Whether a town in a name is the one the name means: no namesake (``namesakes`` may hold
    cities known by the name as another of theirs: "Cologne" is a village in Italy and Köln's
    English name) has :data:`SENSE_MARGIN` times its people, unless the text names the town's own
    state or region. A venue is named after the famous town ("London Naval Treaty"); the text
    naming the country of a small namesake is not enough."""
    floor = SENSE_MARGIN * max(best.population, 1)
    if not any(p.population >= floor for p in namesakes):
        return True
    return best.country == "US" and state_named(best, regions)
