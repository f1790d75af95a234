"""Rebuild the default reference KB shipped in ``argus_ir/data/kb_vital10k.jsonl.gz``.

One JSON object per line with ``title``, ``text`` (the article's lead paragraph) and ``description``
(the Wikidata short description, ``""`` where there is none), in the order of the shared KB file
``kb/wiki_vital10k_en.jsonl``. The ``topic`` field is left out. Deterministic: the gzip header carries
no file name or time.

Usage::

    python scripts/build_kb.py --shared-data ../shared/data
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

OUT = (
    Path(__file__).resolve().parents[1]
    / "packages"
    / "argus-core"
    / "src"
    / "argus_ir"
    / "data"
    / "kb_vital10k.jsonl.gz"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    lines = []
    with open(args.shared_data / "kb" / "wiki_vital10k_en.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out = {
                "title": row["title"],
                "text": row["text"],
                "description": row.get("wikidata_description") or "",
            }
            lines.append(json.dumps(out, ensure_ascii=False) + "\n")
    payload = "".join(lines).encode("utf-8")
    with (
        open(args.out, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz,
    ):
        gz.write(payload)
    print(f"{len(lines)} passages -> {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
