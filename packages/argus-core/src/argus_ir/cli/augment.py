"""``argus augment``: diagnose a corpus and write it back with support views for its blind-spot
entities, in this process (streamed, resumable) or through Ray Data; the work is the core's
(:class:`~argus_ir.pipeline.Argus` and the runners), this module checks paths and options before
any model loads and prints the run's summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from argus_ir.cli.common import argus_settings, check_out, corpus_arg
from argus_ir.cli.options import overwrite_option, remedy_options, retriever_options
from argus_ir.errors import ArgusInputError
from argus_ir.remedy import DEFAULT_REMEDY
from argus_ir.remedy import KINDS as REMEDIES

__all__ = ["add_arguments", "add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus augment`` to the command's subparsers."""
    p = subparsers.add_parser(
        "augment",
        help="diagnose a corpus and write it back with support views for blind-spot entities",
        description="Diagnoses every document (as `argus diagnose`), looks up each flagged entity "
        "in the reference KB and writes the corpus as JSONL: every original unchanged, followed by "
        "its support views with their lineage under `metadata` (argus_source_id, argus_view, "
        "argus_entity, argus_kb_id, argus_rps). A stats file records flagged entities and views "
        "per document, index growth, LLM calls and every failure.",
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``argus augment``."""
    p.add_argument(
        "corpus",
        type=Path,
        help="JSONL (.gz), Parquet or CSV with _id/id, text and optional title, or a BEIR "
        "dataset folder (its corpus.jsonl)",
    )
    p.add_argument("--out", type=Path, help="augmented corpus, JSONL (required unless --dry-run)")
    overwrite_option(p)
    p.add_argument(
        "--stats", type=Path, help="stats JSON (default: OUT with .stats.json, or stdout summary)"
    )
    p.add_argument("--remedy", choices=REMEDIES, default=DEFAULT_REMEDY)
    remedy_options(p)
    p.add_argument(
        "--kb-llm",
        default=None,
        metavar="SPEC",
        help="ask this LLM ('openai:BASE_URL[@MODEL]', 'vllm:MODEL', 'transformers[:MODEL]') for "
        "a one-line description of each flagged mention the KB does not know by name; replies "
        "are cached beside --out, and views built from them say argus_kb_generated (default: "
        "no LLM knowledge)",
    )
    p.add_argument(
        "--docs-per-batch",
        type=int,
        default=64,
        help="documents per streamed batch; output is checkpointed after each",
    )
    p.add_argument(
        "--no-resume",
        action="store_true",
        help="discard an interrupted run's checkpoint (OUT.checkpoint.json) and start over "
        "(default: resume after its last finished batch)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="diagnose and look up only: report flags, projected index growth and LLM calls",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process, streamed and resumable (default); ray: a Ray Data pipeline "
        "(extra [ray]) whose actors each hold warm models; --out is then a folder of Parquet "
        "files, with a failure column instead of the stats file",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        help="--engine ray: actors in the pool, one CPU each (2)",
    )
    p.add_argument(
        "--ray-address",
        help="--engine ray: a running cluster to join (default: start a local one)",
    )
    retriever_options(p)


def _kb_with_llm(args: argparse.Namespace) -> Any:
    """``--kb`` with ``--kb-llm``'s knowledge behind its exact names (argus_ir.kb.llm)."""
    from argus_ir.kb.llm import LLMKnowledge, with_llm_knowledge
    from argus_ir.kb.shipped import resolve_kb
    from argus_ir.llm import load_llm

    try:
        llm = load_llm(args.kb_llm)
    except ValueError as exc:
        raise ArgusInputError(f"--kb-llm: {exc}") from None
    cache = None if args.out is None else args.out.with_name(args.out.name + ".kb-llm-cache")
    base = resolve_kb(args.kb, show_progress=not args.quiet)
    return with_llm_knowledge(base, LLMKnowledge(llm, cache))


def run(args: argparse.Namespace) -> int:
    """Augment ``corpus`` into ``--out`` (or, with ``--dry-run``, only count what it would add)."""
    import json

    from argus_ir.pipeline import Argus
    from argus_ir.runners.stream import augment_file, checkpoint_path

    if args.out is None and not args.dry_run:
        raise ArgusInputError("--out is required (or pass --dry-run)")
    if args.out is not None and not args.dry_run:
        check_out(args.out, corpus_arg(args.corpus), args.overwrite)
    if args.engine == "ray" and args.targeting == "corpus":
        raise ArgusInputError(
            "--targeting corpus measures each document against the first documents of the "
            "whole corpus, which Ray's blocks do not share; use --engine local (or "
            "--targeting probe)"
        )
    options = argus_settings(args)
    if args.kb_llm:
        options["kb"] = _kb_with_llm(args)
    argus = Argus(
        **options,
        remedy=args.remedy,
        batch_size=args.docs_per_batch,
        show_progress=not args.quiet,
    )
    argus.load()  # every model and the KB now: a missing extra fails before any document
    if args.engine == "ray":
        return _augment_on_ray(args, argus)
    ckpt = None if args.out is None else checkpoint_path(args.out)
    if ckpt is not None and ckpt.is_file() and not args.no_resume and not args.dry_run:
        done = json.loads(ckpt.read_text(encoding="utf-8")).get("documents_done", "?")
        print(f"resuming an interrupted run after {done} documents ({ckpt})", file=sys.stderr)
    try:
        summary = augment_file(  # the stats file records Argus.settings_card()
            argus,
            corpus_arg(args.corpus),
            args.out,
            stats_path=args.stats,
            dry_run=args.dry_run,
            resume=not args.no_resume,
        )
    except BaseException:
        if ckpt is not None and ckpt.is_file():
            print(
                f"note: the batches finished so far are kept; the same command resumes after "
                f"them ({ckpt}; --no-resume starts over)",
                file=sys.stderr,
            )
        raise
    _print_summary(args, summary)
    return 0


def _print_summary(args: argparse.Namespace, summary: Any) -> None:
    """One line of totals on stdout, fallbacks and the first failures on stderr."""
    stats = summary.stats
    verb = "would add" if args.dry_run else "added"
    kinds = f"{stats.views} {args.remedy} views"
    if args.remedy == "synthesis" and stats.fallbacks:  # say what was indexed, not what was asked
        kinds = (
            f"{stats.views} views ({stats.views - stats.fallbacks} synthesis, "
            f"{stats.fallbacks} descriptor fallbacks)"
        )
    print(
        f"{stats.documents} documents, {stats.flagged_entities} flagged entities; {verb} "
        f"{kinds} (index growth {stats.index_growth:.3f}x)"
        + (f", {stats.llm_calls} LLM calls" if args.remedy == "synthesis" else "")
        + (f", {stats.no_kb_hit} entities without KB hit" if stats.no_kb_hit else "")
        + (
            " (KB answers: " + ", ".join(f"{k} {v}" for k, v in stats.kb_sources.items()) + ")"
            if stats.kb_sources
            else ""
        )
        + (f", {stats.no_text} without text passed through" if stats.no_text else "")
        + (
            f", {stats.passed_through} records of an earlier run passed through"
            if stats.passed_through
            else ""
        )
        + (f" -> {args.out}" if args.out and not args.dry_run else "")
    )
    if stats.fallbacks:
        print(f"  {stats.fallbacks} documents fell back to descriptor views", file=sys.stderr)
    for doc_id, error in stats.failures[:5]:
        print(f"  failed: document {doc_id!r}: {error}", file=sys.stderr)
    if summary.stats_path is not None:
        print(f"stats: {summary.stats_path}")


def _augment_on_ray(args: argparse.Namespace, argus: Any) -> int:
    """``argus augment --engine ray``: the same views through Ray Data, Parquet out."""
    from argus_ir.runners.ray_data import augment_files

    if args.dry_run:
        raise ArgusInputError("--dry-run runs with --engine local only")
    if args.workers < 1:
        raise ArgusInputError(f"--workers must be at least 1, got {args.workers}")
    summary = augment_files(
        corpus_arg(args.corpus),
        args.out,
        argus,
        workers=args.workers,
        address=args.ray_address,
        show_progress=not args.quiet,
    )
    print(
        f"{summary.documents} documents; added {summary.views} {args.remedy} views on "
        f"{args.workers} Ray workers -> {args.out}/ (Parquet)"
    )
    for doc_id, error in summary.failures[:5]:
        print(f"  failed: document {doc_id!r}: {error}", file=sys.stderr)
    if len(summary.failures) > 5:
        print(f"  ... {len(summary.failures) - 5} more failures", file=sys.stderr)
    return 0
