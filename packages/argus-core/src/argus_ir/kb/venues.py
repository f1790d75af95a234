"""Venue, institution and event names, and the places they hold (for the gazetteer's
:meth:`~argus_ir.kb.places.Gazetteer.within`): which words make a name a venue, and where in the
name, or right after it in the text, its place is written."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from argus_ir.kb.cues import spots
from argus_ir.kb.forms import is_acronym, is_common_word, is_given_name
from argus_ir.kb.geodata import DEMONYMS

__all__ = [
    "BEYOND_WORDS",
    "INSTITUTION_WORDS",
    "NATIONAL_WORDS",
    "NATURAL_FEATURES",
    "NEVER_PLACE_WORDS",
    "PERSON_TITLES",
    "STATE_WORDS",
    "UNPLACED_LABELS",
    "VENUE_WORDS",
    "country_forms",
    "cut_name",
    "inside_forms",
    "national_of",
    "venue_after",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


INSTITUTION_WORDS = _words(
    """university college school academy institute conservatory seminary hospital clinic
    library bank council parliament"""
)
"""Venue words whose names often lead with a founder's surname ("Brown University", "McGill
University", "Harvard Medical School"): such a name is described by its leading words only when
they name a city of :data:```argus_ir.kb.places.BIG_PLACE``` people or more ("Nagoya University"), a country or a state."""
VENUE_WORDS = INSTITUTION_WORDS | _words(
    """church chapel cathedral basilica abbey priory monastery convent temple mosque synagogue
    shrine castle palace citadel manor museum ecomuseum gallery theatre theater
    opera stadium arena racecourse speedway circuit velodrome park garden gardens zoo aquarium
    trail airport station bridge hall tower market cemetery
    lighthouse observatory centre center club brewery winery distillery mill route downtown uptown
    midtown
    festival marathon fair expo carnival olympics games championship championships cup
    battle siege uprising revolt rebellion offensive blitz massacre bombing earthquake treaty
    conference summit election referendum"""
)
"""Words that make a name a venue, building, institution, route or event: only such a name is
described by a place it leads or ends with, or that is written right after it
(:meth:`~argus_ir.kb.places.Gazetteer.within`)."""
UNPLACED_LABELS = frozenset({"PERSON", "WORK_OF_ART", "LAW"})
"""Labels of names that hold no place they are in: a person ("Joseph of Nazareth"), a work or
a law, whose place is its subject ("Birds of America", "Declaration of Independence")."""
PERSON_TITLES = _words(
    """duke duchess earl prince princess king queen count countess baron baroness lord lady
    bishop archbishop marquess marquis viscount emperor empress sultan emir khan pope saint
    abbot patriarch house dynasty family"""
)
"""Words that make "X of Place" a person or a lineage ("Duke of Wellington", "House of Orange"):
such a name is never described by its place."""
NATURAL_FEATURES = _words(
    """gulf bay strait sea lake river mount mountain mountains cape island islands peninsula
    highlands valley desert plain plains coast channel sound falls"""
)
"""Words of a natural feature's name: a gulf, bay or range is beside or across the place it is
named after, not in it ("Gulf of Aqaba", "Galveston Bay"), so it is not described by it."""
BEYOND_WORDS = _words("greater pan wider")
"""Words before a country's name that make the name a region beyond it ("Greater Iran")."""
STATE_WORDS = _words(
    "republic kingdom federation commonwealth emirate emirates principality sultanate"
)
"""Words of a state's own name ("Republic of Kenya"): such a name is the country, not in it."""
NEVER_PLACE_WORDS = VENUE_WORDS | _words(
    "north south east west central upper lower new old great national international olympic"
    " memorial royal regional municipal"
)
"""One-word forms inside a name that are never its place, whatever town bears them ("University"
of Sydney, "North" Atlantic Treaty)."""
_CAPITALISED_RUN = r"[A-Z][\w'’.-]*(?:\s+(?:[A-Z][\w'’.-]*|de|del|la|le|am|an|upon|on))*"


def inside_forms(surface: str, context: str | None, *, venue: bool) -> Iterable[tuple[str, str]]:
    """Candidate place names for :meth:`~argus_ir.kb.places.Gazetteer.within`, best first, each with where it was
    found: ``"comma"``, ``"of"``, ``"of the"``, ``"after"``, ``"trailing"``, ``"leading"`` (the
    words before the venue word, or those less a direction) or ``"leading-part"`` (their first
    words only: "Rapa" of "Rapa Nui National Park")."""
    parts = [p.strip() for p in surface.split(",")]
    for part in parts[1:]:
        yield from _prefixes(part, "comma")
    head = re.sub(r"\(([^()]*)\)", r", \1", parts[0])  # "Institute (Egypt)"
    for part in [p.strip() for p in head.split(",")][1:]:
        yield from _prefixes(part, "comma")
    head = head.split(",")[0].strip()
    of = re.split(r"\s+(?:of|de|di|du|del|della|von|in)\s+", head)
    if len(of) > 1:
        tail = of[-1].split()
        # "of the Philippines" is a country; "of the Atlantic" is no town of Iowa
        where = "of the" if tail and tail[0].casefold() == "the" else "of"
        tail = tail[1:] if where == "of the" else tail
        yield from _prefixes(" ".join(w for w in tail if not _venue(w)), where)
    if not venue:
        return
    if context:
        at = context.find(surface)
        if at >= 0:
            # the town must end its phrase: ", Aldershot." or " in Rates last May", not the
            # next item of a list (", Court of Cassation", ", Paris and Lyon") nor another
            # venue (", Hyde Park,"); ", Brisbane and it went fine" ends it
            after = re.match(
                rf"(?:\s*,\s*|\s+in\s+(?:the\s+)?)({_CAPITALISED_RUN})"
                r"(?=\s*(?:$|[.,;:!?)\]\"”])|\s+(?!of\b|and\s+[A-Z])[a-z])",
                context[at + len(surface) :],
            )
            if after and not any(_venue(w) for w in after.group(1).split()):
                yield from _prefixes(after.group(1), "after")
    words = head.split()
    while words and (words[0].casefold() == "the" or words[0].isdigit()):
        words = words[1:]  # "the", a year: "1931 Nicaragua earthquake"
    last = max((i for i, w in enumerate(words) if _venue(w)), default=-1)
    if 0 <= last < len(words) - 1:
        yield from _prefixes(" ".join(words[last + 1 :]), "trailing")
    lead: list[str] = []
    for word in words:
        if _venue(word) or not word[:1].isupper():
            break
        lead.append(word)
    if lead and len(lead) < len(words):
        for form, where in _prefixes(" ".join(lead), "leading"):
            # "Rapa" of "Rapa Nui National Park", "Grand" of "Grand Kremlin Palace": a part
            # of the leading name, unless what it leaves is a direction or common words
            # ("Gympie North", "Zaandam Medical Centre")
            rest = [w.strip(".,;:") for w in lead[len(form.split()) :]]
            cut = any(w.casefold() not in NEVER_PLACE_WORDS and not is_common_word(w) for w in rest)
            yield form, "leading-part" if cut else where


_FUNCTION_WORDS = _words(
    "the a an and or but that this which who to of in on at for with by as is was"
)


def cut_name(surface: str, context: str | None) -> bool:
    """Whether the text always goes on with the mention's name, so the tagger cut it short: a
    venue word ("St James's" of "St James's Theatre", "Albert" of "Albert Hall"), a hyphenated
    part ("Polo" of "Polo-like kinases", "Austria" of "Austria-Hungary") or "of" and a name
    ("East End" of "the East End of London"): the mention then names neither the place, the
    person nor the thing it holds. A name the text also writes alone is not cut ("Fahrenheit
    Scale-Daniel Gabriel Fahrenheit ... the Fahrenheit Scale-that was used": a dash)."""
    if not context or not surface.strip():
        return False
    ends = [end for _, end in spots(surface, context, whole=True)]
    return bool(ends) and all(_goes_on(context[end:]) for end in ends)


_AFTER_WORDS = 3
"""How many words after a mention :func:`venue_after` reads for the venue word that ends it."""
_AFTER = re.compile(rf"(?:[ \t]+[\w'’-]+){{1,{_AFTER_WORDS}}}")


def venue_after(surface: str, context: str | None) -> str | None:
    """The whole name of a venue the text writes the mention as the start of, or ``None``: the
    mention followed by at most :data:`_AFTER_WORDS` words, the last a venue word, the others
    names or plain words ("Helensvale" of "Helensvale railway station", "Lindholm" of "Lindholm
    station", "Konark Sun" of "Konark Sun temple"). The tagger cut the name short; the place the
    whole name holds (:meth:`~argus_ir.kb.places.Gazetteer.within`) is the mention's own. The
    first place the text writes it so counts, where the mention starts the name: not after
    another capitalised word ("Lushan" of "the An Lushan rebellion" is a man's name's end)."""
    if not context or not surface.strip():
        return None
    for start, end in spots(surface, context, whole=True):
        before = re.search(r"([\w'’.-]+)[ \t]+$", context[max(0, start - 40) : start])
        if before and before.group(1)[:1].isupper() and before.group(1).casefold() != "the":
            continue
        words = _AFTER.match(context, end)
        if words is None:
            continue
        taken: list[str] = []
        for word in words.group(0).split():
            if not word.isalpha() or word.casefold() in _FUNCTION_WORDS:
                break
            taken.append(word)
            if _venue(word):
                return " ".join([surface.strip(), *taken])
    return None


def _goes_on(rest: str) -> bool:
    hyphen = re.match(r"-(\w+)", rest)
    if hyphen:
        return hyphen.group(1).casefold() not in _FUNCTION_WORDS  # "Scale-that": a dash
    if re.match(r"\s+of\s+(?:the\s+)?[A-Z]", rest):
        return True
    following = re.match(r"[ \t]+([A-Z][\w'’]*)", rest)
    return following is not None and _venue(following.group(1))


def _venue(word: str) -> bool:
    return word.strip(".,;:'’()").casefold() in VENUE_WORDS


def _prefixes(run: str, where: str) -> Iterable[tuple[str, str]]:
    """A run of capitalised words and its shorter forms, longest first ("Aldershot Town" then
    "Aldershot"); each word written as a name."""
    words = [w.strip(".,;:") for w in run.split()]
    while words and not words[-1][:1].isupper():
        words.pop()
    for n in range(len(words), 0, -1):
        if words[0][:1].isupper():
            yield " ".join(words[:n]), where


def country_forms(surface: str) -> Iterator[str]:
    """The runs of capitalised words of a multi-word name that may be a country it holds,
    anywhere, as written ("Kenya African National Union", "Turkey national rugby union team",
    "Statistics Netherlands"): such a name is of that country. Longest runs first; never the
    whole name, an acronym, a run after a word of a wider region ("Greater Iran") or one
    beginning with a given name ("Chad", "Jordan" are removed from the given names)."""
    words = [w.strip(".,;:'’()\"") for w in surface.split()]
    for n in (3, 2, 1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if not all(w[:1].isupper() for w in gram) or len(gram) == len(words):
                continue
            if i and words[i - 1].casefold() in BEYOND_WORDS:
                continue  # "Greater Iran", "Pan-": a region around the country, not in it
            form = " ".join(gram)
            if not is_acronym(form) and not is_given_name(gram[0]):
                yield form


NATIONAL_WORDS = _words(
    """museum library archives academy university institute opera theatre parliament
    cemetery gallery"""
)
"""Words of a national institution's name, which is in the country whose adjective it writes
(:func:`national_of`)."""
_ABROAD_WORDS = _words(
    """school college church chapel cathedral basilica abbey priory monastery convent temple
    mosque synagogue shrine orthodox reformed catholic evangelical lutheran garden gardens
    restaurant quarter club embassy consulate"""
)
_NATIONAL_LEAD = _words("royal national state imperial")


def national_of(surface: str) -> str | None:
    """The ISO code of the country a national institution's name holds the adjective of, or
    ``None``: the adjective first, or after "Royal", "National", "State" or "Imperial", in a
    name with a word of :data:`NATIONAL_WORDS` ("Royal Danish Library", "Norwegian Museum of
    Cultural History", "Turkish Military Academy"), never one of a school, a place of worship, a
    garden or an embassy, which a country's people found abroad ("American School in London",
    "Russian Orthodox Cathedral", "Japanese Tea Garden")."""
    words = [w.strip(".,;:'’()\"") for w in surface.split()]
    folded = {w.casefold() for w in words}
    if len(words) < 2 or not folded & NATIONAL_WORDS or folded & _ABROAD_WORDS:
        return None
    lead = 1 if words[0].casefold() in _NATIONAL_LEAD else 0
    return DEMONYMS.get(words[lead]) if lead < len(words) else None
