"""Semantic stratification: entity-based strata of a corpus, how well a query set covers them, and
retrieval scores per stratum ("Coverage, Not Averages", Klearman et al.).

1. **Strata.** Named entities of every document (the NER backends, or an LLM's list of names
   grounded in the text, :class:`~argus_ir.text.mentions.LLMMentions`; statistics such as
   "p<0.05" and section headings such as "Background" are not names, :func:`is_name`) are
   embedded with an encoder and clustered (Ward agglomerative clustering of the unit vectors, cut
   into ``n_clusters``; the entities in at least ``min_df`` documents, at most ``max_entities`` of
   the most frequent, define the clusters and every other entity joins its nearest centroid). A
   document's strata are its entities' clusters; its primary stratum is the most frequent one.
   Each stratum is labelled by its three most frequent entities.
2. **Query stratification.** A query's entities map to clusters; its coverage vector is their
   share. A query without a known entity is placed by its own embedding at the nearest centroid
   (counted).
3. **Coverage.** Minimum Semantic Coverage (MSC): the share of strata touched by at least one
   query; document-weighted coverage: the share of documents whose primary stratum is touched;
   the Jensen-Shannon divergence (base 2, 0 to 1) between the queries' and the corpus's
   distributions over strata.
4. **Stratified evaluation.** Per-query scores grouped by the query's primary stratum: micro
   average (every query equal) and macro average (every stratum equal), and bootstrap win rates of
   one retriever over another under both.
5. **Gap filling.** For strata no query touches, an LLM writes a question from sampled documents
   of the stratum; each is marked synthetic, keeps its document as the one relevant answer and is
   scored separately.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = [
    "NO_ENTITIES",
    "Strata",
    "SyntheticQuery",
    "bootstrap_win_rate",
    "build_strata",
    "coverage_metrics",
    "entities_of",
    "gap_queries",
    "is_name",
    "stratified_means",
    "stratify_queries",
]

NO_ENTITIES = -1
"""The stratum of documents in which the NER finds no entity."""
PROMPT_VERSION = "coverage-query-v1"

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors, one row per text."""


_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _norm(name: str) -> str:
    """Case-folded, single spaces, and no bracket left open or unopened at either end
    (NER cuts "CD4(+) cells" to "CD4(" and "(Wnt) signalling" to "(Wnt")."""
    form = " ".join(name.split()).casefold()
    while form and form[-1] in _PAIRS:
        form = form[:-1].rstrip()
    while form and form[0] in _PAIRS.values():
        form = form[1:].lstrip()
    for opening, closing in _PAIRS.items():
        if form.startswith(opening) and closing not in form:
            form = form[1:].lstrip()
        if form.endswith(closing) and opening not in form:
            form = form[:-1].rstrip()
    return form


HEADING_WORDS = frozenset(
    [
        "abstract",
        "aim",
        "aims",
        "background",
        "conclusion",
        "conclusions",
        "context",
        "design",
        "findings",
        "importance",
        "introduction",
        "method",
        "methods",
        "objective",
        "objectives",
        "purpose",
        "rationale",
        "results",
        "setting",
    ]
)
"""Section headings of structured abstracts; NER often tags them ("BACKGROUND Patients ...")."""

_STATISTIC = re.compile(r"[=<>≤≥±%]")


def is_name(surface: str) -> bool:
    """Whether a normalised surface form can name a topic, rather than a statistic or a heading.

    Kept: two letters or more, letters at least a third of the non-space characters ("il-18",
    "ifn", "saccharomyces"). Dropped: comparisons and percentages ("p<0.05", "n=17", "95%"),
    mostly numbers or punctuation ("iii:09/3.33", "c."), and forms that start with a section
    heading of a structured abstract (:data:`HEADING_WORDS`).
    """
    if _STATISTIC.search(surface):
        return False
    chars = [c for c in surface if not c.isspace()]
    letters = sum(c.isalpha() for c in chars)
    if letters < 2 or 3 * letters < len(chars):
        return False
    return surface.split()[0] not in HEADING_WORDS


def entities_of(
    mentions: Sequence[Sequence[Any]], keep: Callable[[str], bool] | None = is_name
) -> list[list[str]]:
    """Distinct normalised surface forms (case-folded, single spaces, stray brackets trimmed) per
    text, in order.

    Args:
        mentions: The mentions of each text (anything with ``.text``).
        keep: Which forms count as entities (default :func:`is_name`; ``None`` keeps all).
    """
    out = []
    for ms in mentions:
        forms = (_norm(m.text) for m in ms)
        out.append(list(dict.fromkeys(f for f in forms if f and (keep is None or keep(f)))))
    return out


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


def coverage_metrics(
    strata: Strata, query_vectors: Mapping[str, Mapping[int, float]]
) -> dict[str, Any]:
    """MSC, document-weighted coverage and the JS divergence of queries from the corpus.

    Returns:
        ``msc``, ``document_coverage``, ``js_divergence``, ``touched`` (stratum ids), and per
        stratum ``documents`` and ``queries`` (summed coverage weight).
    """
    from scipy.spatial.distance import jensenshannon

    k = len(strata)
    docs = np.zeros(k)
    for c in strata.doc_primary.values():
        if c != NO_ENTITIES:
            docs[c] += 1
    weight = np.zeros(k)
    for vec in query_vectors.values():
        for c, w in vec.items():
            weight[c] += w
    touched = [c for c in range(k) if weight[c] > 0]
    placed = docs.sum()
    if k and placed and weight.sum():
        js = float(jensenshannon(weight / weight.sum(), docs / placed, base=2) ** 2)
    else:
        js = math.nan
    return {
        "strata": k,
        "msc": len(touched) / k if k else math.nan,
        "document_coverage": float(docs[touched].sum() / placed) if placed else math.nan,
        "js_divergence": js,
        "touched": touched,
        "documents": docs.astype(int).tolist(),
        "queries": weight.round(4).tolist(),
    }


# -- stratified evaluation ------------------------------------------------------------------------------


def stratified_means(
    scores: Mapping[str, float], primary: Mapping[str, int]
) -> tuple[float, float, dict[int, list[float]]]:
    """``(micro, macro, per-stratum scores)`` of one retriever's per-query scores.

    Micro weighs every query equally; macro every stratum that has a query.
    """
    groups: dict[int, list[float]] = {}
    for q, v in scores.items():
        groups.setdefault(primary.get(q, NO_ENTITIES), []).append(float(v))
    if not groups:
        return math.nan, math.nan, {}
    micro = float(np.mean([v for vs in groups.values() for v in vs]))
    macro = float(np.mean([np.mean(vs) for vs in groups.values()]))
    return micro, macro, groups


def bootstrap_win_rate(
    a: Mapping[str, float],
    b: Mapping[str, float],
    primary: Mapping[str, int],
    *,
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """How often ``a`` beats ``b`` over bootstrap resamples of the queries (ties count half).

    Each resample draws the queries both have with replacement; ``micro`` compares the plain
    means, ``macro`` the means of per-stratum means.
    """
    qids = sorted(set(a) & set(b))
    if not qids:
        return {"micro": math.nan, "macro": math.nan}
    rng = np.random.default_rng(seed)
    x = np.array([a[q] for q in qids])
    y = np.array([b[q] for q in qids])
    strata = np.array([primary.get(q, NO_ENTITIES) for q in qids])
    labels, index = np.unique(strata, return_inverse=True)
    wins = {"micro": 0.0, "macro": 0.0}
    for _ in range(samples):
        pick = rng.integers(0, len(qids), len(qids))
        dx, dy = x[pick].mean(), y[pick].mean()
        wins["micro"] += 1.0 if dx > dy else 0.5 if dx == dy else 0.0
        groups = index[pick]
        counts = np.bincount(groups, minlength=len(labels))
        present = counts > 0
        mx = (np.bincount(groups, x[pick], len(labels))[present] / counts[present]).mean()
        my = (np.bincount(groups, y[pick], len(labels))[present] / counts[present]).mean()
        wins["macro"] += 1.0 if mx > my else 0.5 if mx == my else 0.0
    return {k: v / samples for k, v in wins.items()}


# -- gap filling ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticQuery:
    """An LLM-written query for a stratum no real query touched."""

    id: str
    text: str
    stratum: int
    source: str


def _question(reply: str | None) -> str | None:
    """The question in a reply: its first non-empty line without labels or quotes."""
    for line in (reply or "").splitlines():
        line = re.sub(r"^\s*(?:question|query|q)\s*[:.-]\s*", "", line, flags=re.I)
        line = line.strip().strip("\"'`*").strip()
        if line:
            return line
    return None


def gap_queries(
    strata: Strata,
    texts: Mapping[str, str],
    strata_ids: Sequence[int],
    llm: Any,
    *,
    per_stratum: int = 2,
    seed: int = 0,
    cache: Any = None,
    max_words: int = 40,
    show_progress: bool = False,
) -> tuple[list[SyntheticQuery], Counter[str]]:
    """Ask the LLM for one question per sampled document of each stratum in ``strata_ids``.

    Replies that are empty, longer than ``max_words``, or copy a run of the document verbatim are
    dropped and counted; failed calls are counted with their errors left out of the queries.
    """
    from argus_ir.llm.cache import cached_generate
    from argus_ir.remedy.synthesis import load_prompt
    from argus_ir.sira import Analyzer, _copied_share

    template = load_prompt(PROMPT_VERSION)
    rng = random.Random(seed)
    picked: list[tuple[int, str]] = []
    for c in strata_ids:
        members = strata.documents_in(c)
        for doc_id in rng.sample(members, min(per_stratum, len(members))):
            picked.append((c, doc_id))
    prompts = [(PROMPT_VERSION, template.substitute(text=texts[d].strip())) for _, d in picked]
    replies, count = cached_generate(
        llm, prompts, cache, max_tokens=64, show_progress=show_progress
    )
    notes: Counter[str] = Counter({"LLM calls": count.calls, "cached": count.cache_hits})
    words = Analyzer(stemmer=None).words
    out: list[SyntheticQuery] = []
    for (c, doc_id), reply in zip(picked, replies):
        if not reply.ok:
            notes["failed calls"] += 1
            continue
        q = _question(reply.text)
        if not q:
            notes["empty replies"] += 1
        elif len(q.split()) > max_words:
            notes["replies too long for a query"] += 1
        elif _copied_share(words(q), words(texts[doc_id]), n=6) >= 0.5:
            notes["replies copying the document"] += 1
        else:
            out.append(SyntheticQuery(f"synthetic-{c}-{doc_id}", q, c, doc_id))
    notes["synthetic queries"] = len(out)
    return out, notes


# -- the audit ------------------------------------------------------------------------------------------


@dataclass
class CoverageReport:
    """Everything ``argus coverage`` measured on one dataset."""

    dataset: str
    strata: Strata
    coverage: dict[str, Any]
    primary: dict[str, int]
    scores: dict[str, dict[str, float]]
    synthetic: list[SyntheticQuery]
    synthetic_scores: dict[str, dict[str, float]]
    win_rates: dict[str, dict[str, float]]
    notes: dict[str, int]
    metric: str = "nDCG@10"
    seed: int = 0
    bootstrap: int = 1000

    def by_stratum(self) -> dict[str, dict[int, list[float]]]:
        """Retriever -> stratum -> the metric of each real query whose primary stratum it is."""
        return {name: stratified_means(s, self.primary)[2] for name, s in self.scores.items()}

    def summary(self) -> dict[str, dict[str, float]]:
        """Retriever -> micro and macro averages of the metric over the real queries."""
        out = {}
        for name, scores in self.scores.items():
            micro, macro, _ = stratified_means(scores, self.primary)
            out[name] = {"micro": micro, "macro": macro}
        return out

    def to_dict(self) -> dict[str, Any]:
        def clean(x: Any) -> Any:
            return None if isinstance(x, float) and math.isnan(x) else x

        return {
            "dataset": self.dataset,
            "metric": self.metric,
            "seed": self.seed,
            "strata": [
                {
                    "id": c,
                    "label": label,
                    "documents": self.coverage["documents"][c],
                    "queries": self.coverage["queries"][c],
                }
                for c, label in enumerate(self.strata.labels)
            ],
            "coverage": {
                k: clean(v) for k, v in self.coverage.items() if k not in ("documents", "queries")
            },
            "averages": {k: {a: clean(v) for a, v in d.items()} for k, d in self.summary().items()},
            "win_rates": self.win_rates,
            "synthetic": [
                {"id": s.id, "text": s.text, "stratum": s.stratum, "source": s.source}
                for s in self.synthetic
            ],
            "synthetic_averages": {
                k: clean(float(np.mean(list(v.values())))) if v else None
                for k, v in self.synthetic_scores.items()
            },
            "notes": self.notes,
            "queries": {  # per real query: its primary stratum and each retriever's metric
                q: {
                    "stratum": c,
                    "scores": {n: s[q] for n, s in self.scores.items() if q in s},
                }
                for q, c in self.primary.items()
            },
        }


def _runs(
    name: str,
    docs: Sequence[tuple[str, str]],
    query_sets: Sequence[tuple[Mapping[str, str], Mapping[str, Mapping[str, int]]]],
    metric: str,
    show_progress: bool,
    vector_cache: Any = None,
) -> list[dict[str, float]]:
    """Per-query ``metric`` of retriever ``name`` (``"bm25"`` or an encoder) on each query set.

    With ``vector_cache`` (a folder) the document vectors are kept per model, so a rerun (other
    strata, another query set) or a resumed run embeds only the documents it has not seen.
    """
    from argus_ir.encoder.cache import VectorCache, cached_vectors, text_key
    from argus_ir.eval import dense_run, embed_texts, score_run

    ids = [d for d, _ in docs]
    out = []
    if name == "bm25":
        from argus_ir.sira import SiraIndex

        index = SiraIndex.build(docs)
        for queries, qrels in query_sets:
            run = {q: dict(index.search(t, k=100)) for q, t in queries.items()}
            out.append({q: v[metric] for q, v in score_run(qrels, run, [metric])[1].items()})
        return out
    from argus_ir.encoder import load_encoder

    encoder = load_encoder(name)
    info = encoder.info
    cache = None
    if vector_cache is not None:
        cache = VectorCache.for_model(vector_cache, info.retriever_id, info.dim)
    texts = [t for _, t in docs]
    model_key = f"{info.retriever_id}|{encoder.precision}|document"
    dv = cached_vectors(
        texts,
        [text_key(model_key, t) for t in texts],
        lambda batch: embed_texts(encoder, batch, False),
        cache,
        show_progress=show_progress,
        desc=f"{name}: corpus",
    )
    for queries, qrels in query_sets:
        qids = list(queries)
        if not qids:
            out.append({})
            continue
        qv = embed_texts(encoder, [queries[q] for q in qids], False)
        run = dense_run(qv, qids, dv, ids, {})
        out.append({q: v[metric] for q, v in score_run(qrels, run, [metric])[1].items()})
    return out


def audit_coverage(
    data: Any,
    retrievers: Sequence[str] = ("minilm", "bm25"),
    *,
    embed_model: str = "minilm",
    n_clusters: int = 20,
    min_df: int = 2,
    linkage: str = "ward",
    llm: Any = None,
    per_stratum: int = 2,
    cache: Any = None,
    bootstrap: int = 1000,
    seed: int = 0,
    metric: str = "nDCG@10",
    mentioner: Any = None,
    vector_cache: Any = None,
    show_progress: bool = False,
) -> CoverageReport:
    """Strata, coverage and stratified scores of a :class:`~argus_ir.eval.BeirData`.

    Args:
        data: The dataset (corpus, queries, qrels).
        retrievers: ``"bm25"`` and/or encoders (``"minilm"``, ``"mpnet"``, ids, folders).
        embed_model: The encoder that embeds entity names for the clustering.
        n_clusters: Strata.
        min_df: Documents an entity needs to define the strata.
        linkage: Clustering of the entity vectors (:func:`build_strata`).
        llm: A backend for gap queries (``None``: no gap filling).
        per_stratum: Documents sampled per uncovered stratum for gap queries.
        cache: A :class:`~argus_ir.llm.CallCache` for the gap queries.
        bootstrap: Resamples for the win rates.
        seed: Seed of the bootstrap and of the document sample.
        metric: An ``ir-measures`` metric.
        mentioner: A mention extractor (default: spaCy's offline small English model;
            :class:`~argus_ir.text.mentions.LLMMentions` for an LLM's names, whose counts join the
            report's).
        vector_cache: A folder for the dense retrievers' document vectors (``None``: none);
            reruns skip the corpus embedding and an interrupted run resumes.
        show_progress: Progress bars.
    """
    from argus_ir.encoder import load_encoder
    from argus_ir.eval import embed_texts

    if mentioner is None:
        from argus_ir.text.mentions import SpacyMentions

        mentioner = SpacyMentions()
    encoder = load_encoder(embed_model)

    def embed(texts: Sequence[str]) -> np.ndarray:
        return _unit(embed_texts(encoder, list(texts), False))

    docs = [(d.id, d.index_text) for d in data.corpus]
    queries = {q: data.queries[q] for q in data.qrels if q in data.queries}
    doc_entities = entities_of(mentioner.extract([t for _, t in docs], show_progress=show_progress))
    strata = build_strata(
        [d for d, _ in docs],
        doc_entities,
        embed,
        n_clusters=n_clusters,
        min_df=min_df,
        linkage=linkage,
    )
    q_entities = dict(zip(queries, entities_of(mentioner.extract(list(queries.values())))))
    vectors, notes = stratify_queries(queries, q_entities, strata, embed)
    notes.update(strata.notes)
    extractor_notes = getattr(mentioner, "notes", None) or {}  # an LLM extractor counts its work
    notes.update({f"entity extraction: {k}": v for k, v in extractor_notes.items()})
    primary = {q: primary_of(v) for q, v in vectors.items()}
    coverage = coverage_metrics(strata, vectors)
    synthetic: list[SyntheticQuery] = []
    uncovered = [c for c in range(len(strata)) if c not in coverage["touched"]]
    if llm is not None and uncovered:
        synthetic, more = gap_queries(
            strata,
            dict(docs),
            uncovered,
            llm,
            per_stratum=per_stratum,
            seed=seed,
            cache=cache,
            show_progress=show_progress,
        )
        notes.update({f"gap filling: {k}": v for k, v in more.items()})
    syn_queries = {s.id: s.text for s in synthetic}
    syn_qrels = {s.id: {s.source: 1} for s in synthetic}
    scores: dict[str, dict[str, float]] = {}
    syn_scores: dict[str, dict[str, float]] = {}
    for name in retrievers:
        real, syn = _runs(
            name,
            docs,
            [(queries, data.qrels), (syn_queries, syn_qrels)],
            metric,
            show_progress,
            vector_cache,
        )
        scores[name], syn_scores[name] = real, syn
    wins: dict[str, dict[str, float]] = {}
    names = list(scores)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            wins[f"{a} vs {b}"] = bootstrap_win_rate(
                scores[a], scores[b], primary, samples=bootstrap, seed=seed
            )
    return CoverageReport(
        data.name, strata, coverage, primary, scores, synthetic, syn_scores, wins,
        dict(notes), metric, seed, bootstrap,
    )  # fmt: skip


def _f(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


def coverage_markdown(report: CoverageReport, charts: bool = True) -> str:
    """The report: coverage, micro vs macro, win rates, the strata table, gap queries, notes."""
    cov = report.coverage
    m = report.metric
    lines = [
        f"# Semantic coverage: {report.dataset}",
        "",
        f"{cov['strata']} entity-based strata. **Minimum Semantic Coverage {_f(cov['msc'])}** "
        f"(share of strata touched by a query), document-weighted coverage "
        f"{_f(cov['document_coverage'])}, Jensen-Shannon divergence of the queries from the "
        f"corpus {_f(cov['js_divergence'])} (0 = same distribution, 1 = disjoint).",
        "",
        f"| retriever | {m} micro (per query) | {m} macro (per stratum) |",
        "|---|---|---|",
    ]
    for name, avg in report.summary().items():
        lines.append(f"| {name} | {_f(avg['micro'])} | {_f(avg['macro'])} |")
    if report.win_rates:
        lines += [
            "",
            f"Bootstrap win rates ({report.bootstrap:,} resamples of the queries, seed "
            f"{report.seed}): how often "
            "the first retriever's average beats the second's, ties counting half.",
            "",
            "| pair | micro | macro |",
            "|---|---|---|",
        ]
        for pair, w in report.win_rates.items():
            lines.append(f"| {pair} | {w['micro']:.1%} | {w['macro']:.1%} |")
    if charts:
        lines += ["", "![documents and queries per stratum](coverage.png)"]
        lines += ["", f"![{m} per stratum](strata.png)"]
    head = ["stratum", "label", "documents", "query weight"]
    head += [f"{name} (n)" for name in report.scores]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups = report.by_stratum()
    for c, label in enumerate(report.strata.labels):
        cells = [str(c), label, str(cov["documents"][c]), f"{cov['queries'][c]:.2f}"]
        for name in report.scores:
            vs = groups[name].get(c, [])
            cells.append(f"{np.mean(vs):.3f} ({len(vs)})" if vs else "—")
        lines.append("| " + " | ".join(cells) + " |")
    if report.synthetic:
        lines += [
            "",
            f"## Synthetic queries for uncovered strata ({len(report.synthetic)})",
            "",
            "LLM-written, one per sampled document of a stratum no real query touched; the "
            "document is the only relevant one. Scored apart from the real queries:",
            "",
        ]
        for name, s in report.synthetic_scores.items():
            lines.append(f"- {name}: mean {m} {_f(float(np.mean(list(s.values()))))}")
        lines += ["", "Examples:", ""]
        lines += [
            f"- stratum {s.stratum} ({report.strata.labels[s.stratum]}): {s.text}"
            for s in report.synthetic[:6]
        ]
    if report.notes:
        lines += ["", "Counts:", ""]
        lines += [f"- {v} {k}" for k, v in report.notes.items()]
    return "\n".join(lines) + "\n"


def write_coverage_report(report: CoverageReport, out: Any) -> Any:
    """Write ``results.json``, ``README.md``, ``coverage.png`` and ``strata.png`` into ``out``."""
    import json
    from pathlib import Path

    from argus_ir import plots
    from argus_ir.io import atomic_path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "results.json") as tmp:
        tmp.write_text(json.dumps(report.to_dict(), indent=2) + "\n", "utf-8")
    by_stratum = report.by_stratum()
    charts = any(c != NO_ENTITIES for g in by_stratum.values() for c in g)
    if charts:
        labels = [f"{c}: {label[:40]}" for c, label in enumerate(report.strata.labels)]
        plots.coverage_bars(
            labels, report.coverage["documents"], report.coverage["queries"],
            folder / "coverage.png",
        )  # fmt: skip
        groups = {
            name: {labels[c]: vs for c, vs in sorted(g.items()) if c != NO_ENTITIES}
            for name, g in by_stratum.items()
        }
        overall = {name: avg["micro"] for name, avg in report.summary().items()}
        plots.strata_boxplot(groups, overall, folder / "strata.png", metric=report.metric)
    with atomic_path(folder / "README.md") as tmp:
        tmp.write_text(coverage_markdown(report, charts), "utf-8")
    return folder
