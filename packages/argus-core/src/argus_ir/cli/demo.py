"""``argus demo``: the whole path on data shipped with argus (audit the embedded entity sample,
train a probe, write the report, then diagnose and augment the sample documents through
``argus augment``'s own :func:`~argus_ir.cli.augment.run`)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from argus_ir.cli import augment
from argus_ir.cli.common import encoder
from argus_ir.cli.options import defaults, out_folder_option, retriever_options

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus demo`` to the command's subparsers."""
    p = subparsers.add_parser(
        "demo",
        help="audit the embedded entity sample, train a probe, write the report, augment a corpus",
        description="Runs end to end on data shipped with argus (a few hundred Wikipedia "
        "entities with T-REx relations, a dozen sample documents) and the offline MiniLM "
        "retriever: audit, probe, report, then diagnose and augment the sample documents.",
    )
    out_folder_option(p, "output folder (default argus-demo)", default=Path("argus-demo"))
    p.add_argument("--k", type=int, default=10, help="top-k budget of the probe (default 10)")
    p.add_argument("--n-neutrals", type=int, default=200, help="pool size N (default 200)")
    retriever_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Audit, probe, report, then (with spaCy) augment the sample corpus into ``--out``."""
    from argus_ir.audit import AuditSettings, run_audit
    from argus_ir.audit.report import write_report
    from argus_ir.audit.sample import load_sample
    from argus_ir.encoder.models import canonical_id
    from argus_ir.probes.train import train_probe_on_audit

    data = load_sample()
    print(f"[1/4] embedded sample: {data.report.summary().splitlines()[0]}", file=sys.stderr)
    ks = tuple(sorted({5, args.k, 20}))
    settings = AuditSettings(
        ks=ks,
        n_neutrals=args.n_neutrals,
        n_grid=tuple(n for n in (25, 50, 100, 200, 400) if n >= max(ks)),
        k_grid=tuple(k for k in (1, 5, 10, 20, 50) if k <= args.n_neutrals),
    )
    audit = run_audit(data, encoder(args), settings, show_progress=not args.quiet)
    audit.save(args.out / "audit")
    print(f"[2/4] audited {len(audit.ids)} entities -> {args.out / 'audit'}", file=sys.stderr)
    result = train_probe_on_audit(
        audit,
        args.k,
        label_kind="expected",
        tau=0.3,
        families=("ridge", "xgboost"),
        budget="tiny",
        seed=0,
        show_progress=not args.quiet,
    )
    result.probe.save(args.out / "probe")
    m = result.probe.card.metrics["test"]
    print(
        f"[3/4] probe {result.probe.card.family}: test Pearson {m['pearson']:.3f}, "
        f"tercile accuracy {m['accuracy']:.3f} -> {args.out / 'probe'}",
        file=sys.stderr,
    )
    report = write_report(audit, args.out / "report", probe=result)
    print(f"report: {report}")
    if importlib.util.find_spec("spacy") is None:
        print("skipping diagnose + augment: pip install 'argus-ir[spacy]'", file=sys.stderr)
        return 0
    from argus_ir.probes import shipped_probes

    retriever = canonical_id(args.retriever)
    shipped = any(p.retriever_id == retriever and p.k == args.k for p in shipped_probes())
    which = f"shipped k={args.k}" if shipped else "just trained"
    print(f"[4/4] diagnose + augment the sample corpus ({which} probe)", file=sys.stderr)
    sample = resources.files("argus_ir").joinpath("data/sample_corpus.jsonl")
    with resources.as_file(sample) as corpus:
        return augment.run(
            defaults(
                augment.add_arguments,
                corpus=corpus,
                out=args.out / "augmented.jsonl",
                # the folder passed the rule (empty, or an earlier run's with --overwrite)
                overwrite=True,
                k=args.k,
                probe=None if shipped else str(args.out / "probe"),
                retriever=args.retriever,
                backend=args.backend,
                device=args.device,
                batch_size=args.batch_size,
                quiet=args.quiet,
                verbose=args.verbose,
                debug=args.debug,
            )
        )
