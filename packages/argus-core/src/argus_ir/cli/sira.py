"""``argus sira``: LLM vocabulary enrichment of a BM25 index in three steps (index, search,
evaluate), each a function of :mod:`argus_ir.sira`; the DF filter's bound is ``--df-share``, and
its old name ``--tau`` (which means the probe's RPS threshold everywhere else) still works for one
release, hidden from the help, with a note on stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from argus_ir.cli.common import beir_datasets, llm_arg, write_evaluation
from argus_ir.cli.options import (
    DeprecatedAlias,
    llm_call_options,
    llm_option,
    out_folder_option,
    split_option,
    subset_options,
)
from argus_ir.errors import ArgusInputError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus sira`` and its steps to the command's subparsers."""
    from argus_ir.sira import DEFAULT_WEIGHT

    sira = subparsers.add_parser(
        "sira",
        help="SIRA: LLM vocabulary enrichment of a BM25 index (index, search, evaluate)",
        description="Lexical retrieval with LLM vocabulary enrichment (SIRA): the LLM adds "
        "search terms a document lacks to its index entry (corpus side) and sketches the "
        "vocabulary a relevant document would use for a query (query side); a DF filter keeps "
        "discriminative terms; one weighted BM25 call ranks. Every LLM reply is cached.",
    )
    subs = sira.add_subparsers(dest="sira_command", metavar="STEP", required=True)

    p = subs.add_parser(
        "index",
        help="build a (corpus-side enriched) BM25 index of a JSONL corpus",
        description="Reads documents (JSONL with _id/id, text and optional title), asks the "
        "LLM for each document's missing search vocabulary and writes the index with the "
        "phrases beside the unchanged documents (enrichment.jsonl).",
    )
    p.add_argument("corpus", type=Path, help="JSONL documents (BEIR corpus.jsonl works)")
    out_folder_option(p, "index folder", inputs=lambda args: [args.corpus])
    _df_share_option(p)
    _llm_options(p, "corpus-side enrichment")

    p = subs.add_parser("search", help="search a SIRA index (query-side sketch unless --no-llm)")
    p.add_argument("index", type=Path, help="folder written by `argus sira index`")
    p.add_argument("query", nargs="+", help="the query")
    p.add_argument("--k", type=int, default=10, help="results to show (10)")
    p.add_argument(
        "--weight", type=float, default=DEFAULT_WEIGHT, help=f"w of eq. 2 ({DEFAULT_WEIGHT})"
    )
    _llm_options(p, "query sketch")

    p = subs.add_parser(
        "evaluate",
        help="BM25 vs SIRA corpus-only, query-only and both on BEIR datasets",
        description="Recall/nDCG with ir-measures and a paired t-test against plain BM25 for "
        "each condition; results.json/.md and per_query.jsonl as for `argus evaluate`.",
    )
    p.add_argument("datasets", type=Path, nargs="+", help="BEIR dataset folders")
    out_folder_option(p, "results folder", inputs=lambda args: args.datasets)
    split_option(p)
    p.add_argument(
        "--conditions",
        default="original,sira-corpus,sira-query,sira-both",
        help="comma-separated: original (BM25), sira-corpus, sira-query, sira-both",
    )
    _df_share_option(p)
    p.add_argument(
        "--weight",
        default=str(DEFAULT_WEIGHT),
        help="w of eq. 2; several (0.1,0.3,1) add one query-side condition each",
    )
    subset_options(p)
    _llm_options(p, "LLM conditions")
    return sira


def _df_share_option(p: argparse.ArgumentParser) -> None:
    """``--df-share`` (and its old name ``--tau``, hidden)."""
    from argus_ir.sira import DEFAULT_TAU

    p.add_argument(
        "--df-share",
        type=float,
        default=DEFAULT_TAU,
        help=f"DF bound: the largest share of documents a term may occur in ({DEFAULT_TAU})",
    )
    p.add_argument(
        "--tau",
        dest="df_share",
        type=float,
        action=DeprecatedAlias,
        replacement="--df-share",
        default=argparse.SUPPRESS,
    )


def _llm_options(p: argparse.ArgumentParser, what: str) -> None:
    from argus_ir.sira import TASKS

    llm_option(p, "LLM backend")
    llm_call_options(p, "--llm", "120")
    p.add_argument("--no-llm", action="store_true", help=f"no {what} (plain BM25)")
    p.add_argument("--task", choices=TASKS, default="fact", help="prompt variant (fact)")
    p.add_argument(
        "--cache",
        type=Path,
        help="LLM reply cache folder (default: OUT/llm-cache; for search INDEX/llm-cache, the "
        "reply cache the index was built with)",
    )


def _sira_llm(
    args: argparse.Namespace, default_cache: Path, inputs: Sequence[Any] = ()
) -> tuple[Any, Any]:
    """The LLM and its reply cache; the cache's file is never one of ``inputs`` (the rule of
    :mod:`argus_ir.outputs`; replies are appended to an existing cache, nothing else is written)."""
    from argus_ir.llm import load_llm
    from argus_ir.outputs import check_output
    from argus_ir.sira import CallCache

    if args.no_llm:
        return None, None
    folder = args.cache or default_cache
    check_output(
        folder / "calls.jsonl", flag="--cache", inputs=[i for i in inputs if i], overwrite=True
    )
    llm = llm_arg(args)  # a spec, or a backend built with the --llm-* call options
    return (load_llm(llm) if isinstance(llm, str) else llm), CallCache(folder)


def run(args: argparse.Namespace) -> int:
    """Run the step ``args.sira_command`` names."""
    if args.sira_command == "index":
        return _index(args)
    if args.sira_command == "search":
        return _search(args)
    return _evaluate(args)


def _index(args: argparse.Namespace) -> int:
    from argus_ir import sira
    from argus_ir.audit.loaders import read_documents

    docs = [(d.id, d.index_text) for d in read_documents(args.corpus)]
    llm, cache = _sira_llm(args, args.out / "llm-cache", [args.corpus])
    phrases: dict[str, list[str]] = {}
    if llm is not None:
        enriched = sira.enrich_corpus(
            docs, llm, task=args.task, cache=cache, show_progress=not args.quiet
        )
        phrases = enriched.phrases
        _print_reply_stats("corpus", enriched.stats)
    index = sira.SiraIndex.build(docs, enrichment=phrases, tau=args.df_share)
    index.save(args.out, documents=docs)
    st = index.stats
    print(
        f"{st.documents} documents, {st.enriched_documents} enriched with "
        f"{st.injected_postings} new postings ({st.too_common} too common, "
        f"{st.already_present} already in their document) -> {args.out}"
    )
    return 0


def _search(args: argparse.Namespace) -> int:
    from argus_ir import sira

    index = sira.SiraIndex.load(args.index)
    query = " ".join(args.query)
    llm, cache = _sira_llm(args, args.index / "llm-cache")
    wanted: list[str] = []
    if llm is not None:
        sketch = sira.expand_queries({"q": query}, llm, task=args.task, cache=cache)
        wanted = sketch.phrases.get("q", [])
        _print_reply_stats("query", sketch.stats)
    terms, _ = index.expansion_terms(wanted, query)
    if llm is not None:
        print(f"sketch: {', '.join(wanted) or '-'}\nkept terms: {', '.join(terms) or '-'}")
    texts = _sira_texts(args.index)
    for rank, (doc_id, score) in enumerate(
        index.search(query, expansion=terms, weight=args.weight, k=args.k, phrases=False), 1
    ):
        snippet = " ".join(texts.get(doc_id, "").split())[:100]
        print(f"{rank:>3}  {score:8.3f}  {doc_id}  {snippet}")
    return 0


def _weights(text: str) -> list[float]:
    """``--weight 0.1,0.3,1``: one query-side weight per value."""
    try:
        return [float(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise ArgusInputError(f"--weight: expected comma-separated numbers, got {text!r}") from None


def _evaluate(args: argparse.Namespace) -> int:
    from argus_ir import sira

    conditions = tuple(c.strip() for c in args.conditions.split(",") if c.strip())
    weights = _weights(args.weight)
    llm, cache = (None, None)
    if any(c != "original" for c in conditions):
        llm, cache = _sira_llm(args, args.out / "llm-cache")
    results = []
    for data in beir_datasets(args):
        result = sira.evaluate_sira(
            data,
            llm,
            conditions=conditions,
            task=args.task,
            tau=args.df_share,
            weight=weights,
            cache=cache,
            show_progress=not args.quiet,
        )
        for c in result.conditions.values():
            for side in ("corpus", "query"):
                if side in c.stats:
                    _print_reply_stats(f"{c.name} {side}", sira.ReplyStats(**c.stats[side]))
        results.append(result)
    return write_evaluation(results, args.out)


def _print_reply_stats(what: str, s: Any) -> None:
    dropped = {
        "failed": s.failed,
        "empty": s.empty,
        "unparseable": s.unparseable,
        "repeating the input": s.repeats_input,
        "phrases too long": s.too_long,
        "phrases breaking the character rules": s.rule_breaking,
        "phrases already in the text": s.copied,
        "answer-like phrases": s.answer_like,
    }
    print(
        f"  {what}: {s.calls} LLM calls ({s.cache_hits} cached, {s.llm_s:.1f} s), "
        f"{s.kept} of {s.phrases} phrases kept"
        + "".join(f"; {n} {why}" for why, n in dropped.items() if n),
        file=sys.stderr,
    )
    for error in s.errors[:3]:
        print(f"    error: {error}", file=sys.stderr)


def _sira_texts(folder: Path) -> dict[str, str]:
    from argus_ir.io import iter_jsonl

    path = folder / "documents.jsonl"
    return {row["id"]: row["text"] for _, row in iter_jsonl(path)} if path.exists() else {}
