"""Mentions found by the KB's own names: a span the KB names in full is found even where NER cuts it.

spaCy's small model cuts or misses long names ("Roman amphitheatre of Leptis Magna" read as
"Leptis Magna", "Helensvale railway station" as "Helensvale"); a KB that names the whole span
answers it by its title, where the cut form finds nothing or a namesake. :class:`NameMatcher`
holds the names of several words a KB knows (titles and aliases) and finds, left to right, the
longest span of a text that is one of them; :meth:`NameMatcher.merge` puts those spans among the
NER mentions: a span that covers NER mentions replaces them, one that meets no mention is added,
and a span that cuts a mention is dropped, so NER still finds everything the KB does not name.

Memory is bounded for KBs of millions of names: a name is kept as one 64-bit hash of its
lower-cased words in a sorted array (8 bytes a name), and a text is matched with one vectorised
lookup of its candidate spans. Two names that share a hash (about one pair in 10^19 for a KB of
millions) would make a span match that the KB lookup then answers or not, as for any mention.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

import numpy as np

from argus_ir.text.mentions import Mention

__all__ = ["KB_NAME_LABEL", "MAX_NAME_WORDS", "NameMatcher", "users_names"]

MAX_NAME_WORDS = 8
"""The longest name matched, in words (longer titles are rare and are left to NER)."""
KB_NAME_LABEL = "KB_NAME"
"""The label of a mention only the KB's names found (no NER mention overlapped it)."""
_WORD = re.compile(r"\w+")


def _hash(words: Sequence[str]) -> int:
    digest = hashlib.blake2b(" ".join(words).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


class NameMatcher:
    """The names of two to :data:`MAX_NAME_WORDS` words a KB knows, matched in texts.

    Build with :meth:`from_names`; a matcher of no names finds nothing.
    """

    def __init__(self, hashes: np.ndarray, max_words: int = MAX_NAME_WORDS) -> None:
        self.hashes = np.unique(np.asarray(hashes, dtype=np.uint64))
        self.max_words = max_words

    @classmethod
    def from_names(cls, names: Iterable[str], max_words: int = MAX_NAME_WORDS) -> NameMatcher:
        """A matcher of ``names`` (case and punctuation ignored; names of one word, or of more
        than ``max_words``, are left out: one word is NER's, and never a span NER cuts)."""
        kept = []
        for name in names:
            words = _WORD.findall(name.lower())
            if 2 <= len(words) <= max_words:
                kept.append(_hash(words))
        return cls(np.asarray(kept, dtype=np.uint64), max_words)

    def __len__(self) -> int:
        return len(self.hashes)

    def find(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each span of ``text`` the KB names, left to right, the longest at
        each place, never overlapping; a span starts with a capital letter or a digit."""
        if not len(self.hashes):
            return []
        words = list(_WORD.finditer(text))
        lower = [w.group(0).lower() for w in words]
        candidates: list[tuple[int, int, int]] = []  # (hash, first word, words)
        for i, word in enumerate(words):
            first = word.group(0)[0]
            if not (first.isupper() or first.isdigit()):
                continue
            for n in range(2, min(self.max_words, len(words) - i) + 1):
                candidates.append((_hash(lower[i : i + n]), i, n))
        if not candidates:
            return []
        keys = np.fromiter((c[0] for c in candidates), dtype=np.uint64, count=len(candidates))
        at = np.searchsorted(self.hashes, keys).clip(max=len(self.hashes) - 1)
        hit = self.hashes[at] == keys
        longest: dict[int, int] = {}
        for (_, i, n), found in zip(candidates, hit.tolist(), strict=True):
            if found and n > longest.get(i, 0):
                longest[i] = n
        spans, next_free = [], 0
        for i in sorted(longest):
            if i < next_free:
                continue
            n = longest[i]
            spans.append((words[i].start(), words[i + n - 1].end()))
            next_free = i + n
        return spans

    def merge(self, text: str, mentions: Sequence[Mention]) -> list[Mention]:
        """``mentions`` with the KB's names of ``text`` among them (see the module), by offset."""
        out = list(mentions)
        for start, end in self.find(text):
            inside = [m for m in out if m.start < end and start < m.end]
            if any(m.start < start or m.end > end for m in inside):
                continue  # the name would cut a mention NER found: NER's reading stands
            if len(inside) == 1 and (inside[0].start, inside[0].end) == (start, end):
                continue
            label = inside[0].label if inside else KB_NAME_LABEL
            out = [m for m in out if m not in inside]
            out.append(Mention(start, end, text[start:end], label))
        return sorted(out, key=lambda m: (m.start, m.end))


def users_names(kb: object) -> NameMatcher | None:
    """A matcher of the names of the user's own sources of ``kb`` (a passages file or a saved
    KB folder: what has :meth:`~argus_ir.kb.reference.ReferenceKB.names`), ``None`` where it
    has none. The shipped KB's names are left to NER: its knowledge goes into views of flagged
    entities only, and its 234,908 place names would read every capitalised pair of words."""
    from argus_ir.kb.reference import own_sources

    own = own_sources(kb)
    listed = [s for s in own if callable(getattr(s, "names", None))]
    if not listed:
        return None
    return NameMatcher.from_names(name for source in listed for name in source.names())
