"""``argus bias``: the ColDeR bias audit, paired documents from Re-DocRED scored by each
retriever and BM25, with paired t-tests, effect sizes and the foil test (resumable step by step)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from argus_ir.cli.options import DeprecatedAlias, out_folder_option

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus bias`` to the command's subparsers."""
    p = subparsers.add_parser(
        "bias",
        help="ColDeR bias audit: paired documents from Re-DocRED, paired t-tests per retriever",
        description="Builds pairs of documents from a Re-DocRED-format file, each pair differing "
        "in one factor (answer, position, name form, length, head repetition, foil vs "
        "evidence), scores them with each retriever and BM25, and reports paired t-tests, "
        "effect sizes and the foil test's accuracy (results.json, README.md, bias.png).",
    )
    p.add_argument("data", type=Path, help="Re-DocRED-format JSON (e.g. dev_revised.json)")
    out_folder_option(p, "report folder", inputs=lambda args: [args.data], resumes="resume")
    p.add_argument(
        "--retriever",
        action="append",
        default=None,
        help="retriever (repeatable): minilm (default), mpnet, a model id or folder",
    )
    p.add_argument(
        "--model",
        dest="retriever",
        action=DeprecatedAlias,
        replacement="--retriever",
        append=True,
        default=argparse.SUPPRESS,
    )
    p.add_argument("--no-bm25", action="store_true", help="leave out the BM25 reference")
    p.add_argument("--n", type=int, default=250, help="pairs per setting (250, as the paper)")
    p.add_argument("--seed", type=int, default=0, help="sample order and foil filler seed")
    p.add_argument("--per-doc", type=int, default=3, help="most samples from one document (3)")
    p.add_argument(
        "--augment",
        default="",
        help="comma-separated remedies after which the foil test runs again (e.g. "
        "descriptor,expansion)",
    )
    p.add_argument("--templates", type=Path, help="JSON relation id -> template with {head}")
    p.add_argument(
        "--resume",
        action="store_true",
        help="take the steps already in OUT/results.json (the report is saved after every "
        "step) and run only the rest",
    )
    return p


def run(args: argparse.Namespace) -> int:
    """Run the bias audit, saving the report into ``--out`` after every step."""
    from argus_ir.bias import audit_biases, bias_markdown, load_bias_report, write_bias_report

    previous = None
    if args.resume and (args.out / "results.json").exists():
        previous = load_bias_report(args.out)
    report = audit_biases(
        args.data,
        args.retriever or ["minilm"],
        bm25=not args.no_bm25,
        n=args.n,
        seed=args.seed,
        per_doc=args.per_doc,
        augment=[r.strip() for r in args.augment.split(",") if r.strip()],
        templates=args.templates,
        show_progress=not args.quiet,
        previous=previous,
        on_step=lambda partial: write_bias_report(partial, args.out),
    )
    folder = args.out  # on_step saved the report after its last step
    print(bias_markdown(report), end="")
    print(f"-> {folder}/README.md, results.json, bias.png")
    return 0
