"""Knowledge from a served LLM for the entities no KB source knows by name.

:class:`LLMKnowledge` asks an LLM (any :class:`~argus_ir.llm.LLM`: an OpenAI-compatible server,
vLLM, transformers) for one short line on what a mention is in its sentence, and answers with
that line as a passage: title the mention, text "<mention>: <line>", description the line. Its id
starts with ``llm:`` and the views built from it carry ``argus_kb_generated: true`` in their
lineage, so generated knowledge is never mistaken for a KB's. Replies are cached on disk by
prompt (:class:`~argus_ir.llm.cache.CallCache`), so a rerun asks nothing twice; a reply of
"UNKNOWN", an empty one, one that only repeats the name, or a failed call gives no passage.

:func:`with_llm_knowledge` puts it behind any KB: the KB's exact names first, then the LLM, and
the KB's BM25 word matches only when the LLM gives nothing (they were mostly about another entity
in the hand-labelled samples, docs/benchmarks.md). ``argus augment --kb-llm openai:URL@MODEL``
does that for the command line.

What the lookups cost is counted: :meth:`LLMKnowledge.take_usage` gives the calls made and the
lookups that failed since it was last asked, which the remedy adds to its
:class:`~argus_ir.remedy.stats.RemedyStats` (``kb_llm_calls``, ``kb_llm_failures``). After
:data:`GIVE_UP_AFTER` lookups in a row that the server failed (down, or never answering; a prompt
it refuses or a malformed reply is not counted) it stops asking, says so once, and the run goes on
without LLM knowledge (``kb_llm_gave_up``); after :data:`COOL_DOWN` seconds one lookup asks again,
and a reply brings it back.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.kb.reference import DEFAULT_K_AUG, KnowledgeBase, Passage
from argus_ir.llm.base import LLM, Generation
from argus_ir.llm.cache import CallCache, cached_generate
from argus_ir.llm.checks import unsafe_text
from argus_ir.remedy import GENERATED_PREFIX

__all__ = [
    "GENERATED_PREFIX",
    "GIVE_UP_AFTER",
    "PROMPT",
    "TIMEOUT",
    "KnowledgeUsage",
    "LLMKnowledge",
    "with_llm_knowledge",
]

logger = logging.getLogger(__name__)

PROMPT_VERSION = "kb-describe-v1"
PROMPT = (
    'In the text below, what is "{surface}"? Answer with one short line of at most twelve words '
    "that says what kind of thing it is (for example: town in Slovenia; human gene; 1999 album "
    "by a British band). If you do not know, answer UNKNOWN.\n\nText: {window}\n\nAnswer:"
)
_MAX_CHARS = 120
_WINDOW = 200
GIVE_UP_AFTER = 3
"""Lookups in a row that the server failed (each after its backend's retries) after which
:class:`LLMKnowledge` stops asking: the server is down or never answers. A lookup the server
answered but refused (HTTP 400, a malformed reply) is not the server's failure and ends the run."""
COOL_DOWN = 60.0
"""Seconds after giving up before one lookup asks again; a reply brings the LLM back, a failure
gives up for another cool-down (a long-lived adapter outlives a short outage)."""
TIMEOUT = 30.0
"""Seconds ``argus augment --kb-llm openai:...`` waits for one reply unless ``--llm-timeout``
says otherwise (a reply is one short line; synthesis waits 120)."""


@dataclass
class KnowledgeUsage:
    """What :class:`LLMKnowledge`'s lookups did over a stretch of a run.

    Attributes:
        calls: Requests sent to the LLM (retries included; replies from the cache not counted).
        failures: Lookups whose call failed after its retries (the mention got no passage).
        last_error: Why the last of them failed (``""`` when none did).
        gave_up: Why it stopped asking (``""`` while it asks).
        refused: Replies refused by the prompt's rules (over twelve words, a control or
            bidirectional character, an over-long word): the mention got no passage.
    """

    calls: int = 0
    failures: int = 0
    last_error: str = ""
    gave_up: str = ""
    refused: int = 0


def _window(surface: str, context: str | None) -> str:
    """The text around the mention's first occurrence (the whole context if it is short)."""
    if not context:
        return surface
    at = context.find(surface)
    if at < 0:
        return context[: 2 * _WINDOW]
    return context[max(0, at - _WINDOW) : at + len(surface) + _WINDOW]


def clean_reply(surface: str, reply: str | None) -> str | None:
    """The first line of a reply, unquoted and cut to 120 characters; ``None`` when it says
    nothing ("UNKNOWN", empty, or only the name again)."""
    if not reply:
        return None
    line = next((part.strip() for part in reply.strip().splitlines() if part.strip()), "")
    line = line.strip(" \"'`*").removeprefix("Answer:").strip()
    line = re.sub(rf"^{re.escape(surface)}\s*(?:is|:|-|—)\s*", "", line, flags=re.I).strip()
    line = re.sub(r"^(?:an?|the)\s+", "", line, flags=re.I)
    line = line.rstrip(".").strip()
    if not line or "unknown" in line.lower() or line.lower() == surface.lower():
        return None
    return line[:_MAX_CHARS]


MAX_WORDS = 12
"""The prompt asks for one line of at most twelve words."""


def breaks_rules(line: str) -> str | None:
    """Why a cleaned reply line may not become a passage (the prompt's rules), or ``None``."""
    words = len(line.split())
    if words > MAX_WORDS:
        return f"has {words} words (at most {MAX_WORDS})"
    return unsafe_text(line)


class LLMKnowledge:
    """One-line descriptions of mentions from an LLM, as KB passages (see the module).

    Args:
        llm: The model to ask.
        cache: A folder (or :class:`CallCache`) that keeps every reply; ``None`` keeps them in
            memory only.
        max_tokens: Longest reply.
        give_up_after: Lookups in a row the server failed after which it stops asking
            (:data:`GIVE_UP_AFTER`).
        cool_down: Seconds after giving up before one lookup asks again (:data:`COOL_DOWN`).

    Attributes:
        calls: Requests sent so far (retries included, cached replies not).
        failures: Lookups whose call failed so far.
        gave_up: Why it stopped asking (``""`` while it asks, and again once a lookup after the
            cool-down got a reply).
    """

    def __init__(
        self,
        llm: LLM,
        cache: CallCache | str | Path | None = None,
        *,
        max_tokens: int = 32,
        give_up_after: int = GIVE_UP_AFTER,
        cool_down: float = COOL_DOWN,
    ) -> None:
        if give_up_after < 1:
            raise ArgusInputError(f"give_up_after must be at least 1, got {give_up_after}")
        if not cool_down >= 0:
            raise ArgusInputError(f"cool_down must be at least 0 seconds, got {cool_down}")
        self.cool_down = cool_down
        self._ask_again_at = 0.0
        self.llm = llm
        self.cache = cache if isinstance(cache, CallCache) or cache is None else CallCache(cache)
        self.max_tokens = max_tokens
        self.give_up_after = give_up_after
        digest = hashlib.sha256(f"{llm.fingerprint}|{PROMPT_VERSION}".encode()).hexdigest()
        self.fingerprint = f"llm-knowledge:{digest[:16]}"
        self._passages: dict[str, Passage] = {}
        self._memo: dict[str, Passage | None] = {}
        self.calls = 0
        self.failures = 0
        self.gave_up = ""
        self._in_a_row = 0
        self._usage = KnowledgeUsage()

    def __len__(self) -> int:
        return len(self._passages)

    def passage(self, passage_id: str) -> Passage | None:
        return self._passages.get(passage_id)

    def knows(self, surface: str) -> bool:
        """Any name may be asked (a form with at least two letters), except while it has given
        up and the cool-down has not passed."""
        if self.gave_up and time.monotonic() < self._ask_again_at:
            return False
        return sum(c.isalpha() for c in surface) >= 2

    def take_usage(self) -> KnowledgeUsage:
        """What the lookups did since the last call (the remedy adds it to its stats)."""
        usage, self._usage = self._usage, KnowledgeUsage(gave_up=self.gave_up)
        return usage

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """One generated passage for the mention in its text, or ``[]`` (also once it gave up)."""
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        if not self.knows(surface):
            return []
        prompt = PROMPT.format(surface=surface, window=" ".join(_window(surface, context).split()))
        if prompt not in self._memo:
            (reply,), count = cached_generate(
                self.llm, [(PROMPT_VERSION, prompt)], self.cache, max_tokens=self.max_tokens
            )
            self._count(surface, reply, asked=not count.cache_hits)
            line = clean_reply(surface, reply.text if reply.ok else None)
            broken = None if line is None else breaks_rules(line)
            if broken is not None:
                self._usage.refused += 1
                logger.info("LLM knowledge: the line for %r refused: it %s", surface, broken)
                line = None
            passage = None
            if line is not None:
                pid = GENERATED_PREFIX + hashlib.sha256(prompt.encode()).hexdigest()[:16]
                passage = Passage(pid, surface, f"{surface}: {line}.", line)
                self._passages[pid] = passage
            self._memo[prompt] = passage
        found = self._memo[prompt]
        return [] if found is None else [(found, 1.0)]

    def _count(self, surface: str, reply: Generation, *, asked: bool) -> None:
        """Count one lookup's calls and failure; give up after too many failures in a row."""
        calls = reply.attempts if asked else 0
        self.calls += calls
        self._usage.calls += calls
        if reply.ok or not reply.server_failed:  # the server answered: the run of failures ends
            if self.gave_up and asked:
                logger.warning("LLM knowledge: %r answers again; asking again", self.llm)
                self.gave_up = ""
            self._in_a_row = 0
        if reply.ok:
            return
        self.failures += 1
        error = f"{surface!r}: {reply.error}"
        self._usage.failures += 1
        self._usage.last_error = error
        if not reply.server_failed:
            logger.info("LLM knowledge: lookup failed (not the server's failure): %s", error)
            return
        self._in_a_row += 1
        logger.info("LLM knowledge: lookup %d in a row failed: %s", self._in_a_row, error)
        if self._in_a_row >= self.give_up_after:
            self.gave_up = (
                f"stopped asking {self.llm!r} after {self._in_a_row} failed lookups in a row "
                f"(the last: {error}); the run goes on without LLM knowledge, and asks again "
                f"{self.cool_down:g} s later"
            )
            self._ask_again_at = time.monotonic() + self.cool_down
            self._usage.gave_up = self.gave_up
            logger.warning("LLM knowledge: %s", self.gave_up)


def with_llm_knowledge(kb: KnowledgeBase, knowledge: LLMKnowledge) -> Any:
    """``kb`` with ``knowledge`` behind its exact names: a mention ``kb`` knows by name gets
    ``kb``'s answer, any other the LLM's line, and ``kb``'s word matches only when the LLM gives
    nothing."""
    from argus_ir.kb.composite import CompositeKB

    if isinstance(kb, CompositeKB):
        return CompositeKB(
            {**kb.sources, "llm": knowledge},
            kb.routes,
            kb.fallback,
            cues=kb.cues,
            last=(*kb.last, "llm"),
            match=kb.match,
        )
    return CompositeKB({"kb": kb, "llm": knowledge}, routes={}, fallback=("kb",), last=("llm",))
