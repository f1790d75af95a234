"""The records ``argus augment`` writes: one JSONL line per original and per view, and the vector
each carries with ``--vectors``.

With vectors (``Argus(embed=True)``), every record holds the retriever's fp32 vector of the string
an index embeds for it under :data:`VECTOR_KEY`, a top-level key beside ``_id``, ``title``,
``text`` and ``metadata``: a JSON list of numbers, each the shortest decimal that reads back, as
a float64 cast to float32, to the very float32 argus computed (:func:`vector_values`), or
``null`` where the retriever's tokenizer refused the text (the stats file names the failure).

>>> import json, numpy as np
>>> vector = np.array([0.1, -2.5e-8, 1 / 3], dtype=np.float32)
>>> json.dumps(vector_values(vector))
'[0.1, -2.5e-08, 0.33333334]'
>>> bool((np.asarray(json.loads(json.dumps(vector_values(vector))), np.float32) == vector).all())
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from argus_ir.documents import Document
from argus_ir.io import json_text
from argus_ir.lineage import ARGUS_KEYS, is_argus_output
from argus_ir.remedy import View

__all__ = ["VECTOR_KEY", "json_line", "stale_vector", "vector_values", "view_record"]

VECTOR_KEY = "argus_vector"
"""The record key (and Ray's Parquet column) of a record's vector. Named like the rest of what
argus adds (``argus_*``), so it never takes the place of an ``embedding`` a corpus already holds
from another model; a framework takes the vector as an argument (LlamaIndex's and Haystack's
``embedding=``, LangChain's ``add_embeddings``), so the name costs a loader one line."""


def json_line(record: Mapping[str, Any]) -> str:
    """One JSONL line, UTF-8 as is; a text holding a lone surrogate (which UTF-8 cannot encode)
    is written with JSON escapes instead, so the line reads back to the same string."""
    return json_text(record) + "\n"


def vector_values(vector: np.ndarray | None) -> list[float] | None:
    """A float32 vector as JSON numbers that read back to it exactly (``None`` stays ``None``).

    Each number is the shortest decimal of its float32 (about 9 digits, not the 17 of the float64
    it widens to), checked: read as JSON reads it (a float64) and cast to float32, it is the same
    value; where that double rounding would miss (never seen, but not ruled out), the exact
    float64 is written instead.
    """
    if vector is None:
        return None
    exact = np.asarray(vector, dtype=np.float32).ravel()
    values = [float(str(x)) for x in exact]
    for i in np.nonzero(np.asarray(values, dtype=np.float32) != exact)[0]:
        values[i] = float(exact[i])
    return values


def stale_vector(doc: Document, view: View) -> bool:
    """Whether the entry is a record of argus's own output passed through as read that carries
    the :data:`VECTOR_KEY` an earlier ``--vectors`` run wrote: a run without vectors leaves it out
    (:func:`view_record`), as it may no longer be what an index embeds for the record (another
    model, ``--precision``, in-place knowledge), and the views this run adds carry none beside
    it. A user's own record (not argus's output) keeps the key as read."""
    return view.id == doc.id and VECTOR_KEY in doc.record and is_argus_output(doc.id, doc.metadata)


def view_record(doc: Document, view: View, *, vectors: bool = False) -> dict[str, Any]:
    """One output line.

    The document itself is its record as read, every key kept: a record of an earlier run passed
    through as it came (less the vector an earlier ``--vectors`` run wrote, when this run writes
    none: :func:`stale_vector`); an original with an original's lineage in its ``metadata``, in
    place of any ``argus_*`` keys it came with (a user's own ``argus_view`` included); a new view
    is ``_id``, an empty title, its text, and the original's metadata (less any lineage) plus its
    own.

    Args:
        doc: The document read.
        view: The document's own entry or one of its views.
        vectors: Add :data:`VECTOR_KEY`, the view's vector (:func:`vector_values`; null where it
            has none). A record read with that key gets the new vector in its place. Without,
            a record of argus's own output read with that key loses it.
    """
    own = doc.metadata
    inherited = {k: v for k, v in own.items() if k not in ARGUS_KEYS}
    record: dict[str, Any]
    if view.id == doc.id:
        if not doc.record:  # built in memory, not read from a file
            record = {
                "_id": doc.id,
                "title": doc.title,
                "text": doc.text,
                "metadata": view.metadata,
            }
        else:
            record = dict(doc.record)
            # passed through as read, or an original: any argus_* keys it came with replaced
            passed = is_argus_output(doc.id, own)
            record["metadata"] = own if passed else {**inherited, **view.metadata}
    else:
        record = {
            "_id": view.id,
            "title": "",
            "text": view.text,
            "metadata": {**inherited, **view.metadata},
        }
    if vectors:
        record[VECTOR_KEY] = vector_values(view.vector)
    elif stale_vector(doc, view):
        del record[VECTOR_KEY]
    return record
