"""The paired documents of the bias audit: for each setting, two documents per sample that differ
in that one factor, drawn from a seeded shuffle of the samples; also what follows from the built
pairs alone, the collection of all their documents (BM25's statistics) and the fingerprint that
tells whether two audits scored the same pairs.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from argus_ir.bias.data import Mention, RedocDoc, _names, _sentence
from argus_ir.bias.samples import Sample, find_samples
from argus_ir.errors import ArgusInputError

SETTINGS = ("answer_importance", "position", "literal", "brevity", "repetition", "foil")
"""The paired settings, in the paper's order."""

FOIL_FILLER = 4
"""Unrelated sentences on each side of the evidence in the foil setting's evidence document."""


@dataclass(frozen=True)
class Pair:
    """Two documents for one query, differing in one factor (``setting``)."""

    setting: str
    sample: int
    query: str
    d1: str
    d2: str


def _replace_head(doc: RedocDoc, head: int, name: str, sents: Sequence[int]) -> list[str]:
    """The sentences ``sents`` of ``doc`` with every mention of entity ``head`` spelled ``name``."""
    spans: dict[int, list[Mention]] = {}
    for m in doc.entities[head]:
        spans.setdefault(m.sent, []).append(m)
    out = []
    for s in sents:
        tokens = list(doc.sents[s])
        kept: list[Mention] = []  # overlapping mentions ("Carter" inside "Rufus Carter"): the outer
        for m in sorted(spans.get(s, []), key=lambda m: (m.start, -m.end)):
            if not kept or m.start >= kept[-1].end:
                kept.append(m)
        for m in reversed(kept):
            tokens[m.start : m.end] = name.split()
        out.append(_sentence(tokens))
    return out


def _nearest(pool: Sequence[int], lengths: Sequence[int], doc: RedocDoc) -> list[int] | None:
    """For each length, the unused pool sentence with the nearest token count."""
    free = list(pool)
    chosen = []
    for n in lengths:
        if not free:
            return None
        best = min(free, key=lambda s: (abs(len(doc.sents[s]) - n), s))
        free.remove(best)
        chosen.append(best)
    return chosen


def _pair(
    setting: str, sample: Sample, docs: Sequence[RedocDoc], rng: random.Random, index: int
) -> tuple[Pair | None, str]:
    """The pair of one setting for one sample, or ``None`` and why not."""
    doc = docs[sample.doc]
    text = {s: _sentence(doc.sents[s]) for s in range(len(doc.sents))}
    e, hs, neutral = sample.evidence, sample.head_only, sample.neutral

    def join(ids: Iterable[int]) -> str:
        return " ".join(text[s] for s in ids)

    q = sample.query
    if setting == "answer_importance":
        if not hs or not neutral:
            return None, "no head-only or no neutral sentence"
        return Pair(setting, index, q, join([e, *neutral]), join([hs[0], *neutral])), ""
    if setting == "position":
        if len(neutral) < 2:
            return None, "fewer than two neutral sentences"
        return Pair(setting, index, q, join([e, *neutral]), join([*neutral, e])), ""
    if setting == "literal":
        if sample.short_name == sample.long_name:
            return None, "the head has one name only"
        short_q = q.replace(sample.long_name, sample.short_name)
        ids = range(len(doc.sents))
        d1 = " ".join(_replace_head(doc, sample.head, sample.short_name, ids))
        d2 = " ".join(_replace_head(doc, sample.head, sample.long_name, ids))
        return Pair(setting, index, short_q, d1, d2), ""
    if setting == "brevity":
        if not neutral:
            return None, "no neutral sentence"
        return Pair(setting, index, q, text[e], join([e, *neutral])), ""
    if setting == "repetition":
        if len(hs) < 2:
            return None, "fewer than two head-only sentences"
        more = list(hs[:2])
        fewer = _nearest(neutral, [len(doc.sents[s]) for s in more], doc)
        if fewer is None or len(fewer) < 2:
            return None, "fewer than two neutral sentences"
        return Pair(setting, index, q, join([e, *more]), join([e, *fewer])), ""
    if setting == "foil":
        if not hs:
            return None, "no head-only sentence"
        filler = _filler(sample, docs, rng)
        if filler is None:
            return None, "no unrelated document to take filler from"
        evidence_doc = " ".join([*filler, text[e], *filler])
        foil = f"{sample.long_name}. {sample.long_name}. {text[hs[0]]}"
        return Pair(setting, index, q, evidence_doc, foil), ""
    raise ArgusInputError(f"unknown setting {setting!r} (one of {', '.join(SETTINGS)})")


def _filler(sample: Sample, docs: Sequence[RedocDoc], rng: random.Random) -> list[str] | None:
    """The first sentences of a random other document that names neither head nor tail."""
    doc = docs[sample.doc]
    avoid = [n.lower() for n in _names(doc.entities[sample.head], doc)]
    avoid += [n.lower() for n in _names(doc.entities[sample.tail], doc)]
    order = list(range(len(docs)))
    rng.shuffle(order)
    for j in order:
        other = docs[j]
        if other.title == doc.title or len(other.sents) < FOIL_FILLER:
            continue
        sents = [_sentence(s) for s in other.sents[:FOIL_FILLER]]
        joined = " ".join(sents).lower()
        if not any(n in joined for n in avoid):
            return sents
    return None


def build_pairs(
    docs: Sequence[RedocDoc],
    *,
    n: int = 250,
    seed: int = 0,
    settings: Sequence[str] = SETTINGS,
    templates: Mapping[str, str] | None = None,
    per_doc: int = 3,
) -> tuple[dict[str, list[Pair]], Counter[str]]:
    """Up to ``n`` pairs per setting from a seeded shuffle of the usable samples.

    The notes count the samples found and dropped (by reason) and, per setting, the samples that
    could not form its pair and a shortfall when fewer than ``n`` pairs exist.
    """
    samples, notes = find_samples(docs, templates, per_doc=per_doc)
    rng = random.Random(seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    pairs: dict[str, list[Pair]] = {}
    for setting in settings:
        made: list[Pair] = []
        setting_rng = random.Random(f"{seed}:{setting}")
        for i in order:
            if len(made) >= n:
                break
            pair, why = _pair(setting, samples[i], docs, setting_rng, i)
            if pair is None:
                notes[f"{setting}: samples skipped, {why}"] += 1
            else:
                made.append(pair)
        if len(made) < n:
            notes[f"{setting}: {len(made)} pairs of the {n} asked"] += 1
        pairs[setting] = made
    return pairs, notes


def pair_corpus(pairs: Mapping[str, Sequence[Pair]]) -> list[str]:
    """Every document of every pair (the BM25 reference's collection)."""
    return [d for ps in pairs.values() for p in ps for d in (p.d1, p.d2)]


def pairs_fingerprint(pairs: Mapping[str, Sequence[Pair]]) -> str:
    """SHA-256 over every pair's setting, query and documents, in order."""
    digest = hashlib.sha256()
    for setting, ps in pairs.items():
        for p in ps:
            for part in (setting, p.query, p.d1, p.d2):
                digest.update(part.encode("utf-8"))
                digest.update(b"\0")
    return digest.hexdigest()
