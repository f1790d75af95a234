"""Reading a corpus for Ray Data without changing a string of it, and checking it first.

:func:`read_documents` makes a Ray Dataset of a corpus file or folder; JSONL comes as its lines
(:data:`LINE_COLUMNS`), parsed by the actors with :func:`line_documents`, because Arrow's and
pandas' JSON readers drop the lone surrogates a JSON escape can hold (``"\\ud800"``) and cannot say
which line was bad. :func:`check_corpus` checks the corpus on the driver before any cluster starts:
every record of a JSONL or CSV file as the single process checks it, a Parquet corpus by the types
of its columns. :mod:`argus_ir.runners.ray_data` runs the augmentation over what this reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir._optional import require
from argus_ir.documents import Document, as_documents
from argus_ir.errors import ArgusInputError
from argus_ir.runners.stream import scan_corpus

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = [
    "LINE_COLUMNS",
    "batch_documents",
    "check_corpus",
    "corpus_source",
    "line_documents",
    "read_documents",
]

LINE_COLUMNS = ("argus_where", "argus_line")
"""The rows :func:`read_documents` makes of JSONL: where each record is (``file:line``) and its
line, as read; the actors parse them (:func:`line_documents`)."""


def read_documents(source: str | os.PathLike[str]) -> ray.data.Dataset:
    """A Ray Dataset of the documents in ``source``, read in parallel.

    ``source``: a Parquet file or a folder of them, JSONL (``.jsonl``, ``.jsonl.gz``), CSV, or a BEIR
    dataset folder (its ``corpus.jsonl``). JSONL becomes rows of :data:`LINE_COLUMNS`, each
    non-blank line as read with its ``file:line``, which
    :class:`~argus_ir.runners.ray_data.ArgusBatchAugmenter` parses.
    """
    ray = require("ray", "ray")
    path, kind = corpus_source(source)
    if kind == "json":
        return ray.data.read_datasource(_json_lines(path))
    if kind == "csv":
        return ray.data.read_csv(os.fspath(path))
    return ray.data.read_parquet(os.fspath(path))


_CHUNK = 1 << 20  # bytes read at a time from a JSONL file
_LINES_PER_BLOCK = 4096


def _json_lines(path: Path) -> Any:
    """A Ray datasource of a JSONL file's lines (``.gz`` too: Ray decompresses by the name)."""
    from ray.data.datasource import FileBasedDatasource

    class JsonLines(FileBasedDatasource):
        def _read_stream(self, f: Any, _: str) -> Iterator[pa.Table]:
            return _line_blocks(f, os.fspath(path))

    return JsonLines(os.fspath(path))


def _line_blocks(f: Any, name: str) -> Iterator[pa.Table]:
    """Tables of :data:`LINE_COLUMNS` from a binary stream, numbered as
    :func:`argus_ir.io.iter_jsonl` numbers lines (split at ``\\n`` only; blank lines skipped)."""
    import pyarrow as pa

    wheres: list[str] = []
    lines: list[str] = []
    n = 0

    def add(raw: bytes) -> None:
        nonlocal n
        n += 1
        try:
            line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError:  # check_corpus reads the file first and names the byte
            raise ArgusInputError(f"{name}:{n}: not UTF-8") from None
        if line.strip():
            wheres.append(f"{name}:{n}")
            lines.append(line)

    def block() -> pa.Table:
        table = pa.table({LINE_COLUMNS[0]: wheres[:], LINE_COLUMNS[1]: lines[:]})
        wheres.clear()
        lines.clear()
        return table

    pieces: list[bytes] = []  # of a line longer than a chunk
    while chunk := f.read(_CHUNK):
        *complete, last = chunk.split(b"\n")
        for i, raw in enumerate(complete):
            add(b"".join([*pieces, raw]) if i == 0 and pieces else raw)
        if complete:
            pieces.clear()
        pieces.append(last)
        if len(lines) >= _LINES_PER_BLOCK:
            yield block()
    add(b"".join(pieces))
    if lines:
        yield block()


def corpus_source(source: str | os.PathLike[str]) -> tuple[Path, str]:
    """The path Ray reads and its format, or a clear error before any cluster starts."""
    path = Path(source)
    if not path.exists():
        raise ArgusInputError(f"{path}: no such file or folder")
    beir = [path / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (path / n).is_file()]
    if path.is_dir() and beir:
        path = beir[0]
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        return path, "json"
    if name.endswith(".csv"):
        return path, "csv"
    if path.is_dir() or name.endswith(".parquet"):
        return path, "parquet"
    raise ArgusInputError(
        f"{path}: not a corpus Ray can read (Parquet file or folder, .jsonl, .jsonl.gz, .csv, "
        "or a BEIR folder)"
    )


def check_corpus(path: Path, kind: str) -> None:
    """Check a corpus (``path`` and ``kind`` from :func:`corpus_source`) before any cluster starts.

    JSONL and CSV: every record, as the single process checks it
    (:func:`argus_ir.runners.stream.scan_corpus`: ids, repeated ids, text, title and metadata
    types), so the first bad one is named by file and line. Parquet: its id, text, title and
    metadata columns by their types, which hold for every row.

    Raises:
        ArgusInputError: The first bad record, or a missing or mistyped column.
    """
    if kind == "parquet":
        _check_columns(path)
    else:
        scan_corpus(path)


def line_documents(wheres: list[str], lines: list[str]) -> list[Document]:
    """The documents of JSON lines, each with the ``file:line`` it was read at."""
    docs = []
    for where, line in zip(wheres, lines, strict=True):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ArgusInputError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ArgusInputError(f"{where}: expected a JSON object, got {type(record).__name__}")
        try:
            doc = next(as_documents([record]))
        except ArgusInputError as exc:
            raise ArgusInputError(f"{where}: {exc}") from None
        docs.append(replace(doc, where=where))
    return docs


_TEXT_TYPES = ("string", "large_string", "null")


def _check_columns(path: Path) -> None:
    """A Parquet corpus's id, text, title and metadata columns, by their types (every row's)."""
    import pyarrow.dataset as pads
    import pyarrow.types as pat

    try:
        schema = pads.dataset(os.fspath(path), format="parquet").schema
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise ArgusInputError(f"{path}: cannot read Parquet ({exc})") from None
    names = schema.names
    have = ", ".join(repr(n) for n in names) or "none"
    id_name = next((n for n in ("_id", "id") if n in names), None)
    if id_name is None:
        raise ArgusInputError(
            f"{path}: no document id column (looked for ['_id', 'id']; the columns are {have})"
        )
    if "text" not in names:
        raise ArgusInputError(
            f"{path}: no 'text' column (Ray reads each document's text from it; the columns "
            f"are {have})"
        )
    kind = {name: schema.field(name).type for name in names}
    if not (str(kind[id_name]) in _TEXT_TYPES or pat.is_integer(kind[id_name])):
        raise ArgusInputError(
            f"{path}: column {id_name!r} is {kind[id_name]}, not a string or an integer"
        )
    for name in ("text", "title"):
        if name in kind and str(kind[name]) not in _TEXT_TYPES:
            raise ArgusInputError(f"{path}: column {name!r} is {kind[name]}, not text")
    meta = kind.get("metadata")
    if meta is not None and not (pat.is_struct(meta) or pat.is_null(meta)):
        raise ArgusInputError(
            f"{path}: column 'metadata' is {meta}, not an object (argus writes each document's "
            "lineage into its metadata object); rename the column or make it a struct"
        )


def batch_documents(batch: pa.Table) -> list[Document]:
    """The documents of a batch: JSON lines (:data:`LINE_COLUMNS`), parsed, or columns."""
    if LINE_COLUMNS[1] in batch.column_names:
        return line_documents(*(batch.column(c).to_pylist() for c in LINE_COLUMNS))
    return list(as_documents(batch.to_pylist()))
