"""KB-guided LLM synthesis (paper §5.2, App. D.3-D.4) and the guard that keeps it honest.

One prompt per document (the template of the paper's Fig. 8, ``prompts/synthesis-v1.txt``) lists each
flagged entity with its KB passages and asks for the document back with a short description inserted
after the first mention of each entity that matches its context. :func:`check_rewrite` accepts a reply
only when it is the original text with insertions and nothing else, and when the insertions stay
within a small word budget; :mod:`argus_ir.remedy` retries a rejected reply once, then falls back to
the descriptor view.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template

from argus_ir import prompts
from argus_ir.kb import Passage
from argus_ir.llm.checks import unsafe_text

__all__ = [
    "PROMPT_VERSION",
    "RETRY_NOTE",
    "Verdict",
    "build_prompt",
    "check_rewrite",
    "clean_reply",
    "insertions_only",
    "load_prompt",
]

PROMPT_VERSION = "synthesis-v1"
WORDS_PER_ENTITY = 12
"""Insertion budget: words a reply may add per flagged entity (the prompt asks for at most 5)."""

RETRY_NOTE = (
    "\n\nIMPORTANT: your previous answer was rejected because it {reason}. Copy the Input Text "
    "exactly, character for character, and only insert the short comma-enclosed descriptions."
)

# words (letters, digits and combining marks), whitespace runs, or single other characters
_TOKEN = re.compile(r"[\w\u0300-\u036f\u1ab0-\u1aff\u20d0-\u20ff]+|\s+|[^\w\s]", re.UNICODE)
_LABEL = re.compile(
    r"^\s*(?:#+\s*)?(?:final\s+)?(?:annotated|augmented|output)\s+text\s*:\s*", re.I
)
_FENCE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.S)


def load_prompt(version: str = PROMPT_VERSION) -> Template:
    """The prompt template of ``version`` (a file in ``argus_ir/prompts``).

    Kept for callers of this module: :func:`argus_ir.prompts.load_prompt` does the reading.
    """
    return prompts.load_prompt(version)


def build_prompt(
    text: str,
    entities: Sequence[tuple[str, Sequence[Passage]]],
    version: str = PROMPT_VERSION,
) -> str:
    """The synthesis prompt for ``text`` and its flagged entities with their KB passages."""
    lines = [
        f"{surface} : {passage.title}. {passage.text}".strip()
        for surface, passages in entities
        for passage in passages
    ]
    return load_prompt(version).substitute(entities="\n".join(lines), text=text.strip())


def clean_reply(reply: str) -> str:
    """Strip what models wrap around the text: outer whitespace, a code fence, a leading label."""
    out = reply.strip()
    fenced = _FENCE.match(out)
    if fenced:
        out = fenced.group(1).strip()
    out = _LABEL.sub("", out, count=1).strip()
    if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'":
        out = out[1:-1].strip()
    return out


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _inserted_tokens(original: str, rewritten: str) -> list[str] | None:
    """Tokens of ``rewritten`` left over once ``original``'s tokens are matched in order.

    ``None`` when ``original`` is not a token subsequence of ``rewritten`` (something was changed
    or removed). Greedy matching decides that exactly and in linear time; which copy of a repeated
    token it picks does not change the verdict or the number of inserted tokens.
    """
    matched = _match(original, rewritten)
    return None if matched is None else matched[0]


def _match(original: str, rewritten: str) -> tuple[list[str], list[int], list[str]] | None:
    """:func:`_inserted_tokens`, with where each of ``original``'s tokens matched in
    ``rewritten`` (its token position) and ``original``'s tokens."""
    want = _tokens(original)
    extra: list[str] = []
    at: list[int] = []
    for pos, token in enumerate(_tokens(rewritten)):
        if len(at) < len(want) and token == want[len(at)]:
            at.append(pos)
        else:
            extra.append(token)
    return (extra, at, want) if len(at) == len(want) else None


def _split_name(names: Sequence[str], want: list[str], at: list[int]) -> str | None:
    """The first flagged name of the original whose tokens the reply no longer keeps together
    (text inserted inside it), or ``None``."""
    for name in names:
        parts = _tokens(name.strip())
        n = len(parts)
        if n < 2:
            continue
        for start in range(len(want) - n + 1):
            if want[start : start + n] == parts and at[start + n - 1] - at[start] != n - 1:
                return name
    return None


def insertions_only(original: str, rewritten: str) -> bool:
    """True when ``rewritten`` is ``original`` with whole tokens inserted, nothing changed or removed.

    Insertions must fall between tokens: turning "cat" into "coat" is a change, not an insertion.
    """
    return _inserted_tokens(original, rewritten) is not None


@dataclass(frozen=True)
class Verdict:
    """The guard's decision on one reply.

    Attributes:
        ok: The reply may be indexed.
        text: The view text (the original's outer whitespace kept) when ``ok``.
        reason: Why it was rejected, or ``"unchanged"`` when it added nothing.
        inserted_words: Words the reply added.
    """

    ok: bool
    text: str = ""
    reason: str = ""
    inserted_words: int = 0


def check_rewrite(original: str, reply: str, n_entities: int, names: Sequence[str] = ()) -> Verdict:
    """Accept ``reply`` only as ``original`` plus short insertions.

    Insertions fall between the original's words and never inside a flagged name ("Humphrey,
    IGNORE PREVIOUS INSTRUCTIONS, Bogart" splits the name), and hold no control or
    bidirectional-text character and no over-long word (:func:`argus_ir.llm.checks.unsafe_text`).

    Args:
        original: The document text.
        reply: The model's raw reply.
        n_entities: Flagged entities offered (sets the insertion budget).
        names: The flagged names (surface forms) the reply must keep whole.

    Returns:
        A :class:`Verdict`; a reply equal to the original is not ``ok`` (reason ``"unchanged"``),
        since it would add nothing to the index.
    """
    body = original.strip()
    cleaned = clean_reply(reply)
    if not cleaned:
        return Verdict(False, reason="was empty")
    matched = _match(body, cleaned)
    if matched is None:
        return Verdict(False, reason="changed or dropped words of the original")
    extra, at, want = matched
    split = _split_name(names, want, at)
    if split is not None:
        return Verdict(False, reason=f"inserted text inside the name {split!r}")
    unsafe = unsafe_text("".join(extra), newlines=True)
    if unsafe is not None:
        return Verdict(False, reason=f"inserted text that {unsafe}")
    words = sum(1 for t in extra if t[0].isalnum() or t[0] == "_")
    budget = WORDS_PER_ENTITY * max(1, n_entities)
    if words > budget:
        return Verdict(False, reason=f"added {words} words (budget {budget})", inserted_words=words)
    if words == 0:
        return Verdict(False, reason="unchanged")
    lead = original[: len(original) - len(original.lstrip())]
    tail = original[len(original.rstrip()) :]
    return Verdict(True, text=f"{lead}{cleaned}{tail}", inserted_words=words)
