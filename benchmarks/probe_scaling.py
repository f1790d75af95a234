"""How probe quality grows with the number of training entities (the learning curve of docs/probes.md).

For each audited retriever and k: the entity split of ``argus train-probe`` (seed 0, 70/15/15), then a
Ridge probe (alpha from the App. C.1 grid, chosen on the validation split) trained on a seeded
random fraction of the train entities and measured on the whole, untouched test split. Five draws
per fraction. A straight line of test Pearson r against log2(train entities) gives the growth per
doubling, and from it the train size at which r would reach the paper's 0.65, if the trend held.
The two reliability ceilings of the audit are printed beside the curve.

The audits come from ``nox -s probes`` (``runs/probes/<model>/audit``); a missing one is run first.

    nox -s bench -- probe-scaling
    python benchmarks/probe_scaling.py --shared-data ../shared/data --models minilm --ks 10
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FRACTIONS = (0.125, 0.25, 0.5, 1.0)
DRAWS = 5
PAPER_R = 0.65


def _audit(model: str, work: Path, shared: Path, cache: Path):  # type: ignore[no-untyped-def]
    from argus_ir.audit import AuditResult
    from argus_ir.cli import main as argus

    folder = work / model / "audit"
    if not (folder / "audit.json").exists():
        argv = ["audit", "--data", "shared", "--shared-data", str(shared), "--retriever", model]
        code = argus([*argv, "--cache", str(cache), "--out", str(folder), "--overwrite"])
        if code:
            raise SystemExit(code)
    return AuditResult.load(folder)


def _ridge_r(X, y, train, val, test) -> float:  # type: ignore[no-untyped-def]
    from argus_ir.probes import RidgeProbe
    from argus_ir.probes.metrics import regression_metrics

    grid = [{"alpha": float(a), "standardize": False} for a in np.logspace(-6, 3, 10)]
    fits = RidgeProbe.fit_grid(grid, X[train], y[train], X[val], y[val])
    best = min(fits, key=lambda m: regression_metrics(y[val], m.predict(X[val]))["rmse"])
    return regression_metrics(y[test], best.predict(X[test]))["pearson"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--models", default="minilm,mpnet")
    parser.add_argument("--ks", default="10,50")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "probes")
    parser.add_argument("--cache", type=Path, default=ROOT / ".argus-cache")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()

    from argus_ir.probes.train import split_by_entity

    rows = []
    for model in args.models.split(","):
        audit = _audit(model, args.work, args.shared_data, args.cache)
        split = split_by_entity(audit.ids, seed=0)
        X = audit.vectors.astype(np.float64)
        for k in (int(x) for x in args.ks.split(",")):
            y = audit.label(k)
            rng = np.random.default_rng(0)
            curve = []
            for frac in FRACTIONS:
                n = max(2, round(frac * split.train.size))
                draws = DRAWS if frac < 1 else 1
                rs = [
                    _ridge_r(X, y, rng.choice(split.train, n, replace=False), split.val, split.test)
                    for _ in range(draws)
                ]
                curve.append({"train": n, "pearson": float(np.mean(rs)), "sd": float(np.std(rs))})
            logs = np.log2([c["train"] for c in curve])
            slope, icept = np.polyfit(logs, [c["pearson"] for c in curve], 1)
            needed = 2 ** ((PAPER_R - icept) / slope) if slope > 0 else math.inf
            rel = audit.reliability[k]
            row = {
                "retriever": audit.encoder.retriever_id,
                "k": k,
                "curve": curve,
                "r_per_doubling": float(slope),
                "train_entities_for_r_065": float(needed),
                "ceiling_split_half": rel.ceiling,
                "ceiling_all_targets": rel.all_ceiling,
                "test_entities": int(split.test.size),
            }
            rows.append(row)
            points = ", ".join(f"{c['train']}: {c['pearson']:.3f}" for c in curve)
            print(
                f"{model} k={k}: r by train size {points}; +{slope:.3f} per doubling; "
                f"r = {PAPER_R} at ~{needed:,.0f} train entities; ceilings "
                f"{rel.ceiling:.3f} (split-half) / {rel.all_ceiling:.3f} (all targets)",
                file=sys.stderr,
            )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "probe-scaling.json"
    path.write_text(json.dumps({"fractions": FRACTIONS, "draws": DRAWS, "rows": rows}, indent=2))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
