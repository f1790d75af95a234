"""Mention grounding: find the entity's surface form in its paragraph (paper App. B.1).

The audit pools each entity's vector at the span of its label inside its own paragraph. The label is
matched after light normalisation, case-folding and whitespace normalisation, and the earliest
occurrence wins. A label that does not occur is prepended to the paragraph as a separate span, so every
entity has a well-defined mention.

Matching rules, decided once here for every loader and adapter:

* **Case**: both sides are case-folded (:meth:`str.casefold`), so ``"STRASSE"`` matches ``"Straße"``.
  Case-folding can lengthen a string; offsets are mapped back to the original characters, and a match
  must start and end on whole original characters.
* **Whitespace**: any run of Unicode whitespace (spaces, tabs, newlines, no-break spaces) counts as one
  space; leading and trailing whitespace of the label is ignored.
* **Word boundaries**: the match may not be preceded or followed by a word character, so ``"Art"`` does
  not match inside ``"party"``. The check uses look-arounds instead of ``\\b`` so labels that start or end
  with punctuation (``"C++"``, ``"Washington, D.C."``) still match.
* **Fallback**: otherwise the text becomes ``label + ": " + paragraph`` with the span on the label.

No Unicode normalisation form (NFC/NFKC) is applied: precomposed and decomposed accents do not match.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from argus_ir.errors import ArgusInputError

__all__ = ["PREPEND_SEPARATOR", "Grounded", "ground", "normalize"]

PREPEND_SEPARATOR = ": "
"""What separates a prepended label from the paragraph."""

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Grounded:
    """A paragraph with the character span of its entity mention.

    Attributes:
        text: The text to encode: the paragraph itself, or the label prepended to it.
        start: Offset of the first character of the mention in ``text``.
        end: Offset one past the last character of the mention.
        rule: ``"match"`` when the label was found in the paragraph, ``"prepended"`` otherwise.
    """

    text: str
    start: int
    end: int
    rule: str

    @property
    def mention(self) -> str:
        """The mention as it appears in ``text``."""
        return self.text[self.start : self.end]


def normalize(text: str) -> str:
    """Case-fold ``text``, collapse whitespace runs to one space and strip both ends.

    This is the comparison form used by :func:`ground`: a grounded mention always normalises to the
    normalised label.

    Args:
        text: Any string.

    Returns:
        The normalised string.

    Example:
        >>> normalize("  New\\tYORK\\u00a0 City ")
        'new york city'
    """
    return _WS.sub(" ", text.casefold()).strip()


@lru_cache(maxsize=4096)
def _label_pattern(label_norm: str) -> re.Pattern[str]:
    # The label is already folded; whitespace inside it matches any whitespace run of the paragraph.
    body = r"\s+".join(re.escape(tok) for tok in label_norm.split(" "))
    return re.compile(rf"(?<!\w){body}(?!\w)")


def _fold_with_map(paragraph: str) -> tuple[str, list[int] | None]:
    """Case-fold ``paragraph``; return the folded text and, when lengths differ, a source map.

    ``source[j]`` is the index of the paragraph character that produced folded character ``j``.
    ``None`` means folding was one-to-one (the common case), so offsets carry over unchanged.
    """
    folded = paragraph.casefold()
    if len(folded) == len(paragraph):
        # Case-folding never shortens a character, so equal lengths mean one char per char.
        return folded, None
    source: list[int] = []
    for i, ch in enumerate(paragraph):
        source.extend([i] * len(ch.casefold()))
    return folded, source


def ground(label: str, paragraph: str) -> Grounded:
    """Ground ``label`` in ``paragraph``: the first normalised, word-bounded occurrence, or prepend.

    Args:
        label: The entity's surface form (e.g. its Wikidata label or KB title).
        paragraph: The entity's context paragraph.

    Returns:
        A :class:`Grounded` whose ``text[start:end]`` normalises (see :func:`normalize`) to the
        normalised label. With ``rule="match"`` the text is ``paragraph`` unchanged; with
        ``rule="prepended"`` it is ``label.strip() + ": " + paragraph`` and the span covers the label.

    Raises:
        ArgusInputError: If ``label`` is empty or only whitespace, or either argument is not a string.

    Example:
        >>> g = ground("Art", "A party with art lovers.")
        >>> (g.text[g.start : g.end], g.rule)
        ('art', 'match')
        >>> ground("Nelson Mandela", "Nelson Rolihlahla Mandela was ...").rule
        'prepended'
    """
    if not isinstance(label, str):
        raise ArgusInputError(f"label must be a string, got {type(label).__name__}")
    if not isinstance(paragraph, str):
        raise ArgusInputError(
            f"paragraph for label {label!r} must be a string, got {type(paragraph).__name__}"
        )
    label_norm = normalize(label)
    if not label_norm:
        raise ArgusInputError(f"label must contain a non-whitespace character, got {label!r}")

    folded, source = _fold_with_map(paragraph)
    pattern = _label_pattern(label_norm)
    pos = 0
    while (m := pattern.search(folded, pos)) is not None:
        s, e = m.start(), m.end()
        pos = s + 1
        # A combining accent right after the match belongs to its last letter ("cafe" + U+0301).
        if e < len(folded) and unicodedata.combining(folded[e]):
            continue
        if source is None:
            return Grounded(paragraph, s, e, "match")
        # A match must not split the expansion of one original character (e.g. half of "ß" -> "ss").
        starts_clean = s == 0 or source[s - 1] != source[s]
        ends_clean = e == len(folded) or source[e] != source[e - 1]
        if starts_clean and ends_clean:
            return Grounded(paragraph, source[s], source[e - 1] + 1, "match")

    head = label.strip()
    return Grounded(head + PREPEND_SEPARATOR + paragraph, 0, len(head), "prepended")
