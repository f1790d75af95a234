"""Retriever bias audit after ColDeR (Fayyaz et al., §3.3-3.4): paired documents built from
Re-DocRED, each pair differing in one factor, scored by a retriever and compared by paired t-tests.

A *sample* is one Re-DocRED relation ``(head, r, tail)`` whose evidence is a single sentence holding
both a head and a tail mention; its query is the relation's template (Table A.5 of the paper) filled
with the head's longest name. From one sample's document the six settings build two documents:

================== =================================================== ==========================
setting            D1                                                  D2
================== =================================================== ==========================
answer_importance  evidence sentence, then the neutral sentences       a head-only sentence, then
                                                                       the same neutral sentences
position           evidence sentence first, then the neutral ones      the neutral ones, evidence last
literal            the document with every head mention in the         ... in the longest name
                   query's (shortest) name
brevity            the evidence sentence alone                         evidence + the neutral ones
repetition         evidence + two head-only sentences                  evidence + two neutral
                                                                       sentences of nearest length
foil               evidence inside four unrelated sentences, repeated  the head's name twice and a
                   (answer present, long, late)                        head-only sentence (no
                                                                       answer; short, early, literal)
================== =================================================== ==========================

*Neutral* sentences mention neither head nor tail; *head-only* sentences mention the head but not
the tail (neither may contain the tail's names as text). ``t > 0`` means the retriever scores D1
higher: a preference for the answer, for early evidence, for matching name forms, for brevity, for
repetition; in ``foil`` a negative ``t`` means the foil wins (the paper: over 90% of pairs for every
dense retriever it tests).

>>> docs, notes = load_redocred("dev_revised.json")           # doctest: +SKIP
>>> pairs, notes = build_pairs(docs, n=250, seed=0)           # doctest: +SKIP
>>> stats = score_settings(pairs, dense_scorer(encoder))      # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = [
    "SETTINGS",
    "BiasStat",
    "Pair",
    "RedocDoc",
    "Sample",
    "audit_biases",
    "augmented_scorer",
    "bias_markdown",
    "bm25_scorer",
    "build_pairs",
    "dense_scorer",
    "find_samples",
    "load_bias_report",
    "load_redocred",
    "load_templates",
    "paired_stat",
    "pairs_fingerprint",
    "score_settings",
    "write_bias_report",
]

SETTINGS = ("answer_importance", "position", "literal", "brevity", "repetition", "foil")
"""The paired settings, in the paper's order."""

D1_MEANS = {
    "answer_importance": "the evidence sentence over a head-only one",
    "position": "evidence first over evidence last",
    "literal": "the query's name form over another form",
    "brevity": "evidence alone over evidence + more text",
    "repetition": "more head mentions over fewer",
    "foil": "the evidence document over the foil",
}
"""What ``t > 0`` means in each setting (D1 preferred)."""

FOIL_FILLER = 4
"""Unrelated sentences on each side of the evidence in the foil setting's evidence document."""

Scorer = Callable[[Sequence[str], Sequence[str]], np.ndarray]
"""``(queries, documents) -> scores``, one score per aligned query-document pair."""


# -- data ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    name: str
    sent: int
    start: int
    end: int


@dataclass
class RedocDoc:
    """One Re-DocRED document: tokenised sentences, entities (lists of mentions) and labels."""

    title: str
    sents: list[list[str]]
    entities: list[list[Mention]]
    labels: list[dict[str, Any]]
    where: str = ""


def load_templates(path: str | Path | None = None) -> dict[str, str]:
    """Relation id -> query template with ``{head}``; default: the paper's Table A.5 (51 rows).

    A user file is JSON, either ``{"P17": "...{head}..."}`` or ``{"templates": {...}}``.

    Raises:
        ArgusInputError: A missing file, or a template without ``{head}`` (named).
    """
    if path is None:
        raw = resources.files("argus_ir").joinpath("data/colder_templates.json").read_text("utf-8")
        where = "the shipped templates"
    else:
        p = Path(path)
        if not p.exists():
            raise ArgusInputError(f"{p}: no such templates file")
        raw, where = p.read_text("utf-8"), str(p)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ArgusInputError(f"{where}: not valid JSON ({exc.msg})") from None
    templates = data.get("templates", data) if isinstance(data, dict) else None
    if not isinstance(templates, dict):
        raise ArgusInputError(f"{where}: expected an object of relation id -> template")
    for rid, text in templates.items():
        if not isinstance(text, str) or "{head}" not in text:
            raise ArgusInputError(f"{where}: template of {rid!r} lacks the {{head}} placeholder")
    return dict(templates)


def load_redocred(path: str | Path) -> tuple[list[RedocDoc], Counter[str]]:
    """Read a Re-DocRED-format JSON file (a list of documents with ``title``, ``sents``,
    ``vertexSet`` and ``labels``).

    Malformed mentions and labels are dropped and counted in the returned notes; a document
    without sentences is dropped and counted.

    Raises:
        ArgusInputError: The file is missing, not JSON, not a list, or a document lacks a field
            (named by its position and title).
    """
    p = Path(path)
    if not p.exists():
        raise ArgusInputError(f"{p}: no such Re-DocRED file")
    try:
        data = json.loads(p.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ArgusInputError(f"{p}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, list):
        raise ArgusInputError(f"{p}: expected a JSON list of documents")
    notes: Counter[str] = Counter()
    docs: list[RedocDoc] = []
    for i, rec in enumerate(data):
        where = f"{p}: document {i}"
        if not isinstance(rec, dict):
            raise ArgusInputError(f"{where}: not an object")
        where += f" ({rec.get('title', '?')!r})"
        for key in ("sents", "vertexSet"):
            if not isinstance(rec.get(key), list):
                raise ArgusInputError(f"{where}: no {key!r} list")
        sents = [[str(t) for t in s] for s in rec["sents"]]
        if not sents:
            notes["documents without sentences"] += 1
            continue
        entities: list[list[Mention]] = []
        for ent in rec["vertexSet"]:
            mentions = []
            for m in ent if isinstance(ent, list) else []:
                try:
                    sid, (start, end) = int(m["sent_id"]), m["pos"]
                    ok = 0 <= sid < len(sents) and 0 <= start < end <= len(sents[sid])
                except (KeyError, TypeError, ValueError):
                    ok = False
                if ok:
                    mentions.append(Mention(str(m.get("name", "")), sid, int(start), int(end)))
                else:
                    notes["mentions with a bad sentence or span"] += 1
            if not mentions:
                notes["entities without mentions"] += 1
            entities.append(mentions)
        labels = []
        for lab in rec.get("labels") or []:
            if not isinstance(lab, dict) or not {"r", "h", "t"} <= set(lab):
                notes["labels without r, h or t"] += 1
            elif not (0 <= lab["h"] < len(entities) and 0 <= lab["t"] < len(entities)):
                notes["labels naming an unknown entity"] += 1
            else:
                labels.append(lab)
        if not labels:
            notes["documents without labels"] += 1
        docs.append(RedocDoc(str(rec.get("title", i)), sents, entities, labels, where))
    return docs, notes


# -- samples -------------------------------------------------------------------------------------------


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


def _sentence(tokens: Sequence[str]) -> str:
    """Detokenised text of a token list (spaces before closing punctuation removed)."""
    text = " ".join(tokens)
    text = re.sub(r" (?=[,.;:!?%)\]}]|'s\b|n't\b|’s\b)", "", text)
    return re.sub(r"([(\[{$]) ", r"\1", text)


def _names(mentions: Sequence[Mention], doc: RedocDoc) -> list[str]:
    out: list[str] = []
    for m in mentions:
        name = " ".join(_sentence(doc.sents[m.sent][m.start : m.end]).split())  # no odd spaces
        if name and name not in out:
            out.append(name)
    return out


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


# -- pairs ---------------------------------------------------------------------------------------------


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
    raise ValueError(f"unknown setting {setting!r} (one of {', '.join(SETTINGS)})")


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


# -- scoring and statistics -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BiasStat:
    """One setting under one retriever.

    Attributes:
        n: Pairs.
        t: Paired t statistic of ``score(D1) - score(D2)`` (``nan`` when every difference is equal).
        p: Two-sided p-value.
        mean_diff: Mean of the differences.
        d_z: Effect size, mean difference over its standard deviation (``t / sqrt(n)``).
        d1_wins: Share of pairs where D1 scores higher (the foil setting's accuracy).
    """

    setting: str
    retriever: str
    n: int
    t: float
    p: float
    mean_diff: float
    d_z: float
    d1_wins: float


def paired_stat(setting: str, retriever: str, s1: np.ndarray, s2: np.ndarray) -> BiasStat:
    """Paired t-test (``scipy.stats.ttest_rel``) of D1's scores against D2's."""
    from scipy import stats

    s1 = np.asarray(s1, dtype=np.float64)
    s2 = np.asarray(s2, dtype=np.float64)
    diff = s1 - s2
    n = len(diff)
    if n < 2 or np.allclose(diff, diff[0]):
        t, p = math.nan, 1.0
    else:
        res = stats.ttest_rel(s1, s2)
        t, p = float(res.statistic), float(res.pvalue)
    sd = float(diff.std(ddof=1)) if n > 1 else 0.0
    mean = float(diff.mean()) if n else 0.0
    d_z = mean / sd if sd > 0 else math.nan
    wins = float((diff > 0).mean()) if n else math.nan
    return BiasStat(setting, retriever, n, t, p, mean, d_z, wins)


def dense_scorer(encoder: Any, show_progress: bool = False) -> Scorer:
    """Scores as the retriever ranks: the dot product of query and document embeddings."""
    from argus_ir.eval import embed_texts

    def score(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        unique_q = list(dict.fromkeys(queries))
        unique_d = list(dict.fromkeys(documents))
        qv = embed_texts(encoder, unique_q, show_progress)
        dv = embed_texts(encoder, unique_d, show_progress)
        qi = {q: i for i, q in enumerate(unique_q)}
        di = {d: i for i, d in enumerate(unique_d)}
        return np.einsum("ij,ij->i", qv[[qi[q] for q in queries]], dv[[di[d] for d in documents]])

    return score


def bm25_scorer(corpus: Sequence[str]) -> Scorer:
    """BM25 (Lucene variant, argus's SIRA index) with statistics from ``corpus``."""
    from argus_ir.sira import SiraIndex

    unique = list(dict.fromkeys(corpus))
    index = SiraIndex.build((str(i), d) for i, d in enumerate(unique))
    row = {d: i for i, d in enumerate(unique)}

    def score(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(queries))
        cache: dict[str, np.ndarray] = {}
        for k, (q, d) in enumerate(zip(queries, documents)):
            if q not in cache:
                cache[q] = index.bm25(index.analyzer.tokens(q))
            out[k] = cache[q][row[d]]
        return out

    return score


def augmented_scorer(argus: Any, scorer: Scorer) -> tuple[Scorer, Counter[str]]:
    """Score each document as its best entry after ARGUS: the original or one of its views.

    ``argus`` (an :class:`argus_ir.Argus` whose retriever is the one ``scorer`` scores with)
    augments every distinct document once; the returned counter records how many documents got
    views and how many views there were.
    """
    counts: Counter[str] = Counter()

    def score(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(documents))
        ids = {d: f"doc-{i}" for i, d in enumerate(unique)}
        entries: dict[str, list[str]] = {}
        for view in argus.augment((ids[d], d) for d in unique):
            entries.setdefault(view.source_id, []).append(view.text)
        counts["documents"] += len(unique)
        counts["documents with views"] += sum(len(v) > 1 for v in entries.values())
        counts["views"] += sum(len(v) - 1 for v in entries.values())
        flat_q: list[str] = []
        flat_d: list[str] = []
        owner: list[int] = []
        for k, (q, d) in enumerate(zip(queries, documents)):
            for text in entries.get(ids[d], [d]):
                flat_q.append(q)
                flat_d.append(text)
                owner.append(k)
        flat = scorer(flat_q, flat_d)
        best = np.full(len(queries), -np.inf)
        np.maximum.at(best, np.array(owner), flat)
        return best

    return score, counts


def pair_corpus(pairs: Mapping[str, Sequence[Pair]]) -> list[str]:
    """Every document of every pair (the BM25 reference's collection)."""
    return [d for ps in pairs.values() for p in ps for d in (p.d1, p.d2)]


def score_settings(
    pairs: Mapping[str, Sequence[Pair]], scorer: Scorer, retriever: str
) -> list[BiasStat]:
    """One :class:`BiasStat` per setting with pairs."""
    out = []
    for setting, ps in pairs.items():
        if not ps:
            continue
        queries = [p.query for p in ps]
        s1 = scorer(queries, [p.d1 for p in ps])
        s2 = scorer(queries, [p.d2 for p in ps])
        out.append(paired_stat(setting, retriever, s1, s2))
    return out


# -- report --------------------------------------------------------------------------------------------


@dataclass
class BiasReport:
    """Every retriever's statistics, the pair counts and the notes of one audit.

    ``pairs_sha256`` fingerprints the built pairs (queries and both documents of every pair): two
    audits with the same fingerprint scored the same pairs, so one can take the other's statistics.
    ``pending`` names the steps not yet run (``retriever: settings``) while an audit is under way.
    """

    data: str
    stats: list[BiasStat]
    pairs: dict[str, int]
    notes: dict[str, int] = field(default_factory=dict)
    seed: int = 0
    pairs_sha256: str = ""
    pending: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "seed": self.seed,
            "pairs_sha256": self.pairs_sha256,
            "pending": self.pending,
            "pairs": self.pairs,
            "notes": self.notes,
            "stats": [
                {
                    k: (None if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in asdict(s).items()
                }
                for s in self.stats
            ],
        }


_FLOATS = ("t", "p", "mean_diff", "d_z", "d1_wins")


def load_bias_report(path: str | Path) -> BiasReport:
    """Read a ``results.json`` written by :func:`write_bias_report` (or the folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        raw = json.loads(path.read_text("utf-8"))
        stats = [
            BiasStat(
                setting=str(s["setting"]),
                retriever=str(s["retriever"]),
                n=int(s["n"]),
                **{k: math.nan if s[k] is None else float(s[k]) for k in _FLOATS},
            )
            for s in raw["stats"]
        ]
        return BiasReport(
            data=str(raw["data"]),
            stats=stats,
            pairs={str(k): int(v) for k, v in raw["pairs"].items()},
            notes={str(k): int(v) for k, v in raw.get("notes", {}).items()},
            seed=int(raw.get("seed", 0)),
            pairs_sha256=str(raw.get("pairs_sha256", "")),
            pending=[str(x) for x in raw.get("pending", [])],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArgusInputError(f"{path}: not a bias audit's results.json ({exc})") from exc


def pairs_fingerprint(pairs: Mapping[str, Sequence[Pair]]) -> str:
    """SHA-256 over every pair's setting, query and documents, in order."""
    digest = hashlib.sha256()
    for setting, ps in pairs.items():
        for p in ps:
            for part in (setting, p.query, p.d1, p.d2):
                digest.update(part.encode("utf-8"))
                digest.update(b"\0")
    return digest.hexdigest()


def _step_name(retriever: str, settings: Sequence[str]) -> str:
    return f"{retriever}: {', '.join(settings)}"


def _signed(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.2f}"


def audit_biases(
    path: str | Path,
    retrievers: Sequence[str] = ("minilm",),
    *,
    bm25: bool = True,
    n: int = 250,
    seed: int = 0,
    per_doc: int = 3,
    augment: Sequence[str] = (),
    templates: str | Path | None = None,
    show_progress: bool = False,
    previous: BiasReport | None = None,
    on_step: Callable[[BiasReport], object] | None = None,
) -> BiasReport:
    """Build the pairs from a Re-DocRED file and score every setting under each retriever.

    The work runs in steps: BM25, then each retriever's six settings, then each retriever's foil
    reruns after each remedy (the slow part: every view is embedded). ``on_step`` sees the report
    after every step, so a caller can save it as it grows; ``previous`` (an earlier, possibly
    partial, report of the same pairs) supplies the steps it already holds.

    Args:
        path: A Re-DocRED-format JSON file.
        retrievers: argus retriever names, model ids or folders.
        bm25: Add BM25 as a reference row.
        n: Pairs per setting (fewer when the data has fewer; counted in the notes).
        seed: Seed of the sample order and of the foil's filler documents.
        per_doc: Most samples taken from one document.
        augment: Remedies (``descriptor``, ``expansion``...) after which the foil test runs
            again, each document scored by its best entry (original or view).
        templates: A JSON file of relation id -> template (default: Table A.5).
        show_progress: Progress bars while embedding.
        previous: Statistics to reuse; its pairs must be these pairs (same fingerprint).
        on_step: Called with the report so far after each step.

    Raises:
        ArgusInputError: ``previous`` was made from other pairs (data, seed, n, per_doc or
            templates differ).
    """
    from argus_ir.encoder import load_encoder

    docs, notes = load_redocred(path)
    pairs, more = build_pairs(
        docs, n=n, seed=seed, templates=load_templates(templates), per_doc=per_doc
    )
    notes.update(more)
    report = BiasReport(
        str(path),
        [],
        {k: len(v) for k, v in pairs.items()},
        dict(notes),
        seed,
        pairs_fingerprint(pairs),
    )
    if previous is not None and not previous.pairs_sha256:
        raise ArgusInputError(
            f"the earlier report ({previous.data}) has no pairs fingerprint (an older argus wrote "
            "it), so its steps cannot be checked; write to a new folder or leave it out"
        )
    if previous is not None and previous.pairs_sha256 != report.pairs_sha256:
        raise ArgusInputError(
            f"the earlier report ({previous.data}, seed {previous.seed}) was built from other "
            "pairs than this audit's (data, seed, --n, --per-doc or templates differ); "
            "write to a new folder or leave out the earlier report"
        )
    done = {(s.retriever, s.setting): s for s in (previous.stats if previous else [])}

    def step(retriever: str, settings: Sequence[str], run: Callable[[], list[BiasStat]]) -> None:
        report.pending.remove(_step_name(retriever, settings))
        if all((retriever, s) in done for s in settings):
            report.stats += [done[retriever, s] for s in settings]
            if previous is not None:
                for key, count in previous.notes.items():
                    if any(key.startswith(f"{s} under {retriever}: ") for s in settings):
                        report.notes[key] = count
        else:
            report.stats += run()
        if on_step is not None:
            on_step(report)

    encoders: dict[str, Scorer] = {}

    def scorer(name: str) -> Scorer:
        if name not in encoders:
            encoders[name] = dense_scorer(load_encoder(name), show_progress)
        return encoders[name]

    main = [s for s in SETTINGS if pairs.get(s)]
    remedies = list(augment) if pairs.get("foil") else []  # the reruns need foil pairs
    report.pending = [_step_name("bm25", main)] if bm25 else []
    report.pending += [_step_name(name, main) for name in retrievers]
    report.pending += [_step_name(n, [f"foil+{r}"]) for n in retrievers for r in remedies]
    if bm25:
        step("bm25", main, lambda: score_settings(pairs, bm25_scorer(pair_corpus(pairs)), "bm25"))
    for name in retrievers:

        def settings(name: str = name) -> list[BiasStat]:
            return score_settings(pairs, scorer(name), name)

        step(name, main, settings)
    for name in retrievers:
        for remedy in remedies:

            def rerun(name: str = name, remedy: str = remedy) -> list[BiasStat]:
                from argus_ir.pipeline import Argus

                argus = Argus(retriever=name, remedy=remedy)
                boosted, counts = augmented_scorer(argus, scorer(name))
                stats = score_settings({"foil": pairs["foil"]}, boosted, name)
                for what, count in counts.items():
                    report.notes[f"foil+{remedy} under {name}: {what}"] = count
                return [replace(stat, setting=f"foil+{remedy}") for stat in stats]

            step(name, [f"foil+{remedy}"], rerun)
    return report


def write_bias_report(report: BiasReport, out: str | Path) -> Path:
    """Write ``results.json``, ``README.md`` and the chart ``bias.png`` into folder ``out``."""
    from argus_ir import plots
    from argus_ir.io import atomic_path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "results.json") as tmp:
        tmp.write_text(json.dumps(report.to_dict(), indent=2) + "\n", "utf-8")
    rows = [(s.setting, s.retriever, s.t, s.n) for s in report.stats]
    plots.bias_chart(rows, folder / "bias.png")
    with atomic_path(folder / "README.md") as tmp:
        tmp.write_text(bias_markdown(report, "bias.png"), "utf-8")
    return folder


def bias_markdown(report: BiasReport, chart: str | None = None) -> str:
    """The report: one row per setting and retriever, the chart, what each sign means, notes."""
    lines = [
        "# Retriever bias audit (ColDeR)",
        "",
        f"Data: {report.data}; seed {report.seed}. Each setting compares two documents per query "
        "that differ in one factor; `t` is the paired t statistic of score(D1) − score(D2) "
        "(scipy's `ttest_rel`), `d_z` the mean difference over its standard deviation, "
        "`D1 wins` the share of pairs scoring D1 higher (in `foil`, the accuracy).",
        "",
        "| setting | D1 over D2 | retriever | pairs | t | p | d_z | D1 wins |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for setting in dict.fromkeys(s.setting for s in report.stats):
        for s in (s for s in report.stats if s.setting == setting):
            lines.append(
                f"| {setting} | {D1_MEANS[setting.split('+')[0]]} | {s.retriever} | {s.n} | "
                f"{_signed(s.t)} | {s.p:.2g} | {_signed(s.d_z)} | {s.d1_wins:.1%} |"
            )
    if report.pending:
        lines += ["", "Not measured yet (the audit was stopped or is still running):", ""]
        lines += [f"- {step}" for step in report.pending]
    if chart:
        lines += ["", f"![t statistic per setting and retriever]({chart})"]
    if report.notes:
        lines += ["", "Samples and pairs (counts):", ""]
        lines += [f"- {count} {reason}" for reason, count in report.notes.items()]
    return "\n".join(lines) + "\n"
