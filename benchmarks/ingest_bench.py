"""Ingest cost of what ships (``Argus()`` at its defaults) against plain embedding, stage by stage.

Each side runs in a fresh Python process, model loads and imports included, one after the other:

(a) plain: import sentence-transformers, load the retriever, ``encode`` every document (title +
    text) in fp32: what any dense ingest pays;
(c) argus: ``Argus()`` (or ``--remedy``/``--set`` options), its whole augment stream written as
    JSON lines (what ``argus augment`` writes), then the new views embedded with the same
    sentence-transformers model. The originals' vectors are not embedded again: the diagnosis pass
    computes each document's retriever vector (``Diagnosis.doc_vector``) in the same forward pass.

Reported: c/a against the floor ``1 + (g - 1)`` (g = index growth), time to the first output
record from process start on both sides, and a stage table as shares of (a): imports and model /
KB loads, NER (on a CPU, in one worker process per core ahead of the encoder pass; on a GPU in
worker processes apart from the pass, a batch ahead of it), the encoder pass, the probe, KB lookups
per source (the gazetteer's one-time opening apart), view text
(the remedy less its lookups), output, view embedding. ``--repeats`` alternates a and c and keeps
each side's fastest run (the machine's noise is one-sided).

``--device cuda`` runs both sides (the plain encoder, Argus's retriever and the view embedding) on
the GPU (default ``cpu``); there each side's row also gets its docs/s and the GPU's utilisation
(mean, p50) and memory, sampled every 0.1 s through NVML (``nvidia-ml-py``) while it works.
``--plain-precision bf16`` (or ``fp16``) runs the plain encoder and the view embedding under
autocast, as Argus's diagnosis pass runs at ``precision="auto"`` (bf16 on Ampere-or-newer GPUs);
default fp32, what an index holds. ``--corpus`` reads the dataset from an explicit file.

``nox -s bench -- ingest`` (SciFact, all documents) or ``python benchmarks/ingest_bench.py
--shared-data ../shared/data [--dataset entity-lists] [--limit 1000]``.
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # before any heavy import: a fresh process's clock

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from contextlib import nullcontext  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
DATASETS = {
    "scifact": lambda shared: shared / "beir" / "scifact" / "corpus.jsonl",
    "entity-lists": lambda shared: (
        HERE.parent / "runs" / "datasets" / "entity-lists" / "corpus.jsonl"
    ),
}


class Clock:
    """Wall time inside wrapped callables, counted once however deeply the calls nest."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._depth = 0

    def wrap(self, fn):
        def timed(*args, **kwargs):
            self._depth += 1
            t0 = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds += time.perf_counter() - t0
                    self.calls += 1
            return self._iterate(out) if hasattr(out, "__next__") else out

        return timed

    def _iterate(self, iterator):
        while True:
            t0 = time.perf_counter()
            try:
                item = next(iterator)
            except StopIteration:
                return
            finally:
                self.seconds += time.perf_counter() - t0
            yield item


class GpuSampler:
    """GPU utilisation (%) and memory used, every ``every`` seconds in a thread, through NVML."""

    def __init__(self, device: str, every: float = 0.1) -> None:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        index = int(device.partition(":")[2] or 0)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        if index < len(visible) and visible[index].strip().isdigit():
            index = int(visible[index])  # NVML counts the machine's GPUs, not the visible ones
        self._nvml, self._handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
        self.name = pynvml.nvmlDeviceGetName(self._handle)
        self.every, self.util, self.mem = every, [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.util.append(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)
            self.mem.append(self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used)
            self._stop.wait(self.every)

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        import statistics

        import torch

        util = self.util or [0]
        return {
            "gpu": str(self.name),
            "samples": len(self.util),
            "util_mean_pct": round(statistics.fmean(util), 1),
            "util_p50_pct": statistics.median(util),
            "mem_used_max_mib": round(max(self.mem or [0]) / 2**20),
            "torch_peak_alloc_mib": round(torch.cuda.max_memory_allocated() / 2**20),
        }


def _sampler(device: str):
    """A :class:`GpuSampler` on CUDA (None without NVML), else nothing."""
    if not device.startswith("cuda"):
        return None
    try:
        return GpuSampler(device)
    except Exception as exc:  # no nvidia-ml-py or no driver: time the run all the same
        print(f"GPU sampling off: {exc}", file=sys.stderr)
        return None


def _autocast(device: str, precision: str):
    """Autocast to ``precision`` (bf16 or fp16) on ``device``; fp32 runs as loaded."""
    if precision == "fp32":
        return nullcontext()
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    return torch.autocast(torch.device(device).type, dtype=dtype)


def _patch(owner, name: str, clock: Clock) -> None:
    """Time ``owner.name`` with ``clock`` (frozen dataclasses too)."""
    object.__setattr__(owner, name, clock.wrap(getattr(owner, name)))


def _texts(corpus: Path, limit: int) -> list:
    from argus_ir.audit.loaders import read_documents

    docs = read_documents(corpus)
    return docs[:limit] if limit else docs


def _versions() -> dict[str, str]:
    """The versions that set the speed of both sides (they move it between installs)."""
    from importlib import metadata

    names = ("torch", "transformers", "sentence-transformers", "spacy")
    return {name: metadata.version(name) for name in names}


def run_plain(
    corpus: Path, limit: int, model: str, device: str = "cpu", precision: str = "fp32"
) -> dict:
    """(a): sentence-transformers alone, from import to the last vector."""
    from sentence_transformers import SentenceTransformer

    from argus_ir.encoder.models import resolve_model

    imported = time.perf_counter()
    st = SentenceTransformer(str(resolve_model(model)), device=device)
    loaded = time.perf_counter()
    docs = _texts(corpus, limit)
    texts = [d.index_text for d in docs]
    t0 = time.perf_counter()
    with _autocast(device, precision):
        st.encode(texts[:1], show_progress_bar=False)  # a streaming ingest's first vector
    first_s = time.perf_counter() - _START
    first_encode = time.perf_counter() - t0
    sampler = _sampler(device)
    t0 = time.perf_counter()
    with sampler or nullcontext(), _autocast(device, precision):
        st.encode(texts, batch_size=64, show_progress_bar=False)
    encode_s = time.perf_counter() - t0
    gpu = {"gpu_work": sampler.summary()} if sampler else {}
    return {
        **gpu,
        "param_dtype": str(next(st.parameters()).dtype),
        "import_s": imported - _START,
        "load_s": loaded - imported,
        "encode_s": encode_s,
        "first_record_s": first_s,
        "total_s": time.perf_counter()
        - _START
        - first_encode,  # the first vector not counted twice
        "documents": len(docs),
    }


def run_argus(
    corpus: Path,
    limit: int,
    options: dict,
    out_file: Path,
    device: str = "cpu",
    view_precision: str = "fp32",
    ner_processes: int = 0,
) -> dict:
    """(c): ``Argus(**options)`` from import to the last view's vector, with its stage clocks.
    ``ner_processes`` > 0 is ``Argus(ner_processes=)`` (0: its default)."""
    import argus_ir.pipeline as pipeline
    from argus_ir import Argus, RemedyStats
    from argus_ir.runners.stream import json_line, view_record

    imported = time.perf_counter()
    extra = {"ner_processes": ner_processes} if ner_processes > 0 else {}
    argus = Argus(**{"device": device, **options, **extra})
    loads = {}
    for part in ("encoder", "diagnoser", "kb", "context", "llm"):
        t0 = time.perf_counter()
        argus._get(part)
        loads[part] = time.perf_counter() - t0
    diagnoser, kb = argus.diagnoser, argus.reference_kb
    clocks = {name: Clock() for name in ("ner", "encoder", "probe", "remedy", "lookups")}
    _patch(diagnoser.mentions, "extract", clocks["ner"])
    _patch(diagnoser.encoder, "encode", clocks["encoder"])
    _patch(diagnoser.probe, "predict", clocks["probe"])
    _patch(pipeline, "apply_remedy", clocks["remedy"])
    inner = getattr(kb, "kb", kb)  # under a match wrapper, the KB it wraps
    for target in {id(kb): kb, id(inner): inner}.values():
        _patch(target, "lookup", clocks["lookups"])
    sources = dict(getattr(inner, "sources", None) or {"kb": inner})
    for name, source in sources.items():
        clock = clocks[f"lookups: {name}"] = Clock()
        for method in ("lookup", "knows", "within", "known", "titled", "aliased"):
            if callable(getattr(source, method, None)):
                _patch(source, method, clock)
        if callable(getattr(source, "_load", None)):
            clocks[f"open: {name}"] = Clock()
            _patch(source, "_load", clocks[f"open: {name}"])

    docs = _texts(corpus, limit)
    stats = RemedyStats()
    views: list[str] = []
    first_s = None
    writing = 0.0
    sampler = _sampler(device)
    if sampler:
        sampler.__enter__()
    t_stream = time.perf_counter()
    with open(out_file, "w", encoding="utf-8") as fh:
        for doc_batch in argus.process_batches(docs, stats=stats):
            t0 = time.perf_counter()
            for doc, _, entries in doc_batch:
                for view in entries:
                    fh.write(json_line(view_record(doc, view)))
                    if not view.is_original:
                        views.append(view.text)
            fh.flush()
            writing += time.perf_counter() - t0
            if first_s is None:
                first_s = time.perf_counter() - _START
    stream_s = time.perf_counter() - t_stream
    t0 = time.perf_counter()  # the views' embedder (sentence-transformers) is loaded only now
    st = diagnoser.encoder.sentence_transformer
    view_load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if views:
        with _autocast(device, view_precision):
            st.encode(views, batch_size=64, show_progress_bar=False)
    view_embed_s = time.perf_counter() - t0
    if sampler:
        sampler.__exit__(None, None, None)
    total = time.perf_counter() - _START
    return {
        **({"gpu_work": sampler.summary()} if sampler else {}),
        "device": diagnoser.encoder.device,
        "ner_processes": diagnoser.mentions.processes,
        "import_s": imported - _START,
        "loads_s": loads,
        "stream_s": stream_s,
        "first_record_s": first_s,
        "clocks": {name: round(c.seconds, 3) for name, c in clocks.items()},
        "lookup_calls": clocks["lookups"].calls,
        "output_s": writing,
        "view_embed_s": view_embed_s,
        "view_load_s": view_load_s,
        "total_s": total,
        "documents": len(docs),
        "views": len(views),
        "flagged_entities": stats.flagged_entities,
        "index_growth": (len(docs) + len(views)) / max(len(docs), 1),
        "precision": diagnoser.encoder.precision,
        "model": diagnoser.encoder.info.retriever_id,
        "kb_fingerprint": kb.fingerprint,
    }


def _child(role: str, args: argparse.Namespace, result: Path) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--shared-data",
        str(args.shared_data),
        "--dataset",
        args.dataset,
        "--limit",
        str(args.limit),
        "--model",
        args.model,
        "--device",
        args.device,
        "--plain-precision",
        args.plain_precision,
        "--ner-processes",
        str(args.ner_processes),
        *(["--corpus", str(args.corpus)] if args.corpus else []),
        "--role",
        role,
        "--result",
        str(result),
        *(["--remedy", args.remedy] if args.remedy else []),
        *[part for s in args.set for part in ("--set", s)],
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1"}
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env)
    row = json.loads(result.read_text())
    row["process_s"] = time.perf_counter() - t0  # interpreter start and exit included
    return row


def _options(args: argparse.Namespace) -> dict:
    options: dict = {"retriever": args.model}
    if args.remedy:
        options["remedy"] = args.remedy
    for item in args.set:
        key, _, value = item.partition("=")
        try:  # numbers, true/false/null, lists and objects as JSON; anything else as text
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--dataset", default="scifact", choices=sorted(DATASETS))
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--corpus", type=Path, help="read the dataset from this file")
    parser.add_argument("--device", default="cpu", help="torch device of both sides, e.g. cuda")
    parser.add_argument(
        "--plain-precision",
        default="fp32",
        choices=("fp32", "bf16", "fp16"),
        help="the plain encoder's and the view embedding's precision (autocast)",
    )
    parser.add_argument(
        "--ner-processes",
        type=int,
        default=0,
        help="Argus(ner_processes=N) on the argus side (0: its default)",
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents")
    parser.add_argument("--remedy", default=None, help="a remedy other than the default")
    parser.add_argument(
        "--set", action="append", default=[], help="another Argus setting, KEY=VALUE"
    )
    parser.add_argument("--repeats", type=int, default=1, help="a and c alternately, N times each")
    parser.add_argument("--tag", default="", help="a suffix for the result file's name")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--role", choices=("plain", "argus"), help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    corpus = args.corpus or DATASETS[args.dataset](args.shared_data)
    if not corpus.is_file():
        sys.exit(
            f"{corpus} not found; build it with "
            "`python benchmarks/entity_set.py --shared-data ../shared/data`"
        )
    if args.role:
        with tempfile.TemporaryDirectory() as tmp:
            if args.role == "plain":
                row = run_plain(corpus, args.limit, args.model, args.device, args.plain_precision)
            else:
                row = run_argus(
                    corpus,
                    args.limit,
                    _options(args),
                    Path(tmp) / "out.jsonl",
                    args.device,
                    args.plain_precision,
                    args.ner_processes,
                )
        args.result.write_text(json.dumps(row))
        return

    plains, arguses = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            plains.append(_child("plain", args, Path(tmp) / f"plain-{r}.json"))
            arguses.append(_child("argus", args, Path(tmp) / f"argus-{r}.json"))
    plain = min(plains, key=lambda row: row["total_s"])
    argus = min(arguses, key=lambda row: row["total_s"])
    a, c = plain["total_s"], argus["total_s"]
    g = argus["index_growth"]
    clocks = argus["clocks"]
    lookups = clocks["lookups"]
    per_source = sum(v for k, v in clocks.items() if k.startswith("lookups: "))
    stages = {
        "imports + loads": argus["import_s"] + sum(argus["loads_s"].values()),
        "NER": clocks["ner"],
        "encoder pass": clocks["encoder"],
        "probe": clocks["probe"],
        **{
            k: v - clocks.get(f"open: {k.removeprefix('lookups: ')}", 0.0)
            for k, v in clocks.items()
            if k.startswith("lookups: ")
        },
        **{k: v for k, v in clocks.items() if k.startswith("open: ")},
        "lookups: routing and checks": lookups - per_source,
        "view text": clocks["remedy"] - lookups,
        "output": argus["output_s"],
        "view embedder load": argus.get("view_load_s", 0.0),
        "view embedding": argus["view_embed_s"],
    }
    row = {
        "dataset": args.dataset,
        "model": argus["model"],
        "documents": argus["documents"],
        "options": _options(args),
        "precision": argus["precision"],
        "kb": argus["kb_fingerprint"],
        "a_plain_s": round(a, 2),
        "a_import_load_s": round(plain["import_s"] + plain["load_s"], 2),
        "a_encode_s": round(plain["encode_s"], 2),
        "c_argus_s": round(c, 2),
        "c_over_a": round(c / a, 3),
        "index_growth": round(g, 3),
        "floor_1_plus_g_minus_1": round(g, 3),
        "bar_g_plus_0.3": round(g + 0.3, 3),
        # the diagnosis's wall time (NER and the encoder pass, probe) over plain encoding
        "b_over_a_encode": round(
            (argus["stream_s"] - clocks["remedy"] - argus["output_s"]) / plain["encode_s"], 3
        ),
        "first_record_plain_s": round(plain["first_record_s"], 2),
        "first_record_argus_s": round(argus["first_record_s"], 2),
        "views": argus["views"],
        "lookup_calls": argus["lookup_calls"],
        "stages_s": {k: round(v, 2) for k, v in stages.items()},
        "stages_share_of_a": {k: round(v / a, 3) for k, v in stages.items()},
        "loads_s": {k: round(v, 2) for k, v in argus["loads_s"].items()},
        "runs_a_s": [round(p["total_s"], 2) for p in plains],
        "runs_c_s": [round(p["total_s"], 2) for p in arguses],
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "versions": _versions(),
        "ner_processes": argus["ner_processes"],
    }
    row["precision_sides"] = {  # the plain encoder's, Argus's diagnosis pass's, its views'
        "plain": args.plain_precision,
        "plain_params": plain["param_dtype"],
        "argus_diagnosis": argus["precision"],
        "argus_view_embedding": args.plain_precision,
    }
    if args.device != "cpu":
        n = argus["documents"]
        row["device"] = {"plain": args.device, "argus": argus["device"]}
        row["docs_per_s"] = {
            "plain_encode": round(n / plain["encode_s"], 1),
            "plain_total": round(n / a, 1),
            "argus_stream_and_views": round(n / (argus["stream_s"] + argus["view_embed_s"]), 1),
            "argus_total": round(n / c, 1),
        }
        row["gpu_plain_encode"] = plain.get("gpu_work")
        row["gpu_argus_stream_and_views"] = argus.get("gpu_work")
    args.out.mkdir(parents=True, exist_ok=True)
    size = f"-{row['documents']}" if args.limit else ""
    name = f"ingest-default-{args.dataset}-{row['model'].split('/')[-1]}{size}{args.tag}"
    if args.device != "cpu":
        name += f"-{args.device.replace(':', '')}"
    (args.out / f"{name}.json").write_text(json.dumps(row, indent=2) + "\n")
    print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
