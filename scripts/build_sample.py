"""Rebuild the embedded entity sample shipped in ``argus_ir/data/`` (deterministic for a seed).

The sample is derived only from the Wikipedia KB (``kb/wiki_vital10k_en.jsonl``, text CC BY-SA 4.0)
and T-REx facts (``kg/trex``, MIT); FB15k-237 is not used because its licence differs.

Selection: T-REx facts are joined to KB titles as in :func:`argus_ir.audit.shared_data.trex_edges`. Seed
entities (2 to 40 T-REx neighbours) are drawn at random; each brings itself and up to
``--per-seed`` random neighbours, until the core holds ``--targets`` entities, each linked to another
core entity. ``--neutrals`` further KB entities are added as neutral candidates, and the edges are the
T-REx edges among all chosen entities. Entities keep KB order.

Usage::

    python scripts/build_sample.py --shared-data ../shared/data
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
from pathlib import Path

import numpy as np

from argus_ir.audit.shared_data import load_wiki_kb, trex_edges

OUT_DIR = (
    Path(__file__).resolve().parents[1] / "packages" / "argus-core" / "src" / "argus_ir" / "data"
)


def _write_gz_jsonl(path: Path, rows: list[dict]) -> int:
    """Write rows as gzipped JSONL with a fixed header (no name, mtime 0); return the byte size."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True, help="folder with kb/ and kg/")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="package data folder")
    parser.add_argument("--targets", type=int, default=400, help="entities in the linked core")
    parser.add_argument("--neutrals", type=int, default=800, help="extra KB entities")
    parser.add_argument("--per-seed", type=int, default=8, help="neighbours taken per seed")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    kb = load_wiki_kb(args.shared_data)
    order = {r.id: i for i, r in enumerate(kb)}
    relation: dict[tuple[str, str], str] = {}
    for e in trex_edges(args.shared_data, order):
        if e.a != e.b:
            relation.setdefault((min(e.a, e.b), max(e.a, e.b)), e.relation)
    nbrs: dict[str, list[str]] = {}
    for a, b in sorted(relation):
        nbrs.setdefault(a, []).append(b)
        nbrs.setdefault(b, []).append(a)

    seeds = sorted((t for t, ns in nbrs.items() if 2 <= len(ns) <= 40), key=order.__getitem__)
    core: set[str] = set()
    for i in rng.permutation(len(seeds)):
        if len(core) >= args.targets:
            break
        seed = seeds[i]
        ns = sorted(nbrs[seed], key=order.__getitem__)
        take = rng.choice(len(ns), size=min(args.per_seed, len(ns)), replace=False)
        core.add(seed)
        core.update(ns[j] for j in sorted(take))

    rest = [r.id for r in kb if r.id not in core]
    neutrals = {rest[i] for i in rng.choice(len(rest), size=args.neutrals, replace=False)}
    chosen = core | neutrals
    entities = [
        {"id": r.id, "label": r.label, "text": r.text, "description": r.description}
        for r in kb
        if r.id in chosen
    ]
    edges = [
        {"source": a, "target": b, "relation": rel}
        for (a, b), rel in sorted(
            relation.items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]])
        )
        if a in chosen and b in chosen
    ]

    args.out.mkdir(parents=True, exist_ok=True)
    n1 = _write_gz_jsonl(args.out / "sample_entities.jsonl.gz", entities)
    n2 = _write_gz_jsonl(args.out / "sample_edges.jsonl.gz", edges)
    linked = {x for e in edges for x in (e["source"], e["target"])}
    print(
        f"{len(entities)} entities ({len(linked)} with a neighbour), {len(edges)} edges; "
        f"{n1} + {n2} bytes written to {args.out}"
    )


if __name__ == "__main__":
    main()
