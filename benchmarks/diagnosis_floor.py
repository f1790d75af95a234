"""How fast the diagnosis can be on this machine: its parts alone, and the floor they set.

The diagnosis runs spaCy's NER and the retriever's pass over the same texts. With both in one
process, NER in a thread beside torch (as before, and still on a GPU), the two share the cores,
and the diagnosis takes at least

    floor = encoder pass alone + NER alone / cores

(NER runs on one core; torch's pass, spread over all of them, gives up one core's share for as
long as NER runs). The default on a CPU now runs NER first, split over one worker process per
core, and then the retriever's pass: the same floor, with no thread waiting on another. This
measures, in one warm process and alternating the parts ``--repeats`` times (each part's fastest
run kept: the machine's noise is one-sided):

- ``st``: ``SentenceTransformer.encode`` of the same texts, batch 64 (plain embedding's (a)
  without its loads);
- ``encoder``: argus's retriever pass alone (``TokenEncoder.encode(first_window=True)``);
- ``ner``: NER alone in this process (``SpacyMentions.extract`` of the texts the diagnosis
  reads); ``ner, workers``: the same in the default's worker processes;
- ``diagnosis``: the default (``Argus().diagnoser``), over the ingest's batches of 256;
  ``diagnosis, NER beside``: the same batches with NER in a thread beside the encoder,

and reports ``diagnosis / st`` (the ingest bench's b/a without loads) beside ``floor / st``, and
the default against NER beside, round by round.

``python benchmarks/diagnosis_floor.py --shared-data ../shared/data --dataset entity-lists
--limit 1000`` (``nox -s bench -- diagnosis-floor ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingest_bench import DATASETS, _texts, _versions  # noqa: E402


def _timed(fn, runs: dict[str, list[float]], name: str) -> None:
    t0 = time.perf_counter()
    fn()
    runs.setdefault(name, []).append(time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    parser.add_argument("--limit", type=int, default=1000, help="documents (0: all)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from argus_ir import Argus
    from argus_ir.diagnose import Diagnoser
    from argus_ir.encoder.models import resolve_model
    from argus_ir.text.mentions import SpacyMentions

    corpus = DATASETS[args.dataset](args.shared_data)
    texts = [d.index_text for d in _texts(corpus, args.limit)]
    argus = Argus(show_progress=False)
    diagnoser = argus.diagnoser
    st = SentenceTransformer(str(resolve_model("minilm")), device="cpu")
    encoder, mentions = diagnoser.encoder, diagnoser.mentions
    read = [t[:end] for t, end in zip(texts, encoder.window_ends(texts), strict=True)]
    one = SpacyMentions(processes=1)  # NER in this process, beside the encoder (before)
    beside = Diagnoser(encoder, diagnoser.probe, one, tau=diagnoser.tau)
    size = argus.batch_size
    batches = [texts[i : i + size] for i in range(0, len(texts), size)]
    parts = {
        "st": lambda: st.encode(texts, batch_size=64, show_progress_bar=False),
        "encoder": lambda: list(encoder.encode(texts, first_window=True)),
        "ner": lambda: one.extract(read),
        "ner, workers": lambda: mentions.extract(read),
        # as the ingest streams them: the default's batches (NER ahead in workers where it has
        # more than one), and the same batches with NER in this process beside the encoder
        "diagnosis": lambda: [diagnoser.diagnose(b, window_only=True) for b in batches],
        "diagnosis, NER beside": lambda: [beside.diagnose(b, window_only=True) for b in batches],
    }
    # warm every path once (first shapes, first batches, the NER workers' start)
    for fn in parts.values():
        fn()
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for name, fn in parts.items():
            _timed(fn, runs, name)
            print(f"{name}: {runs[name][-1]:.2f} s", flush=True)
    best = {name: min(times) for name, times in runs.items()}
    cores = torch.get_num_threads()
    floor = best["encoder"] + best["ner"] / cores
    row = {
        "dataset": args.dataset,
        "documents": len(texts),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "versions": _versions(),
        "torch_threads": cores,
        "repeats": args.repeats,
        "seconds": {k: round(v, 2) for k, v in best.items()},
        "runs": {k: [round(x, 2) for x in v] for k, v in runs.items()},
        "floor_s": round(floor, 2),
        "ner_processes": mentions.processes,
        "diagnosis_over_st": round(best["diagnosis"] / best["st"], 3),
        "beside_over_st": round(best["diagnosis, NER beside"] / best["st"], 3),
        "diagnosis_over_beside_per_round": [
            round(a / b, 3)
            for a, b in zip(runs["diagnosis"], runs["diagnosis, NER beside"], strict=True)
        ],
        "floor_over_st": round(floor / best["st"], 3),
        "encoder_over_st": round(best["encoder"] / best["st"], 3),
        "ner_core_share_of_st": round(best["ner"] / (cores * best["st"]), 3),
    }
    text = json.dumps(row, indent=1)
    print(text)
    out = args.out or HERE / "results" / f"diagnosis-floor-{args.dataset}-{len(texts)}.json"
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
