"""The usable samples of the bias audit: Re-DocRED relations with one evidence sentence holding
head and tail, their templated query, and the head-only and neutral sentences the settings use.
Every relation that cannot serve is counted by reason, so a report can say why it has fewer pairs
than asked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from argus_ir.bias.data import Mention, RedocDoc, _names, _sentence, load_templates


@dataclass(frozen=True)
class Sample:
    """One usable relation: its document, query and the sentence roles the settings draw on."""

    doc: int
    relation: str
    head: int
    tail: int
    query: str
    evidence: int
    head_only: tuple[int, ...]
    neutral: tuple[int, ...]
    short_name: str
    long_name: str


def _roles(
    doc: RedocDoc,
    evidence: int,
    heads: Sequence[Mention],
    tails: Sequence[Mention],
    head_names: Sequence[str],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(head-only, neutral)`` sentence ids besides the evidence.

    Neither may mention the tail (by annotation or by any of its names as text); head-only ones
    mention the head, neutral ones neither mention it nor contain its names.
    """
    tail_names = [n.lower() for n in _names(tails, doc)]
    lowered = [n.lower() for n in head_names]
    head_sents = {m.sent for m in heads}
    tail_sents = {m.sent for m in tails}
    head_only, neutral = [], []
    for s in range(len(doc.sents)):
        text = _sentence(doc.sents[s]).lower()
        if s == evidence or s in tail_sents or any(n in text for n in tail_names):
            continue
        if s in head_sents:
            head_only.append(s)
        elif not any(n in text for n in lowered):
            neutral.append(s)
    return tuple(head_only), tuple(neutral)


def find_samples(
    docs: Sequence[RedocDoc],
    templates: Mapping[str, str] | None = None,
    *,
    per_doc: int = 3,
) -> tuple[list[Sample], Counter[str]]:
    """The relations the settings can use, at most ``per_doc`` per document (the first ones).

    A relation is used when it has a template, exactly one evidence sentence, a head and a tail
    mention in that sentence, the head appears there once, and no name of the head contains a
    name of the tail or the reverse (the foil, made of the head's name, would hold the answer).
    Every rejection is counted in the notes by reason.
    """
    templates = load_templates() if templates is None else templates
    notes: Counter[str] = Counter()
    missing: Counter[str] = Counter()
    samples: list[Sample] = []
    for d, doc in enumerate(docs):
        taken = 0
        for lab in doc.labels:
            r, h, t = str(lab["r"]), int(lab["h"]), int(lab["t"])
            evidence = lab.get("evidence") or []
            heads, tails = doc.entities[h], doc.entities[t]
            if r not in templates:
                notes["relations without a template"] += 1
                missing[r] += 1
                continue
            if not heads or not tails:
                notes["relations whose head or tail has no mention"] += 1
                continue
            if len(evidence) != 1:
                notes["relations without a single evidence sentence"] += 1
                continue
            e = int(evidence[0])
            if not any(m.sent == e for m in tails) or not any(m.sent == e for m in heads):
                notes["relations whose evidence sentence lacks the head or the tail"] += 1
                continue
            if sum(m.sent == e for m in heads) != 1:
                notes["relations with several head mentions in the evidence"] += 1
                continue
            if taken >= per_doc:
                notes["relations beyond the per-document cap"] += 1
                continue
            names = _names(heads, doc)
            lowered = [n.lower() for n in names]
            if any(
                tn.lower() in hn or hn in tn.lower() for tn in _names(tails, doc) for hn in lowered
            ):
                notes["relations whose head and tail names overlap"] += 1  # the foil would hold it
                continue
            head_only, neutral = _roles(doc, e, heads, tails, names)
            long_name = max(names, key=len)
            short_name = min(names, key=len)
            query = templates[r].replace("{head}", long_name)
            samples.append(Sample(d, r, h, t, query, e, head_only, neutral, short_name, long_name))
            taken += 1
    notes["usable relations"] = len(samples)
    if missing:
        top = ", ".join(f"{r} ({c})" for r, c in missing.most_common(8))
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        notes[f"relation ids without a template: {top}{more}"] = len(missing)
    return samples, notes
