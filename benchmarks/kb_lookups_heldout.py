"""Held-out lookups: the default's descriptions on mentions the matching rules were not read on.

The rules of ``kb_match="checked"`` were designed by reading the failures in the labelled
lookups of ``benchmarks/kb_lookups.py`` (the 600 flagged mentions and the 535 typed ones), so
their precision there is a design figure. This draws new mentions from the same sets, none of
whose surface forms are in those samples, asks the default KB about each (with the whole
document as context, as ``augment`` does) and keeps every mention, described or not:

- ``flagged``: mentions the default diagnosis flags (shipped MiniLM probe), per set of
  entity-lists, msmarco5k and SciFact, until ``--described`` of them are described or the set's
  documents run out;
- ``flagged-test``: the same, from another seeded draw: the rules were revised by reading the
  failures of ``flagged`` (so ``flagged`` is a design sample too, and ``flagged-test`` and
  ``typed`` are the test);
- ``flagged-test-3``: a third draw, made after the rules' third round (case, the United
  Kingdom's countries, a state named like a great city, hills and common words in names) was
  frozen, which read the failures of ``flagged-test``; ``flagged-test-4``, a fourth, after the
  fourth round (cited authors and abbreviations, people's names, regions' other names), which
  read those of ``flagged-test-3``; ``flagged-test-5``, a fifth, after the fifth and sixth
  rounds (the state a text names picks the town, namesakes within one country, a city's other
  name; a one-word town of any size ends its phrase), which read those of ``flagged-test-4``;
  ``flagged-test-6``, a sixth, after the seventh round (a venue word after the mention, a
  national institution's adjective), which read the dev countries of the venue retrieval set
  (``venue_posts.py``); ``flagged-test-7``, a seventh, after the eighth round (works, laws,
  events and glued spans hold no place; a leading name's first words), which read those of
  ``flagged-test-6``;
- ``typed``: mentions spaCy finds of the four hard forms (single given names, acronyms,
  venues, institutions; :func:`kb_lookups.mention_type`) over the four sets, until
  ``--described`` of each type are described, no set giving more than half of them (the
  implicit-places posts give none: their few towns are all in the design sample);
  ``typed-2``, a second draw of venues and institutions alone, after the seventh round.

Only the described ones need a label: a person reads each in its context and writes
``{"key": ..., "same": true|false, "why": ...}`` to
``benchmarks/labels/kb-lookups-heldout-labels.jsonl`` (same: the description is about the
entity the document means; a place's description names where it is). ``--score`` prints share
described, precision (Wilson 95%) and share described rightly per set, type and match kind.

``python benchmarks/kb_lookups_heldout.py --shared-data ../shared/data --sample`` then
``--score``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from kb_lookups import (  # noqa: E402
    LOOKUPS,
    MENTION_TYPES,
    TYPED,
    TYPED_SETS,
    _answer,
    _labels,
    _rows,
    _wilson,
    _write_rows,
    answer_key,
    mention_type,
)

HELDOUT = HERE / "labels" / "kb-lookups-heldout.jsonl"
HELDOUT_LABELS = HERE / "labels" / "kb-lookups-heldout-labels.jsonl"
FLAGGED_SETS = ("entity-lists", "msmarco5k", "scifact")
SEED = "heldout-2026-11-27"
FLAGGED_PARTS = (
    "flagged",
    "flagged-test",
    "flagged-test-3",
    "flagged-test-4",
    "flagged-test-5",
    "flagged-test-6",
    "flagged-test-7",
)
TYPED_PARTS = {"typed": MENTION_TYPES, "typed-2": ("venue", "institution")}
"""Draws of the hard forms: the first of all four, the second of venues and institutions alone."""


def _seen() -> set[tuple[str, str]]:
    """(set, folded surface) of every mention in the design samples: none is drawn again."""
    return {(r["set"], r["surface"].casefold()) for r in _rows(LOOKUPS) + _rows(TYPED)}


def _row(part: str, name: str, doc_id: str, kind: str | None, m, text: str, kb) -> dict:
    return {
        "part": part,
        "set": name,
        "doc": doc_id,
        "type": kind,
        "surface": m.text,
        "label": m.label,
        "context": text[max(0, m.start - 200) : m.end + 200],
        "answer": _answer(kb, m.text, m.label, text),
    }


def _sample(shared: Path, work: Path, described: int, max_docs: int, parts: set[str]) -> None:
    """Draw the ``parts`` (``flagged``, ``typed``) anew; rows of the other part stay as on file."""
    from remedy_design import _load

    from argus_ir import Argus
    from argus_ir.kb import match_titles, shipped_kb
    from argus_ir.text.mentions import Mention, SpacyMentions

    kb = match_titles(shipped_kb(), "checked")
    kept = [r for r in (_rows(HELDOUT) if HELDOUT.is_file() else []) if r["part"] not in parts]
    seen = _seen() | {(r["set"], r["surface"].casefold()) for r in kept}
    rows: list[dict] = []
    for part in FLAGGED_PARTS:
        if part not in parts:
            continue
        argus = Argus()
        for name in FLAGGED_SETS:
            docs = list(_load(name, shared, work).corpus)
            random.Random(f"{SEED}:{part}:{name}".replace(":flagged:", ":")).shuffle(docs)
            hits = 0
            for start in range(0, min(len(docs), max_docs), 100):
                batch = docs[start : start + 100]
                for doc, diagnosis in zip(batch, argus.diagnose(batch)):
                    for risk in diagnosis.flagged:
                        key = (name, risk.surface.casefold())
                        if key in seen or hits >= described:
                            continue
                        seen.add(key)
                        first = risk.mentions[0]
                        m = Mention(first.start, first.end, risk.surface, risk.label)
                        row = _row(part, name, doc.id, None, m, doc.index_text, kb)
                        hits += row["answer"] is not None
                        rows.append(row)
                if hits >= described:
                    break
            print(f"{part} {name}: {hits} described", flush=True)
    for typed, types in TYPED_PARTS.items():
        if typed not in parts:
            continue
        spacy = SpacyMentions()
        taken = dict.fromkeys(types, 0)
        cap = -(-described // 2)  # no set gives more than half of a type's answers
        for name in TYPED_SETS:
            per_set = dict.fromkeys(types, 0)
            docs = list(_load(name, shared, work).corpus)
            random.Random(f"{SEED}:{typed}:{name}").shuffle(docs)
            for start in range(0, min(len(docs), max_docs), 200):
                batch = docs[start : start + 200]
                texts = [d.index_text for d in batch]
                for doc, text, mentions in zip(batch, texts, spacy.extract(texts)):
                    for m in mentions:
                        kind = mention_type(m.text, m.label)
                        key = (name, m.text.casefold())
                        if kind not in types or key in seen:
                            continue
                        if per_set[kind] >= cap or taken[kind] + per_set[kind] >= described:
                            continue
                        seen.add(key)
                        row = _row(typed, name, doc.id, kind, m, text, kb)
                        per_set[kind] += row["answer"] is not None
                        rows.append(row)
                full = (min(cap, described - taken[k]) <= per_set[k] for k in types)
                if all(full):
                    break
            for kind, n in per_set.items():
                taken[kind] += n
            print(f"{typed} {name}: {per_set}", flush=True)
    order = {p: i for i, p in enumerate(("flagged", "typed", *FLAGGED_PARTS[1:], "typed-2"))}
    _write_rows(HELDOUT, sorted(kept + rows, key=lambda r: order[r["part"]]))
    print(f"wrote {len(rows)} new mentions to {HELDOUT}, {len(kept)} kept")


def _recheck(shared: Path, work: Path) -> None:
    """Ask today's default again about every held-out mention, with its whole document."""
    from remedy_design import _load

    from argus_ir.kb import match_titles, shipped_kb

    kb = match_titles(shipped_kb(), "checked")
    rows = _rows(HELDOUT)
    texts: dict[tuple[str, str], str] = {}
    for name in sorted({r["set"] for r in rows}):
        wanted = {r["doc"] for r in rows if r["set"] == name}
        for doc in _load(name, shared, work).corpus:
            if doc.id in wanted:
                texts[name, doc.id] = doc.index_text
    changed = 0
    for row in rows:
        answer = _answer(kb, row["surface"], row["label"], texts[row["set"], row["doc"]])
        changed += answer != row["answer"]
        row["answer"] = answer
    _write_rows(HELDOUT, rows)
    print(f"{changed} of {len(rows)} answers changed")


def _label_towns() -> None:
    """Label the place answers of implicit-places posts by the post's true town (its GeoNames
    id is in the document id, ``p<geonameid>-<n>``): right when the answer is that place."""
    labels = _labels(HELDOUT_LABELS)
    added = 0
    with open(HELDOUT_LABELS, "a", encoding="utf-8") as fh:
        for row in _rows(HELDOUT):
            answer = row["answer"]
            if row["set"] != "implicit-places" or answer is None or _key(row) in labels:
                continue
            if not answer["id"].startswith("geonames:"):
                continue  # a Wikipedia passage: labelled by reading
            town = row["doc"][1:].split("-")[0]
            same = answer["id"].split(":")[1] == town
            why = f"ground truth: the post's town is geonames:{town}"
            fh.write(json.dumps({"key": _key(row), "same": same, "why": why}) + "\n")
            added += 1
    print(f"labelled {added} place answers of implicit-places posts by their town")


def _key(row: dict) -> str:
    return answer_key(row, row["answer"])


def _line(title: str, part: list[dict], labels: dict[str, bool]) -> str:
    answered = [r for r in part if r["answer"] is not None]
    judged = [labels[_key(r)] for r in answered if _key(r) in labels]
    right = sum(judged)
    low, high = _wilson(right, len(judged))
    prec = (
        f"{right / len(judged):.1%} ({right}/{len(judged)}) [{low:.1%}–{high:.1%}]"
        if judged
        else "-"
    )
    missing = len(answered) - len(judged)
    wrong: dict[str, int] = {}
    for r in answered:
        if labels.get(_key(r)) is False:
            wrong[r["answer"]["match"]] = wrong.get(r["answer"]["match"], 0) + 1
    return (
        f"| {title} | {len(part)} | {len(answered) / max(1, len(part)):.1%} | {prec}"
        f"{f' ({missing} unlabelled)' if missing else ''} | {right / max(1, len(part)):.1%} "
        f"| {', '.join(f'{k} {n}' for k, n in sorted(wrong.items())) or '-'} |"
    )


def _score(parts: set[str]) -> None:
    rows = [r for r in _rows(HELDOUT) if r["part"] in parts]
    labels = _labels(HELDOUT_LABELS)
    print(
        "| sample | mentions | described | precision [95% CI] | described rightly "
        "| wrong by match kind |"
    )
    print("|---|---|---|---|---|---|")
    for flagged in FLAGGED_PARTS:
        for name in FLAGGED_SETS:
            part = [r for r in rows if r["part"] == flagged and r["set"] == name]
            if part:
                print(_line(f"{flagged}, {name}", part, labels))
    for name in FLAGGED_SETS:  # one set's flagged parts together: the set's whole sample
        part = [r for r in rows if r["part"] in FLAGGED_PARTS and r["set"] == name]
        if part:
            print(_line(f"flagged parts, {name}", part, labels))
    for typed, types in TYPED_PARTS.items():
        for kind in types:
            part = [r for r in rows if r["part"] == typed and r["type"] == kind]
            if part:
                print(_line(f"{typed}, {kind}", part, labels))
    print(_line("all", rows, labels))
    kinds = sorted({r["answer"]["match"] for r in rows if r["answer"] is not None})
    for match in kinds:
        part = [r for r in rows if r["answer"] is not None and r["answer"]["match"] == match]
        print(_line(f"all, {match}", part, labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=Path("runs"))
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--described", type=int, default=60, help="described answers to draw")
    parser.add_argument("--max-docs", type=int, default=3000, help="documents read per set")
    parser.add_argument(
        "--parts",
        default=",".join((*TYPED_PARTS, *FLAGGED_PARTS)),
        help="the parts --sample draws anew (others kept) and --score scores",
    )
    parser.add_argument("--score", action="store_true")
    parser.add_argument("--recheck", action="store_true", help="ask today's default again")
    parser.add_argument(
        "--label-towns", action="store_true", help="label implicit-places answers by the town"
    )
    args = parser.parse_args()
    if args.recheck:
        if args.shared_data is None:
            parser.error("--recheck needs --shared-data")
        _recheck(args.shared_data, args.work)
    if args.label_towns:
        _label_towns()
    if args.sample:
        if args.shared_data is None:
            parser.error("--sample needs --shared-data")
        parts = set(args.parts.split(","))
        _sample(args.shared_data, args.work, args.described, args.max_docs, parts)
    if args.score or not args.sample:
        _score(set(args.parts.split(",")))


if __name__ == "__main__":
    main()
