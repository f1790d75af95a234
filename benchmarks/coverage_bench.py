"""The semantic-coverage report on SciFact: MiniLM, mpnet and BM25 (docs/reports/coverage).

Runs ``argus coverage`` on the SciFact test queries with 20 strata and, with ``--llm``, two gap
queries per uncovered stratum. Document vectors go to ``--cache``/vectors, so only the first run
pays for embedding the corpus: on 2 CPU cores (2026-11-25) that run took 79 minutes, 67 of them
mpnet's corpus embedding, and a rerun with the cache took 4 minutes. An interrupted run resumes
from the last saved chunk of 256 documents.

``nox -s bench -- coverage --llm openai:http://127.0.0.1:8765/v1@smollm2`` or
``python benchmarks/coverage_bench.py --shared-data ../shared/data``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--retrievers", default="minilm,mpnet,bm25")
    parser.add_argument("--llm", default=None, help="an --llm spec for gap queries (none: skip)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("runs") / "coverage-cache",
        help="document vectors and LLM replies (a rerun or a resumed run reuses them)",
    )
    parser.add_argument("--out", type=Path, default=HERE.parent / "docs" / "reports" / "coverage")
    args = parser.parse_args()
    cmd = [sys.executable, "-m", "argus_ir.cli", "-q", "coverage"]
    cmd += [str(args.shared_data / "beir" / args.dataset), "--out", str(args.out)]
    cmd += ["--overwrite"]  # the report folder of the last run is rewritten
    for name in args.retrievers.split(","):
        cmd += ["--retriever", name]
    cmd += ["--vector-cache", str(args.cache / "vectors")]
    if args.llm:
        cmd += ["--gap-queries", "2", "--llm", args.llm, "--cache", str(args.cache / "llm")]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
