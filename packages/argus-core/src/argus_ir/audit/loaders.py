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

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from argus_ir.audit.entities import AuditData, DropRecord, Entity, EntityGraph, LoadReport

# the corpus reader lived here before argus_ir.documents; still importable from here
from argus_ir.documents import TEXT_FIELDS, Document, iter_documents, read_documents
from argus_ir.errors import ArgusInputError
from argus_ir.tables import (
    as_id,
    check_exists,
    iter_csv_rows,
    iter_jsonl_records,
    read_parquet_rows,
    table_kind,
    table_rows,
)
from argus_ir.text.grounding import ground

__all__ = [
    "DEFAULT_MIN_CHARS",
    "TEXT_FIELDS",
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
    ent_id = as_id(ent_id, "id", where)
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
        a, b = as_id(edge[0], "edge end", where), as_id(edge[1], "edge end", where)
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
    check_exists(p)
    text_fields = (text_field,) if text_field else _TEXT_FIELDS
    columns, rows = table_rows(p)
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
    check_exists(p)
    kind = table_kind(p)
    out: list[RawEdge] = []
    if kind in ("csv", "tsv"):
        cols = (0, 1)
        for i, (n, row) in enumerate(iter_csv_rows(p, "\t" if kind == "tsv" else ",")):
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
            (f"{p}:{n}", obj) for n, obj in iter_jsonl_records(p)
        )
    else:
        columns, table = read_parquet_rows(p)
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
            RawEdge(as_id(a, "source", where), as_id(b, "target", where), where, str(relation))
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
