"""SIRA against plain BM25 on SciFact (the docs/benchmarks.md lexical table).

Two runs of ``argus sira evaluate`` on the test queries, both with the offline SmolLM2
(``--llm``, default the in-process transformers backend; a llama.cpp server serving the same GGUF
is faster):

1. the full corpus: BM25 and query-side SIRA (one LLM call per query);
2. ``--max-docs D`` (default 1000: every judged document plus a seeded sample): all four conditions,
   since corpus-side enrichment costs one LLM call per document (about 2 s each for SmolLM2-135M
   on 2 CPU cores, so 3 h for the 5,183 SciFact abstracts).

Replies are cached in ``--cache`` (by prompt version, model and input), so a rerun costs no LLM
call and the two runs share the query sketches. Results go to
``benchmarks/results/sira-<dataset>.json`` and the report to ``docs/reports/sira/README.md``.

``nox -s bench -- sira --llm openai:http://127.0.0.1:8765/v1@smollm2`` or
``python benchmarks/sira_bench.py --shared-data ../shared/data``; ``--report-only`` redraws.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _evaluate(
    dataset: Path, work: Path, conditions: str, args: argparse.Namespace, extra: list[str]
) -> dict:
    cmd = [sys.executable, "-m", "argus_ir.cli", "-q", "sira", "evaluate", str(dataset)]
    cmd += ["--out", str(work), "--overwrite", "--conditions", conditions, "--llm", args.llm]
    cmd += ["--cache", str(args.cache), "--weight", args.weight, *extra]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads((work / "results.json").read_text(encoding="utf-8"))[0]


def write_report(results_dir: Path, out: Path) -> Path:
    from argus_ir.eval import EvalResult, report_markdown

    results = [
        EvalResult.from_dict(json.loads(p.read_text(encoding="utf-8"))[0])
        for p in sorted(results_dir.glob("sira-*.json"))
    ]
    out.mkdir(parents=True, exist_ok=True)
    text = report_markdown(results, out).replace("# Retrieval evaluation", "# SIRA evaluation", 1)
    (out / "README.md").write_text(text, encoding="utf-8")
    return out / "README.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--datasets", default="scifact")
    parser.add_argument("--llm", default="transformers", help="an argus --llm spec")
    parser.add_argument("--weight", default="0.3", help="w of eq. 2 (several: one condition each)")
    parser.add_argument("--max-docs", type=int, default=1000, help="subset of the corpus-side run")
    parser.add_argument("--cache", type=Path, default=Path("runs") / "sira-cache")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--work", type=Path, default=Path("runs"))
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--report", type=Path, default=HERE.parent / "docs" / "reports" / "sira")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in [] if args.report_only else args.datasets.split(","):
        dataset = args.shared_data / "beir" / name
        work = args.work / f"sira-{name}"
        result = _evaluate(dataset, work, "original,sira-query", args, [])
        shutil.copyfile(work / "results.json", args.out / f"sira-{result['dataset']}.json")
        work = args.work / f"sira-{name}-sub{args.max_docs}"
        conditions = "original,sira-corpus,sira-query,sira-both"
        result = _evaluate(dataset, work, conditions, args, ["--max-docs", str(args.max_docs)])
        shutil.copyfile(work / "results.json", args.out / f"sira-{result['dataset']}.json")
    print("report:", write_report(args.out, args.report))


if __name__ == "__main__":
    main()
