"""What an LLM's reply may contain before argus indexes any of it.

Replies go into indexes other people search: a synthesis view, a KB description, SIRA's search
phrases. Whatever the prompt asked for, a reply is text from outside, so every path that keeps
part of one checks it here first: no control characters, no bidirectional-text controls (they
make ``exe.txt`` read as ``txt.exe``), no word longer than any real word.
"""

from __future__ import annotations

import unicodedata

__all__ = ["BIDI_CONTROLS", "MAX_TOKEN_CHARS", "unsafe_text"]

MAX_TOKEN_CHARS = 40
"""The longest run of non-space characters a reply may keep (the longest English dictionary
words and most gene or chemical names are shorter; a 300-character token is an attack or noise)."""

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Characters that reorder how text is shown (the Unicode bidirectional controls)."""


def unsafe_text(text: str, *, newlines: bool = False) -> str | None:
    """Why ``text`` may not be indexed, or ``None`` when it may.

    Args:
        text: Part of a reply (an insertion, a description, a phrase).
        newlines: Whether line breaks and tabs are allowed (in a rewritten document they are).

    Returns:
        A short reason naming the first offending character (as ``U+XXXX``) or the over-long
        word, fit to follow "it ..." in a message.
    """
    for ch in text:
        if ch in BIDI_CONTROLS:
            return f"holds the bidirectional control U+{ord(ch):04X}"
        if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs") and not (
            newlines and ch in "\n\r\t"
        ):
            if ch in "\u200b\u200c\u200d\ufeff" and unicodedata.category(ch) == "Cf":
                continue  # zero-width (non-)joiners and spaces occur in ordinary text
            return f"holds the control character U+{ord(ch):04X}"
    for word in text.split():
        if len(word) > MAX_TOKEN_CHARS:
            return f"holds a {len(word)}-character word (at most {MAX_TOKEN_CHARS})"
    return None
