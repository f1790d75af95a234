"""``argus audit``: RPS_k of every entity with related entities, from the sample, the shared
research data or the user's own entities and edges files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir.cli.common import encoder
from argus_ir.cli.options import degree_cap, ints, out_folder_option, retriever_options
from argus_ir.errors import ArgusInputError

if TYPE_CHECKING:
    from argus_ir.audit.entities import AuditData

__all__ = ["add_arguments", "add_parser", "load_data", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus audit`` to the command's subparsers."""
    p = subparsers.add_parser(
        "audit",
        help="compute RPS_k for every entity with related entities",
        description="Encode each entity's paragraph once, pool its mention, and rank it for "
        "each related entity against N-1 neutrals not linked to that entity (paper §3.2).",
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``argus audit``."""
    p.add_argument(
        "--data",
        default="sample",
        help="'sample' (embedded), 'shared' (the research KB + KGs, needs --shared-data) or an "
        "entities file (JSONL/Parquet/CSV with id, label, paragraph) with --edges",
    )
    p.add_argument("--edges", type=Path, help="edges file (id pairs) for a user entities file")
    p.add_argument("--shared-data", type=Path, help="folder with kb/ and kg/ (for --data shared)")
    p.add_argument(
        "--sources",
        default="fb15k237,trex,codex",
        help="KGs to join for --data shared (default: all three)",
    )
    p.add_argument(
        "--max-degree",
        type=degree_cap,
        default=100,
        help="drop the edges of hub entities with more related entities than this "
        "(default 100; 'none' keeps every edge)",
    )
    p.add_argument("--k", type=ints, default=(5, 10, 20, 50), help="budgets, e.g. 5,10,20,50")
    p.add_argument("--n-neutrals", type=int, default=800, help="pool size N (default 800)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, help="vector cache folder (makes the audit resumable)")
    out_folder_option(p, "output folder", inputs=lambda args: [args.shared_data, args.cache])
    p.add_argument("--report", action="store_true", help="also write the report into OUT/report")
    retriever_options(p)


def load_data(args: argparse.Namespace) -> AuditData:
    """The entities and relations ``--data`` names."""
    if args.data == "sample":
        from argus_ir.audit.sample import load_sample

        return load_sample()
    if args.data == "shared":
        from argus_ir.audit.shared_data import load_shared

        if args.shared_data is None:
            raise ArgusInputError(
                "--data shared needs --shared-data PATH (the folder with kb/ and kg/)"
            )
        sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
        return load_shared(args.shared_data, sources=sources, max_degree=args.max_degree)
    from argus_ir.audit.loaders import load_user_data

    if args.edges is None:
        raise ArgusInputError(
            f"--data {args.data} is an entities file; pass its relations with --edges"
        )
    return load_user_data(args.data, args.edges, max_degree=args.max_degree)


def run(args: argparse.Namespace) -> int:
    """Audit, save the result into ``--out`` and, with ``--report``, write its report."""
    from argus_ir.audit import AuditSettings, run_audit

    data = load_data(args)
    print(data.report.summary(), file=sys.stderr)
    settings = AuditSettings(
        ks=tuple(sorted(set(args.k))), n_neutrals=args.n_neutrals, seed=args.seed
    )
    result = run_audit(
        data, encoder(args), settings, cache_dir=args.cache, show_progress=not args.quiet
    )
    result.save(args.out)
    print(f"audit of {len(result.ids)} targets written to {args.out}")
    if args.report:
        from argus_ir.audit.report import write_report

        print(f"report: {write_report(result, args.out / 'report')}")
    return 0
