"""What the shipped KBs cost: open time, peak memory and lookup latency, places against leads alone.

Each KB is opened in a fresh process (so peak RSS is its own): ``wikipedia`` (the 10,033 lead
paragraphs) is the baseline, ``wikipedia+places`` adds the GeoNames gazetteer. Lookups are the
place and person names of the msmarco5k corpus's first documents as spaCy finds them, each asked
once with its label and its document (the remedy's call), timed one by one.

``nox -s bench -- kb`` or ``python benchmarks/kb_bench.py --shared-data ../shared/data``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

_CHILD = r"""
import json, sys, time
def peak_mb():  # VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
t0 = time.perf_counter()
from argus_ir.kb import shipped_kb
from argus_ir.kb import ask
kb = shipped_kb(sys.argv[1])
len(kb)  # every source loaded now (the gazetteer reads its tables on first use)
open_s = time.perf_counter() - t0
asks = json.loads(open(sys.argv[2], encoding="utf-8").read())
times = []
for surface, label, context in asks:
    t = time.perf_counter()
    ask(kb, surface, 2, label=label, context=context)
    times.append(time.perf_counter() - t)
times.sort()
pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
print(json.dumps({
    "kb": sys.argv[1], "open_s": round(open_s, 2),
    "peak_rss_mb": peak_mb(),
    "lookups": len(times), "p50_ms": round(pick(0.5), 3), "p95_ms": round(pick(0.95), 3),
}))
"""


def _asks(shared: Path, n_docs: int, out: Path) -> int:
    from argus_ir.text.mentions import SpacyMentions

    with open(shared / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for _, line in zip(range(n_docs), fh)]
    asks = [
        (m.text, m.label, text)
        for text, mentions in zip(texts, SpacyMentions().extract(texts))
        for m in mentions
    ]
    out.write_text(json.dumps(asks), encoding="utf-8")
    return len(asks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=500, help="msmarco5k documents to ask from")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "kb-cost.json")
    args = parser.parse_args()
    work = args.out.with_suffix(".asks.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = _asks(args.shared_data, args.docs, work)
    print(f"{n} lookups from {args.docs} msmarco5k documents", flush=True)
    rows = []
    for name in ("wikipedia", "wikipedia+places"):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, name, str(work)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    base = rows[0]
    for row in rows:
        for key in ("open_s", "peak_rss_mb", "p50_ms", "p95_ms"):
            row[f"{key}_ratio"] = round(row[key] / base[key], 2) if base[key] else None
    args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    work.unlink()
    print("| KB | open s | peak RSS MB | lookup p50 ms | lookup p95 ms |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['kb']} | {r['open_s']} ({r['open_s_ratio']}×) | {r['peak_rss_mb']} "
            f"({r['peak_rss_mb_ratio']}×) | {r['p50_ms']} | {r['p95_ms']} ({r['p95_ms_ratio']}×) |"
        )


if __name__ == "__main__":
    main()
