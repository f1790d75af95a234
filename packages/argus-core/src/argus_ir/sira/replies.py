"""SIRA's side of the LLM conversation: the prompts it sends and the filters its replies pass.

:func:`build_prompt` fills the task-aware prompt of a document (corpus side) or a query (query
side); :func:`parse_terms` reads the phrases out of a reply; :func:`usable_phrases` drops the
unusable ones (sentences, copies of the input, answer-like guesses) and counts each drop in a
:class:`ReplyStats`, so bad replies are reported, never raised.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.lexical import WORD, Analyzer, copied_share
from argus_ir.llm.base import Generation
from argus_ir.llm.checks import unsafe_text
from argus_ir.prompts import load_prompt

__all__ = [
    "MAX_PHRASE_WORDS",
    "MAX_TERMS",
    "PROMPT_SERIES",
    "TASKS",
    "ReplyStats",
    "build_prompt",
    "parse_terms",
    "usable_phrases",
]

MAX_TERMS = 12
"""Phrases a prompt asks for."""
MAX_PHRASE_WORDS = 4
"""The prompts ask for phrases of 1 to 4 words; longer ones are dropped."""
TASKS = ("fact", "argument", "duplicate", "qa")
"""Task-aware prompt variants (prompt files ``sira-{corpus,query}-TASK-v1.txt``)."""
PROMPT_SERIES = "v1"

_BULLET = re.compile(r"^\s*(?:[-*•·]+|\d+[.)]|\(\d+\)|[a-z][.)](?=\s))\s*", re.I)
_LABEL = re.compile(
    r"^\s*(?:search\s+)?(?:terms?|keywords?|phrases?|vocabulary|output|answer)\s*:\s*", re.I
)
_VERDICTS = frozenset(
    [
        "true",
        "false",
        "yes",
        "no",
        "supported",
        "refuted",
        "support",
        "refute",
        "correct",
        "incorrect",
    ]
)
_NUMERIC = re.compile(r"^[\d\s.,%/:-]+$")
_MARKUP = re.compile(r'[{}<>"`\\]')  # a search phrase has no markup, quotes or escapes


def build_prompt(side: str, task: str, text: str, max_terms: int = MAX_TERMS) -> tuple[str, str]:
    """``(prompt version, prompt)`` for one document (``side="corpus"``) or query (``"query"``).

    Raises:
        ArgusInputError: An unknown side or task.
    """
    if side not in ("corpus", "query"):
        raise ArgusInputError(f"side must be 'corpus' or 'query', got {side!r}")
    if task not in TASKS:
        raise ArgusInputError(f"unknown task {task!r} (one of {', '.join(TASKS)})")
    version = f"sira-{side}-{task}-{PROMPT_SERIES}"
    return version, load_prompt(version).substitute(text=text.strip(), max_terms=max_terms)


def parse_terms(reply: str) -> list[str]:
    """Phrases from a reply: one per line or separated by ``, `` or ``;``; bullets, numbering,
    quotes and ``Terms:`` labels removed; a JSON list is read as such. May return ``[]``."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").partition("\n")[2]
    items: list[str] | None = None
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list):
            items = [v for v in value if isinstance(v, str)]
    if items is None:
        items = []
        for line in text.splitlines():
            line = _LABEL.sub("", _BULLET.sub("", line))
            items.extend(re.split(r";|,\s", line))  # "1,000" stays one number
    phrases: list[str] = []
    for item in items:
        p = _BULLET.sub("", item).strip().strip("\"'`*.:").strip()
        if WORD.search(p) and p.lower() not in (q.lower() for q in phrases):
            phrases.append(p)
    return phrases


@dataclass
class ReplyStats:
    r"""Counts of what the filters did with LLM replies (the issue's bad-input list and more).

    Attributes:
        calls: Prompts that needed a reply; ``cache_hits`` of them came from the cache.
        failed: Calls that returned an error (the item is left unenriched).
        empty: Empty replies.
        unparseable: Replies that held no usable phrase.
        repeats_input: Replies most of whose words copy the input text verbatim.
        phrases: Phrases parsed; then ``kept`` plus those dropped for a reason below.
        too_long: Phrases longer than the prompt's 4 words.
        rule_breaking: Phrases holding a control or bidirectional-text character, an over-long
            word (:func:`argus_ir.llm.checks.unsafe_text`) or markup characters (``{}<>"`\``).
        copied: Phrases whose words are all already in the input (nothing new).
        answer_like: Query side: numbers, dates, verdicts or, for QA, proper names absent from
            the query (the prompt forbids guessing the answer).
    """

    calls: int = 0
    cache_hits: int = 0
    failed: int = 0
    empty: int = 0
    unparseable: int = 0
    repeats_input: int = 0
    phrases: int = 0
    too_long: int = 0
    rule_breaking: int = 0
    copied: int = 0
    answer_like: int = 0
    kept: int = 0
    llm_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["llm_s"] = round(self.llm_s, 2)
        out["errors"] = self.errors[:5]
        return out


def _answer_like(phrase: str, query_words: set[str], task: str) -> bool:
    words = phrase.split()
    if _NUMERIC.match(phrase) or phrase.lower().strip(".!") in _VERDICTS:
        return True
    if task == "qa":
        capital = [w for w in words if w[:1].isupper()]
        if capital and len(capital) == len(words):
            return not all(w.lower() in query_words for w in words)
    return False


def usable_phrases(
    reply: Generation, source: str, analyzer: Analyzer, stats: ReplyStats, side: str, task: str
) -> list[str]:
    """The usable phrases of one reply (counted into ``stats``)."""
    if not reply.ok:
        stats.failed += 1
        if reply.error:
            stats.errors.append(reply.error)
        return []
    text = (reply.text or "").strip()
    if not text:
        stats.empty += 1
        return []
    source_words = analyzer.words(source)
    reply_words = analyzer.words(text)
    if len(reply_words) >= 8 and copied_share(reply_words, source_words) >= 0.6:
        stats.repeats_input += 1
        return []
    phrases = parse_terms(text)
    stats.phrases += len(phrases)
    present = set(analyzer.tokens(source))
    query_words = set(source_words)
    kept: list[str] = []
    for p in phrases:
        toks = analyzer.tokens(p)
        if len(p.split()) > MAX_PHRASE_WORDS:
            stats.too_long += 1
        elif unsafe_text(p) is not None or _MARKUP.search(p):
            stats.rule_breaking += 1
        elif not toks or all(t in present for t in toks):
            stats.copied += 1
        elif side == "query" and _answer_like(p, query_words, task):
            stats.answer_like += 1
        else:
            kept.append(p)
    if not kept and not phrases:
        stats.unparseable += 1
    stats.kept += len(kept)
    return kept
