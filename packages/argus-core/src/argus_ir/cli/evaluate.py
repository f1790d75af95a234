"""``argus evaluate``: retrieval quality of each remedy on BEIR datasets (nDCG, recall, paired
significance), with ablations, variants and, on request, a per-query explanation of what moved."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from argus_ir.cli.common import argus_settings, beir_datasets, write_evaluation
from argus_ir.cli.options import (
    out_folder_option,
    remedy_options,
    retriever_options,
    split_option,
    subset_options,
)
from argus_ir.remedy import DEFAULT_REMEDY
from argus_ir.remedy import KINDS as REMEDIES

__all__ = ["add_parser", "run", "write_explanations"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus evaluate`` to the command's subparsers."""
    p = subparsers.add_parser(
        "evaluate",
        help="retrieval quality of each remedy on BEIR datasets (nDCG, recall, significance)",
        description="For each BEIR folder (corpus.jsonl, queries*.jsonl, qrels/SPLIT.tsv): the "
        "retriever embeds the corpus, diagnoses it and ranks; each remedy's views are indexed "
        "beside the originals, search is exact, views collapse to their source documents, and "
        "nDCG/recall come from ir-measures with a paired t-test against the original index.",
    )
    p.add_argument("datasets", type=Path, nargs="+", help="BEIR dataset folders")
    out_folder_option(
        p, "folder for results.json/.md, per_query", inputs=lambda args: args.datasets
    )
    split_option(p)
    p.add_argument(
        "--remedy",
        default=f"original,{DEFAULT_REMEDY}",
        help=f"comma-separated conditions: original, {', '.join(REMEDIES)}",
    )
    p.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="SETTING=V1,V2",
        help="one more condition per value of tau, k_aug or context_threshold ('off' for none), "
        "e.g. --ablate tau=0.1,0.2 --ablate context_threshold=off,0.15 (repeatable)",
    )
    p.add_argument(
        "--ablate-remedy",
        choices=REMEDIES,
        default=DEFAULT_REMEDY,
        help="the remedy ablations vary (default: the default remedy)",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="'REMEDY SETTING=V ...'",
        help="one more condition: a remedy with settings of its own, e.g. --variant "
        "'expansion max_views=1 view_discount=0.03' (repeatable; settings: tau, k_aug, "
        "context_threshold, max_views, view_discount, targeting=probe|corpus)",
    )
    p.add_argument(
        "--view-discount",
        type=float,
        default=None,
        help="what a view's score loses before it folds into its source's (default: "
        "argus_ir.collapse.DEFAULT_VIEW_DISCOUNT)",
    )
    p.add_argument(
        "--vector-cache",
        type=Path,
        default=None,
        help="folder keeping every embedded text's vector (per model), so reruns and other "
        "conditions embed only new texts",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="per-query diagnosis: for each query that lost or gained, which view of which "
        "document moved into or out of the top 10 (explain/<dataset>.md and .jsonl in --out)",
    )
    remedy_options(p)
    p.add_argument("--depth", type=int, default=100, help="source documents ranked per query")
    subset_options(
        p,
        " (for slow remedies such as synthesis; compare only with conditions on the same subset)",
    )
    retriever_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Evaluate every condition on every dataset, writing the results after each dataset."""
    from argus_ir._optional import require
    from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
    from argus_ir.eval import evaluate, parse_ablations, parse_variant, write_results
    from argus_ir.kb.shipped import kb_fingerprint

    require("ir_measures", "eval")  # before any embedding
    remedies = tuple(r.strip() for r in args.remedy.split(",") if r.strip())
    ablations = parse_ablations(args.ablate)
    kbs = [args.kb, *ablations.get("kb", ())]
    for spec in args.variant:
        kbs.append(parse_variant(spec)[2].get("kb", args.kb))  # a bad spec fails before any work
    for kb in dict.fromkeys(kbs):  # a missing KB file or extra, too
        kb_fingerprint(kb)
    discount = DEFAULT_VIEW_DISCOUNT if args.view_discount is None else args.view_discount
    results: list[Any] = []
    for data in beir_datasets(args):
        result = evaluate(
            data,
            remedies=remedies,
            ablations=ablations,
            ablate=args.ablate_remedy,
            variants=args.variant,
            depth=args.depth,
            show_progress=not args.quiet,
            view_discount=discount,
            vector_cache=args.vector_cache,
            explain=args.explain,
            **argus_settings(args),
        )
        results += result.split_by()
        if args.explain:
            write_explanations(result, data, args.out)
        write_results(results, args.out)  # each dataset's rows as soon as it is done
        print(f"  {data.name}: written to {args.out}")
    return write_evaluation(results, args.out, written=True)


def write_explanations(result: Any, data: Any, out: Path) -> None:
    """``--explain``: for each condition against the original, the queries that moved and why
    (``explain/<dataset>-<condition>.md`` and ``.jsonl`` in ``out``)."""
    from argus_ir.eval import explain_result
    from argus_ir.eval.explain import explain_markdown
    from argus_ir.io import atomic_path

    folder = out / "explain"
    folder.mkdir(parents=True, exist_ok=True)
    for part in result.split_by():
        for name, found in explain_result(part, data).items():
            stem = f"{part.dataset}-{name}".replace(" ", "_").replace("/", "_")
            with atomic_path(folder / f"{stem}.md") as tmp:
                tmp.write_text(
                    f"# {part.dataset}: {name} against original\n\n"
                    + explain_markdown(found["queries"], found["summary"]),
                    "utf-8",
                )
            with (
                atomic_path(folder / f"{stem}.jsonl") as tmp,
                open(tmp, "w", encoding="utf-8") as fh,
            ):
                for e in found["queries"]:
                    fh.write(json.dumps(e.to_dict(), ensure_ascii=False) + "\n")
            summary = found["summary"]
            print(
                f"  explain {part.dataset} / {name}: {json.dumps(summary.get('mechanisms', summary))[:300]}"
            )
