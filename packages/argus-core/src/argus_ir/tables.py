"""Reading the record files users give argus: JSONL (gzipped too), CSV/TSV and Parquet.

Every reader yields each record with where it came from (``file:line`` or ``file:row N``), so a
bad record fails with a message naming its file and line. The entity and edge loaders
(:mod:`argus_ir.audit.loaders`), the document reader and the KB passage readers all read through
here; the JSONL line reader itself is :func:`argus_ir.io.iter_jsonl`.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.errors import ArgusInputError
from argus_ir.io import iter_jsonl

__all__ = [
    "as_id",
    "check_exists",
    "iter_csv_rows",
    "iter_jsonl_records",
    "read_parquet_rows",
    "table_kind",
    "table_rows",
]


def as_id(value: Any, what: str, where: str) -> str:
    """A record id as text: a string or an integer, not empty (``where`` names file and line)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
        raise ArgusInputError(f"{where}: {what} must be a string or an integer, got {value!r}")
    text = str(value).strip()
    if not text:
        raise ArgusInputError(f"{where}: {what} is empty")
    return text


def table_kind(path: Path) -> str:
    """``"jsonl"``, ``"parquet"``, ``"csv"`` or ``"tsv"`` from the file name (gzipped JSONL too)."""
    name = path.name.lower()
    for suffix, kind in (
        (".jsonl.gz", "jsonl"),
        (".ndjson.gz", "jsonl"),
        (".jsonl", "jsonl"),
        (".ndjson", "jsonl"),
        (".parquet", "parquet"),
        (".pq", "parquet"),
        (".csv", "csv"),
        (".tsv", "tsv"),
    ):
        if name.endswith(suffix):
            return kind
    raise ArgusInputError(
        f"{path}: unsupported file type; use .jsonl, .jsonl.gz, .parquet, .csv or .tsv"
    )


def check_exists(path: Path) -> None:
    """Fail with the path in the message when it is not a file."""
    if not path.is_file():
        raise ArgusInputError(f"{path}: no such file")


def iter_jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line; fail on the first bad one.

    :func:`argus_ir.io.iter_jsonl`, where every line must be a JSON object and an unreadable file
    (a truncated gzip stream, say) fails with the line it got to.
    """
    lineno = 0
    try:
        for lineno, obj in iter_jsonl(path):
            if not isinstance(obj, dict):
                raise ArgusInputError(
                    f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}"
                )
            yield lineno, obj
    except (gzip.BadGzipFile, EOFError, OSError) as exc:
        raise ArgusInputError(f"{path}:{lineno + 1}: cannot read the file ({exc})") from None


def iter_csv_rows(path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number where the row starts, cells)`` for each non-empty row."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            # strict: an unclosed or stray quote is an error, not records merged into one cell
            reader = csv.reader(fh, delimiter=delimiter, strict=True)
            start = 1
            try:
                for row in reader:
                    if any(cell.strip() for cell in row):
                        yield start, row
                    start = reader.line_num + 1
            except csv.Error as exc:
                raise ArgusInputError(f"{path}:{start}: malformed row ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ArgusInputError(f"{path}: not UTF-8 text ({exc})") from None


def read_parquet_rows(path: Path) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """Column names and the rows, read one record batch at a time (memory stays flat)."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - pyarrow is a core dependency
        raise ImportError("reading Parquet needs pyarrow: pip install pyarrow") from exc
    try:
        file = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise ArgusInputError(f"{path}: cannot read Parquet ({exc})") from None

    def rows() -> Iterator[dict[str, Any]]:
        try:
            for batch in file.iter_batches(batch_size=1024):
                yield from batch.to_pylist()
        except Exception as exc:
            raise ArgusInputError(f"{path}: cannot read Parquet ({exc})") from None

    return list(file.schema_arrow.names), rows()


def table_rows(path: Path) -> tuple[list[str] | None, Iterator[tuple[str, dict[str, Any]]]]:
    """Columns (``None`` for JSONL, whose keys vary by line) and ``(where, row)`` pairs."""
    kind = table_kind(path)
    if kind == "jsonl":
        return None, ((f"{path}:{n}", obj) for n, obj in iter_jsonl_records(path))
    if kind == "parquet":
        columns, rows = read_parquet_rows(path)
        return columns, ((f"{path}:row {i + 1}", r) for i, r in enumerate(rows))
    rows_iter = iter_csv_rows(path, "\t" if kind == "tsv" else ",")
    first = next(rows_iter, None)
    if first is None:
        return [], iter(())
    header = [h.strip() for h in first[1]]

    def gen() -> Iterator[tuple[str, dict[str, Any]]]:
        for n, row in rows_iter:
            if len(row) != len(header):
                raise ArgusInputError(
                    f"{path}:{n}: {len(row)} cells but the header has {len(header)} columns"
                )
            yield f"{path}:{n}", dict(zip(header, row))

    return header, gen()
