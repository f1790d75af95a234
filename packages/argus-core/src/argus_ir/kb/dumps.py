"""Readers of the public knowledge dumps users download, streamed into KB passages.

Each reader yields ``(Passage, aliases)`` records one at a time, reading ``.gz`` and ``.bz2`` as
they are, so a dump never has to fit in memory; a bad line, and a compressed file cut short or
damaged, is an :class:`~argus_ir.errors.ArgusInputError` naming the file and the line:

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
import zlib
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


_UNREADABLE = (EOFError, OSError, zlib.error, UnicodeDecodeError)
"""What reading a dump raises when its bytes stop making sense: a ``.gz`` or ``.bz2`` cut short
(``EOFError``), damaged (``OSError``, ``zlib.error``), or text that is not UTF-8."""


def _unreadable(path: Path, line: int, exc: BaseException) -> ArgusInputError:
    """The error for a dump that cannot be read past ``line`` (a download cut short, say)."""
    if isinstance(exc, UnicodeDecodeError):
        return ArgusInputError(f"{path}:{line}: not UTF-8 text ({exc})")
    what = "cut short" if isinstance(exc, EOFError) else "damaged"
    return ArgusInputError(
        f"{path}:{line}: cannot read on, the file is {what} ({exc}); download it again"
    )


def _lines(path: Path, fh: IO[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of an open dump; a file that cannot be read on is named with the
    line it got to."""
    number = 0
    try:
        for number, raw in enumerate(fh, start=1):
            yield number, raw
    except _UNREADABLE as exc:
        raise _unreadable(path, number + 1, exc) from None


class _Counted:
    """A text stream that counts the lines read from it (where a broken XML dump stopped)."""

    def __init__(self, fh: IO[str]) -> None:
        self.fh = fh
        self.lines = 0

    def read(self, size: int = -1) -> str:
        data = self.fh.read(size)
        self.lines += data.count("\n")
        return data


# -- Wikipedia abstracts (XML) --------------------------------------------------------------------


def read_wikipedia_abstracts(
    path: str | Path, *, min_chars: int = 20, skipped: dict[str, int] | None = None
) -> Iterator[Record]:
    """Passages of a Wikipedia abstracts dump (``<doc><title>Wikipedia: X</title><url/>
    <abstract/>``); abstracts shorter than ``min_chars`` or made of table residue ("|...") are
    skipped (an untitled one too), and counted in ``skipped["short"]`` when ``skipped`` is given.

    Raises:
        ArgusInputError: The file is not XML of that shape, or a compressed dump is cut short
            or damaged (names the file and line).
    """
    import xml.etree.ElementTree as ET

    path = Path(path)
    with _open(path) as fh:
        source = _Counted(fh)
        parser = ET.iterparse(source, events=("end",))
        try:
            for _, element in parser:
                if element.tag != "doc":
                    continue
                title = (element.findtext("title") or "").strip()
                title = title.removeprefix("Wikipedia:").strip()
                text = " ".join((element.findtext("abstract") or "").split())
                element.clear()
                if not title or len(text) < min_chars or text.startswith(("|", "{", "!")):
                    if skipped is not None:
                        skipped["short"] = skipped.get("short", 0) + 1
                    continue
                yield Passage(f"enwiki:{title}", title, text), []
        except ET.ParseError as exc:
            line = exc.position[0] if getattr(exc, "position", None) else "?"
            raise ArgusInputError(
                f"{path}:{line}: not a Wikipedia abstracts dump ({exc})"
            ) from None
        except _UNREADABLE as exc:
            raise _unreadable(path, source.lines + 1, exc) from None


# -- Wikidata (JSON dump) -------------------------------------------------------------------------


class _WrongType(Exception):
    """A field of a Wikidata entity that is not of the dump's type (its message says which)."""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _object(value: Any, where: str) -> dict[str, Any]:
    """An entity's map (``labels``, ``labels.en``, ...); ``{}`` when absent or empty (the dumps
    write some empty maps as ``[]``)."""
    if value is None or value == []:
        return {}
    if not isinstance(value, dict):
        raise _WrongType(f"{where!r} is {_kind(value)}, not an object")
    return value


def _text(term: dict[str, Any], key: str, where: str) -> str:
    value = term.get(key, "")
    if not isinstance(value, str):
        raise _WrongType(f"'{where}.{key}' is {_kind(value)}, not text")
    return value.strip()


def _entity(entity: dict[str, Any], language: str) -> tuple[Record, str] | None:
    """One entity's record and enwiki title (``None`` without a label in ``language``).

    Raises:
        _WrongType: A field that is not of the dump's type.
    """
    where = f"labels.{language}"
    label = _text(
        _object(_object(entity.get("labels"), "labels").get(language), where), "value", where
    )
    if not label:
        return None
    where = f"descriptions.{language}"
    terms = _object(entity.get("descriptions"), "descriptions")
    description = _text(_object(terms.get(language), where), "value", where)
    where = f"aliases.{language}"
    listed = _object(entity.get("aliases"), "aliases").get(language) or []
    if not isinstance(listed, list):
        raise _WrongType(f"{where!r} is {_kind(listed)}, not a list")
    aliases = [
        _text(_object(a, f"{where}[{i}]"), "value", f"{where}[{i}]") for i, a in enumerate(listed)
    ]
    aliases = [a for a in aliases if a]
    sitelink = _object(
        _object(entity.get("sitelinks"), "sitelinks").get("enwiki"), "sitelinks.enwiki"
    )
    enwiki = _text(sitelink, "title", "sitelinks.enwiki")
    text = f"{label}: {description}." if description else f"{label}."
    if aliases:
        text += " Also known as " + ", ".join(aliases) + "."
    return (Passage(f"wikidata:{entity['id']}", label, text, description), aliases), enwiki


def read_wikidata(path: str | Path, *, language: str = "en") -> Iterator[tuple[Record, str]]:
    """``((passage, aliases), enwiki title)`` per entity with a label in ``language`` (the title
    is ``""`` without an English Wikipedia sitelink). The passage reads "label: description."
    ("Douglas Adams: English author and humorist (1952–2001)."), known by its label and aliases.

    Raises:
        ArgusInputError: A line that is not an entity object, or an entity whose labels,
            descriptions, aliases or sitelinks are not of the dump's types (names the file, the
            line and the field); a compressed dump cut short or damaged (names the line reached).
    """
    path = Path(path)
    with _open(path) as fh:
        for number, raw in _lines(path, fh):
            line = raw.strip().rstrip(",")
            if line in ("", "[", "]"):
                continue
            try:
                entity = json.loads(line)
            except ValueError as exc:
                raise ArgusInputError(f"{path}:{number}: not a Wikidata entity ({exc})") from None
            if not isinstance(entity, dict) or not isinstance(entity.get("id"), str):
                raise ArgusInputError(f"{path}:{number}: not a Wikidata entity (no id)")
            try:
                record = _entity(entity, language)
            except _WrongType as exc:
                raise ArgusInputError(
                    f"{path}:{number}: Wikidata entity {entity['id']}: {exc}"
                ) from None
            if record is not None:
                yield record


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
        ArgusInputError: A line that is neither a triple, a prefix, a comment nor blank, or a
            compressed dump cut short or damaged (names the file and line).
    """
    path = Path(path)
    prefixes: dict[str, str] = {}
    with _open(path) as fh:
        for number, raw in _lines(path, fh):
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


def read_dump(
    fmt: str, path: str | Path, skipped: dict[str, int] | None = None
) -> Iterator[Record]:
    """The records of one input by format (:data:`FORMATS`; Wikidata without its sitelinks);
    ``skipped`` counts what a reader leaves out on purpose (``"short"`` abstracts)."""
    if fmt == "wikipedia-abstracts":
        return read_wikipedia_abstracts(path, skipped=skipped)
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
