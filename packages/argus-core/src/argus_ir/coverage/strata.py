"""The strata of a corpus: its entities embedded and clustered, each document placed by its
entities' clusters, and each query's coverage vector over the strata (by its entities, or by its
own embedding when it has none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from argus_ir.errors import ArgusInputError

NO_ENTITIES = -1
"""The stratum of documents in which the NER finds no entity."""

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors, one row per text."""


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


@dataclass
class Strata:
    """The strata of one corpus.

    Attributes:
        labels: One readable label per stratum (its three most frequent entities).
        entity_stratum: Normalised entity -> stratum.
        doc_strata: Document id -> stratum -> number of its distinct entities there.
        doc_primary: Document id -> its most frequent stratum (:data:`NO_ENTITIES` when none).
        centroids: Unit-length centroid of each stratum's defining entities.
        notes: What was counted on the way (entities, documents without entities, ...).
    """

    labels: list[str]
    entity_stratum: dict[str, int]
    doc_strata: dict[str, Counter[int]]
    doc_primary: dict[str, int]
    centroids: np.ndarray
    notes: Counter[str] = field(default_factory=Counter)

    def __len__(self) -> int:
        return len(self.labels)

    def documents_in(self, stratum: int) -> list[str]:
        """Ids of the documents whose primary stratum is ``stratum``, in corpus order."""
        return [d for d, c in self.doc_primary.items() if c == stratum]


def build_strata(
    doc_ids: Sequence[str],
    doc_entities: Sequence[Sequence[str]],
    embed: Embed,
    *,
    n_clusters: int = 20,
    min_df: int = 2,
    max_entities: int = 4000,
    linkage: str = "ward",
) -> Strata:
    """Cluster the corpus's entities into strata and place every document.

    Args:
        doc_ids: Document ids.
        doc_entities: Normalised entities per document (:func:`entities_of`).
        embed: Encoder of entity names (unit-length rows).
        n_clusters: Strata wanted (fewer when there are fewer defining entities).
        min_df: Documents an entity needs to help define the clusters.
        max_entities: Most frequent entities used to define the clusters (the clustering is
            quadratic in them); the rest join the nearest centroid.
        linkage: ``"ward"`` (default: on unit vectors, where squared Euclidean distance is
            2 - 2 cos, it merges the pair that adds least spread, which keeps strata of comparable
            size) or ``"average"`` (mean cosine distance; tends to one giant stratum and many
            tiny ones).

    Raises:
        ArgusInputError: Lengths differ, or ``n_clusters`` < 1.
    """
    from scipy.cluster import hierarchy

    if linkage not in ("ward", "average"):
        raise ArgusInputError(f"linkage must be 'ward' or 'average', got {linkage!r}")
    if len(doc_ids) != len(doc_entities):
        raise ArgusInputError(f"{len(doc_ids)} document ids but {len(doc_entities)} entity lists")
    if n_clusters < 1:
        raise ArgusInputError(f"n_clusters must be at least 1, got {n_clusters}")
    notes: Counter[str] = Counter()
    df: Counter[str] = Counter()
    for ents in doc_entities:
        df.update(set(ents))
    notes["documents"] = len(doc_ids)
    notes["distinct entities"] = len(df)
    notes["documents without entities"] = sum(not e for e in doc_entities)
    if not df:
        notes["corpus without entities: every document in the no-entity stratum"] = 1
        primary = dict.fromkeys(doc_ids, NO_ENTITIES)
        return Strata([], {}, {d: Counter() for d in doc_ids}, primary, np.zeros((0, 0)), notes)
    ranked = sorted(df, key=lambda e: (-df[e], e))
    defining = [e for e in ranked if df[e] >= min_df][:max_entities]
    if len(defining) < 2:
        defining = ranked[: max(2, min(max_entities, len(ranked)))]
        notes["too few entities reach min_df: the most frequent ones define the strata"] = 1
    vectors = _unit(embed(defining))
    if len(defining) == 1:
        assign = np.zeros(1, dtype=int)
    else:
        if linkage == "ward":
            tree = hierarchy.linkage(vectors, method="ward", metric="euclidean")
        else:
            tree = hierarchy.linkage(vectors, method="average", metric="cosine")
        assign = (
            hierarchy.fcluster(tree, t=min(n_clusters, len(defining)), criterion="maxclust") - 1
        )
    k = int(assign.max()) + 1
    centroids = _unit(np.stack([vectors[assign == c].mean(axis=0) for c in range(k)]))
    entity_stratum = {e: int(c) for e, c in zip(defining, assign)}
    rest = [e for e in ranked if e not in entity_stratum]
    if rest:
        nearest = (_unit(embed(rest)) @ centroids.T).argmax(axis=1)
        entity_stratum.update({e: int(c) for e, c in zip(rest, nearest)})
    notes["entities defining the strata"] = len(defining)
    doc_strata: dict[str, Counter[int]] = {}
    doc_primary: dict[str, int] = {}
    for doc_id, ents in zip(doc_ids, doc_entities):
        counts = Counter(entity_stratum[e] for e in ents)
        doc_strata[doc_id] = counts
        doc_primary[doc_id] = min(counts, key=lambda c: (-counts[c], c)) if counts else NO_ENTITIES
    by_stratum: dict[int, list[str]] = {}
    for e in ranked:
        by_stratum.setdefault(entity_stratum[e], []).append(e)
    labels = [" / ".join(by_stratum.get(c, [])[:3]) for c in range(k)]
    sizes = Counter(doc_primary.values())
    notes["strata with one document"] = sum(1 for c in range(k) if sizes[c] == 1)
    notes["strata no document has as primary"] = sum(1 for c in range(k) if sizes[c] == 0)
    return Strata(labels, entity_stratum, doc_strata, doc_primary, centroids, notes)


def stratify_queries(
    queries: Mapping[str, str],
    query_entities: Mapping[str, Sequence[str]],
    strata: Strata,
    embed: Embed,
) -> tuple[dict[str, dict[int, float]], Counter[str]]:
    """Each query's coverage vector (stratum -> share of its entities there, summing to 1).

    Entities the corpus never had are looked up by their embedding's nearest centroid; a query
    with no entity at all is placed by its own embedding. Both are counted.
    """
    notes: Counter[str] = Counter()
    out: dict[str, dict[int, float]] = {}
    if not len(strata):
        notes["queries placed nowhere: the corpus has no strata"] = len(queries)
        return {q: {} for q in queries}, notes
    unknown = sorted(
        {e for q in queries for e in query_entities.get(q, []) if e not in strata.entity_stratum}
    )
    extra: dict[str, int] = {}
    if unknown:
        extra = dict(zip(unknown, (_unit(embed(unknown)) @ strata.centroids.T).argmax(axis=1)))
        notes["query entities new to the corpus (placed by embedding)"] = len(unknown)
    bare = [q for q in queries if not query_entities.get(q)]
    if bare:
        near = (_unit(embed([queries[q] for q in bare])) @ strata.centroids.T).argmax(axis=1)
        for q, c in zip(bare, near):
            out[q] = {int(c): 1.0}
        notes["queries without entities (placed by their embedding)"] = len(bare)
    for q in queries:
        if q in out:
            continue
        counts = Counter(strata.entity_stratum.get(e, extra.get(e)) for e in query_entities[q])
        total = sum(counts.values())
        out[q] = {int(c): n / total for c, n in counts.items() if c is not None}
    return out, notes


def primary_of(vector: Mapping[int, float]) -> int:
    """A coverage vector's largest stratum (lowest id on ties; :data:`NO_ENTITIES` if empty)."""
    return min(vector, key=lambda c: (-vector[c], c)) if vector else NO_ENTITIES
