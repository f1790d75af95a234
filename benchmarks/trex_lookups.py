"""Lookup precision on natural names with ground truth: T-REx subjects and where they are.

Each T-REx fact of a place relation (``P17`` country, ``P131`` located in, ``P159``
headquarters, ``P276`` location, ``P740`` formation place) gives a real name and its place from
Wikidata. The subject is written into a short sentence that does not name the object (``--template``,
default "We met at {subject} last spring."), tagged by the shipped spaCy model, and the KB is asked
about it the way the descriptor remedy asks about a flagged mention: ``argus_ir.kb.ask`` with the
label spaCy gives the span (none when it tags nothing there) and the sentence as context. Every
subject counts as flagged: the probe is not asked, so this measures the answers, not which mentions
get asked.

Per fact it records whether a description would be inserted, the description itself (what
``descriptor_text`` writes after the mention), the passage, and how the passage was matched:
``"title"`` (a passage titled with the mention), ``"gazetteer"`` (a GeoNames place) or ``"bm25"``
(any other passage: a neighbour by shared words). A description is right when it, or the
passage's title, names the object (whole words, case-insensitive).

Per relation and match kind it reports the facts, the share described, the precision of what is
described (Wilson 95% interval) and the share described rightly, that share counting the
description alone (the title is not written into a view), and the same for the subjects whose name
holds the object ("canton of Bolivia"); the JSON is rewritten after each relation.

``python benchmarks/trex_lookups.py --shared-data ../shared/data`` (every ``P17`` fact and a seeded
300 of each other relation); ``--kb`` and ``--kb-match`` pick another KB or matching.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
RESULTS = HERE / "results"
RELATIONS = {
    "P17": "country",
    "P131": "located in",
    "P159": "headquarters",
    "P276": "location",
    "P740": "formation place",
}
TEMPLATE = "We met at {subject} last spring."
MATCH_KINDS = ("title", "alias", "gazetteer", "place-in-name", "checked-bm25", "bm25", "llm")


def _facts(shared: Path, relation: str, limit: int | None, seed: int) -> list[dict[str, str]]:
    """The relation's facts in file order: all of them, or a seeded ``limit`` of them."""
    path = shared / "kg" / "trex" / f"{relation}.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    if limit is not None and limit < len(rows):
        keep = sorted(random.Random(f"{seed}:{relation}").sample(range(len(rows)), limit))
        rows = [rows[i] for i in keep]
    return rows


def _names(text: str, place: str) -> bool:
    """Whether ``text`` names ``place`` as whole words, case-insensitive."""
    return re.search(rf"(?<!\w){re.escape(place)}(?!\w)", text, re.IGNORECASE) is not None


class _Asker:
    """The KB, the tagger and the descriptor text, as the remedy uses them."""

    def __init__(self, kb: str, kb_match: str, ner_model: str) -> None:
        from argus_ir.kb import match_titles
        from argus_ir.kb.shipped import resolve_kb
        from argus_ir.text.mentions import SpacyMentions

        self.kb = match_titles(resolve_kb(kb), kb_match)
        self.mentions = SpacyMentions(ner_model)
        self.gazetteer: Any = None

    def country_of(self, name: str) -> str | None:
        """The country a place name is in (its most populous sense in GeoNames; a country is
        its own), or ``None`` when GeoNames has no such name."""
        from argus_ir.kb.places import Gazetteer
        from argus_ir.text.grounding import normalize

        if self.gazetteer is None:
            self.gazetteer = Gazetteer()
        places = self.gazetteer._load().get(normalize(name))
        if not places:
            return None
        best = max(places, key=lambda p: (p.kind != "city", p.population))
        country = self.gazetteer._countries.get(best.country, {}).get("name")
        return str(country) if country else None

    def tag(self, sentences: list[str], spans: list[tuple[int, int]]) -> list[Any]:
        """Per sentence, the mention spaCy finds over the subject (most overlap), or ``None``."""
        out = []
        for found, (start, end) in zip(self.mentions.extract(sentences), spans):
            over = [m for m in found if m.start < end and m.end > start]
            out.append(max(over, key=lambda m: min(m.end, end) - max(m.start, start), default=None))
        return out

    def describe(self, sentence: str, start: int, subject: str, mention: Any) -> dict[str, Any]:
        """What a descriptor view would insert after the subject, and how its passage was found."""
        from argus_ir.diagnose import EntityRisk
        from argus_ir.kb import DEFAULT_K_AUG, ask
        from argus_ir.kb.composite import match_kind
        from argus_ir.remedy.texts import descriptor_text
        from argus_ir.text.mentions import Mention

        label = None if mention is None else mention.label
        # asked as the remedy asks (k_aug passages); a descriptor view inserts the first
        hits = ask(self.kb, subject, DEFAULT_K_AUG, label=label, context=sentence)
        if not hits:
            return {"described": False}
        passage = hits[0][0]
        end = start + len(subject)
        risk = EntityRisk(subject, label or "", 0.0, True, (Mention(start, end, subject, ""),))
        view = descriptor_text(sentence, [(risk, passage)])
        # the view is the sentence with " (description)" after the subject
        inserted = view[end : end + len(view) - len(sentence)]
        source_of = getattr(self.kb, "source_of", None)
        source = source_of(passage.id) if source_of is not None else None
        return {
            "described": bool(inserted),
            "description": inserted[2:-1] if inserted else "",
            "passage_id": passage.id,
            "passage_title": passage.title,
            "source": source,
            "match": match_kind(self.kb, subject, passage),
        }


LABELS = HERE / "labels" / "trex-labels.jsonl"
"""Hand labels of answers the place check cannot judge: a passage known by the subject's own name
("Nintendo: Japanese video game company" names no place, and is right). One line per answer:
``{"uuid", "relation", "subject", "passage_id", "same"}``, ``same`` saying whether the passage is
about the subject."""


def _labels() -> dict[tuple[str, str], bool]:
    if not LABELS.is_file():
        return {}
    out = {}
    for line in LABELS.read_text("utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[(rec["uuid"], rec["passage_id"])] = bool(rec["same"])
    return out


def _score_row(row: dict[str, Any], labels: dict[tuple[str, str], bool] | None = None) -> None:
    """Mark a described fact right when its description or passage title names the object or
    the object's country (``object_country``: "Cardiff" is in the United Kingdom), or, where the
    answer is hand-labelled (:data:`LABELS`), when the label says it is about the subject."""
    row["name_holds_object"] = _names(row["subject"], row["object"])
    if not row["described"]:
        row["right"], row["right_in"] = False, None
        return
    obj = row["object"]
    country = row.get("object_country")
    row["right_country"] = bool(country) and (
        _names(row["description"], country) or _names(row["passage_title"], country)
    )
    row["right_place"] = _names(row["description"], obj) or _names(row["passage_title"], obj)
    in_description = _names(row["description"], obj) or (
        bool(country) and _names(row["description"], country)
    )
    row["right"] = row["right_place"] or row["right_country"]
    row["right_in"] = "description" if in_description else "title" if row["right"] else None
    label = (labels or {}).get((row["uuid"], row["passage_id"]))
    row["judged_by"] = "place" if label is None else "hand label"
    if label is not None:  # about the subject: the whole description is right (or wrong)
        row["right"] = label
        row["right_in"] = "description" if label else None


def _summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Facts, share described, precision [Wilson 95%] and share described rightly: all and per
    match kind (a kind's shares are of all facts, so the kinds add up to the whole)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from kb_lookups import _wilson

    out = {}
    for kind in ("all", *MATCH_KINDS):
        part = [r for r in rows if r["described"] and kind in ("all", r["match"])]
        right = sum(r["right"] for r in part)
        low, high = _wilson(right, len(part))
        out[kind] = {
            "facts": len(rows),
            "described": len(part),
            "right": right,
            # what the view itself says: the title is not inserted, only the description
            "right_by_description": sum(r["right_in"] == "description" for r in part),
            "share_described": len(part) / len(rows) if rows else 0.0,
            "precision": right / len(part) if part else None,
            "precision_ci95": [low, high] if part else None,
            "share_described_rightly": right / len(rows) if rows else 0.0,
        }
    return out


def _by_label(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The summary per NER label spaCy gave the subject ("none": it tagged nothing there)."""
    labels = sorted({r["ner_label"] or "none" for r in rows})
    return {
        label: _summary([r for r in rows if (r["ner_label"] or "none") == label])["all"]
        for label in labels
    }


def _run_relation(asker: _Asker, facts: list[dict[str, str]], template: str) -> list[dict]:
    sentences, spans = [], []
    for fact in facts:
        start = template.index("{subject}")
        sentences.append(template.format(subject=fact["sub_label"]))
        spans.append((start, start + len(fact["sub_label"])))
    tags = asker.tag(sentences, spans)
    labels = _labels()
    rows = []
    for fact, sentence, (start, _), mention in zip(facts, sentences, spans, tags):
        row = {
            "uuid": fact["uuid"],
            "subject": fact["sub_label"],
            "object": fact["obj_label"],
            "ner_label": None if mention is None else mention.label,
            "ner_span": None if mention is None else mention.text,
            "object_country": asker.country_of(fact["obj_label"]),
        }
        row.update(asker.describe(sentence, start, fact["sub_label"], mention))
        _score_row(row, labels)
        rows.append(row)
    return rows


def _write(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def table(report: dict[str, Any]) -> str:
    """The report's markdown table: per relation (and over all), per match kind."""
    lines = [
        "| relation | match | facts | described | precision [95% CI] | described rightly "
        "| rightly, by the description alone |",
        "|---|---|---|---|---|---|---|",
    ]
    parts = []
    for relation, value in report["relations"].items():
        parts.append((f"{relation} {value['name']}", value["summary"], MATCH_KINDS))
        parts.append((f"{relation}, subject names the object", value["name_holds_object"], ()))
    if len(report["relations"]) > 1:
        parts.append(("all", report["summary"], MATCH_KINDS))
    for name, summary, kinds in parts:
        for kind in ("all", *kinds):
            s = summary[kind]
            prec = "-"
            if s["precision"] is not None:
                low, high = s["precision_ci95"]
                prec = (
                    f"{s['precision']:.1%} ({s['right']}/{s['described']}) [{low:.1%}–{high:.1%}]"
                )
            alone = s["right_by_description"] / s["facts"] if s["facts"] else None
            lines.append(
                f"| {name} | {kind} | {s['facts']} | {_pct(s['share_described'])} | {prec} "
                f"| {_pct(s['share_described_rightly'])} | {_pct(alone)} |"
            )
    return "\n".join(lines)


def _kb_name(kb: str) -> str:
    return re.sub(r"[^\w.+-]+", "-", Path(kb).name if os.sep in kb else kb).strip("-")


def main() -> None:
    from argus_ir.kb import DEFAULT_KB
    from argus_ir.settings import argus_settings
    from argus_ir.text.mentions import DEFAULT_SPACY_MODEL

    defaults = argus_settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shared-data",
        type=Path,
        default=Path(os.environ.get("ARGUS_SHARED_DATA", HERE.parent.parent / "shared" / "data")),
    )
    parser.add_argument("--kb", default=defaults["kb"] or DEFAULT_KB, help="shipped name or path")
    parser.add_argument("--kb-match", default=defaults["kb_match"])
    parser.add_argument("--ner-model", default=defaults["ner_model"] or DEFAULT_SPACY_MODEL)
    parser.add_argument("--relations", nargs="+", default=list(RELATIONS), choices=list(RELATIONS))
    parser.add_argument("--limit", type=int, default=300, help="facts per relation (seeded)")
    parser.add_argument(
        "--whole",
        nargs="*",
        default=["P17"],
        help="relations taken whole, whatever --limit says (default: P17)",
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--template", default=TEMPLATE)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if "{subject}" not in args.template:
        parser.error(f"--template must hold {{subject}}, got {args.template!r}")
    out = args.out or RESULTS / f"trex-lookups-{_kb_name(args.kb)}-{args.kb_match}.json"

    asker = _Asker(args.kb, args.kb_match, args.ner_model)
    report: dict[str, Any] = {
        "kb": args.kb,
        "kb_match": args.kb_match,
        "kb_fingerprint": asker.kb.fingerprint,
        "ner_model": args.ner_model,
        "template": args.template,
        "seed": args.seed,
        "limit": args.limit,
        "whole": args.whole,
        "complete": False,
        "relations": {},
    }
    every: list[dict[str, Any]] = []
    for relation in args.relations:
        began = time.perf_counter()
        limit = None if relation in args.whole else args.limit
        facts = _facts(args.shared_data, relation, limit, args.seed)
        rows = _run_relation(asker, facts, args.template)
        every += rows
        report["relations"][relation] = {
            "name": RELATIONS[relation],
            "seconds": round(time.perf_counter() - began, 1),
            "summary": _summary(rows),
            "name_holds_object": _summary([r for r in rows if r["name_holds_object"]]),
            "by_ner_label": _by_label(rows),
            "rows": rows,
        }
        report["summary"] = _summary(every)
        report["name_holds_object"] = _summary([r for r in every if r["name_holds_object"]])
        report["complete"] = relation == args.relations[-1]
        _write(out, report)
        s = report["relations"][relation]["summary"]["all"]
        print(
            f"{relation}: {s['facts']} facts, {_pct(s['share_described'])} described, "
            f"precision {_pct(s['precision'])} ({time.perf_counter() - began:.0f}s)",
            flush=True,
        )
    print(f"wrote {out}\n")
    print(table(report))


if __name__ == "__main__":
    main()
