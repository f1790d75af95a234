"""Memory and throughput of ``argus augment`` as the corpus grows, and Ray Data against one process.

Corpora of 10k, 50k and 100k documents are generated from the shared MS MARCO passages by
repetition, each copy under new ids (``<id>~r<copy>``), written as JSONL (what the local engine
streams) and, for the smallest, as Parquet (what Ray reads in parallel). Three stages, one run:

(small) ``argus augment CORPUS.jsonl --out OUT.jsonl`` on the smallest size in a fresh process:
    wall time, docs/s, peak RSS (``ru_maxrss`` from ``wait4``).
(ray) ``argus augment CORPUS.parquet --engine ray --workers 2`` on the same documents, right after:
    docs/s against (small) (one process, two torch threads) and the outputs compared (same rows,
    order aside).
(grow) one ``argus augment`` process over the largest size. While it runs, the process's peak RSS
    so far (``VmHWM`` in ``/proc``) and the elapsed time are read each time its checkpoint passes
    one of the sizes: the memory and docs/s of the same stream at 10k, 50k and 100k documents.
    Goal: peak RSS at 100k within 10 % of peak RSS at 10k.

``nox -s bench -- scale`` or ``python benchmarks/scale_bench.py --shared-data ../shared/data``
(``--sizes 2000,4000`` for a quick look; ``--stages grow`` reruns one stage and keeps the others'
rows). Writes ``benchmarks/results/scale.json``. Linux only (``/proc``, ``wait4``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parent


def make_corpus(
    source: Path, size: int, folder: Path, parquet_too: bool = False
) -> tuple[Path, Path]:
    """``size`` documents from ``source`` by repetition with new ids, as JSONL (and as Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl, parquet = folder / f"corpus-{size}.jsonl", folder / f"corpus-{size}.parquet"
    if jsonl.is_file() and (parquet.is_file() or not parquet_too):
        return jsonl, parquet
    with open(source, encoding="utf-8") as fh:
        base = [json.loads(line) for line in fh if line.strip()]
    rows = []
    for i in range(size):
        doc = base[i % len(base)]
        rows.append(
            {
                "_id": f"{doc['_id']}~r{i // len(base)}",
                "title": doc.get("title") or "",
                "text": doc["text"],
            }
        )
    with open(jsonl, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    if parquet_too:
        table = pa.table({k: [r[k] for r in rows] for k in ("_id", "title", "text")})
        pq.write_table(table, parquet, row_group_size=2_000)
    return jsonl, parquet


def run_measured(
    cmd: list[str], checkpoint: Path | None = None, marks: tuple[int, ...] = ()
) -> dict[str, Any]:
    """Run ``cmd`` to completion: wall seconds, peak RSS in MiB and, when ``checkpoint`` is given,
    the elapsed seconds and peak RSS so far when its ``documents_done`` first reached each mark."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seen: list[dict[str, float]] = []
    pending = sorted(marks)
    finished = None
    while finished is None:
        if checkpoint is None or not pending:
            finished = os.wait4(proc.pid, 0)
            break
        time.sleep(0.5)
        reaped = os.wait4(proc.pid, os.WNOHANG)  # not Popen.poll(): it would drop the rusage
        if reaped[0]:
            finished = reaped
            break
        try:
            done = json.loads(checkpoint.read_text(encoding="utf-8"))["documents_done"]
            hwm = _vm_hwm_mib(proc.pid)
        except (OSError, ValueError, KeyError):
            continue  # not written yet, or caught mid-write
        while pending and done >= pending[0]:
            pending.pop(0)
            elapsed = time.perf_counter() - t0
            seen.append({"documents": done, "seconds": elapsed, "peak_rss_mib": hwm})
            print(json.dumps({"mark": seen[-1]}), flush=True)
    _, status, usage = finished
    wall = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code:
        raise SystemExit(f"{' '.join(cmd)} exited with {code}")
    peak = usage.ru_maxrss / 1024  # Linux: KiB
    if pending:  # the last checkpoint went by between two looks: the end of the run stands in
        seen.append(
            {"documents": pending[-1], "seconds": wall, "peak_rss_mib": peak, "at_exit": True}
        )
    for mark in seen:
        mark["docs_per_s"] = mark["documents"] / mark["seconds"]
    return {"seconds": wall, "peak_rss_mib": peak, "marks": seen}


def _vm_hwm_mib(pid: int) -> float:
    """The peak resident set of a live process so far, from ``/proc/PID/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise ValueError("no VmHWM")


def read_rows(path: Path) -> list[str]:
    """Output rows as sorted canonical JSON (JSONL file or folder of Parquet), for comparison."""
    rows = []
    if path.is_dir():
        import pyarrow.dataset as pads

        for r in pads.dataset(path, format="parquet").to_table().to_pylist():
            meta = json.loads(r["metadata"])
            rows.append({"_id": r["_id"], "title": r["title"], "text": r["text"], "metadata": meta})
    else:
        with open(path, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--sizes", default="10000,50000,100000")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--stages", default="small,ray,grow")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "scale")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scale.json")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    stages = args.stages.split(",")
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    source = args.shared_data / "beir" / "msmarco5k" / "corpus.jsonl"
    argus = [sys.executable, "-m", "argus_ir.cli", "-q", "augment"]
    result: dict[str, Any] = {}
    if args.out.is_file() and set(stages) != {"small", "ray", "grow"}:
        result = json.loads(args.out.read_text(encoding="utf-8"))
    result.update(
        machine={"cpus": os.cpu_count(), "platform": platform.platform()},
        date=time.strftime("%Y-%m-%d"),
        corpus="msmarco5k passages, repeated under new ids",
    )

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

    def local(size: int, marks: tuple[int, ...] = ()) -> dict[str, Any]:
        jsonl, _ = make_corpus(source, size, args.work)
        out = args.work / f"local-{size}.jsonl"
        ckpt = out.with_name(out.name + ".checkpoint.json")
        for stale in (out, ckpt):
            stale.unlink(missing_ok=True)
        cmd = [*argus, str(jsonl), "--out", str(out), "--no-resume", "--overwrite"]
        m = run_measured(cmd, ckpt, marks)
        row = {"documents": size, **m, "docs_per_s": size / m["seconds"]}
        print(json.dumps(row), flush=True)
        return row

    small = sizes[0]
    if "small" in stages:
        result["small"] = local(small)
        save()
    if "ray" in stages:
        _, parquet = make_corpus(source, small, args.work, parquet_too=True)
        ray_out = args.work / f"ray-{small}"
        if ray_out.exists():
            shutil.rmtree(ray_out)
        cmd = [*argus, str(parquet), "--out", str(ray_out), "--engine", "ray"]
        m = run_measured([*cmd, "--workers", str(args.workers)])
        row = {
            "workers": args.workers,
            "documents": small,
            "seconds": m["seconds"],
            "docs_per_s": small / m["seconds"],
            "driver_peak_rss_mib": m["peak_rss_mib"],
            "throughput_vs_small": small / m["seconds"] / result["small"]["docs_per_s"],
            "same_output": read_rows(ray_out) == read_rows(args.work / f"local-{small}.jsonl"),
        }
        print(json.dumps(row), flush=True)
        result["ray"] = row
        save()
    if "grow" in stages:
        row = local(sizes[-1], marks=tuple(sizes))
        marks = row["marks"]
        growth = marks[-1]["peak_rss_mib"] / marks[0]["peak_rss_mib"] - 1
        result["grow"] = {**row, "peak_rss_growth": growth, "goal_met": growth < 0.10}
        save()
    print(f"-> {args.out}")
    for mark in result.get("grow", {}).get("marks", []):
        print(
            f"  {mark['documents']:>7,} docs: peak RSS {mark['peak_rss_mib']:.0f} MiB, "
            f"{mark['docs_per_s']:.1f} docs/s"
        )
    if "ray" in result:
        print(f"  Ray x{args.workers}: {result['ray']['throughput_vs_small']:.2f}x one process")


if __name__ == "__main__":
    main()
