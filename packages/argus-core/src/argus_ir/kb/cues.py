"""How a text writes a name: as a place ("trails above Kranj"), as a companion ("with Sofia"),
and when a mention of another label is still worth asking the gazetteer about (the shipped KB's
place cue). Used by :mod:`argus_ir.kb.places` and :mod:`argus_ir.kb.composite`."""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = [
    "NEVER_PLACE_LABELS",
    "PLACE_PREPOSITIONS",
    "cited",
    "cued_place",
    "ends_phrase",
    "spots",
    "written_as_person",
    "written_as_place",
]

PLACE_PREPOSITIONS = (
    "in", "at", "near", "around", "above", "below", "outside", "into", "through", "across",
    "toward", "towards", "via", "beyond", "out of",
)  # fmt: skip
"""Words that, right before a name, say it names a place (:func:`written_as_place`). Left out
on purpose: "to", "from", "with", "of" ("wrote to Anna", "a gift from Tom", "the works of Gauss")."""
_PREPOSITION = "(?i:" + "|".join(p.replace(" ", r"\s+") for p in PLACE_PREPOSITIONS) + ")"
# words that may follow a place name that ends its phrase ("in Kranj and", "in Kranj last May")
_FUNCTION_WORDS = (
    "and|or|but|nor|so|yet|with|without|for|on|in|at|to|from|by|of|as|than|then|where|when|"
    "which|who|whom|whose|that|this|these|those|last|next|each|every|all|both|during|until|"
    "since|before|after|while|because|although|though|if|is|was|were|are|be|been|being|has|"
    "had|have|will|would|can|could|may|might|must|shall|should|did|does|do|a|an|the|its|his|"
    "her|their|our|my|your|we|i|he|she|they|it|you|there|here|again|too|also|just|only"
)
_PHRASE_END = re.compile(
    r"(?=[ \t]*\n|\s*(?:$|[.,;:!?)\]\"”])|\s+(?:" + _FUNCTION_WORDS + r"|[a-z]+ed)\b)"
)
_PLACE_BEFORE = re.compile(rf"\b{_PREPOSITION}\s+(?:the\s+)?\Z")
_PERSON_BEFORE = re.compile(
    r"\b(?:with|my (?:friend|cousin|sister|brother|wife|husband|partner))\s+\Z"
)
_AND_ME = re.compile(r"\s+and\s+(?:I|me)\b")
_REACH = 60
"""Characters before a name that :data:`_PLACE_BEFORE` and :data:`_PERSON_BEFORE` read."""


def spots(
    name: str, context: str, after: str = "", *, whole: bool = False
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each place ``context`` writes ``name`` as written, not after a word's
    character nor one of ``after`` ("Leigh" not in "O'Leigh" with ``after="'"``) and, with
    ``whole``, not before a word's character ("Tet" is not in "Tete"). Found by plain search: a
    pattern per name would be compiled per mention."""
    start = context.find(name)
    while start >= 0:
        end = start + len(name)
        before = context[start - 1] if start else " "
        if not (_word_char(before) or before in after) and not (
            whole and end < len(context) and _word_char(context[end])
        ):
            yield start, end
        start = context.find(name, start + 1)


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def written_as_place(surface: str, context: str | None) -> bool:
    """Whether ``context`` writes ``surface`` right after a preposition of place
    (:data:`PLACE_PREPOSITIONS`, optionally with "the" between): "the night market in Kranj",
    "walked around the Old Town". The name must match as written (case and word boundaries),
    and the name must end its phrase: followed by punctuation, the end of the text, a function
    word ("in Kranj and", "in Kranj last weekend") or a past-tense verb ("the museum in Kranj
    turned out ..."), not by a noun it modifies ("in Leigh syndrome", "in Ras-transformed
    cells", "at Harvard University", "in Cushing's disease")."""
    name = surface.strip()
    if not context or not name:
        return False
    return any(
        _PLACE_BEFORE.search(context, max(0, start - _REACH), start)
        and _PHRASE_END.match(context, end)
        for start, end in spots(name, context)
    )


def ends_phrase(surface: str, context: str | None) -> bool:
    """Whether ``context`` writes ``surface`` somewhere as a whole name that ends its phrase
    (followed by punctuation, the end, a function word or a past-tense verb, as in
    :func:`written_as_place`), not as a word of a longer term: "Renyi's entropy", "the Tet (ten
    eleven translocation) proteins", "Leigh syndrome". No context, or one that never writes the
    name: nothing to say otherwise."""
    name = surface.strip()
    if not context or not name:
        return True
    ends = [_PHRASE_END.match(context, end) for _, end in spots(name, context, "'’-")]
    return not ends or any(ends)


def written_as_person(surface: str, context: str | None) -> bool:
    """Whether ``context`` writes ``surface`` the way a companion is written: "with Sofia",
    "Sofia and I", "Sofia and me", "my friend Sofia" (as written, whole words)."""
    name = surface.strip()
    if not context or not name:
        return False
    if any(
        _PERSON_BEFORE.search(context, max(0, start - _REACH), start)
        for start, _ in spots(name, context, whole=True)
    ):
        return True
    return any(_AND_ME.match(context, end) for _, end in spots(name, context))


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


# after an author's surname in a reference: initials ("Premont, R. T. (1994)", "Hubbard, T. &"),
# a year ("(Lawton, 1969)") or "et al"; not a state's letters ("Tiverton, R.I.")
_CITED = re.compile(
    r",\s*[A-Z]\.(?:\s+[A-Z]\.)*\s*(?:[,&(]|and\b)|,\s*(?:19|20)\d\d[a-z]?\s*[);]|\s+et\s+al\b"
)
# a short word cut before a number: "Fig. 2", "Eq. 3", "No. 5"
_ABBREVIATION = re.compile(r"\.\s*\d")


def cited(surface: str, context: str | None) -> bool:
    """Whether ``context`` writes ``surface`` as an author in a reference ("(Lawton, 1969)",
    "Premont, R. T. (1994) Methods Enzymol.") or as a short abbreviation before a number ("Fig.
    2"): neither is the town or the fruit of that name, anywhere in that text."""
    name = surface.strip()
    if not context or not name:
        return False
    short = " " not in name and len(name) <= 4
    return any(
        _CITED.match(context, end) or (short and _ABBREVIATION.match(context, end))
        for _, end in spots(name, context)
    )
