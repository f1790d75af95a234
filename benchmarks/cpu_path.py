"""argus's own CPU work per document, with the retriever's forward made free: the GPU case on a CPU.

On a GPU the encoder's forward is fast (plain ``encode`` writes 1,700-1,900 SciFact documents a
second on one H200); what decides whether argus keeps the card busy is everything else it does per
document on the CPU: tokenising, NER, span pooling, the probe, KB lookups, view and vector
bookkeeping, the adapter's hand-off. This bench measures that work alone:

1. **record** (a process of its own): the LangChain recipe the docs print
   (``ArgusDocumentTransformer(retriever="minilm", embed=True)``, its ``transform_documents``)
   runs over the documents with the real model, and every window the retriever's forward reads is
   saved with its outputs (token states and pooled vector), keyed by the window's token ids;
2. **replay** (a fresh process per layout): the same recipe, the forward answered from the
   recording (a dictionary lookup: a window missing from it is computed for real and counted).
   Models, KB and NER workers are loaded, and warmed on other documents, before the clocks start.

Reported per layout: **documents per CPU-second** of argus's own work (the CPU time of this
process and of its NER worker processes over the run, divided into the documents), the **main
process's CPU milliseconds per document** (what one feeder core must do), the wall documents per
second, and where the main process spends its time (a profile of the replayed run, by stage).

``--call-size N`` calls the recipe on runs of N documents (a caller that hands it a file at a
time), each call a stream of its own; the records, and so the digest, are the same.

Layouts: ``gpu-1`` and ``gpu-2`` are the GPU layout (NER only in worker processes, a batch ahead
of the pass) with one and two NER workers; ``cpu`` is the CPU layout at its defaults (NER ahead of
the pass, shared with this process).

``python benchmarks/cpu_path.py --shared-data ../shared/data --limit 1000``
(``nox -s bench -- cpu-path --limit 1000``). Results: ``benchmarks/results/cpu-path-<limit><tag>.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import platform
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LAYOUTS = ("gpu-1", "gpu-2", "cpu")
# documents after the measured ones, read once before the clocks start: enough for NER calls of
# WORKER_MIN_TEXTS texts, so the NER workers start (and load spaCy) before the clocks do
WARM = 160

# where the main process's time goes: a profiled function's own time is charged to the first
# stage whose module prefix it matches (most specific first)
STAGES = (
    ("ner hand-off", ("argus_ir/text/ner_workers", "argus_ir/text/mentions", "subprocess", "json")),
    ("kb names", ("argus_ir/text/names",)),
    ("tokenise + windows", ("tokenizers", "transformers/tokenization", "argus_ir/encoder")),
    ("probe", ("argus_ir/probes", "xgboost", "sklearn")),
    ("diagnosis", ("argus_ir/diagnose", "argus_ir/batching", "argus_ir/text/grounding")),
    ("kb lookups", ("argus_ir/kb",)),
    ("remedy + views", ("argus_ir/remedy", "argus_ir/collapse", "argus_ir/lineage")),
    ("vectors", ("argus_ir/vectors",)),
    ("pipeline", ("argus_ir/pipeline", "argus_ir/documents", "argus_ir/runners")),
    ("adapter", ("langchain_argus", "langchain_core", "pydantic")),
    ("numpy", ("numpy",)),
)


def read_docs(corpus: Path, limit: int) -> list[dict]:
    rows = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            rows.append({"id": row["_id"], "text": f"{row.get('title', '')}\n{row['text']}"})
            if len(rows) >= limit + WARM:
                break
    return rows


def _key(ids: list[int]) -> bytes:
    return hashlib.blake2b(np.asarray(ids, dtype=np.int32).tobytes(), digest_size=16).digest()


class Recorder:
    """Wraps :meth:`TokenEncoder._forward`: records each window's outputs, or replays them."""

    def __init__(self, replay: dict[bytes, tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.replay = replay
        self.seen: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self.misses = 0
        self.windows = 0

    def install(self) -> None:
        from argus_ir.encoder.base import TokenEncoder

        real = TokenEncoder._forward
        recorder = self

        def forward(encoder, batch_ids, pad_to=None):
            recorder.windows += len(batch_ids)
            if recorder.replay is not None:
                found = [recorder.replay.get(_key(ids)) for ids in batch_ids]
                if all(f is not None for f in found):
                    return [f[0] for f in found], [f[1] for f in found]
                recorder.misses += sum(f is None for f in found)
            content, doc = real(encoder, batch_ids, pad_to=pad_to)
            if recorder.replay is None:
                for ids, st, dv in zip(batch_ids, content, doc, strict=True):
                    recorder.seen[_key(ids)] = (st.copy(), dv.copy())
            return content, doc

        TokenEncoder._forward = forward

    def save(self, path: Path) -> None:
        keys = list(self.seen)
        states = [self.seen[k][0] for k in keys]
        np.savez(
            path,
            keys=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 16),
            lengths=np.asarray([len(s) for s in states], dtype=np.int64),
            states=np.concatenate(states) if states else np.zeros((0, 0), np.float32),
            docs=np.stack([self.seen[k][1] for k in keys]),
        )

    @staticmethod
    def load(path: Path) -> dict[bytes, tuple[np.ndarray, np.ndarray]]:
        data = np.load(path)
        cuts = np.concatenate([[0], np.cumsum(data["lengths"])])
        states, docs = data["states"], data["docs"]
        return {
            bytes(k): (states[cuts[i] : cuts[i + 1]], docs[i]) for i, k in enumerate(data["keys"])
        }


class Recipe:
    """The ingest step measured: LangChain's transformer as its page prints it (``langchain``),
    or argus-ir's own stream with vectors (``core``: ``Argus(embed=True).augment``, for a
    machine without LangChain)."""

    def __init__(self, recipe: str, layout: str) -> None:
        settings: dict = {"retriever": "minilm", "embed": True}
        if layout.startswith("gpu"):
            import argus_ir.pipeline as pipeline

            pipeline.ner_apart = lambda device: True  # the layout a GPU retriever gets
            settings["ner_processes"] = int(layout.split("-")[1])
        self.recipe = recipe
        if recipe == "langchain":
            from langchain_argus import ArgusDocumentTransformer

            self.step = ArgusDocumentTransformer(**settings)
        else:
            from argus_ir import Argus

            self.step = Argus(**settings)

    def run(self, rows: list[dict], call_size: int = 0) -> tuple[int, str]:
        """Records written for ``rows``, and a digest of their ids, texts and metadata (two
        runs that write the same records have the same digest). ``call_size``: the recipe is
        called on runs of that many documents, as a caller feeding it a file at a time would
        (0: one call with all of them)."""
        digest = hashlib.sha256()
        step = call_size or len(rows) or 1
        out = [
            record for i in range(0, len(rows), step) for record in self._call(rows[i : i + step])
        ]
        for record in out:
            digest.update(json.dumps(record, sort_keys=True, default=str).encode())
        return len(out), digest.hexdigest()[:16]

    def _call(self, rows: list[dict]) -> list[tuple]:
        if self.recipe == "langchain":
            from langchain_core.documents import Document

            docs = [Document(page_content=r["text"], id=r["id"]) for r in rows]
            return [(d.id, d.page_content, d.metadata) for d in self.step.transform_documents(docs)]
        from argus_ir.documents import Document as Doc

        views = self.step.augment(Doc(id=r["id"], text=r["text"]) for r in rows)
        return [(v.id, v.text, v.metadata) for v in views]

    def close(self) -> None:
        argus = self.step if self.recipe == "core" else getattr(self.step, "_argus", None)
        if argus is not None:
            argus.close()


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _children_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each process descended from this one, read from ``/proc``
    (Linux: the bench's machines)."""
    procs: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) "
        procs[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK)
    mine, frontier = {}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cpu) in procs.items():
            if ppid == parent and pid not in mine:
                mine[pid] = cpu
                frontier.append(pid)
    return mine


def record(args: argparse.Namespace, rows: list[dict], out: Path) -> dict:
    recorder = Recorder()
    recorder.install()
    recipe = Recipe(args.recipe, "cpu")
    t0 = time.perf_counter()
    recipe.run(rows)
    wall = time.perf_counter() - t0
    recipe.close()
    recorder.save(out)
    return {"windows": len(recorder.seen), "wall_s": round(wall, 2)}


def _stages(profile: cProfile.Profile) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """The main thread's own CPU seconds by stage, and its 20 costliest functions."""
    stats = pstats.Stats(profile)
    totals: dict[str, float] = {}
    rows = []
    for (filename, line, func), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        name = filename.replace("\\", "/")
        stage = next((s for s, marks in STAGES if any(m in name for m in marks)), "other")
        totals[stage] = totals.get(stage, 0.0) + own
        where = "/".join(name.split("/")[-2:])
        rows.append((f"{where}:{line}({func})", round(own, 4)))
    top = sorted(rows, key=lambda r: -r[1])[:20]
    return dict(sorted(totals.items(), key=lambda kv: -kv[1])), top


def replay(args: argparse.Namespace, rows: list[dict], recording: Path, layout: str) -> dict:
    recorder = Recorder(Recorder.load(recording))
    recorder.install()
    recipe = Recipe(args.recipe, layout)
    measured, warm = rows[: args.limit], rows[args.limit :]
    recipe.run(warm)  # loads, NER workers started, caches of no use later
    cpu0 = _children_cpu()
    main0, wall0 = time.process_time(), time.perf_counter()
    windows0, misses0 = recorder.windows, recorder.misses
    # the main thread's own CPU time per function (a thread waiting costs nothing)
    profile = cProfile.Profile(time.thread_time) if args.profile else None
    if profile is not None:
        profile.enable()
    records, digest = recipe.run(measured, args.call_size)
    if profile is not None:
        profile.disable()
    wall = time.perf_counter() - wall0
    main = time.process_time() - main0
    now = _children_cpu()
    worker_cpu = sum(cpu - cpu0.get(pid, 0.0) for pid, cpu in now.items())
    n = len(measured)
    row = {
        "layout": layout,
        "documents": n,
        "call_size": args.call_size or n,
        "records": records,
        "records_sha256": digest,
        "windows": recorder.windows - windows0,
        "windows_not_replayed": recorder.misses - misses0,
        "ner_workers": len(now),
        "ner_workers_started_before_the_clock": len(cpu0),
        "wall_s": round(wall, 3),
        "main_cpu_s": round(main, 3),
        "workers_cpu_s": round(worker_cpu, 3),
        "docs_per_cpu_s": round(n / (main + worker_cpu), 1),
        "main_ms_per_doc": round(1000 * main / n, 3),
        "wall_docs_per_s": round(n / wall, 1),
        "profiled": profile is not None,
    }
    if profile is not None:
        stages, top = _stages(profile)
        row["main_top_functions_s"] = top
        # what the main process's other threads did (NER's hand-off thread, torch's threads)
        stages["other threads"] = max(0.0, main - sum(stages.values()))
        row["main_stages_s"] = {k: round(v, 3) for k, v in stages.items()}
    recipe.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument(
        "--corpus", type=Path, help="JSONL with _id, title, text (default: SciFact)"
    )
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--recipe", choices=("langchain", "core"), default="langchain")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--repeats", type=int, default=1, help="replays per layout (best kept)")
    parser.add_argument("--profile", action="store_true", help="also a profiled replay per layout")
    parser.add_argument(
        "--call-size",
        type=int,
        default=0,
        help="documents per call of the recipe (default 0: all in one call)",
    )
    parser.add_argument("--tag", default="")
    parser.add_argument("--work", type=Path, default=HERE.parent / "runs" / "cpu-path")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.call_size < 0:
        parser.error(f"--call-size must be 0 (one call) or more, got {args.call_size}")
    corpus = args.corpus or args.shared_data / "beir" / "scifact" / "corpus.jsonl"
    rows = read_docs(corpus, args.limit)
    args.work.mkdir(parents=True, exist_ok=True)
    recording = args.work / f"forward-{corpus.stem}-{args.limit}+{WARM}-{args.recipe}.npz"
    if args.child == "record":
        print(json.dumps(record(args, rows, recording)))
        return
    if args.child:
        print(json.dumps(replay(args, rows, recording, args.child)))
        return

    def child(role: str, *extra: str) -> dict:
        argv = [sys.executable, __file__, "--shared-data", str(args.shared_data)]
        argv += ["--corpus", str(corpus), "--limit", str(args.limit), "--recipe", args.recipe]
        argv += ["--work", str(args.work), "--call-size", str(args.call_size)]
        argv += ["--child", role, *extra]
        done = subprocess.run(argv, check=True, capture_output=True, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    args.out.mkdir(parents=True, exist_ok=True)
    result_path = args.out / f"cpu-path-{args.limit}{args.tag}.json"
    result = {
        "command": "python benchmarks/cpu_path.py " + " ".join(sys.argv[1:]),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "documents": args.limit,
        "corpus": str(corpus),
        "recipe": args.recipe,
        "runs": [],
    }
    if not recording.exists():
        result["record"] = child("record")
        print("recorded:", result["record"], flush=True)
    for layout in args.layouts.split(","):
        best = None
        for _ in range(args.repeats):
            row = child(layout)
            print(json.dumps(row), flush=True)
            if best is None or row["docs_per_cpu_s"] > best["docs_per_cpu_s"]:
                best = row
        result["runs"].append(best)
        if args.profile:
            row = child(layout, "--profile")
            print(json.dumps(row), flush=True)
            result["runs"].append(row)
        result_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {result_path}")


if __name__ == "__main__":
    main()
