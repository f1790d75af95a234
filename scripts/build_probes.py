"""Rebuild the probes shipped with argus-ir, through the ``argus`` command itself.

For each retriever: ``argus audit`` on the shared research data (the 10k-article KB joined with
FB15k-237, T-REx and CoDEx), then ``argus train-probe`` for each k, writing the probe into the
package data folder and a report per k into the work folder. Finally a JSON summary of held-out
metrics and reliability ceilings is written next to the reports (``docs/probes.md`` quotes it).

    nox -s probes                                   # both retrievers, k = 10 and 50
    python scripts/build_probes.py --shared-data ../shared/data --models minilm --ks 10

Paragraph vectors are cached (``--cache``), so a second run re-encodes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from argus_ir.cli import main as argus

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_PROBES = ROOT / "packages" / "argus-core" / "src" / "argus_ir" / "data" / "probes"


def _run(argv: list[str]) -> None:
    print("+ argus " + " ".join(argv), file=sys.stderr, flush=True)
    code = argus(argv)
    if code:
        raise SystemExit(code)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--models", default="minilm,mpnet")
    parser.add_argument("--ks", default="10,50")
    parser.add_argument("--label", default="empirical", choices=("empirical", "expected"))
    parser.add_argument("--budget", default="cpu", choices=("tiny", "cpu", "full"))
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "probes")
    parser.add_argument("--cache", type=Path, default=ROOT / ".argus-cache")
    parser.add_argument("--out", type=Path, default=PACKAGE_PROBES)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args()

    quiet = ["--quiet"] if args.quiet else []
    ks = [k.strip() for k in args.ks.split(",") if k.strip()]
    summary: dict[str, dict] = {}
    for model in (m.strip() for m in args.models.split(",") if m.strip()):
        audit_dir = args.work / model / "audit"
        if not (audit_dir / "audit.json").exists():
            _run(
                [
                    *quiet,
                    "audit",
                    "--data",
                    "shared",
                    "--shared-data",
                    str(args.shared_data),
                    "--retriever",
                    model,
                    "--cache",
                    str(args.cache),
                    "--out",
                    str(audit_dir),
                    "--report",
                ]
            )
        audit_meta = json.loads((audit_dir / "audit.json").read_text())
        for k in ks:
            probe_dir = args.out / f"{model}-k{k}"
            _run(
                [
                    *quiet,
                    "train-probe",
                    "--audit",
                    str(audit_dir),
                    "--k",
                    k,
                    "--label",
                    args.label,
                    "--budget",
                    args.budget,
                    "--out",
                    str(probe_dir),
                    "--report",
                    str(args.work / model / f"report-k{k}"),
                ]
            )
            card = json.loads((probe_dir / "card.json").read_text())
            summary[f"{model}-k{k}"] = {
                "retriever_id": card["retriever_id"],
                "family": card["family"],
                "label_kind": card["label_kind"],
                "metrics": card["metrics"],
                "reliability": audit_meta["reliability"][k],
                "n_targets": audit_meta["n_targets"],
                "mean_rps": audit_meta["mean_rps"][k],
            }
    args.work.mkdir(parents=True, exist_ok=True)
    out = args.work / "summary.json"
    out.write_text(json.dumps(summary, indent=2, allow_nan=False, default=str))
    print(f"summary: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
