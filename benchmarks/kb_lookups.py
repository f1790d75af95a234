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
    """Draw up to ``per_set`` flagged mentions per set, keeping the rows already sampled.

    The rows on file stay first and unchanged (their labels stay valid); new mentions come from
    a larger seeded draw of documents, skipping mentions already on file.
    """
    sys.path.insert(0, str(HERE))
    from remedy_design import _load

    from argus_ir import Argus
    from argus_ir.kb import ask, match_titles, shipped_kb

    argus = Argus()
    kbs = {name: shipped_kb(name) for name in KBS}
    by_name = {name: match_titles(kb, "title") for name, kb in kbs.items()}
    old = (
        [json.loads(line) for line in LOOKUPS.read_text("utf-8").splitlines()]
        if LOOKUPS.is_file()
        else []
    )
    rows = []
    for name in ("entity-lists", "msmarco5k", "scifact"):
        kept = [r for r in old if r["set"] == name][:per_set]
        rows += kept
        seen = {(r["doc"], r["surface"]) for r in kept}
        if len(kept) >= per_set:
            continue
        data = _load(name, shared, work)
        docs = list(data.corpus)
        random.Random(seed).shuffle(docs)
        found: list[tuple[str, object, str]] = []
        for diagnosis, doc in zip(argus.diagnose(docs[: per_set * 3]), docs[: per_set * 3]):
            found += [(doc.id, risk, doc.index_text) for risk in diagnosis.flagged]
        random.Random(seed).shuffle(found)
        found = [f for f in found if (f[0], f[1].surface) not in seen]
        for doc_id, risk, text in found[: per_set - len(kept)]:
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
        added = min(per_set - len(kept), len(found))
        print(f"{name}: {len(kept)} on file, {added} added of {len(found)} new", flush=True)
    LOOKUPS.parent.mkdir(parents=True, exist_ok=True)
    with open(LOOKUPS, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {LOOKUPS}")


def answer_key(row: dict, answer: dict) -> str:
    """The label key of one answer: the same passage for the same mention labels once."""
    raw = json.dumps([row["set"], row["doc"], row["surface"], answer["id"]], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of a proportion k / n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return centre - half, centre + half


def _score() -> None:
    rows = [json.loads(line) for line in LOOKUPS.read_text("utf-8").splitlines()]
    labels = {}
    if LABELS.is_file():
        for line in LABELS.read_text("utf-8").splitlines():
            rec = json.loads(line)
            labels[rec["key"]] = bool(rec["same"])
    print(
        "| set | KB | mentions | hit rate | precision of hits (labelled) [95% CI] "
        "| right passage, share of mentions | by name: share, precision |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in ("entity-lists", "msmarco5k", "scifact"):
        part = [r for r in rows if r["set"] == name]
        for kb in KBS:
            answered = [(r, r["answers"][kb]) for r in part if kb in r["answers"]]
            judged = [labels[answer_key(r, a)] for r, a in answered if answer_key(r, a) in labels]
            titled = [(r, a) for r, a in answered if a["by_title"]]
            t_judged = [labels[answer_key(r, a)] for r, a in titled if answer_key(r, a) in labels]
            if judged:
                low, high = _wilson(sum(judged), len(judged))
                prec = f"{sum(judged) / len(judged):.0%} ({len(judged)}) [{low:.0%}–{high:.0%}]"
            else:
                prec = "-"
            t_prec = f"{sum(t_judged) / len(t_judged):.0%}" if t_judged else "-"
            share = f"{len(titled) / len(part):.0%}" if part else "-"
            right = f"{sum(judged) / len(part):.1%}" if part else "-"
            print(
                f"| {name} | {kb} | {len(part)} | {len(answered) / max(1, len(part)):.0%} "
                f"| {prec} | {right} | {share}, {t_prec} |"
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
