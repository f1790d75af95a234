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
  village.

Given names: the 1990 US Census first-name tables (public domain; 5,163 names,
``argus_ir/data/given_names.txt``); common words: 12,264 words the shipped Wikipedia leads write
in lower case (``argus_ir/data/common_words.txt``); both rebuilt by ``scripts/build_word_lists.py``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from importlib import resources

__all__ = [
    "COMMON_WORDS_FILE",
    "GIVEN_NAMES_FILE",
    "is_acronym",
    "is_common_word",
    "is_given_name",
    "is_person_passage",
    "is_place_passage",
    "label_agrees",
    "name_words",
    "namesake_prone",
    "same_name",
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


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def name_words(form: str) -> tuple[str, ...]:
    """The words a name is compared by: accents and case folded, a trailing bracket
    ("Mercury (planet)"), a leading "the", possessives and a plural "s" of long words dropped."""
    text = _BRACKETS.sub("", form.strip())
    text = _POSSESSIVE.sub("", _fold(text))
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


def is_acronym(surface: str) -> bool:
    """Whether a form is written as an acronym: every letter a capital, at least two letters
    ("ER", "KRAS", "U.S.", "AI"; not "Bled", not "X")."""
    letters = [c for c in surface if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


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
