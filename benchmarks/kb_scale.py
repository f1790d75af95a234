"""A million-passage disk KB against the shipped 10k KB: build time, size, memory when opened, lookups.

The 1,000,000 passages are assembled from what this machine has, in this order: the shipped
10,033 Wikipedia leads (with their titles as names), the CoDEx type extracts, every GeoNames place
of 500+ people as its one-sentence passage (``argus_ir.kb.places``), the HPO phenotypes, diseases and
genes (``argus_ir.kb.biomed``), and, to fill the rest, synthetic passages: each joins two sentences
drawn (seeded) from two different leads under a made-up title, so the vocabulary and lengths are
those of encyclopedia text. The result is a dump-sized KB, not a better one.

Measured in one run, each KB opened in a fresh process (so its peak RSS is its own):

- ``shipped 10k (memory)``: ``ReferenceKB.default()``, the baseline;
- ``shipped 10k (disk)``: the same passages through ``build_disk_kb``;
- ``1M (disk)``: the assembled million.

Build time and peak RSS of each build; size on disk; open time and peak RSS of a process that
opens the KB and asks it the lookups: the entity mentions spaCy finds in msmarco5k's first 500
documents, each asked once (``lookup(surface, 2)``), timed one by one. Goal (issue): opening under
1 GB RSS, a lookup under 10 ms at p95.

``nox -s bench -- kb-scale`` or ``python benchmarks/kb_scale.py --shared-data ../shared/data``
(``--passages 200000`` for a smaller trial). Results: ``benchmarks/results/kb-scale.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).parent

_OPEN = r"""
import json, sys, time
def peak_mb():  # VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
t0 = time.perf_counter()
if sys.argv[1] == "memory":
    from argus_ir.kb import ReferenceKB
    kb = ReferenceKB.default()
else:
    from argus_ir.kb.disk import DiskKB
    kb = DiskKB(sys.argv[1])
open_s = time.perf_counter() - t0
asks = json.loads(open(sys.argv[2], encoding="utf-8").read())
times = []
for surface in asks:
    t = time.perf_counter()
    kb.lookup(surface, 2)
    times.append(time.perf_counter() - t)
times.sort()
pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
print(json.dumps({
    "open_s": round(open_s, 2),
    "peak_rss_mb": peak_mb(),
    "lookups": len(times), "p50_ms": round(pick(0.5), 3), "p95_ms": round(pick(0.95), 3),
}))
"""

_BUILD = r"""
import json, sys, time
def peak_mb():  # VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
sys.path.insert(0, sys.argv[3])
import kb_scale
t0 = time.perf_counter()
from argus_ir.kb.disk import build_disk_kb
build_disk_kb(kb_scale.assemble(sys.argv[1], int(sys.argv[2])), sys.argv[4],
              sources={"assembled": sys.argv[2] + " passages, benchmarks/kb_scale.py"})
print(json.dumps({
    "build_s": round(time.perf_counter() - t0, 1),
    "build_peak_rss_mb": peak_mb(),
}))
"""

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def assemble(shared: str, total: int, seed: int = 13) -> Iterator[tuple[object, list[str]]]:
    """The ``total`` passages described in the module docstring, as ``(passage, aliases)``."""
    from argus_ir.kb import Passage, ReferenceKB
    from argus_ir.kb.biomed import PhenotypeKB, biomed_available
    from argus_ir.kb.places import Gazetteer, places_available

    made = 0
    leads = ReferenceKB.default().passages
    for p in leads:
        yield p, []
        made += 1
    codex = Path(shared) / "kb" / "codex_type_extracts.jsonl"
    if codex.is_file():
        with open(codex, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if made >= total:
                    return
                yield Passage(f"codex:{row['qid']}", row["title"], row["text"]), []
                made += 1
    if places_available():
        gazetteer = Gazetteer()
        gazetteer._load()
        for gid in sorted(gazetteer._by_gid):
            if made >= total:
                return
            yield gazetteer._passage(gazetteer._by_gid[gid]), []
            made += 1
    if biomed_available():
        hpo = PhenotypeKB()
        for _, passage in sorted(hpo._load().items()):
            if made >= total:
                return
            yield passage, []
            made += 1
    rng = random.Random(seed)
    sentences = [[s for s in _SENTENCE.split(p.text) if len(s) > 30] for p in leads]
    pools = [s for s in sentences if s]
    words = [w for p in leads[:2000] for w in p.title.split() if w.isalpha() and len(w) > 3]
    i = 0
    while made < total:
        a, b = rng.sample(pools, 2)
        title = f"{rng.choice(words)} {rng.choice(words)} {i}"
        yield Passage(f"synthetic:{i}", title, f"{rng.choice(a)} {rng.choice(b)}"), []
        made += 1
        i += 1


def _asks(shared: Path, n_docs: int, out: Path) -> int:
    from argus_ir.text.mentions import SpacyMentions

    with open(shared / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for _, line in zip(range(n_docs), fh)]
    asks = [m.text for mentions in SpacyMentions().extract(texts) for m in mentions]
    out.write_text(json.dumps(asks), encoding="utf-8")
    return len(asks)


def _size_mb(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)


def _child(code: str, *argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--docs", type=int, default=500, help="msmarco5k documents to ask from")
    parser.add_argument("--work", type=Path, default=Path("runs") / "kb-scale")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "kb-scale.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    asks = args.work / "asks.json"
    n = _asks(args.shared_data, args.docs, asks)
    print(f"{n} lookups from {args.docs} msmarco5k documents", flush=True)
    rows = []

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "command": "python benchmarks/kb_scale.py " + " ".join(sys.argv[1:]),
            "rows": rows,
        }
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")

    row = {"kb": "shipped 10k (memory)", "passages": 10033, **_child(_OPEN, "memory", str(asks))}
    rows.append(row)
    print(json.dumps(row), flush=True)
    save()
    for name, total in (
        ("shipped 10k (disk)", 10033),
        (f"{args.passages:,} (disk)", args.passages),
    ):
        folder = args.work / f"kb-{total}"
        built = _child(_BUILD, str(args.shared_data), str(total), str(HERE), str(folder))
        row = {"kb": name, "passages": total, **built, "disk_mb": _size_mb(folder)}
        row.update(_child(_OPEN, str(folder), str(asks)))
        rows.append(row)
        print(json.dumps(row), flush=True)
        save()
    base = rows[0]
    for row in rows:
        for key in ("open_s", "peak_rss_mb", "p50_ms", "p95_ms"):
            row[f"{key}_ratio"] = round(row[key] / base[key], 2) if base[key] else None
    save()
    print(
        "| KB | passages | build s | build peak RSS MB | on disk MB | open s | open+lookups peak RSS MB | lookup p50 ms | p95 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['kb']} | {r['passages']:,} | {r.get('build_s', '-')} | {r.get('build_peak_rss_mb', '-')} "
            f"| {r.get('disk_mb', '-')} | {r['open_s']} | {r['peak_rss_mb']} ({r['peak_rss_mb_ratio']}×) "
            f"| {r['p50_ms']} | {r['p95_ms']} ({r['p95_ms_ratio']}×) |"
        )


if __name__ == "__main__":
    main()
