"""Lookup precision of the KBs: is the passage a flagged mention gets about the same entity?

``--sample`` draws flagged mentions (default diagnosis: shipped MiniLM probe, τ = 0.3) from a
seeded sample of each set's documents and writes, per mention, what each KB answers (the first
passage: the one a descriptor or focus view uses) to ``benchmarks/labels/kb-lookups.jsonl``. A
person labels each answer by hand in ``benchmarks/labels/kb-lookups-labels.jsonl`` (one line per
``key``: ``{"key": ..., "same": true|false}``: the passage is about the entity the document
means). ``--score`` joins the two and prints hit rate and precision per KB and set.

``python benchmarks/kb_lookups.py --shared-data ../shared/data --sample`` then ``--score``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
LOOKUPS = HERE / "labels" / "kb-lookups.jsonl"
LABELS = HERE / "labels" / "kb-lookups-labels.jsonl"
KBS = ("wikipedia", "wikipedia+places", "wikipedia+places+biomed")


def _sample(shared: Path, work: Path, per_set: int, seed: int) -> None:
    sys.path.insert(0, str(HERE))
    from remedy_design import _load

    from argus_ir import Argus
    from argus_ir.kb import ask
    from argus_ir.places import match_titles, shipped_kb

    argus = Argus()
    kbs = {name: shipped_kb(name) for name in KBS}
    by_name = {name: match_titles(kb, "title") for name, kb in kbs.items()}
    rows = []
    for name in ("entity-lists", "msmarco5k", "scifact"):
        data = _load(name, shared, work)
        docs = list(data.corpus)
        random.Random(seed).shuffle(docs)
        found: list[tuple[str, object, str]] = []
        for diagnosis, doc in zip(argus.diagnose(docs[: per_set * 3]), docs[: per_set * 3]):
            found += [(doc.id, risk, doc.index_text) for risk in diagnosis.flagged]
        random.Random(seed).shuffle(found)
        for doc_id, risk, text in found[:per_set]:
            row = {
                "set": name,
                "doc": doc_id,
                "surface": risk.surface,
                "label": risk.label,
                "context": text[max(0, risk.mentions[0].start - 150) : risk.mentions[0].end + 150],
                "answers": {},
            }
            for kb_name, kb in kbs.items():
                hits = ask(kb, risk.surface, 2, label=risk.label, context=text)
                named = ask(by_name[kb_name], risk.surface, 2, label=risk.label, context=text)
                if hits:
                    p = hits[0][0]
                    row["answers"][kb_name] = {
                        "id": p.id,
                        "title": p.title,
                        "description": p.description,
                        "text": p.text[:200],
                        # what kb_match="title" answers: the same passage, by name
                        "by_title": bool(named) and named[0][0].id == p.id,
                    }
            rows.append(row)
        print(f"{name}: {len(found)} flagged mentions, {min(per_set, len(found))} kept", flush=True)
    LOOKUPS.parent.mkdir(parents=True, exist_ok=True)
    with open(LOOKUPS, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {LOOKUPS}")


def answer_key(row: dict, answer: dict) -> str:
    """The label key of one answer: the same passage for the same mention labels once."""
    raw = json.dumps([row["set"], row["doc"], row["surface"], answer["id"]], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def _score() -> None:
    rows = [json.loads(line) for line in LOOKUPS.read_text("utf-8").splitlines()]
    labels = {}
    if LABELS.is_file():
        for line in LABELS.read_text("utf-8").splitlines():
            rec = json.loads(line)
            labels[rec["key"]] = bool(rec["same"])
    print(
        "| set | KB | mentions | hit rate | precision of hits (labelled) | by name: share, precision |"
    )
    print("|---|---|---|---|---|---|")
    for name in ("entity-lists", "msmarco5k", "scifact"):
        part = [r for r in rows if r["set"] == name]
        for kb in KBS:
            answered = [(r, r["answers"][kb]) for r in part if kb in r["answers"]]
            judged = [labels[answer_key(r, a)] for r, a in answered if answer_key(r, a) in labels]
            titled = [(r, a) for r, a in answered if a["by_title"]]
            t_judged = [labels[answer_key(r, a)] for r, a in titled if answer_key(r, a) in labels]
            prec = f"{sum(judged) / len(judged):.0%} ({len(judged)})" if judged else "-"
            t_prec = f"{sum(t_judged) / len(t_judged):.0%}" if t_judged else "-"
            share = f"{len(titled) / len(part):.0%}" if part else "-"
            print(
                f"| {name} | {kb} | {len(part)} | {len(answered) / max(1, len(part)):.0%} "
                f"| {prec} | {share}, {t_prec} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=Path("runs"))
    parser.add_argument("--per-set", type=int, default=60)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--score", action="store_true")
    args = parser.parse_args()
    if args.sample:
        if args.shared_data is None:
            parser.error("--sample needs --shared-data")
        _sample(args.shared_data, args.work, args.per_set, args.seed)
    if args.score or not args.sample:
        _score()


if __name__ == "__main__":
    main()
