"""``argus train-probe``: sweep probe families on an audit's mention vectors and RPS, keep the
best by validation RMSE and save it with its card (the card itself is the core's,
:func:`argus_ir.probes.train.audit_card_fields`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from argus_ir.cli.options import out_folder_option

__all__ = ["add_arguments", "add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus train-probe`` to the command's subparsers."""
    p = subparsers.add_parser(
        "train-probe",
        help="train probes that predict RPS from mention embeddings",
        description="Sweeps Ridge, XGBoost and MLP probes (App. C.1), selects by validation RMSE "
        "and saves the best with a JSON card.",
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``argus train-probe``."""
    p.add_argument("--audit", type=Path, required=True, help="folder written by `argus audit`")
    p.add_argument("--k", type=int, default=10, help="which audited k to learn")
    p.add_argument(
        "--label",
        choices=("empirical", "expected"),
        default="empirical",
        help="empirical RPS (sampled pools, the paper's) or its exact expectation",
    )
    p.add_argument("--families", default="ridge,xgboost,mlp", help="probe families to sweep")
    p.add_argument("--budget", choices=("tiny", "cpu", "full"), default="cpu", help="sweep size")
    p.add_argument("--tau", type=float, default=0.3, help="flagging threshold recorded in the card")
    p.add_argument("--seed", type=int, default=0)
    out_folder_option(p, "probe folder to write", inputs=lambda args: [args.audit])
    p.add_argument("--report", type=Path, help="also write the report (with calibration) here")


def run(args: argparse.Namespace) -> int:
    """Train on the audit in ``--audit``, save the selected probe into ``--out``."""
    from argus_ir.audit import AuditResult
    from argus_ir.probes.train import train_probe_on_audit

    audit = AuditResult.load(args.audit)
    result = train_probe_on_audit(
        audit,
        args.k,
        label_kind=args.label,
        tau=args.tau,
        families=tuple(f.strip() for f in args.families.split(",") if f.strip()),
        budget=args.budget,
        seed=args.seed,
        show_progress=not args.quiet,
    )
    result.probe.save(args.out)
    m = result.probe.card.metrics["test"]
    print(
        f"best probe: {result.probe.card.family}  test RMSE {m['rmse']:.3f}  "
        f"Pearson {m['pearson']:.3f}  tercile accuracy {m['accuracy']:.3f}  -> {args.out}"
    )
    if args.report:
        from argus_ir.audit.report import write_report

        print(f"report: {write_report(audit, args.report, probe=result)}")
    return 0
