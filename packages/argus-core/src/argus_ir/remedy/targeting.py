"""In-corpus targeting (beyond the paper): flag an entity where its own document cannot be reached
by the entity's name, measured against the user's corpus, with no probe.

The first :data:`DEFAULT_REACH_POOL` documents of the corpus form a pool (their vectors from the
diagnosis pass). For every entity of a document, the retriever embeds the entity's surface form as
a query and ranks the document among the pool (itself left out of it); the entity's *reach* is
``min(1, k / rank)``: 1 when the document is in the top ``k``, falling as it sinks. A mention is
flagged when its reach is below 1. This measures on the user's own documents what the probe
predicts from an embedding (RPS, whose neutral pool also holds 800 documents), so it works with any
embedding function. A streaming ingest holds its first batches back until the pool is full
(:meth:`argus_ir.pipeline.Argus.process_batches`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from argus_ir.diagnose import Diagnosis
from argus_ir.errors import ArgusInputError

__all__ = [
    "DEFAULT_REACH_K",
    "DEFAULT_REACH_POOL",
    "DEFAULT_TARGETING",
    "TARGETINGS",
    "CorpusReach",
    "max_reach",
    "scored_by_reach",
]

B = TypeVar("B")

TARGETINGS = ("probe", "corpus")
"""How entities are chosen for views: ``probe`` (the diagnoser's predicted RPS below τ, the
paper's) or ``corpus`` (:class:`CorpusReach`: the document is not in the top k for the entity's
name among a pool of the corpus)."""
DEFAULT_TARGETING = "probe"

DEFAULT_REACH_K = 10
"""A document counts as reached by an entity name when it is in the name's top 10."""


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def max_reach(diagnoses: Sequence[Diagnosis]) -> Mapping[str, float]:
    """Document id -> highest reach over its entities (App. E.1's input for this targeting)."""
    return {d.doc_id: max(e.rps for e in d.entities) for d in diagnoses if d.entities}


DEFAULT_REACH_POOL = 800
"""Documents the reach is measured against when the corpus streams by: the first 800 seen (the
size of the paper's neutral pool for RPS)."""


class CorpusReach:
    """In-corpus targeting for a corpus that streams by in batches.

    The pool is the first ``pool_size`` documents seen (their diagnosis vectors); a document's
    reach for an entity is ``min(1, k / rank)`` where ``rank`` places the document among the pool
    (itself left out of it) for a query of the entity's name. Until the pool is full a caller holds
    its batches back (:attr:`full`); a corpus smaller than the pool is its own pool.

    Args:
        embed: Texts -> query vectors of the retriever that made the diagnoses' vectors.
        k: Reached means ranked in the top ``k``.
        pool_size: Documents in the pool.
    """

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        *,
        k: int = DEFAULT_REACH_K,
        pool_size: int = DEFAULT_REACH_POOL,
    ) -> None:
        if k < 1 or pool_size < 1:
            raise ArgusInputError(f"k and pool_size must be at least 1, got {k} and {pool_size}")
        self.embed = embed
        self.k = k
        self.pool_size = pool_size
        self._position: dict[str, int] = {}  # document id -> its row in the pool
        self._rows: list[np.ndarray] = []
        self._names: dict[str, np.ndarray] = {}

    @property
    def full(self) -> bool:
        return len(self._rows) >= self.pool_size

    def add(self, diagnoses: Sequence[Diagnosis]) -> None:
        """Take documents into the pool until it is full, each document once.

        Once matters on resume: the pool is refilled from the corpus's start, and a corpus
        smaller than the pool is read whole there, so the documents still to do come again.
        """
        for d in diagnoses:
            if self.full:
                return
            if not np.asarray(d.doc_vector).size:  # not diagnosed (a view of an earlier run)
                continue
            if d.doc_id in self._position:
                continue
            self._position[d.doc_id] = len(self._rows)
            self._rows.append(np.asarray(d.doc_vector, dtype=np.float32))

    def _name_vectors(self, names: list[str]) -> np.ndarray:
        new = [n for n in dict.fromkeys(names) if n not in self._names]
        if new:
            if len(self._names) > 200_000:  # a long stream: forget the names of old batches
                self._names.clear()
            self._names.update(zip(new, _unit(self.embed(new))))
        return np.stack([self._names[n] for n in names]) if names else np.zeros((0, 1))

    def score(self, diagnoses: Sequence[Diagnosis]) -> list[Diagnosis]:
        """The diagnoses with each entity scored by its reach and flagged below 1 (``tau = 1``)."""
        if not self._rows and any(d.entities for d in diagnoses):
            raise ArgusInputError("the reach pool is empty: add documents before scoring")
        pool = _unit(np.stack(self._rows)) if self._rows else np.zeros((0, 1), dtype=np.float32)
        out = []
        for d in diagnoses:
            names = [e.surface for e in d.entities]
            if not names:
                out.append(replace(d, tau=1.0))
                continue
            queries = self._name_vectors(names)
            own = queries @ _unit(np.asarray(d.doc_vector, dtype=np.float32)[None, :])[0]
            scores = queries @ pool.T
            at = self._position.get(d.doc_id)
            if at is not None:
                scores[:, at] = -np.inf  # a document does not compete with itself
            ranks = 1 + np.count_nonzero(scores > own[:, None], axis=1)
            reach = np.minimum(1.0, self.k / ranks)
            entities = tuple(
                replace(e, rps=float(r), flagged=bool(r < 1.0)) for e, r in zip(d.entities, reach)
            )
            out.append(replace(d, entities=entities, tau=1.0))
        return out


def scored_by_reach(
    batches: Iterable[tuple[B, list[Diagnosis]]], reach: CorpusReach
) -> Iterator[tuple[B, list[Diagnosis]]]:
    """Each batch with its diagnoses scored by ``reach``, in order; the batches fill its pool
    first, and are held back until it is full or they end (a corpus smaller than the pool is its
    own pool)."""
    held: list[tuple[B, list[Diagnosis]]] = []
    for batch, diagnoses in batches:
        if reach.full:
            yield batch, reach.score(diagnoses)
            continue
        reach.add(diagnoses)
        held.append((batch, diagnoses))
        if reach.full:
            yield from [(kept, reach.score(ds)) for kept, ds in held]
            held = []
    yield from [(kept, reach.score(ds)) for kept, ds in held]
