"""``argus kb build``: stream public dumps or the user's passages into a disk KB folder that
``--kb FOLDER`` opens memory-mapped, recording each input's licence, size and head hash."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.kb.reference import CARD_FILE

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``argus kb`` and its ``build`` step to the command's subparsers."""
    from argus_ir.kb.dumps import FORMATS

    kb = subparsers.add_parser(
        "kb",
        help="build a reference KB folder from public dumps or your own passages",
        description="Knowledge bases for the remedy (--kb FOLDER).",
    )
    subs = kb.add_subparsers(dest="kb_command", metavar="STEP", required=True)
    p = subs.add_parser(
        "build",
        help="stream dumps into a disk KB folder (memory-mapped when opened)",
        description="Reads Wikipedia's abstracts dump, Wikidata's JSON dump, DBpedia abstracts "
        "(N-Triples / Turtle) or a passages file (JSONL/Parquet/CSV: id, title, text, optional "
        "description and aliases), .gz and .bz2 as they are, and writes a KB folder: passages "
        "(Arrow), a BM25 index opened memory-mapped, an exact-name table of titles and aliases, "
        "and a card with sources, licences and counts. Wikidata entities whose English "
        "Wikipedia title names a text passage give it their description and aliases.",
    )
    for fmt in FORMATS:
        p.add_argument(
            f"--{fmt}",
            type=Path,
            action="append",
            default=[],
            metavar="FILE",
            help=f"a {fmt} input (repeatable)",
        )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the KB folder to write: a new or empty folder, or with --overwrite an existing KB "
        "folder (a folder that is not a KB is never replaced)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing KB folder")
    p.add_argument("--limit", type=int, help="stop after this many passages (a trial build)")
    return kb


def run(args: argparse.Namespace) -> int:
    """Build the KB folder ``--out`` from every input given."""
    import hashlib
    import itertools
    import json

    from argus_ir.kb.disk import build_disk_kb
    from argus_ir.kb.dumps import FORMATS, LICENCES, merge, read_dump, read_wikidata
    from argus_ir.kb.reference import is_kb_folder
    from argus_ir.outputs import check_output, claim_output

    inputs = [(fmt, path) for fmt in FORMATS for path in getattr(args, fmt.replace("-", "_"))]
    if not inputs:
        raise ArgusInputError(
            "give at least one input: " + ", ".join(f"--{f} FILE" for f in FORMATS)
        )
    for _, path in inputs:
        if not path.is_file():
            raise ArgusInputError(f"KB input not found: {path}")
    rule = {
        "flag": "--out",
        "inputs": [path for _, path in inputs],
        "overwrite": args.overwrite,
        "folder": True,
        "kind": "KB folder",
        "is_kind": is_kb_folder,
    }
    check_output(args.out, **rule)  # before any input is read
    skipped: dict[str, int] = {}  # what the readers leave out on purpose, for the summary
    texts = itertools.chain.from_iterable(
        read_dump(f, p, skipped) for f, p in inputs if f != "wikidata"
    )
    wikidata = [p for f, p in inputs if f == "wikidata"]
    records = merge(
        texts,
        itertools.chain.from_iterable(read_wikidata(p) for p in wikidata) if wikidata else None,
    )
    if args.limit is not None:
        records = itertools.islice(records, args.limit)
    if not args.quiet:
        from tqdm.auto import tqdm

        records = tqdm(records, desc="passages", unit=" passages")
    sources = {}
    for fmt, path in inputs:  # a dump can be 100 GB: its size and the hash of its first MiB
        with open(path, "rb") as fh:
            head = hashlib.sha256(fh.read(1 << 20)).hexdigest()
        sources[str(path)] = {
            "format": fmt,
            "licence": LICENCES[fmt],
            "bytes": path.stat().st_size,
            "head_sha256": head,
        }
    with claim_output(args.out, **rule):  # a second build into --out stops here
        folder = build_disk_kb(
            records,
            args.out,
            sources=sources,
            show_progress=not args.quiet,
            overwrite=args.overwrite,
        )
    card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
    c = card["counts"]
    print(
        f"{c['passages']} passages, {c['aliases']} aliases ({c['duplicate_ids']} repeated ids, "
        f"{c['empty']} empty passages and {skipped.get('short', 0)} short, untitled or "
        f"table-residue abstracts skipped) -> {folder}"
    )
    return 0
