"""What a mention's written form says about which KB answers may describe it.

A KB answer found by a shared word is usually about another entity (the hand labels in
``benchmarks/labels``: 12–49% of word matches are about the mentioned entity, answers by exact name
79–97%). These rules decide, from the form alone, when an answer may stand:

- :func:`same_name`: a passage found by BM25 is accepted only when its title *is* the mention up to
  case, accents, a leading "the", a possessive or plural "s", punctuation and a disambiguation in
  brackets ("Usain Bolts" → "Usain Bolt", "World War I." → "World War I"; on the labelled word
  matches: 4 of 4 such answers right, against 18 of 62 for titles that merely contain the mention),
  but a name written with a capital "The" is not a title without it ("The Squirrels", a band, is
  not "Squirrel");
- :func:`namesake_prone`: a single given name ("Greta", "Kim") is never described by a famous
  namesake or a village of that name;
- :func:`is_acronym`: "ER", "KRAS" or "AI" are never a village;
- :func:`label_agrees`: a passage about a place does not describe a mention tagged as a person,
  nor one about a person a mention tagged as a place (:func:`is_person_passage`: a year in its
  description's brackets, as Wikidata writes "(1879–1955)"; :func:`is_place_passage`: "Country
  in West Asia", "town in Slovenia").

- :func:`is_common_word`: "Rates", "Model" or "Hot" inside a venue's name is a word, not a
  village;
- :func:`spells`: an acronym is answered by a BM25 passage whose title it abbreviates ("FDR" →
  Franklin D. Roosevelt, "VAT" → Value-added tax);
- :func:`alias_agrees`: a redirect to a broader or neighbouring article is not an alias
  ("Research Center" → Research, "Guiana Highlands" → Guiana Shield, "NSCLC" → Lung cancer).

Given names: the 1990 US Census first-name tables (public domain; 5,163 names,
``argus_ir/data/given_names.txt``); common words: 12,264 words the shipped Wikipedia leads write
in lower case (``argus_ir/data/common_words.txt``); both rebuilt by ``scripts/build_word_lists.py``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from importlib import resources

__all__ = [
    "COMMON_WORDS_FILE",
    "GIVEN_NAMES_FILE",
    "alias_agrees",
    "bracketed",
    "case_agrees",
    "defined_as",
    "fold",
    "is_acronym",
    "is_capitalised",
    "is_common_word",
    "is_given_name",
    "is_person_passage",
    "is_place_passage",
    "label_agrees",
    "name_words",
    "namesake_prone",
    "same_name",
    "spells",
]

GIVEN_NAMES_FILE = resources.files("argus_ir") / "data" / "given_names.txt"
"""The shipped given names, one per line in title case (1990 US Census tables, public domain)."""

COMMON_WORDS_FILE = resources.files("argus_ir") / "data" / "common_words.txt"
"""Words the shipped Wikipedia leads write in lower case (one per line, lower case)."""

_WORD = re.compile(r"\w+")
_BRACKETS = re.compile(r"\s*\([^()]*\)\s*$")
_POSSESSIVE = re.compile(r"['’]s?(?=\s|$)")
_PERSON_DESCRIPTION = re.compile(r"\((?:born |c\. ?|d\. |fl\. )?\d{1,4}\b")
_PLACE_DESCRIPTION = re.compile(
    r"\b(?:country|city|town|village|capital|state|province|region|island|municipality|commune"
    r"|county|district|metropolis|archipelago|territory)\b",
    re.IGNORECASE,
)


@functools.cache
def _given_names() -> frozenset[str]:
    text = GIVEN_NAMES_FILE.read_text(encoding="utf-8")
    return frozenset(line.strip().casefold() for line in text.splitlines() if line.strip())


@functools.cache
def _common_words() -> frozenset[str]:
    text = COMMON_WORDS_FILE.read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def is_common_word(word: str) -> bool:
    """Whether ``word`` is a common English word of the shipped list (case-insensitive)."""
    return word.strip().casefold() in _common_words()


def is_given_name(word: str) -> bool:
    """Whether ``word`` is a given name of the shipped list (case-insensitive)."""
    return word.strip().casefold() in _given_names()


def fold(text: str) -> str:
    """``text`` with its accents dropped and its case folded ("Cancún" → "cancun")."""
    if text.isascii():  # no accent to drop (most names): NFKD leaves ASCII as it is
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@functools.lru_cache(maxsize=1 << 16)  # titles are compared with many mentions
def name_words(form: str) -> tuple[str, ...]:
    """The words a name is compared by: accents and case folded, a trailing bracket
    ("Mercury (planet)"), a leading "the", possessives and a plural "s" of long words dropped."""
    text = _BRACKETS.sub("", form.strip())
    text = _POSSESSIVE.sub("", fold(text))
    words = _WORD.findall(text.replace("_", " "))
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words)


def same_name(surface: str, title: str) -> bool:
    """Whether a passage title names the mention itself (see the module): the check a BM25
    answer must pass to describe a mention under ``kb_match="checked"``."""
    if surface.lstrip().startswith("The ") and not title.lstrip().startswith("The "):
        return False  # "The Squirrels", "The Blue Nile": a name (a band), not the common noun
    words = name_words(surface)
    return bool(words) and words == name_words(title)


def _single_word(surface: str) -> str | None:
    words = _WORD.findall(_POSSESSIVE.sub("", surface.strip()))
    if len(words) > 1 and words[0].casefold() == "the":
        words = words[1:]
    return words[0] if len(words) == 1 else None


def namesake_prone(surface: str, label: str | None = None) -> bool:
    """Whether a mention is a single given name ("Greta", "Kim", "Florence"), which a famous
    namesake or a village of that name would misdescribe. ``label`` is not used: spaCy tags
    "Moon", "RNA" or "Lung" as ``PERSON`` as readily as it tags "Greta" as a place."""
    word = _single_word(surface)
    return word is not None and is_given_name(word)


@functools.lru_cache(maxsize=1 << 16)  # asked of each mention by several checks
def is_acronym(surface: str) -> bool:
    """Whether a form is written as an acronym: every letter a capital, at least two letters
    ("ER", "KRAS", "U.S.", "AI"; not "Bled", not "X")."""
    letters = [c for c in surface if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def case_agrees(form: str, name: str) -> bool:
    """Whether a mention spelled with a name's own letters writes them in the name's case past
    each word's first letter: "ParE" (a protein subunit) is not Pare, "UreA" not Urea, "FIJI"
    (the software, or a shouted dateline's "WASHINGTON") not Fiji; "NASA", "McAllen" and "bled"
    agree. A form spelled otherwise ("USA" for United States) is not compared."""
    if len(form) != len(name) or fold(form) != fold(name):
        return True
    start = True
    for mine, theirs in zip(form, name, strict=True):
        if not mine.isalpha():
            start = True
            continue
        if not start and mine.isupper() and theirs.islower():
            return False
        start = False
    return True


def is_capitalised(form: str) -> bool:
    """Whether a form is written as a name: its first letter (after "the ") is a capital."""
    words = form.strip().split(maxsplit=1)
    if len(words) == 2 and words[0].lower() == "the":
        words = words[1:]
    return bool(words) and words[0][:1].isupper()


def is_place_passage(description: str) -> bool:
    """Whether a KB passage is about a place, by its short description ("Country in West Asia",
    "Capital and largest city of Chile", "town in Slovenia")."""
    return _PLACE_DESCRIPTION.search(description) is not None and not is_person_passage(description)


def label_agrees(label: str | None, description: str) -> bool:
    """Whether a passage's kind agrees with the mention's NER label: a mention tagged ``PERSON``
    is not described by a place ("Jordan" the player is not the country), one tagged ``GPE`` or
    ``LOC`` not by a person. Any other pair agrees."""
    if label == "PERSON":
        return not is_place_passage(description)
    if label in ("GPE", "LOC"):
        return not is_person_passage(description)
    return True


def is_person_passage(description: str) -> bool:
    """Whether a KB passage is about a person, by its short description: a year in brackets
    ("(1879–1955)", "(born 1958)", "(c. 428-347 BC)")."""
    return _PERSON_DESCRIPTION.search(description) is not None


_LINKS = frozenset(
    ["of", "and", "the", "for", "in", "on", "de", "del", "la", "du", "des", "der", "und"]
)


def _initials(title: str) -> str:
    """The first letters of a title's words, hyphenated parts apart and linking words left out
    ("Value-added tax" → "vat", "Franklin D. Roosevelt" → "fdr", "Bank of England" → "be")."""
    words = _WORD.findall(fold(_BRACKETS.sub("", title)).replace("_", " "))
    return "".join(w[0] for w in words if w not in _LINKS)


@functools.lru_cache(maxsize=64)  # one text is asked about for each of its acronyms' passages
def _written(context: str) -> frozenset[str]:
    """The folded words a text writes."""
    return frozenset(_WORD.findall(fold(context)))


def spells(acronym: str, title: str, context: str | None = None) -> bool:
    """Whether an acronym abbreviates a title: its letters are the first letters of the title's
    words, with or without the linking words ("NFL" → National Football League, "USSR" → Union
    of Soviet Socialist Republics; not "ER" → Emergency department). With ``context``, the text
    must also write the title's words out: "IR" abbreviates International relations and
    Ionizing radiation alike, and only the text tells which."""
    if not is_acronym(acronym):
        return False
    folded = fold(_BRACKETS.sub("", title))
    if context is not None and not set(_WORD.findall(folded)) <= _written(context):
        return False
    letters = "".join(c for c in fold(acronym) if c.isalpha())
    words = _WORD.findall(folded.replace("_", " "))
    return len(words) > 1 and letters in (_initials(title), "".join(w[0] for w in words))


def bracketed(name: str, text: str) -> Iterator[int]:
    """Where ``name`` stands alone in brackets in ``text``, spaces allowed inside ("(CSS)",
    "( CSS )"): the offsets of the opening brackets, left to right, as the pattern
    ``\\(\\s*name\\s*\\)`` finds them, without a pattern compiled for each name (compiling them
    was a tenth of an ingest's main process on SciFact)."""
    at = text.find(name) if name else -1
    while at != -1:
        before, after = at, at + len(name)
        while before > 0 and text[before - 1].isspace():
            before -= 1
        while after < len(text) and text[after].isspace():
            after += 1
        if before > 0 and text[before - 1] == "(" and after < len(text) and text[after] == ")":
            yield before - 1
            at = text.find(name, after + 1)
        else:
            at = text.find(name, at + 1)


def defined_as(acronym: str, context: str | None) -> str | None:
    """The words a text defines an acronym by, "Churg-Strauss syndrome (CSS)" → "Churg-Strauss
    syndrome": the shortest run of words right before the acronym in brackets that it
    abbreviates (:func:`spells`), or ``None``."""
    if not context or not is_acronym(acronym):
        return None
    for start in bracketed(acronym.strip(), context):
        words = context[max(0, start - 200) : start].split()
        for n in range(1, min(len(words), 12) + 1):
            phrase = " ".join(words[-n:]).strip(".,;:\"'“”‘’")
            if spells(acronym, phrase):
                return phrase
    return None


_DIRECTIONS = frozenset(
    [
        "north",
        "south",
        "east",
        "west",
        "northern",
        "southern",
        "eastern",
        "western",
        "upper",
        "lower",
        "central",
        "greater",
    ]
)


def _common(word: str) -> bool:
    return is_common_word(word) or is_common_word(word + "s")


def alias_agrees(form: str, title: str) -> bool:
    """Whether a passage found by another name (a redirect, an alias) is about what the form
    names, not a broader or neighbouring article. Wikipedia redirects many a part or a kind to
    its whole, and those describe the wrong thing:

    - an acronym answered by a title of common words only must abbreviate it ("NSCLC" is not
      Lung cancer; "USSR" → Soviet Union and "FDRE" → Ethiopia are names and stay);
    - a title made of some of the form's words, all of them common, is the generic article
      ("Research Center" → Research; "Tokyo Metropolis" → Tokyo stays);
    - a form and title that share a word but each hold a common word the other lacks name two
      different things ("Guiana Highlands" → Guiana Shield; "East River Bridge" → Brooklyn
      Bridge stays);
    - a form that only adds a direction to the title's words is a part of it ("North Atlantic"
      → Atlantic Ocean, "East Germany" → Germany).
    """
    if is_acronym(form):
        words = _WORD.findall(fold(_BRACKETS.sub("", title)))
        plain = [w for w in words if w not in _LINKS]
        if plain and all(_common(w) for w in plain):
            return spells(form, title) or fold(form) in words
        return True
    mine = {w for w in name_words(form) if w not in _LINKS}
    theirs = {w for w in name_words(title) if w not in _LINKS}
    if not mine & theirs:
        return True
    if theirs < mine and all(_common(w) for w in theirs):
        return False
    only_mine, only_theirs = mine - theirs, theirs - mine
    if only_mine and only_mine <= _DIRECTIONS:
        return False  # "North Atlantic" → Atlantic Ocean: the whole of which it is a part
    return not (any(map(_common, only_mine)) and any(map(_common, only_theirs)))
