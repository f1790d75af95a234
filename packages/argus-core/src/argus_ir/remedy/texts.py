"""How each view's text is written: descriptor insertions, focus sentences, masked passages, ids."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from argus_ir.diagnose import EntityRisk
from argus_ir.kb import Passage
from argus_ir.lineage import VIEW_ID, VIEW_NAMESPACE, VIEW_UUID, view_id

__all__ = [
    "KNOWLEDGE_SEPARATOR",
    "VIEW_ID",
    "VIEW_NAMESPACE",
    "VIEW_UUID",
    "descriptor_text",
    "enriched_text",
    "focus_texts",
    "knowledge_sentence",
    "masked_passage",
    "passage_text",
    "sentence_spans",
    "view_id",
    "view_key",
]

_MAX_CLAUSE_WORDS = 12
_WORD = re.compile(r"\w+")


def masked_passage(passage: Passage, surface: str) -> str:
    """The passage text without the words of its title and of ``surface`` (what the check embeds)."""
    names = {w.lower() for w in _WORD.findall(f"{passage.title} {surface}") if len(w) > 1}
    kept = _WORD.sub(lambda m: "" if m.group(0).lower() in names else m.group(0), passage.text)
    return " ".join(kept.split())


def passage_text(passage: Passage) -> str:
    """How a KB passage is written into an expansion view (and embedded by the context check)."""
    return f"{passage.title}: {passage.text}"


def view_key(source_id: str, kind: str, entity: str, kb_id: str, settings: str) -> str:
    """A view's readable key, ``<source id>#argus-<16 hex>``: the same inputs give the same key on
    every run and machine. It is kept in the view's lineage (``argus_view_key``)."""
    key = json.dumps([source_id, kind, entity, kb_id, settings], ensure_ascii=False)
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()  # lone surrogates too
    return f"{source_id}#argus-{digest[:16]}"


def _lead_clause(text: str) -> str:
    """The first clause of a passage, at most a dozen words (a descriptor when there is none)."""
    clause = re.split(r"(?<=[.;:!?])\s|,\s", text.strip(), maxsplit=1)[0].rstrip(".;:!?")
    words = clause.split()
    return " ".join(words[:_MAX_CLAUSE_WORDS]) + (" ..." if len(words) > _MAX_CLAUSE_WORDS else "")


_MAX_SENTENCE_WORDS = 40
_PREDICATE = re.compile(
    r"(?:in|on|at|near|off|from|of|within|outside|inside|between|along|across|a|an|the|one|"
    r"part|located|situated|found|known|used|also|now|formerly|former)\b",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"[aeiou]|hou?r|honou?r|heir", re.IGNORECASE)  # "an" before these


def _lead_sentence(text: str) -> str:
    """The first sentence of a passage, at most 40 words."""
    first = re.split(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n", text.strip(), maxsplit=1)[0]
    words = first.split()
    if len(words) > _MAX_SENTENCE_WORDS:
        return " ".join(words[:_MAX_SENTENCE_WORDS]).rstrip(",;:") + " ..."
    return first.strip()


def knowledge_sentence(surface: str, passage: Passage) -> str:
    """What the KB knows of a mention, written as one sentence the retriever reads as a fact.

    With a short description (Wikidata's, a place's): ``"<mention> is <description>."``, with
    an article before a bare noun phrase (``"Leptis Magna is an ancient city in Libya."``,
    ``"Bled Castle is in Bled, Slovenia."``). Without one: the passage's first sentence, which a
    one-line passage of a user's file already is, led by the mention where it does not name it.
    """
    name = " ".join(surface.split())
    desc = " ".join(passage.description.split()).rstrip(".;:")
    if desc:
        if _PREDICATE.match(desc) or not desc[:1].isalpha():
            return f"{name} is {desc}."
        article = "an" if _ARTICLE.match(desc) else "a"
        return f"{name} is {article} {desc}."
    lead = _lead_sentence(passage.text)
    if not lead:
        return ""
    if not lead.endswith((".", "!", "?", "...")):
        lead += "."
    named = _words(name) in _words(lead) or (
        passage.title and _words(passage.title) in _words(lead)
    )
    return lead if named else f"{passage.title or name}: {lead}"


def _words(text: str) -> str:
    """Lower-cased words of ``text`` joined by single spaces (for containment checks)."""
    return " ".join(_WORD.findall(text.lower()))


KNOWLEDGE_SEPARATOR = "\n"
"""Between the original's own string and its knowledge in the text an enriched original's vector
is embedded from (:func:`enriched_text`)."""


def enriched_text(indexed: str, knowledge: str | None) -> str:
    """The string an enriched original's vector embeds: the string the index embeds for it
    (``indexed``), a newline, then its knowledge; without knowledge, ``indexed`` itself.

    After the text, not before it: on the dev queries of the two place sets, with a KB that
    knows their entities, knowledge before the text gained +42.8 / +9.4 nDCG@10, after it
    +53.8 / +17.8, and the sentences written after each mention's sentence +52.2 / +19.9
    (docs/benchmarks.md). After the text it needs nothing but the metadata to be written again.
    A retriever that reads only a window never reads knowledge after a document that fills it."""
    return f"{indexed}{KNOWLEDGE_SEPARATOR}{knowledge}" if knowledge else indexed


def descriptor_text(text: str, inserts: Sequence[tuple[EntityRisk, Passage]]) -> str:
    """``text`` with `` (description)`` inserted after the first mention of each entity.

    A bracket, not a sentence: on the dev queries of the place sets, the KB's sentence written
    after the mention's sentence gained less in a view than this bracket (venue posts +10.8
    against +18.5 nDCG@10 with a KB that knows the venues, +2.9 against +4.9 with the shipped
    KB; docs/benchmarks.md). Knowledge written into an original's vector is a sentence
    (:func:`knowledge_sentence`)."""
    pieces = []
    for risk, passage in inserts:
        desc = passage.description.strip() or _lead_clause(passage.text)
        if desc:
            pieces.append((risk.mentions[0].end, f" ({desc})"))
    out, last = [], 0
    for pos, insert in sorted(pieces, key=lambda p: p[0]):
        out += [text[last:pos], insert]
        last = pos
    out.append(text[last:])
    return "".join(out)


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n\s*")
_FOCUS_MAX_WORDS = 80


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence or line of ``text`` (a light splitter, no model)."""
    spans, last = [], 0
    for m in _SENTENCE_BREAK.finditer(text):
        if m.start() > last:
            spans.append((last, m.start()))
        last = m.end()
    if last < len(text):
        spans.append((last, len(text)))
    return spans


def _describe(passage: Passage) -> str:
    return passage.description.strip() or _lead_clause(passage.text)


def _trim_words(text: str, centre: int, limit: int) -> str:
    """At most ``limit`` words of ``text``, centred on character offset ``centre``."""
    words = list(re.finditer(r"\S+", text))
    if len(words) <= limit:
        return text
    at = next((i for i, w in enumerate(words) if w.end() > centre), len(words) - 1)
    lo = max(0, min(at - limit // 2, len(words) - limit))
    hi = lo + limit
    return text[words[lo].start() : words[hi - 1].end()]


def focus_texts(
    text: str, inserts: Sequence[tuple[EntityRisk, Passage]]
) -> list[tuple[str, list[int]]]:
    """The focus views of ``text``: one per sentence holding a first mention of an entity.

    Each is the opening sentence (or title line) of the text, then the sentence with
    `` (description)`` after each entity's first mention, cut to about 80 words around the
    first of them. Returns ``(view text, indices into inserts)`` in sentence order.
    """
    spans = sentence_spans(text)
    if not spans:
        return []
    by_sentence: dict[int, list[int]] = {}
    for i, (risk, _) in enumerate(inserts):
        pos = risk.mentions[0].start
        s = next((j for j, (a, b) in enumerate(spans) if a <= pos < b), len(spans) - 1)
        by_sentence.setdefault(s, []).append(i)
    head = text[spans[0][0] : spans[0][1]]
    out = []
    for s, members in sorted(by_sentence.items()):
        a, b = spans[s]
        descriptions = ((inserts[i][0].mentions[0].end, _describe(inserts[i][1])) for i in members)
        pieces = sorted((pos, f" ({desc})") for pos, desc in descriptions if desc)
        body, last = [], a
        for pos, insert in pieces:
            pos = min(max(pos, a), b)
            body += [text[last:pos], insert]
            last = pos
        body.append(text[last:b])
        sentence = _trim_words(
            "".join(body), inserts[members[0]][0].mentions[0].start - a, _FOCUS_MAX_WORDS
        )
        view = sentence if s == 0 else f"{_trim_words(head, 0, _FOCUS_MAX_WORDS // 2)}\n{sentence}"
        out.append((view, members))
    return out
