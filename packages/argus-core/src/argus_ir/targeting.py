"""In-corpus targeting (beyond the paper): flag an entity where its own document cannot be reached
by the entity's name, measured on the index itself, with no probe.

For every distinct surface form ``s`` of a corpus, the retriever embeds ``s`` as a query and ranks
the whole corpus; a document that mentions ``s`` is reached by it when it is among the top ``k``.
The entity's score in that document is its *reach*, ``min(1, k / rank)``: 1 inside the top ``k``,
falling as the document sinks. A mention is flagged when its reach is below 1, i.e. when the
document is not in the name's top ``k``. This measures on the user's own corpus what the probe
predicts from an embedding (RPS), so it works with any embedding function; it needs the corpus
vectors first, which a streaming ingest does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from argus_ir.diagnose import Diagnosis

__all__ = ["DEFAULT_REACH_K", "max_reach", "reach_diagnoses"]

DEFAULT_REACH_K = 10
"""A document counts as reached by an entity name when it is in the name's top 10."""


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def reach_diagnoses(
    diagnoses: Sequence[Diagnosis],
    doc_vectors: np.ndarray,
    doc_ids: Sequence[str],
    embed: Callable[[list[str]], np.ndarray],
    *,
    k: int = DEFAULT_REACH_K,
    chunk: int = 256,
) -> list[Diagnosis]:
    """The same diagnoses with every entity's score replaced by its in-corpus reach.

    Args:
        diagnoses: Diagnoses of (a subset of) the corpus; their mentions are kept as they are.
        doc_vectors: ``(n, dim)`` vectors of the whole corpus, the index the reach is measured in.
        doc_ids: The id of each row of ``doc_vectors``.
        embed: Texts -> ``(m, dim)`` query vectors of the same retriever.
        k: The cut-off: reached means ranked in the top ``k`` for the name.
        chunk: Names ranked per matrix product.

    Returns:
        One diagnosis per input, ``tau = 1.0``, each entity's ``rps`` its reach and ``flagged``
        true where the reach is below 1.

    Raises:
        ValueError: ``k < 1``, rows and ids of different lengths, or a diagnosed document that is
            not in ``doc_ids``.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if len(doc_vectors) != len(doc_ids):
        raise ValueError(f"{len(doc_vectors)} document vectors but {len(doc_ids)} ids")
    row = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    missing = [d.doc_id for d in diagnoses if d.doc_id not in row]
    if missing:
        raise ValueError(f"diagnosed documents not in the index: {missing[:5]}")
    pairs: dict[str, list[int]] = {}  # surface -> rows of the documents that mention it
    for d in diagnoses:
        for e in d.entities:
            pairs.setdefault(e.surface, []).append(row[d.doc_id])
    surfaces = list(pairs)
    docs = _unit(doc_vectors)
    reach: dict[tuple[str, int], float] = {}
    for start in range(0, len(surfaces), chunk):
        names = surfaces[start : start + chunk]
        scores = _unit(embed(names)) @ docs.T  # (names, corpus)
        for name, s in zip(names, scores):
            for r in pairs[name]:
                rank = int(np.count_nonzero(s > s[r])) + 1
                reach[(name, r)] = min(1.0, k / rank)
    out = []
    for d in diagnoses:
        r = row[d.doc_id]
        entities = tuple(
            replace(e, rps=reach[(e.surface, r)], flagged=reach[(e.surface, r)] < 1.0)
            for e in d.entities
        )
        out.append(replace(d, entities=entities, tau=1.0))
    return out


def max_reach(diagnoses: Sequence[Diagnosis]) -> Mapping[str, float]:
    """Document id -> highest reach over its entities (App. E.1's input for this targeting)."""
    return {d.doc_id: max(e.rps for e in d.entities) for d in diagnoses if d.entities}
