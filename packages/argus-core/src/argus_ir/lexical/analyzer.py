"""Text analysis for argus's lexical retrieval: words, index terms and n-grams of a text.

:class:`Analyzer` turns text into the terms a BM25 index stores (lowercased words without English
stopwords, Snowball-stemmed); SIRA, the ColDeR bias audit and semantic coverage all analyse text
through it, so their terms agree. :func:`copied_share` measures how much of one word sequence is
copied verbatim from another (the reply filters of SIRA and coverage use it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["DEFAULT_MAX_N", "WORD", "Analyzer", "copied_share"]

DEFAULT_MAX_N = 3
"""Longest n-gram cut from an enrichment phrase."""

WORD = re.compile(r"[^\W_]+", re.UNICODE)
"""A word: a run of letters and digits (the underscore, which joins n-grams, is not a letter)."""


class Analyzer:
    """Lowercased word tokens without English stopwords, Snowball-stemmed (PyStemmer).

    Args:
        stemmer: A Snowball language (``"english"``) or ``None`` for no stemming.
        stopwords: Words to drop (default: Lucene's English list, :data:`~argus_ir.kb.bm25.STOPWORDS_EN`).
    """

    def __init__(
        self, stemmer: str | None = "english", stopwords: Iterable[str] | None = None
    ) -> None:
        if stopwords is None:
            from argus_ir.kb.bm25 import STOPWORDS_EN

            stopwords = STOPWORDS_EN
        self.stopwords = frozenset(w.lower() for w in stopwords)
        self.stemmer = stemmer
        self._stem: Any = None
        if stemmer is not None:
            try:
                import Stemmer
            except ImportError:  # pragma: no cover - a core dependency
                raise ImportError("stemming needs PyStemmer: pip install PyStemmer") from None
            self._stem = Stemmer.Stemmer(stemmer)
        self._memo: dict[str, str] = {}

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256("\n".join(sorted(self.stopwords)).encode()).hexdigest()[:12]
        return f"stem={self.stemmer};stop={digest}"

    def words(self, text: str) -> list[str]:
        """Lowercased words of ``text`` (stopwords kept, not stemmed)."""
        return [w.lower() for w in WORD.findall(text)]

    def tokens(self, text: str) -> list[str]:
        """Index terms of ``text``: words minus stopwords and one-letter words, stemmed."""
        out = []
        for w in self.words(text):
            if len(w) < 2 or w in self.stopwords:
                continue
            s = self._memo.get(w)
            if s is None:
                s = self._stem.stemWord(w) if self._stem is not None else w
                self._memo[w] = s
            out.append(s)
        return out

    def ngrams(self, phrase: str, max_n: int = DEFAULT_MAX_N) -> list[str]:
        """Sliding-window n-grams (n = 1..``max_n``) of a phrase's terms; longer ones join with ``_``.

        >>> Analyzer().ngrams("acute myocardial infarction", 2)
        ['acut', 'myocardi', 'infarct', 'acut_myocardi', 'myocardi_infarct']
        """
        toks = self.tokens(phrase)
        grams: list[str] = []
        for n in range(1, min(max_n, len(toks)) + 1):
            for i in range(len(toks) - n + 1):
                g = "_".join(toks[i : i + n])
                if g not in grams:
                    grams.append(g)
        return grams


def copied_share(reply: Sequence[str], source: Sequence[str], n: int = 4) -> float:
    """Share of the reply's words that sit in a run of ``n`` words found verbatim in the source.

    Both sides are word sequences (e.g. :meth:`Analyzer.words`). A reply shorter than ``n`` words
    copies nothing (0.0); a reply made entirely of ``n``-word runs of the source scores 1.0.

    >>> copied_share("the cat sat on the mat".split(), "a cat sat on the mat today".split())
    0.8333333333333334
    """
    if len(reply) < n:
        return 0.0
    grams = {tuple(source[i : i + n]) for i in range(len(source) - n + 1)}
    covered = [False] * len(reply)
    for i in range(len(reply) - n + 1):
        if tuple(reply[i : i + n]) in grams:
            for j in range(i, i + n):
                covered[j] = True
    return sum(covered) / len(reply)
