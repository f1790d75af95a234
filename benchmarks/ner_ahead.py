"""NER a batch ahead of the retriever's pass, measured on a CPU against a stand-in for a GPU.

On a GPU machine argus runs NER in worker processes, apart from the process that feeds the card,
and hands each streamed batch to NER before the pass reads the batch before it (issue 49). Then
the stream should take about as long as its slowest stage, not the sum of its stages. This bench
checks that where no GPU is at hand: the retriever's model is replaced by a device of fixed cost
(``--device-ms`` per window, spent asleep with the interpreter released, as a CUDA call waits),
while everything around it is argus's own (tokenising, windows, pooling, NER, probe, KB lookups,
views). In one warm process it times, fastest of ``--repeats``:

- ``ner``: NER alone over the ingest's batches, in the worker processes argus uses on a GPU;
- ``pass``: the stand-in retriever pass alone over the same batches;
- ``rest``: the probe and the remedy (KB lookups, view text) alone, from finished diagnoses;
- ``beside``: the stream as argus ran it on a GPU before, NER in a thread of this process beside
  the pass, batch by batch;
- ``ahead``: the stream as it runs on a GPU now, NER in worker processes a batch ahead,

and reports ``ahead`` against ``max(ner, pass + rest)`` and against their sum.

``python benchmarks/ner_ahead.py --shared-data ../shared/data --dataset entity-lists --limit 1000``
(``nox -s bench -- ner-ahead ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingest_bench import DATASETS, _texts, _versions  # noqa: E402

OPS_PER_PASS = 120
"""Calls a stand-in forward pass makes, each releasing the interpreter (a 6-layer encoder's
forward launches about that many kernels, and torch releases the GIL around each)."""


def stand_in(encoder, device_ms: float):
    """``encoder`` with its model replaced by a device that takes ``device_ms`` per window, spent
    in :data:`OPS_PER_PASS` waits (states drawn from a fixed random block, so the probe's
    predictions vary as with real states)."""
    pool = np.random.default_rng(0).standard_normal((1024, encoder.dim)).astype(np.float32)

    def forward(batch_ids, pad_to=None):
        wait = device_ms * len(batch_ids) / 1000 / OPS_PER_PASS
        for _ in range(OPS_PER_PASS):
            time.sleep(wait)
        states = [
            pool[(i * 7) % 512 : (i * 7) % 512 + len(ids)].copy() for i, ids in enumerate(batch_ids)
        ]
        docs = [
            pool[1000 - i % 24] / np.linalg.norm(pool[1000 - i % 24]) for i in range(len(batch_ids))
        ]
        return states, docs

    encoder._forward = forward
    return encoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="entity-lists")
    parser.add_argument("--limit", type=int, default=1000, help="documents (0: all)")
    parser.add_argument("--device-ms", type=float, default=8.0, help="stand-in cost per window")
    parser.add_argument("--ner-processes", type=int, default=0, help="0: argus's GPU default")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from argus_ir import Argus, RemedyStats
    from argus_ir.diagnose import Diagnoser, ner_processes
    from argus_ir.remedy import apply_remedy
    from argus_ir.text.mentions import SpacyMentions

    docs = _texts(DATASETS[args.dataset](args.shared_data), args.limit)
    base = Argus(device="cpu")
    encoder = stand_in(base._get("encoder"), args.device_ms)
    probe, kb = base.diagnoser.probe, base.reference_kb
    processes = args.ner_processes or ner_processes("cuda")
    apart = SpacyMentions(processes=processes, apart=True)
    here = SpacyMentions(processes=1)

    def argus_with(mentions, ner_apart: bool) -> Argus:
        argus = Argus(device="cpu")
        argus._loaded.update(
            encoder=encoder,
            kb=kb,
            diagnoser=Diagnoser(encoder, probe, mentions, ner_apart=ner_apart),
        )
        return argus

    ahead, beside = argus_with(apart, True), argus_with(here, False)
    batches = list(ahead._batches(docs, False))
    texts = [[d.index_text for d in b] for b in batches]
    read = [[t[:end] for t, end in zip(b, encoder.window_ends(b), strict=True)] for b in texts]
    diagnoses = [ahead._diagnose(b, window_only=True) for b in batches]

    def rest() -> None:
        for batch, found in zip(batches, diagnoses, strict=True):
            for row in found:
                for entity in row.entities:
                    probe.predict(np.zeros((len(entity.mentions), encoder.dim), np.float32))
            list(
                apply_remedy(
                    [(d.id, d.index_text) for d in batch],
                    found,
                    kb,
                    kind=ahead.remedy,
                    k_aug=ahead.k_aug,
                    batch_size=len(batch),
                    stats=RemedyStats(),
                )
            )

    def stream(argus: Argus) -> None:
        for _ in argus.process_batches(docs, stats=RemedyStats()):
            pass

    parts = {
        "ner": lambda: [apart.extract(r) for r in read],
        "pass": lambda: [list(encoder.encode(t, first_window=True)) for t in texts],
        "rest": rest,
        "beside": lambda: stream(beside),
        "ahead": lambda: stream(ahead),
    }
    for fn in parts.values():  # warm: first shapes, the workers' start, the KB's caches
        fn()
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name, fn in parts.items():
            t0 = time.perf_counter()
            fn()
            runs.setdefault(name, []).append(time.perf_counter() - t0)
            print(f"{name}: {runs[name][-1]:.2f} s", flush=True)
    apart.close()
    best = {name: min(times) for name, times in runs.items()}
    serial = best["ner"] + best["pass"] + best["rest"]
    bound = max(best["ner"], best["pass"] + best["rest"])
    row = {
        "dataset": args.dataset,
        "documents": len(docs),
        "batches": len(batches),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "versions": _versions(),
        "device_ms_per_window": args.device_ms,
        "ner_processes": processes,
        "repeats": args.repeats,
        "seconds": {k: round(v, 2) for k, v in best.items()},
        "runs": {k: [round(x, 2) for x in v] for k, v in runs.items()},
        "sum_of_stages_s": round(serial, 2),
        "slowest_stage_s": round(bound, 2),
        "ahead_over_slowest": round(best["ahead"] / bound, 3),
        "ahead_over_sum": round(best["ahead"] / serial, 3),
        "beside_over_slowest": round(best["beside"] / bound, 3),
        "ahead_over_beside": round(best["ahead"] / best["beside"], 3),
    }
    text = json.dumps(row, indent=1)
    print(text)
    name = f"ner-ahead-{args.dataset}-{len(docs)}.json"
    out = args.out or HERE / "results" / name
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
