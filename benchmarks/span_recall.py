"""Span recall on the venue posts: the share of posts whose venue is found in full as a mention.

Each post of ``venue-posts`` names one venue (its ``metadata.venue``). spaCy's small model cuts
long names ("Helensvale" of "Helensvale railway station") or misses them; a KB that knows the
venue by name then answers nothing, or a namesake. This counts, over the posts, how often the
diagnosis has a mention whose text is the venue's whole name: with NER alone, and with the names
of a passages file matched as well (:class:`argus_ir.text.names.NameMatcher`, what ``Argus``
does with a KB of the user's). A mention of a longer span that holds the venue counts as found.

``python benchmarks/span_recall.py runs/datasets/venue-posts --kb runs/datasets/venue-posts/known-kb.jsonl``
prints one row per reading and writes them to ``benchmarks/results/span-recall-venue-posts.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HERE = Path(__file__).parent


def recall(folder: Path, kb: str) -> list[dict]:
    from argus_ir import Argus
    from argus_ir.text.names import users_names

    rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text("utf-8").splitlines()]
    docs = [(r["_id"], r["text"]) for r in rows]
    venue = {r["_id"]: r["metadata"]["venue"] for r in rows}
    argus = Argus(kb=kb)
    diagnoser = argus.diagnoser
    out = []
    for reading, names in (
        ("NER alone", None),
        ("NER + the KB's names", users_names(argus._get("kb"))),
    ):
        diagnoser.names = names
        t0 = time.perf_counter()
        diagnoses = diagnoser.diagnose([t for _, t in docs], [i for i, _ in docs])
        seconds = time.perf_counter() - t0
        whole = cut = 0
        for d in diagnoses:
            forms = [e.surface for e in d.entities]
            if any(venue[d.doc_id] in f for f in forms):
                whole += 1
            elif any(f in venue[d.doc_id] for f in forms):
                cut += 1
        n = len(diagnoses)
        out.append(
            {
                "reading": reading,
                "posts": n,
                "venue_found_in_full": whole,
                "share_in_full": round(whole / n, 4),
                "venue_cut": cut,
                "venue_missed": n - whole - cut,
                "diagnosis_s": round(seconds, 2),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--kb", required=True)
    parser.add_argument(
        "--out", type=Path, default=HERE / "results" / "span-recall-venue-posts.json"
    )
    args = parser.parse_args()
    rows = recall(args.dataset, args.kb)
    args.out.write_text(json.dumps(rows, indent=2) + "\n", "utf-8")
    print("| reading | posts | venue in full | cut | missed |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['reading']} | {r['posts']} | {r['venue_found_in_full']} ({r['share_in_full']:.1%}) "
            f"| {r['venue_cut']} | {r['venue_missed']} |"
        )


if __name__ == "__main__":
    main()
