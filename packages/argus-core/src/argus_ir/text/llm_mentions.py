"""Entity mentions an LLM lists for each text, grounded in the text (:class:`LLMMentions`).

Only names found in the text become mentions, so a made-up name never does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from argus_ir.text.mentions import Mention, _check_texts, _mention

__all__ = ["LLMMentions"]

_BULLET = re.compile(r"^\s*(?:[-*\u2022]+|\d+[.)]|[a-z][.)])\s+", re.I)
_TRAILING_NOTE = re.compile(r"\s*[(\[][^()\[\]]*[)\]]\s*$")


def _strip_name(name: str) -> str:
    return name.strip().strip("\"'`*.;").strip()


def _variants(name: str) -> list[str]:
    """Ways a listed name may be written, most literal first: as is, without a trailing
    "(type)", after a leading "Type:"."""
    out = [name, _strip_name(_TRAILING_NOTE.sub("", name))]
    head, colon, tail = name.partition(":")
    if colon and tail.strip() and len(head.split()) <= 2:
        out.append(_strip_name(tail))
    return [v for v in dict.fromkeys(out) if v]


class LLMMentions:
    """Named things that an LLM lists for each text, grounded in the text.

    The LLM gets the ``entities-v1`` prompt and answers with one name per line. Each name is
    looked up in the text (case-insensitive, whole words); every occurrence of a name found there
    becomes a :class:`Mention` labelled ``"LLM"`` (longer names first, no overlaps), and a name
    not in the text is dropped. Replies are cached with ``cache``; a failed call leaves its text
    without mentions. What happened is counted in :attr:`notes` (across calls).

    Args:
        llm: An LLM backend (:func:`argus_ir.llm.load_llm`).
        cache: A :class:`~argus_ir.llm.CallCache` for the replies (``None``: no cache).
        max_tokens: Reply token cap.
        max_chars: The prompt shows at most this many characters of a text (names are still
            looked up in all of it).
        max_words: Longest name kept, in words (a small model may echo a whole sentence).

    Example:
        >>> from argus_ir.llm import load_llm  # doctest: +SKIP
        >>> LLMMentions(load_llm("openai:http://127.0.0.1:8000/v1@my-model")).extract(
        ...     ["Marie Curie worked in Paris."]
        ... )  # doctest: +SKIP
    """

    PROMPT_VERSION = "entities-v1"

    def __init__(
        self,
        llm: Any,
        *,
        cache: Any = None,
        max_tokens: int = 128,
        max_chars: int = 3000,
        max_words: int = 6,
    ) -> None:
        self.llm = llm
        self.cache = cache
        self.max_tokens = max_tokens
        self.max_chars = max_chars
        self.max_words = max_words
        self.labels = frozenset({"LLM"})
        self.notes: Counter[str] = Counter()

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text (empty for empty texts and failed calls, which are counted)."""
        from argus_ir.llm.cache import cached_generate
        from argus_ir.prompts import load_prompt

        checked = _check_texts(texts)
        out: list[list[Mention]] = [[] for _ in checked]
        todo = [i for i, t in enumerate(checked) if t.strip()]
        template = load_prompt(self.PROMPT_VERSION)
        prompts = [
            (self.PROMPT_VERSION, template.substitute(text=checked[i][: self.max_chars].strip()))
            for i in todo
        ]
        replies, count = cached_generate(
            self.llm, prompts, self.cache, max_tokens=self.max_tokens, show_progress=show_progress
        )
        self.notes.update(
            {"texts": len(todo), "LLM calls": count.calls, "cached": count.cache_hits}
        )
        for i, reply in zip(todo, replies):
            if not reply.ok:
                self.notes["failed calls"] += 1
                continue
            out[i] = self._ground(checked[i], reply.text or "")
        return out

    def _ground(self, text: str, reply: str) -> list[Mention]:
        """The reply's names that occur in ``text``, as non-overlapping mentions."""

        def found(name: str) -> str | None:
            hits = (
                v
                for v in _variants(name)
                if sum(c.isalpha() for c in v) >= 2 and len(v.split()) <= self.max_words
            )
            return next((v for v in hits if _find(text, v)), None)

        names: dict[str, str] = {}  # case-folded -> as listed
        for line in reply.splitlines():
            line = _strip_name(_BULLET.sub("", line))
            if not line:
                continue
            # a line is one name, or (when it is not) a comma-separated list of names
            tries = [(line, found(line))]
            if tries[0][1] is None and "," in line:
                tries = [(part, found(part)) for part in map(_strip_name, line.split(",")) if part]
            for part, name in tries:
                if name is not None:
                    names.setdefault(name.casefold(), name)
                elif len(part.split()) > self.max_words:
                    self.notes[f"listed names over {self.max_words} words"] += 1
                else:
                    self.notes["listed names not in the text"] += 1
        taken: list[Mention] = []
        for name in sorted(names.values(), key=len, reverse=True):
            for start, end in _find(text, name):
                if all(end <= m.start or start >= m.end for m in taken):
                    m = _mention(text, start, end, "LLM")
                    if m is not None:
                        taken.append(m)
        self.notes["mentions"] += len(taken)
        return sorted(taken)


def _find(text: str, name: str) -> list[tuple[int, int]]:
    """Spans of ``name`` in ``text``: case-insensitive, not inside a longer word."""
    pattern = r"(?<!\w)" + re.escape(name) + r"(?!\w)"
    return [(m.start(), m.end()) for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
