"""``argus report``: the Markdown + PNG report of a saved audit, with the probe table when a
probe trained on it is given."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from argus_ir.cli.options import out_folder_option

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus report`` to the command's subparsers."""
    p = subparsers.add_parser("report", help="write the Markdown + PNG report of an audit")
    p.add_argument("--audit", type=Path, required=True)
    p.add_argument("--probe", type=Path, help="probe folder (adds the probe table)")
    out_folder_option(p, "report folder", inputs=lambda args: [args.audit, args.probe])
    return p


def run(args: argparse.Namespace) -> int:
    """Write the report of ``--audit`` (and ``--probe``) into ``--out``."""
    from argus_ir.audit import AuditResult
    from argus_ir.audit.report import write_report

    audit = AuditResult.load(args.audit)
    probe = None
    if args.probe is not None:
        from argus_ir.probes import ProbeTrainingResult

        probe = ProbeTrainingResult.from_saved(args.probe, audit)
    print(f"report: {write_report(audit, args.out, probe=probe)}")
    return 0
