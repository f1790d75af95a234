"""Readers of the public knowledge dumps users download, streamed into KB passages.

Each reader yields ``(Passage, aliases)`` records one at a time, reading ``.gz`` and ``.bz2`` as
they are, so a dump never has to fit in memory:

- :func:`read_wikipedia_abstracts`: Wikipedia's abstracts dump (``enwiki-*-abstract.xml``): one
  passage per article, ``<title>`` without its "Wikipedia: " prefix, ``<abstract>`` as text;
- :func:`read_wikidata`: Wikidata's JSON dump (``latest-all.json``, one entity per line inside a
  JSON array): the English label, description and aliases; the English Wikipedia title
  (``sitelinks.enwiki``) when there is one;
- :func:`read_dbpedia`: DBpedia's abstracts as N-Triples or line-per-triple Turtle
  (``long-abstracts_lang=en.ttl``, ``short-abstracts``): the resource's name as title, the English
  literal as text.

:func:`merge` joins them: a Wikidata entity whose English Wikipedia title names a text passage
gives it its description and aliases; the other entities become passages of their own (label and
description). ``argus kb build`` runs these into :func:`argus_ir.kb.disk.build_disk_kb`.
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote

from argus_ir.errors import ArgusInputError
from argus_ir.kb.reference import Passage
from argus_ir.text.grounding import normalize

__all__ = [
    "FORMATS",
    "merge",
    "read_dbpedia",
    "read_dump",
    "read_wikidata",
    "read_wikipedia_abstracts",
]

Record = tuple[Passage, list[str]]
FORMATS = ("wikipedia-abstracts", "wikidata", "dbpedia", "passages")
"""What ``argus kb build --format`` reads."""
LICENCES = {
    "wikipedia-abstracts": "Wikipedia text, CC BY-SA 4.0",
    "wikidata": "Wikidata, CC0 1.0",
    "dbpedia": "DBpedia abstracts (from Wikipedia), CC BY-SA 4.0",
    "passages": "as its owner licenses it",
}


def _open(path: Path) -> IO[str]:
    if not path.is_file():
        raise ArgusInputError(f"KB input not found: {path}")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


# -- Wikipedia abstracts (XML) --------------------------------------------------------------------


def read_wikipedia_abstracts(path: str | Path, *, min_chars: int = 20) -> Iterator[Record]:
    """Passages of a Wikipedia abstracts dump (``<doc><title>Wikipedia: X</title><url/>
    <abstract/>``); abstracts shorter than ``min_chars`` or made of table residue ("|...") are
    skipped.

    Raises:
        ArgusInputError: The file is not XML of that shape (names the file and line).
    """
    import xml.etree.ElementTree as ET

    path = Path(path)
    with _open(path) as fh:
        parser = ET.iterparse(fh, events=("end",))
        try:
            for _, element in parser:
                if element.tag != "doc":
                    continue
                title = (element.findtext("title") or "").strip()
                title = title.removeprefix("Wikipedia:").strip()
                text = " ".join((element.findtext("abstract") or "").split())
                element.clear()
                if not title or len(text) < min_chars or text.startswith(("|", "{", "!")):
                    continue
                yield Passage(f"enwiki:{title}", title, text), []
        except ET.ParseError as exc:
            line = exc.position[0] if getattr(exc, "position", None) else "?"
            raise ArgusInputError(
                f"{path}:{line}: not a Wikipedia abstracts dump ({exc})"
            ) from None


# -- Wikidata (JSON dump) -------------------------------------------------------------------------


def _en(value: Any) -> str:
    return str(value.get("en", {}).get("value", "")) if isinstance(value, dict) else ""


def read_wikidata(path: str | Path, *, language: str = "en") -> Iterator[tuple[Record, str]]:
    """``((passage, aliases), enwiki title)`` per entity with a label in ``language`` (the title
    is ``""`` without an English Wikipedia sitelink). The passage reads "label: description."
    ("Douglas Adams: English author and humorist (1952–2001)."), known by its label and aliases.

    Raises:
        ArgusInputError: A line that is not an entity object (names the file and line).
    """
    path = Path(path)
    with _open(path) as fh:
        for number, raw in enumerate(fh, start=1):
            line = raw.strip().rstrip(",")
            if line in ("", "[", "]"):
                continue
            try:
                entity = json.loads(line)
            except ValueError as exc:
                raise ArgusInputError(f"{path}:{number}: not a Wikidata entity ({exc})") from None
            if not isinstance(entity, dict) or "id" not in entity:
                raise ArgusInputError(f"{path}:{number}: not a Wikidata entity (no id)")
            labels = entity.get("labels") or {}
            label = str(labels.get(language, {}).get("value", "")).strip()
            if not label:
                continue
            description = str(
                (entity.get("descriptions") or {}).get(language, {}).get("value", "")
            ).strip()
            aliases = [
                str(a.get("value", "")).strip()
                for a in (entity.get("aliases") or {}).get(language, [])
                if isinstance(a, dict)
            ]
            aliases = [a for a in aliases if a]
            enwiki = str(((entity.get("sitelinks") or {}).get("enwiki") or {}).get("title", ""))
            text = f"{label}: {description}." if description else f"{label}."
            if aliases:
                text += " Also known as " + ", ".join(aliases) + "."
            passage = Passage(f"wikidata:{entity['id']}", label, text, description)
            yield (passage, aliases), enwiki


# -- DBpedia (N-Triples / Turtle) -----------------------------------------------------------------

_TRIPLE = re.compile(
    r"^(?:<(?P<iri>[^>]+)>|(?P<pname>[\w-]*:[^\s]+))\s+(?:<[^>]+>|[\w-]*:[^\s]+)\s+"
    r'"(?P<lit>(?:[^"\\]|\\.)*)"(?:@(?P<lang>[\w-]+)|\^\^\S+)?\s*\.\s*$'
)
_PREFIX = re.compile(r"^@prefix\s+([\w-]*):\s*<([^>]*)>\s*\.\s*$")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[tbnrf\"'\\])")
_SIMPLE = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if code[0] in "uU" else _SIMPLE[code]

    return _ESCAPE.sub(sub, text)


def read_dbpedia(path: str | Path, *, language: str = "en") -> Iterator[Record]:
    """Passages of DBpedia abstract triples (one per line: N-Triples, or Turtle written the same
    way with ``@prefix`` lines); literals in another language are skipped.

    Raises:
        ArgusInputError: A line that is neither a triple, a prefix, a comment nor blank (names
            the file and line).
    """
    path = Path(path)
    prefixes: dict[str, str] = {}
    with _open(path) as fh:
        for number, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            prefix = _PREFIX.match(line)
            if prefix:
                prefixes[prefix.group(1)] = prefix.group(2)
                continue
            m = _TRIPLE.match(line)
            if m is None:
                raise ArgusInputError(f"{path}:{number}: not a DBpedia triple line")
            if m.group("lang") and m.group("lang").split("-")[0] != language:
                continue
            iri = m.group("iri")
            if iri is None:
                name, _, local = m.group("pname").partition(":")
                if name not in prefixes:
                    raise ArgusInputError(f"{path}:{number}: unknown prefix {name!r}")
                iri = prefixes[name] + local
            local = iri.rstrip("/").rsplit("/", 1)[-1]
            title = unquote(local).replace("_", " ").strip()
            text = " ".join(_unescape(m.group("lit")).split())
            if title and text:
                yield Passage(f"dbpedia:{local}", title, text), []


# -- own passages and the merge -------------------------------------------------------------------


def read_passages(path: str | Path) -> Iterator[Record]:
    """Passages of a JSONL / Parquet / CSV file (``id``, ``title``, ``text``, optional
    ``description`` and ``aliases``), as :meth:`argus_ir.kb.ReferenceKB.from_file` reads them."""
    from argus_ir.tables import check_exists, table_rows

    p = Path(path)
    check_exists(p)
    _, rows = table_rows(p)
    for where, rec in rows:
        for f in ("title", "text"):
            if not isinstance(rec.get(f), str):
                raise ArgusInputError(f"{where}: KB record lacks a text {f!r} field")
        aliases = rec.get("aliases") or []
        if not isinstance(aliases, list):
            raise ArgusInputError(f"{where}: 'aliases' must be a list of names")
        desc = rec.get("description") or rec.get("wikidata_description") or ""
        pid = str(rec.get("id") or rec["title"])
        yield Passage(pid, rec["title"], rec["text"], str(desc)), [str(a) for a in aliases]


def read_dump(fmt: str, path: str | Path) -> Iterator[Record]:
    """The records of one input by format (:data:`FORMATS`; Wikidata without its sitelinks)."""
    if fmt == "wikipedia-abstracts":
        return read_wikipedia_abstracts(path)
    if fmt == "dbpedia":
        return read_dbpedia(path)
    if fmt == "passages":
        return read_passages(path)
    if fmt == "wikidata":
        return (record for record, _ in read_wikidata(path))
    raise ArgusInputError(f"unknown KB input format {fmt!r}; one of {FORMATS}")


def merge(
    texts: Iterable[Record], wikidata: Iterable[tuple[Record, str]] | None = None
) -> Iterator[Record]:
    """Text passages, each given the description and aliases of the Wikidata entity whose
    English Wikipedia title is its title; then the entities no text passage took, as passages of
    their own. Without ``wikidata``, the text passages unchanged.

    The entities with a sitelink are held in memory (keyed by title) while the texts stream.
    """
    if wikidata is None:
        yield from texts
        return
    linked: dict[str, tuple[Record, bool]] = {}
    unlinked: list[Record] = []
    for record, enwiki in wikidata:
        if enwiki:
            linked.setdefault(normalize(enwiki), (record, False))
        else:
            unlinked.append(record)
    for passage, aliases in texts:
        key = normalize(passage.title)
        entity = linked.get(key)
        if entity is not None:
            (wd, wd_aliases), _ = entity
            linked[key] = (entity[0], True)
            names = [wd.title] if normalize(wd.title) != key else []
            passage = Passage(
                passage.id, passage.title, passage.text, passage.description or wd.description
            )
            aliases = [*aliases, *names, *wd_aliases]
        yield passage, aliases
    for record, used in linked.values():
        if not used:
            yield record
    yield from unlinked
