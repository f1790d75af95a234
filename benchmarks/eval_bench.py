"""Retrieval quality of the remedies on the offline BEIR datasets (the docs/benchmarks.md tables).

For each retriever and dataset it runs ``argus evaluate`` (original, expansion, merged and
descriptor; with ``--ablations`` also the τ, k_aug and context-check sweeps of expansion) and
copies ``results.json`` to ``benchmarks/results/eval-<dataset>-<retriever>.json``. With
``--synthesis Q:D`` it adds, per retriever and dataset, a run on a subset (the first Q queries, D
documents: the judged ones plus a seeded sample) that includes LLM synthesis with the offline
SmolLM2 (``--llm``, default the in-process transformers backend; a llama.cpp server serving the
same GGUF is about twice as fast), saved as ``eval-<dataset>-subD-<retriever>.json``. Last, it draws the report over every
``eval-*.json`` in the results folder into ``docs/reports/eval/``.

Long: MiniLM takes about 13 (msmarco5k) to 44 (SciFact, with ablations) minutes on 2 CPU cores;
mpnet needs 23 minutes only to embed msmarco5k there (use a GPU); synthesis with SmolLM2 through a
llama.cpp server about 35 s per flagged SciFact document (two calls when the guard rejects).

``nox -s bench -- eval --models minilm --ablations`` or
``python benchmarks/eval_bench.py --shared-data ../shared/data --models minilm,mpnet``;
``--report-only`` redraws the report from the saved results; ``--max-docs D`` runs the main
conditions on a subset (how mpnet was measured on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ABLATIONS = ("tau=0.1,0.2,0.4,0.5", "k_aug=1,3", "context_threshold=0.15")
HERE = Path(__file__).parent


def _evaluate(dataset: Path, work: Path, model: str, remedy: str, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "argus_ir.cli", "-q", "evaluate", str(dataset)]
    cmd += ["--out", str(work), "--overwrite", "--retriever", model, "--remedy", remedy, *extra]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads((work / "results.json").read_text(encoding="utf-8"))[0]


def _keep(work: Path, result: dict, out: Path) -> None:
    retriever = result["retriever"].split("/")[-1]
    shutil.copyfile(work / "results.json", out / f"eval-{result['dataset']}-{retriever}.json")


def write_report(results_dir: Path, out: Path) -> Path:
    """Draw the evaluation report over every saved ``eval-*.json`` (one table, both charts)."""
    from argus_ir.eval import EvalResult, report_markdown

    results = [
        EvalResult.from_dict(json.loads(p.read_text(encoding="utf-8"))[0])
        for p in sorted(results_dir.glob("eval-*.json"))
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text(report_markdown(results, out), encoding="utf-8")
    return out / "README.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--datasets", default="scifact,msmarco5k")
    parser.add_argument("--models", default="minilm")
    parser.add_argument("--remedy", default="original,expansion,merged,descriptor")
    parser.add_argument("--ablations", action="store_true", help="add the expansion sweeps")
    parser.add_argument("--synthesis", metavar="Q:D", help="add a synthesis run on a subset")
    parser.add_argument(
        "--llm", default="transformers", help="the synthesis backend (an argus --llm spec)"
    )
    parser.add_argument("--synthesis-only", action="store_true", help="skip the full-dataset runs")
    parser.add_argument(
        "--max-docs",
        type=int,
        help="run the main conditions on a subset (every judged document plus a seeded sample)",
    )
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--work", type=Path, default=Path("runs"))
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--report", type=Path, default=HERE.parent / "docs" / "reports" / "eval")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for model in [] if args.report_only else args.models.split(","):
        for name in args.datasets.split(","):
            dataset = args.shared_data / "beir" / name
            if not args.synthesis_only:
                extra = [f"--ablate={a}" for a in ABLATIONS] if args.ablations else []
                work = args.work / f"eval-{name}-{model}"
                if args.max_docs:
                    extra += ["--max-docs", str(args.max_docs)]
                    work = args.work / f"eval-{name}-sub{args.max_docs}-{model}"
                result = _evaluate(dataset, work, model, args.remedy, extra)
                _keep(work, result, args.out)
            if args.synthesis:
                queries, docs = args.synthesis.split(":")
                work = args.work / f"eval-{name}-sub{docs}-{model}"
                sub = ["--max-queries", queries, "--max-docs", docs, "--llm", args.llm]
                result = _evaluate(dataset, work, model, f"{args.remedy},synthesis", sub)
                _keep(work, result, args.out)
    print("report:", write_report(args.out, args.report))


if __name__ == "__main__":
    main()
