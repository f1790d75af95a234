"""Gap filling: an LLM writes a search question from sampled documents of each stratum no real
query touches; replies that are empty, too long or copied from the document are dropped and
counted.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from argus_ir.coverage.strata import Strata

PROMPT_VERSION = "coverage-query-v1"


@dataclass(frozen=True)
class SyntheticQuery:
    """An LLM-written query for a stratum no real query touched."""

    id: str
    text: str
    stratum: int
    source: str


def _question(reply: str | None) -> str | None:
    """The question in a reply: its first non-empty line without labels or quotes."""
    for line in (reply or "").splitlines():
        line = re.sub(r"^\s*(?:question|query|q)\s*[:.-]\s*", "", line, flags=re.I)
        line = line.strip().strip("\"'`*").strip()
        if line:
            return line
    return None


def gap_queries(
    strata: Strata,
    texts: Mapping[str, str],
    strata_ids: Sequence[int],
    llm: Any,
    *,
    per_stratum: int = 2,
    seed: int = 0,
    cache: Any = None,
    max_words: int = 40,
    show_progress: bool = False,
) -> tuple[list[SyntheticQuery], Counter[str]]:
    """Ask the LLM for one question per sampled document of each stratum in ``strata_ids``.

    Replies that are empty, longer than ``max_words``, or copy a run of the document verbatim are
    dropped and counted; failed calls are counted with their errors left out of the queries.
    """
    from argus_ir.lexical import Analyzer, copied_share
    from argus_ir.llm.cache import cached_generate
    from argus_ir.prompts import load_prompt

    template = load_prompt(PROMPT_VERSION)
    rng = random.Random(seed)
    picked: list[tuple[int, str]] = []
    for c in strata_ids:
        members = strata.documents_in(c)
        for doc_id in rng.sample(members, min(per_stratum, len(members))):
            picked.append((c, doc_id))
    prompts = [(PROMPT_VERSION, template.substitute(text=texts[d].strip())) for _, d in picked]
    replies, count = cached_generate(
        llm, prompts, cache, max_tokens=64, show_progress=show_progress
    )
    notes: Counter[str] = Counter({"LLM calls": count.calls, "cached": count.cache_hits})
    words = Analyzer(stemmer=None).words
    out: list[SyntheticQuery] = []
    for (c, doc_id), reply in zip(picked, replies):
        if not reply.ok:
            notes["failed calls"] += 1
            continue
        q = _question(reply.text)
        if not q:
            notes["empty replies"] += 1
        elif len(q.split()) > max_words:
            notes["replies too long for a query"] += 1
        elif copied_share(words(q), words(texts[doc_id]), n=6) >= 0.5:
            notes["replies copying the document"] += 1
        else:
            out.append(SyntheticQuery(f"synthetic-{c}-{doc_id}", q, c, doc_id))
    notes["synthetic queries"] = len(out)
    return out, notes
