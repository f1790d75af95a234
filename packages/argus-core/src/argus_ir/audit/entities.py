"""Typed values for the RPS audit: grounded entities, the entity graph and the load report.

These are the values that cross module boundaries (loaders -> audit -> probes). They are frozen; build
modified copies with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = ["AuditData", "DropRecord", "Entity", "EntityGraph", "LoadReport"]


@dataclass(frozen=True)
class Entity:
    """One entity with its grounded context paragraph (paper App. B.1).

    Attributes:
        id: Unique id (KB title, Freebase MID, Wikidata QID, or a user id).
        label: Surface form (Wikidata label / KB title).
        text: The paragraph as encoded. When the label did not occur in the original paragraph it is
            prepended, so ``text[start:end]`` is always a mention of the entity.
        start: Character offset where the grounded mention starts in ``text``.
        end: Character offset where it ends (exclusive).
        grounding: ``"match"`` (first normalised occurrence) or ``"prepended"``.
        description: Optional short description (e.g. the Wikidata description).
    """

    id: str
    label: str
    text: str
    start: int
    end: int
    grounding: str = "match"
    description: str = ""

    @property
    def mention(self) -> str:
        """The grounded mention as it appears in ``text``."""
        return self.text[self.start : self.end]


@dataclass(frozen=True)
class DropRecord:
    """Why an input record (entity or edge) was left out, and where it came from."""

    id: str
    reason: str
    where: str = ""

    def __str__(self) -> str:
        loc = f" ({self.where})" if self.where else ""
        return f"{self.id}{loc}: {self.reason}"


@dataclass(frozen=True)
class LoadReport:
    """What a loader did: how many entities were grounded by each rule and what was dropped.

    Attributes:
        n_input: Entity records read.
        grounded_match: Entities whose label was found in their paragraph.
        grounded_prepended: Entities whose label was prepended to the paragraph.
        dropped: One record per dropped entity or edge, with the reason.
        n_edges: Undirected edges kept in the graph.
        sources: Human-readable names of the inputs (files, KGs) and their edge counts.
    """

    n_input: int = 0
    grounded_match: int = 0
    grounded_prepended: int = 0
    dropped: tuple[DropRecord, ...] = ()
    n_edges: int = 0
    sources: tuple[tuple[str, int], ...] = ()

    def dropped_by_reason(self) -> dict[str, int]:
        """Count of dropped records per reason."""
        return dict(Counter(d.reason for d in self.dropped))

    def summary(self, examples: int = 3) -> str:
        """A few lines a user can read: grounding counts, drops by reason, edges per source.

        Each drop reason names its first ``examples`` records (id and file/line) so a user can
        find them.
        """
        lines = [
            f"entities read: {self.n_input}",
            f"grounded by first occurrence: {self.grounded_match}",
            f"grounded by prepending the label: {self.grounded_prepended}",
            f"edges kept: {self.n_edges}",
        ]
        for name, count in self.sources:
            lines.append(f"  from {name}: {count}")
        for reason, count in sorted(self.dropped_by_reason().items()):
            shown = [d for d in self.dropped if d.reason == reason][:examples]
            named = "; ".join(f"{d.id!r} ({d.where})" if d.where else repr(d.id) for d in shown)
            more = ", ..." if count > len(shown) else ""
            lines.append(
                f"dropped ({reason}): {count}" + (f", e.g. {named}{more}" if named else "")
            )
        return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class EntityGraph:
    """Undirected 1-hop graph over entity indices, stored as CSR (sorted, unique, no self-loops).

    Attributes:
        n: Number of nodes (entities), indices ``0..n-1``.
        indptr: CSR row pointer of length ``n + 1``.
        indices: Concatenated sorted neighbour lists.
    """

    n: int
    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def from_edges(cls, n: int, edges: Iterable[tuple[int, int]]) -> EntityGraph:
        """Build a symmetric graph from index pairs; self-loops and duplicates are removed."""
        arr = np.asarray(list(edges), dtype=np.int64).reshape(-1, 2)
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            raise ArgusInputError(f"edge index out of range for a graph of {n} nodes")
        arr = arr[arr[:, 0] != arr[:, 1]]
        both = np.concatenate([arr, arr[:, ::-1]]) if arr.size else arr
        if both.size:
            both = np.unique(both, axis=0)  # sorted by (row, col)
        rows = both[:, 0] if both.size else np.zeros(0, dtype=np.int64)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        indptr = np.cumsum(indptr)
        indices = (both[:, 1] if both.size else np.zeros(0, dtype=np.int64)).astype(np.int64)
        return cls(n=n, indptr=indptr, indices=indices)

    def neighbors(self, i: int) -> np.ndarray:
        """Sorted neighbour indices of node ``i``."""
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def degree(self) -> np.ndarray:
        """Degree of every node."""
        return np.diff(self.indptr)

    @property
    def n_edges(self) -> int:
        """Number of undirected edges."""
        return int(self.indices.size // 2)

    def edge_pairs(self) -> np.ndarray:
        """Each undirected edge once, as an ``(m, 2)`` array with ``i < j``."""
        rows = np.repeat(np.arange(self.n), self.degree())
        mask = rows < self.indices
        return np.stack([rows[mask], self.indices[mask]], axis=1)


@dataclass(frozen=True, eq=False)
class AuditData:
    """Entities and their graph, index-aligned: ``graph`` node ``i`` is ``entities[i]``.

    Attributes:
        entities: Grounded entities; every one is a candidate (target or neutral) in the audit.
        graph: 1-hop relations between them.
        report: What the loader kept and dropped.
        name: A short name for the data source (shown in reports and cards).
    """

    entities: Sequence[Entity]
    graph: EntityGraph
    report: LoadReport = field(default_factory=LoadReport)
    name: str = "custom"

    def __post_init__(self) -> None:
        if self.graph.n != len(self.entities):
            raise ArgusInputError(
                f"graph has {self.graph.n} nodes but there are {len(self.entities)} entities"
            )

    @property
    def ids(self) -> list[str]:
        """Entity ids in index order."""
        return [e.id for e in self.entities]

    def fingerprint(self) -> str:
        """A hash of ids, texts, spans and edges: two audits on equal data share it."""
        h = hashlib.sha256()
        for e in self.entities:
            h.update(f"{e.id}\x1f{e.text}\x1f{e.start}\x1f{e.end}\x1e".encode())
        h.update(self.graph.indptr.tobytes())
        h.update(self.graph.indices.tobytes())
        return h.hexdigest()[:16]
