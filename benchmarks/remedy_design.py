"""Which remedy design raises retrieval quality: every option against the paper's configuration.

For each dataset, one ``argus_ir.eval.evaluate`` call (MiniLM by default: the corpus is
embedded and diagnosed once, every view text embedded once and kept in a vector cache) runs the
original index, the paper's expansion, merged and descriptor views, and the design options as
variants: the view budget (``max_views``), damped folding (``view_discount``), the context check,
focus views (one short view per sentence that mentions flagged entities), the targeting (the
probe, every entity at ``tau=1.0``, or in-corpus reach with ``targeting=corpus``), and their
combinations. The base rows fold views with plain max, as the paper does. Queries are split into
dev and test:

- SciFact: its train queries are the dev part, its test queries the test part;
- msmarco5k: its 43 judged queries, split in two by a hash of the query id;
- the entity-centric set (``benchmarks/entity_set.py``): its own dev and test qrels.

Rows go to ``benchmarks/results/design-<dataset>-<retriever>.json`` after every condition (the
partial file lists what is done), per split, with each remedy's paired t-test against the
original; the dev rows choose, the test rows report. A rerun reuses the vector cache, so only the
diagnosis runs again.

``nox -s bench -- design`` or
``python benchmarks/remedy_design.py --shared-data ../shared/data [--datasets scifact,msmarco5k,entity-lists]``
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent

BASE = ("original", "expansion", "merged", "descriptor")
VARIANTS = (
    "expansion max_views=1",
    "expansion max_views=2",
    "expansion view_discount=0.02",
    "expansion view_discount=0.05",
    "expansion view_discount=0.1",
    "expansion max_views=1 view_discount=0.05",
    "merged view_discount=0.02",
    "merged view_discount=0.05",
    "descriptor view_discount=0.01",
    "descriptor view_discount=0.02",
    "descriptor view_discount=0.05",
    "descriptor tau=1.0 view_discount=0.02",
    "descriptor targeting=corpus view_discount=0.02",
    "focus view_discount=0.02",
    "focus max_views=2 view_discount=0.02",
    "focus targeting=corpus view_discount=0.02",
)
# The context check (--variant 'expansion context_threshold=0.15') embeds every candidate passage
# per document; on 2 CPU cores it ran at about 2 documents a second on the entity set, so the
# default set leaves it out (pass it with --variants to measure it).


# sets written by a script of this folder, with their own dev and test qrels
BUILDERS = {
    "entity-lists": "entity_set.py",
    "implicit-places": "implicit_places.py",
    "venue-posts": "venue_posts.py",
}


def _hash_split(qid: str) -> str:
    """A stable half/half split of queries that come with one split only."""
    return "dev" if int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 2 == 0 else "test"


def _load(name: str, shared: Path, work: Path):
    from argus_ir.eval import load_beir

    if name == "scifact":
        data = load_beir(shared / "beir" / "scifact", "train,test")
        data.query_split = {
            q: "dev" if s == "train" else "test" for q, s in data.query_split.items()
        }
        return data
    if name == "msmarco5k":
        data = load_beir(shared / "beir" / "msmarco5k", "test")
        data.query_split = {q: _hash_split(q) for q in data.queries}
        return data
    folder = work / "datasets" / name
    if name not in BUILDERS:
        raise SystemExit(
            f"unknown dataset {name!r}; choose from scifact, msmarco5k, {', '.join(BUILDERS)}"
        )
    if not (folder / "corpus.jsonl").is_file():
        cmd = [sys.executable, str(HERE / BUILDERS[name]), "--shared-data", str(shared)]
        cmd += ["--out", str(folder)]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return load_beir(folder, "dev,test")


def _save(target: Path, name: str, t0: float, result, done: bool = False) -> None:
    """Write the rows so far, per split (called after every condition)."""
    payload = {
        "dataset": name,
        "retriever": result.retriever,
        "command": "python benchmarks/remedy_design.py " + " ".join(sys.argv[1:]),
        "complete": done,
        "conditions_done": list(result.conditions),
        "wall_s": round(time.perf_counter() - t0, 1),
        "splits": [part.to_dict() for part in result.split_by()],
    }
    target.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"  {name}: {len(result.conditions)} conditions saved", flush=True)


METRICS = ("nDCG@5", "nDCG@10", "nDCG@20", "nDCG@50", "R@10", "R@50")


def _cell(sig: dict) -> str:
    mark = "**" if sig["p"] < 0.05 else ""
    return f"{mark}{100 * sig['delta']:+.2f}{mark} ({sig['p']:.2g})"


def table(results: Path, model: str = "minilm") -> str:
    """One Markdown table over every saved ``design-*`` file: per dataset, split and condition,
    each metric's change against ``original`` in points with the paired t-test's p (bold below
    0.05), index growth and ingest time over the original's."""
    head = ["set", "condition", *METRICS, "growth", "ingest ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for path in sorted(results.glob(f"design-*-{model}.json")):
        saved = json.loads(path.read_text(encoding="utf-8"))
        for split in saved["splits"]:
            conditions = split["conditions"]
            base = conditions["original"]
            cells = [f"{base['aggregate'][m]:.4f}" for m in METRICS]
            lines.append(
                f"| {split['dataset']} ({split['queries']} q) | original | "
                + " | ".join(cells)
                + " | 1.00 | 1.00 |"
            )
            for name, c in conditions.items():
                if name == "original":
                    continue
                cells = [_cell(c["significance"][m]) for m in METRICS]
                ratio = c["ingest_s"] / max(base["ingest_s"], 1e-9)
                lines.append(
                    f"| {split['dataset']} | {name} | "
                    + " | ".join(cells)
                    + f" | {c['index_growth']:.2f} | {ratio:.2f} |"
                )
    return "\n".join(lines) + "\n"


def headroom(work: Path, shared: Path, model: str = "minilm") -> str:
    """Where the original index ranks the relevant documents of the entity set, split by whether
    the document mentions the entity the query names (a view anchored on a mention can only
    reach the first group). Markdown, one row per split and group."""
    import numpy as np

    from argus_ir.eval.search import _EmbeddingCache, embed_texts
    from argus_ir.pipeline import Argus

    data = _load("entity-lists", shared, work)
    folder = work / "datasets" / "entity-lists"
    objects = {}
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        objects[row["_id"]] = row["metadata"]["object"].lower()
    encoder = Argus(retriever=model)._get("encoder")
    ids = [d.id for d in data.corpus]
    texts = {d.id: d.index_text.lower() for d in data.corpus}
    docs, _ = _EmbeddingCache(encoder, False, work / "design-cache" / "vectors")(
        [d.index_text for d in data.corpus]
    )
    docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    qids = sorted(data.queries)
    queries = embed_texts(encoder, [data.queries[q] for q in qids], False)
    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    ranks: dict[tuple[str, bool], list[int]] = {}
    for qid, scores in zip(qids, queries @ docs.T):
        order = {ids[j]: r for r, j in enumerate(np.argsort(-scores, kind="stable"), start=1)}
        for doc, grade in data.qrels.get(qid, {}).items():
            if grade > 0 and doc in order:
                key = (data.query_split[qid], objects[qid] in texts[doc])
                ranks.setdefault(key, []).append(order[doc])
    lines = [
        "| split | relevant documents | n | median rank | in top 10 | in top 50 |",
        "|---|---|---|---|---|---|",
    ]
    for (split, mentions), values in sorted(ranks.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        arr = np.array(values)
        group = "mention the query's entity" if mentions else "do not mention it"
        lines.append(
            f"| {split} | {group} | {len(arr)} | {np.median(arr):g} | "
            f"{(arr <= 10).mean():.0%} | {(arr <= 50).mean():.0%} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--datasets", default="entity-lists,msmarco5k,scifact")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--variants", default=None, help="';'-separated; default: the full set")
    parser.add_argument(
        "--remedies",
        default=",".join(BASE),
        help=f"comma-separated base conditions (default: {','.join(BASE)})",
    )
    parser.add_argument("--work", type=Path, default=Path("runs"))
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--explain", action="store_true", help="also write explain/ reports")
    parser.add_argument("--table", action="store_true", help="only print the table of saved rows")
    parser.add_argument(
        "--headroom",
        action="store_true",
        help="only print where the original index ranks the entity set's relevant documents",
    )
    args = parser.parse_args()
    if args.table:
        print(table(args.out, args.model), end="")
        return
    if args.headroom:
        print(headroom(args.work, args.shared_data, args.model), end="")
        return

    # every module the run needs, imported now: a long run must not pick up files edited meanwhile
    import argus_ir.encoder.cache
    import argus_ir.eval.explain
    import argus_ir.kb.places
    import argus_ir.pipeline
    import argus_ir.plots
    import argus_ir.remedy  # noqa: F401
    from argus_ir.cli.evaluate import write_explanations
    from argus_ir.eval import evaluate, write_results

    variants = (
        VARIANTS
        if args.variants is None
        else tuple(v.strip() for v in args.variants.split(";") if v.strip())
    )
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.datasets.split(","):
        data = _load(name, args.shared_data, args.work)
        print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} queries", flush=True)
        target = args.out / f"design-{name}-{args.model}.json"
        t0 = time.perf_counter()

        result = evaluate(
            data,
            remedies=tuple(args.remedies.split(",")),
            variants=variants,
            view_discount=0.0,  # the base rows fold as the paper does; variants set their own
            retriever=args.model,
            show_progress=True,
            vector_cache=args.work / "design-cache" / "vectors",
            explain=args.explain,
            on_condition=functools.partial(_save, target, name, t0),
        )
        _save(target, name, t0, result, done=True)
        work = args.work / f"design-{name}-{args.model}"
        write_results(result.split_by(), work)
        if args.explain:
            write_explanations(result, data, work)


if __name__ == "__main__":
    main()
