"""``argus diagnose``: which documents of a corpus hold blind-spot entities, one JSONL row per
document, through the :class:`~argus_ir.pipeline.Argus` facade's own diagnosis."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir.cli.common import corpus_arg, read_corpus
from argus_ir.cli.options import overwrite_option, probe_options, retriever_options

if TYPE_CHECKING:
    from argus_ir.diagnose import Diagnosis

__all__ = ["add_parser", "diagnosis_row", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus diagnose`` to the command's subparsers."""
    p = subparsers.add_parser(
        "diagnose",
        help="list the documents of a corpus that hold blind-spot entities, with scores",
        description="Finds entity mentions (spaCy NER), predicts each one's RPS with a probe from "
        "its span vector (one retriever pass per document) and flags surface forms whose minimum "
        "predicted RPS is below tau (paper §5).",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        required=True,
        help="JSONL (BEIR corpus.jsonl works), Parquet or CSV with _id/id and text",
    )
    probe_options(p)
    p.add_argument("--out", type=Path, required=True, help="diagnosis JSONL, one line per document")
    overwrite_option(p)
    p.add_argument("--top", type=int, default=10, help="documents to print (lowest RPS first)")
    retriever_options(p)
    return p


def diagnosis_row(d: Diagnosis) -> dict[str, Any]:
    """One document's line of the diagnosis JSONL."""
    return {
        "id": d.doc_id,
        "min_rps": round(d.min_rps, 4),
        "flagged": [e.surface for e in d.flagged],
        "entities": [
            {
                "surface": e.surface,
                "label": e.label,
                "rps": round(e.rps, 4),
                "mentions": len(e.mentions),
            }
            for e in d.entities
        ],
    }


def run(args: argparse.Namespace) -> int:
    """Diagnose ``--corpus``, write the rows into ``--out``, print the worst documents."""
    from argus_ir.io import atomic_path, naming_file
    from argus_ir.outputs import check_output, claim_output
    from argus_ir.runners.stream import corpus_file, json_line

    rule = {
        "flag": "--out",
        "taken": {"the input corpus": corpus_file(corpus_arg(args.corpus))},
        "overwrite": args.overwrite,
    }
    check_output(args.out, **rule)  # before any model loads
    docs = read_corpus(args.corpus)
    with claim_output(args.out, **rule):  # a second run on --out stops here
        results, tau = _diagnose(args, docs)
        check_output(args.out, **rule)  # again, right before the write
        with (
            naming_file(args.out),  # a full disk names the file (it said only "File too large")
            atomic_path(args.out) as tmp,
            open(tmp, "w", encoding="utf-8") as fh,
        ):
            for r in results:
                fh.write(json_line(diagnosis_row(r)))
    hit = [r for r in results if r.flagged]
    print(
        f"{len(hit)} of {len(results)} documents hold entities below tau = "
        f"{tau:g} ({sum(len(r.flagged) for r in hit)} flagged surface forms) "
        f"-> {args.out}"
    )
    for r in sorted(hit, key=lambda r: r.min_rps)[: args.top]:
        names = ", ".join(f"{e.surface} ({e.rps:.2f})" for e in r.flagged)
        print(f"  {r.doc_id}: {names}")
    return 0


def _diagnose(args: argparse.Namespace, docs: list[Any]) -> tuple[list[Diagnosis], float]:
    """Every document's diagnosis under the options, and the threshold it used."""
    from argus_ir.pipeline import Argus

    argus = Argus(
        retriever=args.retriever,
        probe=args.probe,
        k=args.k,
        tau=args.tau,
        ner_model=args.ner_model,
        ner_processes=args.ner_processes,
        backend=args.backend,
        device=args.device,
        precision=args.precision,
        encoder_batch_size=args.batch_size,
        show_progress=not args.quiet,
    )
    return list(argus.diagnose(docs)), argus.diagnoser.tau
