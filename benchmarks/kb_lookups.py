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
    _write_rows(LOOKUPS, rows)
    print(f"wrote {LOOKUPS}")


TYPED = HERE / "labels" / "kb-lookups-types.jsonl"
TYPED_LABELS = HERE / "labels" / "kb-lookups-types-labels.jsonl"
TYPED_SETS = ("entity-lists", "msmarco5k", "scifact", "implicit-places")
MENTION_TYPES = ("given-name", "acronym", "venue", "institution")
MATCHES = ("bm25", "checked")


def mention_type(surface: str, label: str) -> str | None:
    """The mention types that fail most often: a single given name (or one word tagged
    ``PERSON``), an acronym, an institution (a name with a university, school, hospital, bank...
    word) and a venue (a building, site, route or event word, or spaCy's ``FAC``)."""
    from argus_ir.kb.forms import is_acronym, namesake_prone
    from argus_ir.kb.places import INSTITUTION_WORDS, VENUE_WORDS

    words = {w.strip(".,;:'’()").casefold() for w in surface.split()}
    if namesake_prone(surface, label):
        return "given-name"
    if is_acronym(surface) and " " not in surface.strip():
        return "acronym"
    if len(words) > 1 and words & INSTITUTION_WORDS:
        return "institution"
    if len(words) > 1 and (words & VENUE_WORDS or label == "FAC"):
        return "venue"
    return None


def _answer(kb, surface: str, label: str, text: str) -> dict | None:
    from argus_ir.kb import ask
    from argus_ir.kb.composite import match_kind

    hits = ask(kb, surface, 2, label=label, context=text)
    if not hits:
        return None
    p = hits[0][0]
    return {
        "id": p.id,
        "title": p.title,
        "description": p.description,
        "text": p.text[:200],
        "match": match_kind(kb, surface, p),
    }


def _sample_types(shared: Path, work: Path, per_type: int, seed: int) -> None:
    """Draw ``per_type`` mentions of each :data:`MENTION_TYPES` type, spread over
    :data:`TYPED_SETS` (every mention spaCy finds, flagged or not: this measures the answers),
    and record what the shipped KB answers under each of :data:`MATCHES`."""
    sys.path.insert(0, str(HERE))
    from remedy_design import _load

    from argus_ir.kb import match_titles, shipped_kb
    from argus_ir.text.mentions import SpacyMentions

    kb = shipped_kb()
    kbs = {m: match_titles(kb, m) for m in MATCHES}
    spacy = SpacyMentions()
    # per set and type: a set short of a type (no acronym in the place posts) leaves room
    quota = -(-per_type // (len(TYPED_SETS) - 1))
    rows = []
    for name in TYPED_SETS:
        docs = list(_load(name, shared, work).corpus)
        random.Random(f"{seed}:{name}").shuffle(docs)
        taken = dict.fromkeys(MENTION_TYPES, 0)
        seen: set[str] = set()
        for start in range(0, len(docs), 200):
            batch = docs[start : start + 200]
            texts = [d.index_text for d in batch]
            for doc, text, mentions in zip(batch, texts, spacy.extract(texts)):
                for m in mentions:
                    kind = mention_type(m.text, m.label)
                    if kind is None or taken[kind] >= quota or m.text.casefold() in seen:
                        continue
                    seen.add(m.text.casefold())
                    taken[kind] += 1
                    rows.append(
                        {
                            "set": name,
                            "doc": doc.id,
                            "type": kind,
                            "surface": m.text,
                            "label": m.label,
                            "context": text[max(0, m.start - 200) : m.end + 200],
                            "answers": {
                                match: a
                                for match, k in kbs.items()
                                if (a := _answer(k, m.text, m.label, text)) is not None
                            },
                        }
                    )
            if all(n >= quota for n in taken.values()):
                break
        print(f"{name}: {taken}", flush=True)
    _write_rows(TYPED, rows)
    print(f"wrote {len(rows)} mentions to {TYPED}")


CHECKED = "wikipedia+places checked"
"""The answers of today's default (the shipped KB with ``kb_match="checked"``), asked with the
mention's stored context (300 characters around it, not the whole document)."""


def _add_checked() -> None:
    """Ask the default about every sampled mention and store its answer under :data:`CHECKED`."""
    from argus_ir.kb import match_titles, shipped_kb

    kb = match_titles(shipped_kb("wikipedia+places"), "checked")
    rows = _rows(LOOKUPS)
    for row in rows:
        answer = _answer(kb, row["surface"], row["label"], row["context"])
        row["answers"].pop(CHECKED, None)
        if answer is not None:
            row["answers"][CHECKED] = answer
    _write_rows(LOOKUPS, rows)
    print(f"{sum(CHECKED in r['answers'] for r in rows)} of {len(rows)} answered by {CHECKED}")


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


def _recheck_types() -> None:
    """Ask today's checked matching again about every typed mention (with its stored context:
    400 characters around it) and replace the ``checked`` answers; the ``bm25`` answers, the
    "before", stay as sampled."""
    from argus_ir.kb import match_titles, shipped_kb

    kb = match_titles(shipped_kb(), "checked")
    rows = _rows(TYPED)
    for row in rows:
        answer = _answer(kb, row["surface"], row["label"], row["context"])
        row["answers"].pop("checked", None)
        if answer is not None:
            row["answers"]["checked"] = answer
    _write_rows(TYPED, rows)


def _rows(path: Path) -> list[dict]:
    """JSON lines (split on newlines only: a text may hold U+2028, which splitlines() splits)."""
    return [json.loads(line) for line in path.read_text("utf-8").split("\n") if line.strip()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    """Write rows as JSON lines (creating the folder), the form :func:`_rows` reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _labels(path: Path) -> dict[str, bool]:
    """``key -> same`` of a labels file (empty when there is none yet)."""
    return {r["key"]: bool(r["same"]) for r in _rows(path)} if path.is_file() else {}


def _score_types() -> None:
    """Per mention type and match: mentions, share described, precision of what is described
    (hand labels, Wilson 95%), share described rightly; and per match kind of the answers."""
    rows = _rows(TYPED)
    labels = _labels(TYPED_LABELS)
    print(
        "| type | match | mentions | described | precision [95% CI] | described rightly "
        "| wrong answers by match kind |"
    )
    print("|---|---|---|---|---|---|---|")
    for kind in MENTION_TYPES:
        part = [r for r in rows if r["type"] == kind]
        for match in MATCHES:
            answered = [(r, r["answers"][match]) for r in part if match in r["answers"]]
            judged = [
                (a, labels[answer_key(r, a)]) for r, a in answered if answer_key(r, a) in labels
            ]
            right = sum(same for _, same in judged)
            low, high = _wilson(right, len(judged))
            wrong: dict[str, int] = {}
            for a, same in judged:
                if not same:
                    wrong[a["match"]] = wrong.get(a["match"], 0) + 1
            prec = (
                f"{right / len(judged):.1%} ({right}/{len(judged)}) [{low:.1%}–{high:.1%}]"
                if judged
                else "-"
            )
            unjudged = len(answered) - len(judged)
            print(
                f"| {kind} | {match} | {len(part)} | {len(answered) / len(part):.1%} | {prec}"
                f"{f' ({unjudged} unlabelled)' if unjudged else ''} | {right / len(part):.1%} "
                f"| {', '.join(f'{k} {n}' for k, n in sorted(wrong.items())) or '-'} |"
            )


def _score() -> None:
    rows = _rows(LOOKUPS)
    labels = _labels(LABELS)
    print(
        "| set | KB | mentions | hit rate | precision of hits (labelled) [95% CI] "
        "| right passage, share of mentions | by name: share, precision |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in ("entity-lists", "msmarco5k", "scifact"):
        part = [r for r in rows if r["set"] == name]
        for kb in (*KBS, CHECKED):
            answered = [(r, r["answers"][kb]) for r in part if kb in r["answers"]]
            judged = [labels[answer_key(r, a)] for r, a in answered if answer_key(r, a) in labels]
            titled = [(r, a) for r, a in answered if a.get("by_title", a.get("match") == "title")]
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
    parser.add_argument("--score-types", action="store_true", help="score the typed sample")
    parser.add_argument(
        "--recheck-types", action="store_true", help="ask the checked matching again, then score"
    )
    parser.add_argument("--add-checked", action="store_true", help=f"add the {CHECKED!r} answers")
    parser.add_argument(
        "--sample-types",
        type=int,
        default=None,
        metavar="N",
        help="draw N mentions of each hard type (given names, acronyms, venues, institutions)",
    )
    args = parser.parse_args()
    if args.recheck_types:
        _recheck_types()
    if args.score_types or args.recheck_types:
        _score_types()
        return
    if args.sample_types:
        if args.shared_data is None:
            parser.error("--sample-types needs --shared-data")
        _sample_types(args.shared_data, args.work, args.sample_types, args.seed)
        return
    if args.add_checked:
        _add_checked()
    if args.sample:
        if args.shared_data is None:
            parser.error("--sample needs --shared-data")
        _sample(args.shared_data, args.work, args.per_set, args.seed)
    if args.score or not args.sample:
        _score()


if __name__ == "__main__":
    main()
