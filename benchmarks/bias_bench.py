"""The ColDeR bias report of docs/reports/bias: MiniLM, mpnet and BM25 on the shared Re-DocRED dev file.

Runs ``argus bias`` with the foil test repeated after ARGUS's descriptor and expansion remedies and
writes the report (README.md, bias.png, results.json) into ``docs/reports/bias``. Measured on 2 CPU
cores (partly shared with other jobs): BM25, MiniLM and mpnet over the six settings, with
MiniLM's foil reruns, took about 32 minutes; mpnet's descriptor rerun about 10 more; its expansion
rerun (every expansion view of 250 foil documents embedded with mpnet) had not finished after 25
more. Give it two hours, or run ``--models minilm`` first. The report is saved after every step
and the run resumes (``argus bias --resume``): a stopped run, started again, does only the rest.

``nox -s bench -- bias`` or ``python benchmarks/bias_bench.py --shared-data ../shared/data``.
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
    parser.add_argument("--models", default="minilm,mpnet")
    parser.add_argument("--augment", default="descriptor,expansion")
    parser.add_argument("--out", type=Path, default=HERE.parent / "docs" / "reports" / "bias")
    args = parser.parse_args()
    cmd = [sys.executable, "-m", "argus_ir.cli", "-q", "bias"]
    cmd += [str(args.shared_data / "redocred" / "dev_revised.json"), "--out", str(args.out)]
    cmd += ["--overwrite"]  # the report folder of the last run is rewritten
    for model in args.models.split(","):
        cmd += ["--retriever", model]
    cmd += ["--augment", args.augment, "--resume"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
