"""Build :class:`~argus_ir.audit.entities.AuditData` from user records and files (paper App. B.1-B.3).

Two steps, kept apart so every source (user files, the shared research data, the embedded sample)
goes through the same rules:

1. *Reading* (:func:`read_entities_file`, :func:`read_edges_file`) turns JSONL (also gzipped), CSV/TSV
   or Parquet into :class:`RawEntity` / :class:`RawEdge` tuples that remember where each came from.
   Malformed files fail here, with the file and line in the message.
2. *Building* (:func:`build_audit_data`) grounds every paragraph (:func:`argus_ir.text.grounding.ground`),
   drops what cannot be audited and records why in the :class:`~argus_ir.audit.entities.LoadReport`:

   * a missing, empty or blank paragraph drops the entity: ``"empty paragraph"``;
   * a paragraph shorter than ``min_chars`` drops it: ``"paragraph too short"``;
   * an id seen before drops the later record: ``"duplicate id"`` (both locations named);
   * an edge naming an id that is not kept is dropped: ``"unknown id"`` (``DropRecord.id`` is the
     unknown id, ``where`` names the edge);
   * an edge from an entity to itself is dropped: ``"self-loop"``;
   * an entity with more than ``max_degree`` neighbours loses all its edges, one
     ``"hub above degree cap"`` record per hub; the entity itself stays a candidate;
   * with ``require_neighbours=True``, entities left without a neighbour (hubs included) are
     dropped: ``"no neighbours"``.

   Repeated edges count once; entities keep their input order.

Nothing is returned until everything has been checked, so an error never leaves a half-built result.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from argus_ir.audit.entities import AuditData, DropRecord, Entity, EntityGraph, LoadReport
from argus_ir.errors import ArgusInputError
from argus_ir.text.grounding import ground

__all__ = [
    "DEFAULT_MIN_CHARS",
    "Document",
    "RawEdge",
    "RawEntity",
    "build_audit_data",
    "iter_documents",
    "load_user_data",
    "read_documents",
    "read_edges_file",
    "read_entities_file",
]

DEFAULT_MIN_CHARS = 20
"""Paragraphs shorter than this (after stripping) are too short to say anything about an entity."""

_TEXT_FIELDS = ("paragraph", "text")
_EDGE_FIELD_PAIRS = (("source", "target"), ("head", "tail"))
_SNIPPET = 60


class RawEntity(NamedTuple):
    """One entity record as read, before grounding.

    Attributes:
        id: Unique id.
        label: Surface form to ground in ``text``.
        text: The context paragraph (``None`` or blank when the source had none).
        description: Optional short description.
        where: Where the record came from (``file:line``), used in messages and drop records.
    """

    id: str
    label: str
    text: str | None
    description: str = ""
    where: str = ""


class RawEdge(NamedTuple):
    """One relation between two entity ids, as read.

    Attributes:
        a: Id of one end.
        b: Id of the other end (edges are undirected in the audit).
        where: Where the edge came from (``file:line``).
        relation: Relation name when the source has one (kept for filtering; not used by the audit).
    """

    a: str
    b: str
    where: str = ""
    relation: str = ""


# --------------------------------------------------------------------------------------------------
# building


def _as_id(value: Any, what: str, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
        raise ArgusInputError(f"{where}: {what} must be a string or an integer, got {value!r}")
    text = str(value).strip()
    if not text:
        raise ArgusInputError(f"{where}: {what} is empty")
    return text


def _as_raw_entity(rec: Any, i: int) -> RawEntity:
    """Check one entity record (dict, tuple or :class:`RawEntity`) and normalise its types."""
    if isinstance(rec, Mapping):
        where = str(rec.get("where") or f"record {i + 1}")
        for key in ("id", "label"):
            if rec.get(key) is None:
                raise ArgusInputError(f"{where}: entity record has no {key!r} field")
        text = rec.get("text")
        if text is None:
            text = rec.get("paragraph")
        ent_id, label, description = rec["id"], rec["label"], rec.get("description")
    elif isinstance(rec, Sequence) and not isinstance(rec, str) and 3 <= len(rec) <= 5:
        ent_id, label, text = rec[0], rec[1], rec[2]
        description = rec[3] if len(rec) > 3 else ""
        where = str(rec[4]) if len(rec) > 4 and rec[4] else f"record {i + 1}"
    else:
        raise ArgusInputError(
            f"record {i + 1}: expected a dict or an (id, label, text[, description[, where]]) "
            f"tuple, got {rec!r:.80}"
        )
    ent_id = _as_id(ent_id, "id", where)
    if not isinstance(label, str) or not label.strip():
        raise ArgusInputError(f"{where}: entity {ent_id!r} has an empty or non-string label")
    if text is not None and not isinstance(text, str):
        raise ArgusInputError(
            f"{where}: paragraph of {ent_id!r} must be a string, got {type(text).__name__}"
        )
    if not isinstance(description, str):
        description = "" if description is None else str(description)
    return RawEntity(ent_id, label.strip(), text, description.strip(), where)


def build_audit_data(
    records: Iterable[RawEntity | Mapping[str, Any] | Sequence[Any]],
    edges: Iterable[RawEdge | Sequence[Any]] = (),
    *,
    name: str = "custom",
    max_degree: int | None = None,
    min_chars: int = DEFAULT_MIN_CHARS,
    require_neighbours: bool = False,
) -> AuditData:
    """Ground entity records and link them into the audit graph.

    Args:
        records: Entity records: :class:`RawEntity`, dicts with ``id``, ``label``, ``text`` (or
            ``paragraph``) and optional ``description``/``where``, or tuples
            ``(id, label, text[, description[, where]])``. Input order is kept.
        edges: ``(id_a, id_b[, where[, relation]])`` pairs (e.g. :class:`RawEdge`), undirected;
            repeated pairs count once.
        name: Short name of the data source, shown in reports.
        max_degree: Entities with more neighbours than this lose all their edges (schema hubs such
            as "Male" or "Marriage" make meaningless related-entity queries). ``None``: no cap.
        min_chars: Paragraphs shorter than this many characters (after stripping) are dropped.
        require_neighbours: Also drop entities left without any neighbour (the paper keeps only
            targets with a related entity); by default they stay as neutral candidates.

    Returns:
        The grounded entities (in input order) with their graph and a :class:`LoadReport`.

    Raises:
        ArgusInputError: If a record is malformed (no id or label, wrong types), ``max_degree`` or
            ``min_chars`` is invalid, or no entity is left to audit.

    Example:
        >>> data = build_audit_data(
        ...     [("q1", "Paris", "Paris is the capital of France."),
        ...      ("q2", "France", "France is a country in Western Europe.")],
        ...     [("q1", "q2")],
        ... )
        >>> (len(data.entities), data.graph.n_edges)
        (2, 1)
    """
    if max_degree is not None and (isinstance(max_degree, bool) or max_degree < 1):
        raise ArgusInputError(f"max_degree must be a positive integer or None, got {max_degree!r}")
    if min_chars < 0:
        raise ArgusInputError(f"min_chars must be >= 0, got {min_chars!r}")

    dropped: list[DropRecord] = []
    kept: list[RawEntity] = []
    first_seen: dict[str, str] = {}
    n_input = 0
    for i, rec in enumerate(records):
        n_input += 1
        raw = _as_raw_entity(rec, i)
        if raw.id in first_seen:
            where = f"{raw.where}; first at {first_seen[raw.id]}"
            dropped.append(DropRecord(raw.id, "duplicate id", where))
            continue
        first_seen[raw.id] = raw.where
        text = (raw.text or "").strip()
        if not text:
            dropped.append(DropRecord(raw.id, "empty paragraph", raw.where))
        elif len(text) < min_chars:
            dropped.append(DropRecord(raw.id, "paragraph too short", raw.where))
        else:
            kept.append(raw._replace(text=text))

    index = {r.id: i for i, r in enumerate(kept)}
    pairs: dict[tuple[int, int], str] = {}
    for j, edge in enumerate(edges):
        if isinstance(edge, str) or not isinstance(edge, Sequence) or len(edge) < 2:
            raise ArgusInputError(f"edge {j + 1}: expected (id_a, id_b[, where]), got {edge!r}")
        where = str(edge[2]) if len(edge) > 2 and edge[2] else f"edge {j + 1}"
        a, b = _as_id(edge[0], "edge end", where), _as_id(edge[1], "edge end", where)
        unknown = [x for x in (a, b) if x not in index]
        if unknown:
            for x in dict.fromkeys(unknown):
                dropped.append(DropRecord(x, "unknown id", f"{where}; edge {a} -- {b}"))
            continue
        if a == b:
            dropped.append(DropRecord(a, "self-loop", where))
            continue
        ia, ib = index[a], index[b]
        pairs.setdefault((min(ia, ib), max(ia, ib)), where)

    arr = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    if max_degree is not None and arr.size:
        degree = np.bincount(arr.ravel(), minlength=len(kept))
        hubs = np.flatnonzero(degree > max_degree)
        for h in hubs:
            where = f"{kept[h].where}; degree {degree[h]} > {max_degree}"
            dropped.append(DropRecord(kept[h].id, "hub above degree cap", where))
        if hubs.size:
            is_hub = np.zeros(len(kept), dtype=bool)
            is_hub[hubs] = True
            arr = arr[~(is_hub[arr[:, 0]] | is_hub[arr[:, 1]])]

    if require_neighbours:
        has_nbr = np.zeros(len(kept), dtype=bool)
        has_nbr[arr.ravel()] = True
        for lonely in np.flatnonzero(~has_nbr):
            dropped.append(DropRecord(kept[lonely].id, "no neighbours", kept[lonely].where))
        remap = np.cumsum(has_nbr) - 1
        kept = [r for r, keep in zip(kept, has_nbr) if keep]
        arr = remap[arr] if arr.size else arr

    if not kept:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(_count(dropped).items()))
        raise ArgusInputError(
            f"no entity left to audit in {name!r} ({n_input} records read; dropped {reasons})"
        )

    entities = []
    for r in kept:
        g = ground(r.label, r.text or "")
        entities.append(Entity(r.id, r.label, g.text, g.start, g.end, g.rule, r.description))
    graph = EntityGraph.from_edges(len(entities), [(int(a), int(b)) for a, b in arr])
    n_match = sum(e.grounding == "match" for e in entities)
    report = LoadReport(
        n_input=n_input,
        grounded_match=n_match,
        grounded_prepended=len(entities) - n_match,
        dropped=tuple(dropped),
        n_edges=graph.n_edges,
        sources=((name, graph.n_edges),),
    )
    return AuditData(entities=tuple(entities), graph=graph, report=report, name=name)


def _count(dropped: Iterable[DropRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dropped:
        out[d.reason] = out.get(d.reason, 0) + 1
    return out


# --------------------------------------------------------------------------------------------------
# reading


def _kind(path: Path) -> str:
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


def _check_exists(path: Path) -> None:
    if not path.is_file():
        raise ArgusInputError(f"{path}: no such file")


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line; fail on the first bad one."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    lineno = 0
    try:
        with opener(path, "rb") as fh:  # bytes, decoded line by line: a bad byte has its line
            for lineno, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise ArgusInputError(
                        f"{path}:{lineno}: not UTF-8 (byte {raw[exc.start : exc.start + 1]!r} at "
                        f"column {exc.start + 1})"
                    ) from None
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    snippet = line.strip()[:_SNIPPET]
                    raise ArgusInputError(
                        f"{path}:{lineno}: not valid JSON ({exc.msg}): {snippet!r}"
                    ) from None
                if not isinstance(obj, dict):
                    raise ArgusInputError(
                        f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}"
                    )
                yield lineno, obj
    except (gzip.BadGzipFile, EOFError, OSError) as exc:
        raise ArgusInputError(f"{path}:{lineno + 1}: cannot read the file ({exc})") from None


def _iter_csv(path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
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


def _read_parquet(path: Path) -> tuple[list[str], Iterator[dict[str, Any]]]:
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


def _entity_rows(path: Path) -> tuple[list[str] | None, Iterator[tuple[str, dict[str, Any]]]]:
    """Columns (``None`` for JSONL, whose keys vary by line) and ``(where, row)`` pairs."""
    kind = _kind(path)
    if kind == "jsonl":
        return None, ((f"{path}:{n}", obj) for n, obj in _iter_jsonl(path))
    if kind == "parquet":
        columns, rows = _read_parquet(path)
        return columns, ((f"{path}:row {i + 1}", r) for i, r in enumerate(rows))
    rows_iter = _iter_csv(path, "\t" if kind == "tsv" else ",")
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


def read_entities_file(
    path: str | os.PathLike[str],
    *,
    id_field: str = "id",
    label_field: str = "label",
    text_field: str | None = None,
    description_field: str = "description",
) -> list[RawEntity]:
    """Read entity records from JSONL (optionally ``.gz``), Parquet, CSV or TSV (with a header).

    Args:
        path: The file; its type is taken from the suffix.
        id_field: Column/key holding the unique id.
        label_field: Column/key holding the surface form.
        text_field: Column/key holding the paragraph; ``None`` accepts ``paragraph`` or ``text``.
        description_field: Optional column/key with a short description.

    Returns:
        One :class:`RawEntity` per record, in file order, with ``where`` set to ``file:line`` (Parquet:
        ``file:row N``). Empty paragraphs are kept here; :func:`build_audit_data` drops them.

    Raises:
        ArgusInputError: If the file is missing or of an unknown type, a JSON line is malformed, or
            a record lacks the id, label or text field (the message names file, line and field).

    Example:
        >>> records = read_entities_file("entities.jsonl")  # doctest: +SKIP
        >>> data = build_audit_data(records, read_edges_file("edges.csv"))  # doctest: +SKIP
    """
    p = Path(path)
    _check_exists(p)
    text_fields = (text_field,) if text_field else _TEXT_FIELDS
    columns, rows = _entity_rows(p)
    if columns is not None:
        missing = [f for f in (id_field, label_field) if f not in columns]
        if not any(f in columns for f in text_fields):
            missing.append(" or ".join(repr(f) for f in text_fields))
        if missing:
            raise ArgusInputError(
                f"{p}:1: missing column(s) {', '.join(missing)}; columns are {columns}"
            )
    out: list[RawEntity] = []
    for where, row in rows:
        for f in (id_field, label_field):
            if row.get(f) is None:
                raise ArgusInputError(f"{where}: missing required field {f!r}")
        tf = next((f for f in text_fields if f in row), None)
        if tf is None:
            wanted = " or ".join(repr(f) for f in text_fields)
            raise ArgusInputError(f"{where}: missing required field {wanted}")
        raw = _as_raw_entity(
            {
                "id": row[id_field],
                "label": row[label_field],
                "text": row[tf],
                "description": row.get(description_field) or "",
                "where": where,
            },
            len(out),
        )
        out.append(raw)
    return out


def _edge_columns(columns: Sequence[str]) -> tuple[str, str] | None:
    """The (source, target) column names when ``columns`` has a known pair, else ``None``."""
    lower = {c.strip().lower(): c for c in columns}
    for a, b in _EDGE_FIELD_PAIRS:
        if a in lower and b in lower:
            return lower[a], lower[b]
    return None


def read_edges_file(path: str | os.PathLike[str]) -> list[RawEdge]:
    """Read relations between entity ids from JSONL, CSV/TSV or Parquet.

    JSONL lines and Parquet columns name the ends ``source``/``target`` or ``head``/``tail``
    (optionally with a ``relation``). CSV/TSV use the first two columns, or the named columns when
    the first row is a header with those names; a first row without them is read as an edge (a
    header with other names then shows up as an ``"unknown id"`` drop, never as an error). Ids are
    not checked here: :func:`build_audit_data` reports edges to unknown ids.

    Args:
        path: The file; its type is taken from the suffix.

    Returns:
        One :class:`RawEdge` per edge, in file order, with ``where`` set to ``file:line``.

    Raises:
        ArgusInputError: If the file is missing or of an unknown type, a line is malformed, or a
            record has fewer than two ids.

    Example:
        >>> edges = read_edges_file("edges.tsv")  # doctest: +SKIP
    """
    p = Path(path)
    _check_exists(p)
    kind = _kind(p)
    out: list[RawEdge] = []
    if kind in ("csv", "tsv"):
        cols = (0, 1)
        for i, (n, row) in enumerate(_iter_csv(p, "\t" if kind == "tsv" else ",")):
            named = _edge_columns(row) if i == 0 else None
            if named is not None:  # a header row naming the id columns
                cols = (row.index(named[0]), row.index(named[1]))
                continue
            if len(row) <= max(cols) or not row[cols[0]].strip() or not row[cols[1]].strip():
                raise ArgusInputError(f"{p}:{n}: expected two ids, got {row!r}")
            out.append(RawEdge(row[cols[0]].strip(), row[cols[1]].strip(), f"{p}:{n}"))
        return out

    if kind == "jsonl":
        rows: Iterable[tuple[str, Mapping[str, Any]]] = (
            (f"{p}:{n}", obj) for n, obj in _iter_jsonl(p)
        )
    else:
        columns, table = _read_parquet(p)
        if _edge_columns(columns) is None:
            raise ArgusInputError(
                f"{p}: expected columns source/target or head/tail; columns are {columns}"
            )
        rows = ((f"{p}:row {i + 1}", r) for i, r in enumerate(table))
    for where, obj in rows:
        named = _edge_columns(list(obj))
        if named is None:
            raise ArgusInputError(f"{where}: expected keys source/target or head/tail")
        a, b = obj[named[0]], obj[named[1]]
        relation = obj.get("relation") or ""
        out.append(
            RawEdge(_as_id(a, "source", where), _as_id(b, "target", where), where, str(relation))
        )
    return out


def load_user_data(
    entities_path: str | os.PathLike[str],
    edges_path: str | os.PathLike[str] | None,
    *,
    name: str | None = None,
    **kwargs: Any,
) -> AuditData:
    """Read an entities file and an edges file and build the audit data.

    Args:
        entities_path: Entities (see :func:`read_entities_file`).
        edges_path: Relations (see :func:`read_edges_file`); ``None`` for none (no audit targets).
        name: Name shown in reports; defaults to the entities file name.
        **kwargs: Passed to :func:`build_audit_data` (``max_degree``, ``min_chars``,
            ``require_neighbours``); ``id_field``, ``label_field``, ``text_field`` and
            ``description_field`` go to :func:`read_entities_file`.

    Returns:
        The audit data; ``report.sources`` names both files.

    Raises:
        ArgusInputError: As :func:`read_entities_file`, :func:`read_edges_file` and
            :func:`build_audit_data`.

    Example:
        >>> data = load_user_data("entities.parquet", "edges.csv", max_degree=100)  # doctest: +SKIP
        >>> print(data.report.summary())  # doctest: +SKIP
    """
    read_keys = ("id_field", "label_field", "text_field", "description_field")
    read_kw = {k: kwargs.pop(k) for k in read_keys if k in kwargs}
    records = read_entities_file(entities_path, **read_kw)
    edges = read_edges_file(edges_path) if edges_path is not None else []
    label = name or Path(entities_path).name
    data = build_audit_data(records, edges, name=label, **kwargs)
    if edges_path is None:
        return data
    sources = ((Path(edges_path).name, data.report.n_edges),)
    return replace(data, report=replace(data.report, sources=sources))


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
            text, an id repeats (the message names file and line), or none of the first 1,000
            records (or of all, in a shorter file) has a text field (the message lists the fields
            it saw). Raised when the iteration reaches the record, after the documents before it
            were yielded.
    """
    p = Path(path)
    _check_exists(p)
    _, rows = _entity_rows(p)
    first_at: dict[str, str] = {}
    names = (text_field,) if text_field else TEXT_FIELDS
    with_text, n = False, 0
    seen: dict[str, None] = {}  # the fields of records without text, in order of appearance
    for where, rec in rows:
        n += 1
        key = next((f for f in id_fields if rec.get(f) not in (None, "")), None)
        if key is None:
            raise ArgusInputError(f"{where}: no document id (looked for {list(id_fields)})")
        doc_id = _as_id(rec[key], key, where)
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
