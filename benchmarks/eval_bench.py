"""Retrieval quality of the remedies on the offline BEIR datasets (the docs/benchmarks.md table).

Runs ``argus evaluate`` for each retriever over SciFact (test) and msmarco5k, with the original,
expansion and descriptor conditions, and copies each ``results.json`` into
``benchmarks/results/eval-<dataset>-<retriever>.json``. Long: about 25 minutes per retriever and
dataset for MiniLM on 2 CPU cores, several times that for mpnet.

``nox -s bench -- eval --models minilm`` or
``python benchmarks/eval_bench.py --shared-data ../shared/data --models minilm,mpnet``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--datasets", default="scifact,msmarco5k")
    parser.add_argument("--models", default="minilm")
    parser.add_argument("--remedy", default="original,expansion,descriptor")
    parser.add_argument("--work", type=Path, default=Path("runs"))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for model in args.models.split(","):
        for dataset in args.datasets.split(","):
            work = args.work / f"eval-{dataset}-{model}"
            cmd = [
                sys.executable,
                "-m",
                "argus_ir.cli",
                "-q",
                "evaluate",
                str(args.shared_data / "beir" / dataset),
                "--out",
                str(work),
                "--model",
                model,
                "--remedy",
                args.remedy,
            ]
            print("$", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
            result = json.loads((work / "results.json").read_text(encoding="utf-8"))[0]
            name = result["retriever"].split("/")[-1]
            shutil.copyfile(work / "results.json", args.out / f"eval-{dataset}-{name}.json")


if __name__ == "__main__":
    main()
