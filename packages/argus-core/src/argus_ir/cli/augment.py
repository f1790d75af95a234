"""``argus augment``: diagnose a corpus and write it back with support views for its blind-spot
entities, in this process (streamed, resumable) or through Ray Data; the work is the core's
(:class:`~argus_ir.pipeline.Argus` and the runners), this module checks paths and options before
any model loads and prints the run's summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from argus_ir.cli.common import argus_settings, corpus_arg, llm_call_settings
from argus_ir.cli.options import overwrite_option, remedy_options, retriever_options
from argus_ir.errors import ArgusInputError
from argus_ir.pipeline import DEFAULT_BATCH_SIZE
from argus_ir.remedy import DEFAULT_REMEDY, IN_PLACE
from argus_ir.remedy import KINDS as REMEDIES
from argus_ir.runners.records import VECTOR_KEY

__all__ = ["add_arguments", "add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus augment`` to the command's subparsers."""
    p = subparsers.add_parser(
        "augment",
        help="diagnose a corpus and write it back with support views for blind-spot entities",
        description="Diagnoses every document (as `argus diagnose`), looks up each flagged entity "
        "in the reference KB and writes the corpus as JSONL: every original unchanged, followed by "
        "its support views with their lineage under `metadata` (argus_source_id, argus_view, "
        "argus_entity, argus_kb_id, argus_kb_match, argus_rps). A stats file records flagged "
        "entities and views per document, index growth, LLM calls and every failure.",
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
    overwrite_option(p, resumes=True)
    p.add_argument(
        "--stats",
        type=Path,
        help="stats JSON (default: OUT with .stats.json, or stdout summary); like --out, an "
        "existing file is refused without --overwrite",
    )
    p.add_argument("--remedy", choices=REMEDIES, default=DEFAULT_REMEDY)
    remedy_options(p)
    p.add_argument(
        "--kb-llm",
        default=None,
        metavar="SPEC",
        help="ask this LLM ('openai:BASE_URL[@MODEL]', 'vllm:MODEL', 'transformers[:MODEL]') for "
        "a one-line description of each flagged mention the KB does not know by name; replies "
        "are cached beside --out, and views built from them say argus_kb_generated. An openai: "
        "server is waited for --llm-timeout seconds (default 30) and retried --llm-retries "
        "times; after 3 failed lookups in a row the run stops asking and goes on without it. "
        "The stats count kb_llm_calls and kb_llm_failures (default: no LLM knowledge)",
    )
    p.add_argument(
        "--docs-per-batch",
        type=int,
        default=DEFAULT_BATCH_SIZE,
        help="documents per streamed batch (the first holds one, so output starts early); output "
        "is checkpointed after each",
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
        "--vectors",
        action="store_true",
        help="give every record the retriever's fp32 vector of the string an index embeds for "
        "it (an original's title, a newline and its text; a view's text), computed by argus "
        "once: an original's comes from the diagnosis pass, which then runs in fp32 under "
        "--precision auto, and the views are embedded by the same model, so the index needs no "
        "embedding pass of its own. JSONL: a top-level key argus_vector, a list of numbers that "
        "read back to the very float32 values (null where the retriever's tokenizer refused the "
        "text; the stats file names it). It is named like the rest of what argus adds, not "
        "'embedding', so it never replaces an embedding a corpus already carries from another "
        "model; pass it as embedding= to a LlamaIndex node or a Haystack Document, or to "
        "LangChain's add_embeddings. --engine ray: a column argus_vector of fixed-size float32 "
        "lists. A checkpoint of a run without --vectors does not resume with them (nor the "
        "reverse); with --dry-run, nothing is embedded and the flags are projected as a run "
        "with vectors makes them",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process, streamed and resumable (default); ray: a Ray Data pipeline "
        "whose actors each hold warm models (the [ray] extra, not part of [all]: pip install "
        "'argus-ir[ray]'); --out is then a folder of Parquet files, with a failure column "
        "instead of the stats file",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        help="--engine ray: actors in the pool, one CPU each (2)",
    )
    p.add_argument(
        "--gpus-per-worker",
        type=float,
        default=0,
        help="--engine ray: GPUs each actor reserves (0: none; 0.5 puts two actors on a card); "
        "the actors then run the retriever's pass on their GPU and NER runs before them on CPU "
        "actors over the cluster's other CPUs",
    )
    p.add_argument(
        "--ray-address",
        help="--engine ray: a running cluster to join (default: start a local one)",
    )
    retriever_options(p)


def _kb_with_llm(args: argparse.Namespace) -> Any:
    """``--kb`` with ``--kb-llm``'s knowledge behind its exact names (argus_ir.kb.llm); an
    openai: backend waits ``--llm-timeout`` (default :data:`argus_ir.kb.llm.TIMEOUT`), retries
    ``--llm-retries`` times, and asks again ``--llm-cool-down`` seconds after a give-up."""
    from argus_ir.kb.llm import TIMEOUT, LLMKnowledge, with_llm_knowledge
    from argus_ir.kb.shipped import resolve_kb
    from argus_ir.llm import load_llm
    from argus_ir.runners.checkpoint import kb_llm_cache_path

    options: dict[str, Any] = {}
    if str(args.kb_llm).startswith("openai:"):
        options = {"timeout": TIMEOUT, **llm_call_settings(args)}
    try:
        llm = load_llm(args.kb_llm, **options)
    except ValueError as exc:
        raise ArgusInputError(f"--kb-llm: {exc}") from None
    cache = None if args.out is None else kb_llm_cache_path(args.out)
    base = resolve_kb(args.kb, show_progress=not args.quiet)
    cool = {} if args.llm_cool_down is None else {"cool_down": args.llm_cool_down}
    return with_llm_knowledge(base, LLMKnowledge(llm, cache, **cool))


def run(args: argparse.Namespace) -> int:
    """Augment ``corpus`` into ``--out`` (or, with ``--dry-run``, only count what it would add)."""
    import contextlib

    from argus_ir.outputs import hold_output
    from argus_ir.runners.checkpoint import load_checkpoint, may_replace
    from argus_ir.runners.stream import (
        check_paths,
        checkpoint_path,
        scan_corpus,
        stats_file_for,
    )

    if args.out is None and not args.dry_run:
        raise ArgusInputError("--out is required (or pass --dry-run)")
    corpus = corpus_arg(args.corpus)
    if args.engine == "ray" and args.targeting == "corpus":
        raise ArgusInputError(
            "--targeting corpus measures each document against the first documents of the "
            "whole corpus, which Ray's blocks do not share; use --engine local (or "
            "--targeting probe)"
        )
    if args.engine == "ray":
        return _augment_on_ray(args, corpus)
    if args.gpus_per_worker:
        raise ArgusInputError(
            "--gpus-per-worker runs with --engine ray; in this process, --device cuda puts the "
            "retriever on a GPU"
        )
    out = None if args.dry_run else args.out
    stats = stats_file_for(args.out, args.stats)
    resume = not args.no_resume
    # a first look, before any lock is taken or folder made: a run stopped while it committed
    # owns OUT and the stats file its checkpoint recorded; decided again under the lock
    out_ok, stats_ok = may_replace(out, stats, overwrite=args.overwrite, resume=resume)
    check_paths(corpus, out, stats, overwrite=out_ok, stats_overwrite=stats_ok, cli=True)
    ckpt = None if out is None else checkpoint_path(out)
    claim = contextlib.nullcontext() if out is None else hold_output(out)
    with claim:  # a second run on --out stops here, before loading its models
        out_ok, stats_ok = may_replace(out, stats, overwrite=args.overwrite, resume=resume)
        check_paths(corpus, out, stats, overwrite=out_ok, stats_overwrite=stats_ok, cli=True)
        state = None if ckpt is None or not resume else load_checkpoint(ckpt)
        total = scan_corpus(corpus)  # every record checked before any work
        return _augment_locally(args, corpus, stats, state, ckpt, total)


def _loaded_argus(args: argparse.Namespace) -> Any:
    """The :class:`~argus_ir.pipeline.Argus` of the options, every model and the KB loaded (a
    missing extra fails before any document)."""
    from argus_ir.pipeline import Argus

    options = argus_settings(args)
    if args.kb_llm:
        options["kb"] = _kb_with_llm(args)
    argus = Argus(
        **options,
        remedy=args.remedy,
        batch_size=args.docs_per_batch,
        show_progress=not args.quiet,
        embed=args.vectors,
    )
    argus.load()
    return argus


def _augment_locally(
    args: argparse.Namespace,
    corpus: Path,
    stats: Path | None,
    state: dict[str, Any] | None,
    ckpt: Path | None,
    total: int,
) -> int:
    """``argus augment --engine local``: streamed, checkpointed, resumable."""
    from argus_ir.runners.stream import augment_file

    argus = _loaded_argus(args)
    if argus.embed and not args.dry_run:  # a bf16 pass's fp32 copy, before any document
        _ = argus.embedder
    if state is not None:
        done = state["documents_done"]
        print(f"resuming an interrupted run after {done} documents ({ckpt})", file=sys.stderr)
    try:
        summary = augment_file(  # the stats file records Argus.settings_card()
            argus,
            corpus,
            args.out,
            stats_path=stats,
            dry_run=args.dry_run,
            resume=not args.no_resume,
            overwrite=args.overwrite,
            total=total,
        )
    except BaseException:
        if ckpt is not None and ckpt.is_file():
            print(
                f"note: the batches finished so far are kept; the same command resumes after "
                f"them ({ckpt}; --no-resume starts over)",
                file=sys.stderr,
            )
        raise
    finally:
        argus.close()  # the NER thread and workers end with the run
    _print_summary(args, summary)
    return 0


def _print_summary(args: argparse.Namespace, summary: Any) -> None:
    """One line of totals on stdout; fallbacks, why ``--kb-llm`` failed or was given up on, and
    the first failures on stderr."""
    stats = summary.stats
    verb = "would add" if args.dry_run else "added"
    kinds = f"{stats.views} {'descriptor' if args.remedy in IN_PLACE else args.remedy} views"
    if stats.enriched:  # knowledge written into originals' vectors (in-place enrichment)
        kinds += f" and {stats.enriched} originals enriched in place"
    if args.remedy == "synthesis" and stats.fallbacks:  # say what was indexed, not what was asked
        kinds = (
            f"{stats.views} views ({stats.views - stats.fallbacks} synthesis, "
            f"{stats.fallbacks} descriptor fallbacks)"
        )
    print(
        f"{stats.documents} documents, {stats.flagged_entities} flagged entities; {verb} "
        f"{kinds} (index growth {stats.index_growth:.3f}x)"
        + (f", {stats.llm_calls} LLM calls" if args.remedy == "synthesis" else "")
        + (
            f", {stats.kb_llm_calls} KB-LLM calls ({stats.kb_llm_failures} failed lookups"
            + (f", {stats.kb_llm_refused} lines refused" if stats.kb_llm_refused else "")
            + ")"
            if args.kb_llm
            else ""
        )
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
        + (f" (vectors under {VECTOR_KEY!r})" if args.vectors and not args.dry_run else "")
    )
    if stats.fallbacks:
        print(f"  {stats.fallbacks} documents fell back to descriptor views", file=sys.stderr)
    if stats.stale_vectors:
        print(
            f"  {stats.stale_vectors} records of an earlier run written without the "
            f"{VECTOR_KEY!r} it wrote (it may no longer match what an index embeds for them): "
            "pass --vectors to write every record's vector afresh",
            file=sys.stderr,
        )
    if stats.in_place_as_views:
        print(
            f"  {stats.in_place_as_views} entities' knowledge went into views, not into their "
            "original's vector: the index embeds what argus asks only with --vectors",
            file=sys.stderr,
        )
    if stats.kb_llm_gave_up:
        print(f"  --kb-llm: {stats.kb_llm_gave_up}", file=sys.stderr)
    elif stats.kb_llm_failures:
        print(f"  --kb-llm: the last failed lookup: {stats.kb_llm_last_error}", file=sys.stderr)
    for doc_id, error in stats.failures[:5]:
        print(f"  failed: document {doc_id!r}: {error}", file=sys.stderr)
    if summary.stats_path is not None:
        print(f"stats: {summary.stats_path}")


def _augment_on_ray(args: argparse.Namespace, corpus: Path) -> int:
    """``argus augment --engine ray``: the same views through Ray Data, a folder of Parquet out
    (an earlier Ray output folder is replaced with ``--overwrite``)."""
    from argus_ir.outputs import check_output, claim_output
    from argus_ir.runners.ray_data import augment_files, is_output_folder
    from argus_ir.runners.ray_gpu import check_gpus_per_worker

    if args.dry_run:
        raise ArgusInputError("--dry-run runs with --engine local only")
    if args.workers < 1:
        raise ArgusInputError(f"--workers must be at least 1, got {args.workers}")
    check_gpus_per_worker(args.gpus_per_worker)  # before any model loads
    rule = {
        "flag": "--out",
        "inputs": [corpus],
        "overwrite": args.overwrite,
        "folder": True,
        "kind": "Ray output folder (Parquet files only)",
        "is_kind": is_output_folder,
    }
    check_output(args.out, **rule)  # before any model loads
    with claim_output(args.out, **rule):
        summary = augment_files(
            corpus,
            args.out,
            _loaded_argus(args),
            workers=args.workers,
            gpus_per_worker=args.gpus_per_worker,
            address=args.ray_address,
            show_progress=not args.quiet,
            overwrite=args.overwrite,
        )
    print(
        f"{summary.documents} documents; added {summary.views} {args.remedy} views on "
        f"{args.workers} Ray workers -> {args.out}/ (Parquet"
        + (f", vectors in column {VECTOR_KEY!r})" if args.vectors else ")")
    )
    for doc_id, error in summary.failures[:5]:
        print(f"  failed: document {doc_id!r}: {error}", file=sys.stderr)
    if len(summary.failures) > 5:
        print(f"  ... {len(summary.failures) - 5} more failures", file=sys.stderr)
    return 0
