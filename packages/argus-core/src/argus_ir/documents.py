"""The corpus documents argus diagnoses and augments, read from the user's files.

:class:`Document` is one record of a corpus (id, text, title, where it was read, the record as
read); :func:`iter_documents` streams a JSONL (gzipped too), Parquet or CSV corpus through
:mod:`argus_ir.tables`, checking ids and text fields with the file and line of each record.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.tables import as_id, check_exists, table_rows

__all__ = [
    "TEXT_FIELDS",
    "Document",
    "DocumentLike",
    "as_documents",
    "iter_documents",
    "read_documents",
]


@dataclass(frozen=True)
class Document:
    """A corpus document: id, text, where it was read (``file:line``) and its title (BEIR has one).

    ``index_text`` is what a retriever indexes: ``title + "\\n" + text`` when there is a title (the
    BEIR convention of title then text), else the text.
    """

    id: str
    text: str
    where: str = ""
    title: str = ""
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The record as read, every key kept (what an output writes back for the original)."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The record's ``metadata`` object (``{}`` when it has none)."""
        value = self.record.get("metadata")
        return dict(value) if isinstance(value, Mapping) else {}

    @property
    def index_text(self) -> str:
        if self.title.strip() and self.text.strip():
            return f"{self.title}\n{self.text}"
        return self.title if self.title.strip() else self.text


def read_documents(
    path: str | os.PathLike[str],
    *,
    id_fields: Sequence[str] = ("_id", "id"),
    text_field: str | None = None,
    title_field: str | None = "title",
) -> list[Document]:
    """Read a whole corpus into a list: :func:`iter_documents`, collected."""
    return list(
        iter_documents(path, id_fields=id_fields, text_field=text_field, title_field=title_field)
    )


TEXT_FIELDS = ("text", "contents", "content", "body", "page_content")
"""Where a record's text is looked for, in order, when no ``text_field`` is named."""

_TEXT_CHECK_RECORDS = 1000  # records read before a corpus with no text field at all is refused


def iter_documents(
    path: str | os.PathLike[str],
    *,
    id_fields: Sequence[str] = ("_id", "id"),
    text_field: str | None = None,
    title_field: str | None = "title",
) -> Iterator[Document]:
    """Stream a corpus from JSONL (optionally ``.gz``; BEIR's ``corpus.jsonl`` works), Parquet or CSV.

    Records are read one at a time (Parquet one record batch at a time), so memory does not grow
    with the corpus apart from the ids kept to catch duplicates. The id comes from the first of
    ``id_fields`` a record has; the text from ``text_field`` (default: the first of
    :data:`TEXT_FIELDS` the record has); the title, when records have one, from ``title_field``.
    A ``null`` text or title is read as ``""`` (a document without text passes through with
    nothing to diagnose). Each document keeps its record as read (:attr:`Document.record`).

    Raises:
        ArgusInputError: The file is missing or malformed, a record lacks an id or has a non-string
            text or a ``metadata`` that is not an object (null is none), an id repeats (the message names file and line), or none of the first 1,000
            records (or of all, in a shorter file) has a text field (the message lists the fields
            it saw). Raised when the iteration reaches the record, after the documents before it
            were yielded.
    """
    p = Path(path)
    check_exists(p)
    _, rows = table_rows(p)
    first_at: dict[str, str] = {}
    names = (text_field,) if text_field else TEXT_FIELDS
    with_text, n = False, 0
    seen: dict[str, None] = {}  # the fields of records without text, in order of appearance
    for where, rec in rows:
        n += 1
        key = next((f for f in id_fields if rec.get(f) not in (None, "")), None)
        if key is None:
            raise ArgusInputError(f"{where}: no document id (looked for {list(id_fields)})")
        doc_id = as_id(rec[key], key, where)
        field_name = next((f for f in names if f in rec), names[0])
        if field_name in rec:
            with_text = True
        elif not with_text:
            seen.update(dict.fromkeys(rec))
            if n >= _TEXT_CHECK_RECORDS:
                _no_text_field(p, names, seen, n)
        text = rec.get(field_name)
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise ArgusInputError(
                f"{where}: {field_name!r} of document {doc_id!r} is {type(text).__name__}, not text"
            )
        if doc_id in first_at:
            raise ArgusInputError(
                f"{where}: duplicate document id {doc_id!r} (first at {first_at[doc_id]})"
            )
        title = rec.get(title_field) if title_field else None
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise ArgusInputError(
                f"{where}: {title_field!r} of document {doc_id!r} is {type(title).__name__}, not text"
            )
        meta = rec.get("metadata")
        if meta is not None and not isinstance(meta, Mapping):
            raise ArgusInputError(
                f"{where}: 'metadata' of document {doc_id!r} is {type(meta).__name__}, not an "
                "object (argus writes each document's lineage into its metadata object); "
                "rename the field or make it an object"
            )
        first_at[doc_id] = where
        yield Document(doc_id, text, where, title, rec)
    if n and not with_text:
        _no_text_field(p, names, seen, n)


def _no_text_field(path: Path, names: Sequence[str], seen: Mapping[str, None], n: int) -> None:
    looked = " or ".join(repr(f) for f in names)
    raise ArgusInputError(
        f"{path}: none of the first {n} records has a text field (looked for {looked}; the "
        f"records have {', '.join(repr(k) for k in seen) or 'no fields'})"
    )


DocumentLike = Document | tuple[str, str | None] | Mapping[str, Any]
"""A :class:`Document`, an ``(id, text)`` pair or a mapping with id and text."""


def as_documents(documents: Iterable[DocumentLike]) -> Iterator[Document]:
    """Normalise document-likes, checking each has an id and string text (``None`` -> ``""``).

    Raises:
        ArgusInputError: A document without id, or with text that is not a string (names its id or
            position).
    """
    for pos, doc in enumerate(documents):
        if isinstance(doc, Document):
            yield doc
            continue
        if isinstance(doc, Mapping):
            doc_id = doc.get("_id", doc.get("id"))
            text, title = doc.get("text"), doc.get("title") or ""
        elif isinstance(doc, tuple) and len(doc) == 2:
            (doc_id, text), title = doc, ""
        else:
            raise ArgusInputError(
                f"document at position {pos}: expected a Document, an (id, text) pair or a "
                f"mapping with id and text, got {type(doc).__name__}"
            )
        if doc_id is None or str(doc_id) == "":
            raise ArgusInputError(f"document at position {pos} has no id")
        if text is None:
            text = ""
        if not isinstance(text, str) or not isinstance(title, str):
            raise ArgusInputError(f"document {doc_id!r}: text is {type(text).__name__}, not str")
        record = dict(doc) if isinstance(doc, Mapping) else {}
        yield Document(str(doc_id), text, f"position {pos}", title, record)
