"""Retrieval evaluation of argus remedies on BEIR-format datasets (the paper's protocol, §6).

One retriever embeds the corpus, diagnoses it and ranks (the strict retriever-consistent rule; only
the KB lookup is lexical). Each condition indexes the originals (``"original"``) or the originals
plus one remedy's views; search is exact (inner product over all entries), hits over views are
collapsed to their source documents (:func:`argus_ir.collapse.collapse`, best score), and the
ranked sources are scored with ``ir-measures``. Every remedy is compared with ``"original"`` by a
paired t-test over queries, which the paper does not report.

>>> data = load_beir("beir/scifact")                            # doctest: +SKIP
>>> result = evaluate(data, remedies=("original", "expansion"))  # doctest: +SKIP
>>> result.conditions["expansion"].aggregate["nDCG@10"]          # doctest: +SKIP
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir._optional import require
from argus_ir.audit.loaders import Document
from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, rank_sources
from argus_ir.errors import ArgusInputError
from argus_ir.io import iter_jsonl

__all__ = [
    "ABLATABLE",
    "METRICS",
    "BeirData",
    "Condition",
    "EvalResult",
    "Significance",
    "ablation_name",
    "dense_run",
    "embed_texts",
    "evaluate",
    "half_width",
    "load_beir",
    "paired_test",
    "parse_ablations",
    "report_markdown",
    "results_markdown",
    "rps_of_gold",
    "score_run",
    "subsample",
    "write_results",
]

METRICS = ("nDCG@5", "nDCG@10", "nDCG@20", "nDCG@50", "R@10", "R@50")
"""What every condition reports (the paper's nDCG cut-offs plus recall)."""

ORIGINAL = "original"


@dataclass
class BeirData:
    """A BEIR dataset: corpus, the queries that have judgements in ``split``, and the qrels.

    Attributes:
        notes: What loading left out or found odd, as ``reason -> count`` (queries without
            judgements, judgements of documents not in the corpus, empty documents, ...); nothing
            is dropped without a count here.
        subset: Whether :func:`subsample` cut queries or documents.
    """

    name: str
    corpus: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str = "test"
    notes: dict[str, int] = field(default_factory=dict)
    subset: bool = False
    query_split: dict[str, str] = field(default_factory=dict)


def load_beir(folder: str | Path, split: str = "test") -> BeirData:
    """Read ``corpus.jsonl``, ``queries_<split>.jsonl`` or ``queries.jsonl`` and ``qrels/<split>.tsv``.

    ``split`` may name several splits, comma-separated (``"dev,test"``): their queries are indexed
    together, and :attr:`BeirData.query_split` says which split each query came from, so one
    indexing serves them all (:meth:`EvalResult.split_by`). A query id judged in two splits is an
    error.

    Only queries with at least one relevant judgement in the split are kept; judged documents
    missing from the corpus are dropped from the qrels (BEIR subsets such as msmarco5k have them).
    Each such drop is counted in :attr:`BeirData.notes`. Integer ids are read as strings.

    Raises:
        ArgusInputError: A missing file or split (naming the splits there are), a malformed line,
            a query without id or text (file and line).
    """
    from argus_ir.audit.loaders import _as_id, read_documents

    splits = [part.strip() for part in split.split(",") if part.strip()]
    if len(splits) > 1:
        parts = [load_beir(folder, one) for one in splits]
        merged = parts[0]
        query_split = {q: splits[0] for q in merged.queries}
        for one, part in zip(splits[1:], parts[1:]):
            clash = sorted(set(part.queries) & set(query_split))
            if clash:
                raise ArgusInputError(
                    f"{folder}: query {clash[0]!r} is judged in split {query_split[clash[0]]!r} "
                    f"and in {one!r} ({len(clash)} such queries)"
                )
            merged.queries.update(part.queries)
            merged.qrels.update(part.qrels)
            query_split.update(dict.fromkeys(part.queries, one))
            for reason, n in part.notes.items():
                if not reason.startswith("documents with"):  # the corpus is the same
                    merged.notes[reason] = merged.notes.get(reason, 0) + n
        merged.split = ",".join(splits)
        merged.query_split = query_split
        return merged
    root = Path(folder)
    corpus_file = root / "corpus.jsonl"
    qrels_file = root / "qrels" / f"{split}.tsv"
    if not corpus_file.is_file():
        raise ArgusInputError(f"{root} is not a BEIR dataset: corpus.jsonl not found")
    if not qrels_file.is_file():
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise ArgusInputError(
            f"{root}: no qrels for split {split!r} ({qrels_file} not found); "
            + (f"splits there: {', '.join(splits)}" if splits else "no qrels/*.tsv at all")
        )
    corpus = read_documents(corpus_file)
    known = {d.id for d in corpus}
    notes: dict[str, int] = {}

    def note(reason: str, n: int = 1) -> None:
        if n:
            notes[reason] = notes.get(reason, 0) + n

    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_file, encoding="utf-8", newline="") as fh:
        for line_no, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or (line_no == 1 and row[0] == "query-id"):
                continue
            if len(row) != 3:
                raise ArgusInputError(
                    f"{qrels_file}:{line_no}: expected query-id, corpus-id, score"
                )
            qid, did, rel = (cell.strip() for cell in row)
            try:
                grade = int(rel)
            except ValueError:
                raise ArgusInputError(
                    f"{qrels_file}:{line_no}: score {rel!r} is not an integer"
                ) from None
            if did in known:
                qrels.setdefault(qid, {})[did] = grade
            else:
                note("judgements of documents not in the corpus")
    queries_file = next(
        (p for p in (root / f"queries_{split}.jsonl", root / "queries.jsonl") if p.is_file()), None
    )
    if queries_file is None:
        raise ArgusInputError(f"{root}: no queries_{split}.jsonl or queries.jsonl")
    queries: dict[str, str] = {}
    for line_no, rec in iter_jsonl(queries_file):
        where = f"{queries_file}:{line_no}"
        key = next((k for k in ("_id", "id") if rec.get(k) not in (None, "")), None)
        if key is None:
            raise ArgusInputError(f"{where}: query has no id (looked for '_id', 'id')")
        qid = _as_id(rec[key], "query id", where)
        if qid not in qrels:
            note(f"queries without judgements in {split}")
            continue
        text = rec.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ArgusInputError(f"{where}: query {qid!r} has no text")
        queries[qid] = text
    note("judged queries missing from the queries file", len(set(qrels) - set(queries)))
    unjudged = [q for q in queries if not any(v > 0 for v in qrels[q].values())]
    note("queries with no relevant document", len(unjudged))
    qrels = {q: qrels[q] for q in queries if q not in unjudged}
    queries = {q: t for q, t in queries.items() if q in qrels}
    note(
        "documents with neither title nor text (indexed, nothing to diagnose)",
        sum(not d.index_text.strip() for d in corpus),
    )
    note(
        "documents with a title but no text (title indexed; not diagnosed, no views)",
        sum(bool(d.title.strip()) and not d.text.strip() for d in corpus),
    )
    return BeirData(
        root.name, corpus, queries, qrels, split, notes, False, dict.fromkeys(queries, split)
    )


def subsample(
    data: BeirData, *, max_queries: int = 0, max_docs: int = 0, seed: int = 0
) -> BeirData:
    """A smaller copy of ``data`` for slow conditions (LLM synthesis on a CPU).

    Keeps the first ``max_queries`` queries by id (0: all) and, with ``max_docs``, a corpus of
    every document relevant to those queries plus a seeded uniform sample of the others (judged
    non-relevant ones included) up to ``max_docs`` in all (more when the relevant documents alone
    exceed it). Scores on a subset are
    comparable only with other conditions on the same subset.
    """
    queries = dict(data.queries)
    if max_queries:
        keep = sorted(queries)[:max_queries]
        queries = {q: queries[q] for q in keep}
    qrels = {q: data.qrels[q] for q in queries}
    corpus = data.corpus
    name = data.name
    if max_docs and max_docs < len(corpus):
        judged = {d for r in qrels.values() for d, grade in r.items() if grade > 0}
        others = [i for i, d in enumerate(corpus) if d.id not in judged]
        room = max(max_docs - (len(corpus) - len(others)), 0)
        picked = set(np.random.default_rng(seed).choice(len(others), room, replace=False).tolist())
        chosen = {others[i] for i in picked}
        corpus = [d for i, d in enumerate(corpus) if d.id in judged or i in chosen]
        name = f"{data.name}-sub{len(corpus)}"
    notes = dict(data.notes)
    if len(queries) < len(data.queries):
        notes["queries left out by max_queries"] = len(data.queries) - len(queries)
    cut = len(queries) < len(data.queries) or len(corpus) < len(data.corpus)
    query_split = {q: data.query_split.get(q, data.split) for q in queries}
    return BeirData(
        name, corpus, queries, qrels, data.split, notes, data.subset or cut, query_split
    )


def dense_run(
    query_vectors: np.ndarray,
    query_ids: Sequence[str],
    entry_vectors: np.ndarray,
    entry_ids: Sequence[str],
    source_of: Mapping[str, str],
    *,
    depth: int = 100,
    chunk: int = 256,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> dict[str, dict[str, float]]:
    """Exact inner-product search over all entries; views collapsed to sources (best score).

    ``depth`` source documents are kept per query; enough entries are fetched that views of a
    few sources cannot crowd others out (each source has at most ``max views + 1`` entries).
    ``view_discount`` is :func:`argus_ir.collapse.collapse`'s.
    """
    rankings = dense_rankings(
        query_vectors,
        query_ids,
        entry_vectors,
        entry_ids,
        source_of,
        depth=depth,
        chunk=chunk,
        view_discount=view_discount,
    )
    return _as_run(rankings)


def dense_rankings(
    query_vectors: np.ndarray,
    query_ids: Sequence[str],
    entry_vectors: np.ndarray,
    entry_ids: Sequence[str],
    source_of: Mapping[str, str],
    *,
    depth: int = 100,
    chunk: int = 256,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
) -> dict[str, list[tuple[str, float, str]]]:
    """:func:`dense_run` as ``query -> [(source, score, entry that gave the score)]``, best first."""
    per_source: dict[str, int] = {}
    for eid in entry_ids:
        src = source_of.get(eid, eid)
        per_source[src] = per_source.get(src, 0) + 1
    fetch = min(len(entry_ids), depth * max(per_source.values(), default=1))
    rank_sources((), view_discount=view_discount)  # the core's check of the discount
    # the discount is taken before the top entries are chosen, so the fetch is exact under it
    penalty = np.array(
        [view_discount if source_of.get(e, e) != e else 0.0 for e in entry_ids], dtype=np.float32
    )
    out: dict[str, list[tuple[str, float, str]]] = {}
    for start in range(0, len(query_ids), chunk):
        scores = query_vectors[start : start + chunk] @ entry_vectors.T
        if view_discount:
            scores = scores - penalty
        if fetch < scores.shape[1]:
            top = np.argpartition(-scores, fetch - 1, axis=1)[:, :fetch]
        else:
            top = np.tile(np.arange(scores.shape[1]), (scores.shape[0], 1))
        for row, qid in enumerate(query_ids[start : start + chunk]):
            hits = [(entry_ids[j], float(scores[row, j])) for j in top[row]]
            # the discount is already in the scores
            out[qid] = rank_sources(hits, source_of, top_k=depth, view_discount=0.0)
    return out


def score_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Aggregate and per-query metrics with ``ir-measures`` (queries missing from ``run`` score 0).

    Returns:
        ``(aggregate, per_query)``: metric -> mean over the qrels' queries, and query -> metric ->
        value.
    """
    ir_measures = require("ir_measures", "eval")
    parsed = [ir_measures.parse_measure(m) for m in metrics]
    names = {m: str(m) for m in parsed}
    per_query: dict[str, dict[str, float]] = {q: dict.fromkeys(metrics, 0.0) for q in qrels}
    full_run = {q: dict(run.get(q, {})) for q in qrels}
    for q in full_run:
        if not full_run[q]:
            full_run[q] = {"__none__": 0.0}  # an empty ranking still counts as a query
    for m in ir_measures.iter_calc(parsed, qrels, full_run):
        per_query[m.query_id][names[m.measure]] = float(m.value)
    n = max(len(per_query), 1)
    aggregate = {name: sum(v[name] for v in per_query.values()) / n for name in metrics}
    return aggregate, per_query


@dataclass(frozen=True)
class Significance:
    """A paired comparison of one metric between a condition and ``original``.

    Attributes:
        delta: Mean difference (condition - original).
        t: Paired t statistic (``nan`` when every difference is equal).
        p: Two-sided p-value (1.0 when every difference is 0).
        n: Queries compared.
    """

    delta: float
    t: float
    p: float
    n: int


def paired_test(a: Mapping[str, float], b: Mapping[str, float]) -> Significance:
    """Paired t-test over the queries both have (``scipy.stats.ttest_rel``), ``b`` against ``a``."""
    from scipy import stats

    qids = sorted(set(a) & set(b))
    x = np.array([a[q] for q in qids], dtype=float)
    y = np.array([b[q] for q in qids], dtype=float)
    if len(qids) < 2:
        return Significance(float(np.mean(y - x)) if qids else 0.0, math.nan, 1.0, len(qids))
    diff = y - x
    if np.allclose(diff, diff[0]):
        return Significance(float(diff.mean()), math.nan, 1.0 if diff[0] == 0 else 0.0, len(qids))
    res = stats.ttest_rel(y, x)
    return Significance(float(diff.mean()), float(res.statistic), float(res.pvalue), len(qids))


def rps_of_gold(
    max_rps: Mapping[str, float],
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    k: int = 10,
) -> dict[str, Any]:
    """Appendix E.1: the highest predicted entity RPS of gold documents, retrieved vs missed.

    For every (query, relevant document) pair, the document counts as retrieved when it is in the
    query's top ``k`` of ``run`` (the original index). Documents without any entity are left out.
    Reports count, mean and median per group and a two-sided Mann-Whitney U test between them.

    Args:
        max_rps: Document id -> highest predicted RPS over its entities.
        qrels: Relevance judgements.
        run: The original index's ranking.
        k: The cut-off that decides "retrieved".
    """
    from scipy import stats

    groups: dict[str, list[float]] = {"retrieved": [], "missed": []}
    for qid, judged in qrels.items():
        top = sorted(run.get(qid, {}).items(), key=lambda item: -item[1])[:k]
        found = {doc for doc, _ in top}
        for doc, grade in judged.items():
            if grade > 0 and doc in max_rps:
                groups["retrieved" if doc in found else "missed"].append(max_rps[doc])
    out: dict[str, Any] = {"k": k}
    for name, values in groups.items():
        arr = np.array(values, dtype=float)
        out[name] = {
            "n": len(values),
            "mean": float(arr.mean()) if len(values) else None,
            "median": float(np.median(arr)) if len(values) else None,
        }
    if groups["retrieved"] and groups["missed"]:
        test = stats.mannwhitneyu(groups["retrieved"], groups["missed"], alternative="two-sided")
        out["mannwhitney_p"] = float(test.pvalue)
    return out


@dataclass
class Condition:
    """One indexed condition of one dataset.

    Attributes:
        name: ``"original"`` or a remedy.
        entries: Index entries (originals + views).
        index_growth: Entries over corpus size.
        ingest_s: Wall time to build the index (diagnosis, remedy, embedding).
        llm_calls: LLM prompts sent.
        stats: The remedy's statistics (``{}`` for ``original``).
        aggregate: Metric -> mean over queries.
        per_query: Query -> metric -> value.
        significance: Metric -> test against ``original`` (empty for ``original``).
    """

    name: str
    entries: int
    index_growth: float
    ingest_s: float
    llm_calls: int
    stats: dict[str, Any]
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]]
    significance: dict[str, Significance] = field(default_factory=dict)


@dataclass
class EvalResult:
    """Every condition of one dataset under one retriever."""

    dataset: str
    retriever: str
    queries: int
    documents: int
    conditions: dict[str, Condition]
    gold_rps: dict[str, Any] | None = None
    notes: dict[str, int] = field(default_factory=dict)
    subset: bool = False
    query_split: dict[str, str] = field(default_factory=dict)
    # with evaluate(explain=True): condition -> query -> [(source, score, entry)], and each
    # condition's views (entry id -> argus_ir.eval.explain.EntryInfo); not written to results.json
    rankings: dict[str, dict[str, list[tuple[str, float, str]]]] = field(
        default_factory=dict, repr=False
    )
    entries: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    # what App. E.1 was computed from (max RPS per document, qrels, the original run), so a split
    # gets its own test; not written to results.json
    gold_inputs: tuple[Any, ...] | None = field(default=None, repr=False)
    # targeting -> document -> highest entity score, for targetings other than the probe; App.
    # E.1 of each is in gold_by_targeting (recomputed per split)
    targeting_scores: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    @property
    def gold_by_targeting(self) -> dict[str, dict[str, Any]]:
        """App. E.1 of each targeting other than the probe (:data:`TARGETINGS`)."""
        if self.gold_inputs is None:
            return {}
        _, qrels, run = self.gold_inputs
        return {t: rps_of_gold(s, qrels, run) for t, s in self.targeting_scores.items()}

    def split_by(self) -> list[EvalResult]:
        """One result per query split (``load_beir(folder, "dev,test")``), named
        ``dataset[split]``, with aggregates and tests over that split's queries only; the result
        itself when it holds one split."""
        splits = sorted(set(self.query_split.values()))
        if len(splits) < 2:
            return [self]
        out = []
        for split in splits:
            qids = {q for q, s in self.query_split.items() if s == split}
            out.append(self.for_queries(qids, f"{self.dataset}[{split}]"))
        return out

    def for_queries(self, qids: set[str], name: str) -> EvalResult:
        """This result over ``qids`` only (aggregates and paired tests recomputed)."""
        conditions: dict[str, Condition] = {}
        reference = {q: v for q, v in self.conditions[ORIGINAL].per_query.items() if q in qids}
        for cname, c in self.conditions.items():
            per_q = {q: v for q, v in c.per_query.items() if q in qids}
            metrics = list(c.aggregate)
            n = max(len(per_q), 1)
            agg = {m: sum(v[m] for v in per_q.values()) / n for m in metrics}
            sig = (
                {}
                if cname == ORIGINAL
                else {m: paired_test(_metric(reference, m), _metric(per_q, m)) for m in metrics}
            )
            conditions[cname] = Condition(
                cname, c.entries, c.index_growth, c.ingest_s, c.llm_calls, c.stats, agg, per_q, sig
            )
        gold = self.gold_rps
        inputs = self.gold_inputs
        if inputs is not None:
            max_rps, qrels, run = inputs
            inputs = (max_rps, {q: r for q, r in qrels.items() if q in qids}, run)
            gold = rps_of_gold(*inputs)
        return EvalResult(
            name,
            self.retriever,
            len(reference),
            self.documents,
            conditions,
            gold,
            self.notes,
            self.subset,
            {q: s for q, s in self.query_split.items() if q in qids},
            {c: {q: r for q, r in rk.items() if q in qids} for c, rk in self.rankings.items()},
            self.entries,
            inputs,
            self.targeting_scores,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """Read back :meth:`to_dict` (per-query values stay empty)."""
        conditions = {
            name: Condition(
                name,
                c["entries"],
                c["index_growth"],
                c["ingest_s"],
                c["llm_calls"],
                c["stats"],
                c["aggregate"],
                {},
                {
                    m: Significance(
                        v["delta"], math.nan if v["t"] is None else v["t"], v["p"], v["n"]
                    )
                    for m, v in c["significance"].items()
                },
            )
            for name, c in data["conditions"].items()
        }
        return cls(
            data["dataset"],
            data["retriever"],
            data["queries"],
            data["documents"],
            conditions,
            data.get("gold_rps"),
            data.get("notes", {}),
            data.get("subset", False),
            data.get("query_split", {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (per-query values are written separately)."""
        return {
            "dataset": self.dataset,
            "retriever": self.retriever,
            "queries": self.queries,
            "documents": self.documents,
            "gold_rps": self.gold_rps,
            "gold_rps_by_targeting": self.gold_by_targeting,
            "notes": self.notes,
            "subset": self.subset,
            "query_split": self.query_split,
            "conditions": {
                name: {
                    "entries": c.entries,
                    "index_growth": round(c.index_growth, 4),
                    "ingest_s": round(c.ingest_s, 2),
                    "llm_calls": c.llm_calls,
                    "aggregate": {k: round(v, 5) for k, v in c.aggregate.items()},
                    "significance": {
                        k: {"delta": s.delta, "t": _finite(s.t), "p": s.p, "n": s.n}
                        for k, s in c.significance.items()
                    },
                    "stats": c.stats,
                }
                for name, c in self.conditions.items()
            },
        }


class _EmbeddingCache:
    """Vectors by text within one evaluation, so every condition embeds each view once.

    Each text also keeps its share of the wall time of the batch that embedded it, so a condition's
    ingest time counts its views' embedding even when an earlier condition paid for it. With a
    ``folder`` (a :class:`~argus_ir.encoder.cache.VectorCache` per model) vectors also persist across
    runs; a text read from there is charged this run's seconds per character (its length capped at
    what the retriever reads), measured on what this run embedded or, when it embedded nothing,
    on a sample of up to 64 cached texts embedded again; :attr:`estimated` then turns true.
    """

    _CHARS_PER_TOKEN = 6  # a generous cap: past the window, more characters cost nothing

    def __init__(self, encoder: Any, show_progress: bool, folder: str | Path | None = None) -> None:
        self.encoder = encoder
        self.show_progress = show_progress
        self._rows: dict[str, tuple[np.ndarray, float]] = {}
        self.estimated = False
        self._seconds = 0.0
        self._chars = 0
        self._disk = None
        self._model_key = ""
        if folder is not None:
            from argus_ir.encoder.cache import VectorCache

            info = encoder.info
            self._model_key = f"{info.retriever_id}|sentence-transformers encode|fp32"
            self._disk = VectorCache.for_model(folder, info.retriever_id, info.dim)
        st_model = getattr(encoder, "sentence_transformer", None)
        window = getattr(st_model, "max_seq_length", None) or 512
        self._cap = int(window) * self._CHARS_PER_TOKEN

    def _cost(self, text: str) -> int:
        return min(len(text), self._cap) + 1

    def _embed(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        vectors = embed_texts(self.encoder, texts, self.show_progress)
        self._seconds += time.perf_counter() - t0
        self._chars += sum(self._cost(t) for t in texts)
        return vectors

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, float]:
        """``(vectors, seconds)``: seconds is the embedding time of these texts, cached or not."""
        from argus_ir.encoder.cache import cached_vectors, text_key

        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._rows))
        if todo:
            first = dict(zip(keys, texts))
            todo_texts = [first[k] for k in todo]
            if self._disk is None:
                t0 = time.perf_counter()
                vectors = self._embed(todo_texts)
                share = (time.perf_counter() - t0) / len(todo)
                self._rows.update((k, (v, share)) for k, v in zip(todo, vectors))
            else:
                disk_keys = [text_key(self._model_key, t) for t in todo_texts]
                hits = [k in self._disk for k in disk_keys]
                before = (self._seconds, self._chars)
                vectors = cached_vectors(
                    todo_texts,
                    disk_keys,
                    self._embed,
                    self._disk,
                    show_progress=self.show_progress,
                    desc="embedding",
                )
                new_s, new_c = self._seconds - before[0], self._chars - before[1]
                if any(hits) and not self._chars:
                    sample = [t for t, hit in zip(todo_texts, hits) if hit][:64]
                    self._embed(sample)  # measure the rate on this machine, this run
                rate = self._seconds / max(self._chars, 1)
                self.estimated = self.estimated or any(hits)
                for k, t, v, hit in zip(todo, todo_texts, vectors, hits):
                    cost = self._cost(t)
                    share = rate * cost if hit else new_s * cost / max(new_c, 1)
                    self._rows[k] = (v, share)
        if not keys:
            return np.zeros((0, self.encoder.dim), dtype=np.float32), 0.0
        rows = [self._rows[k] for k in keys]
        return np.stack([v for v, _ in rows]), sum(s for _, s in rows)


def _filling_the_window(encoder: Any, docs: Sequence[tuple[str, str]]) -> set[str] | None:
    """Ids of ``(id, text)`` documents that alone fill the retriever's input window (``None``:
    unknown).

    The retriever truncates an expansion view of such a document before the KB passage starts, so
    the view embeds like the original.
    """
    st_model = getattr(encoder, "sentence_transformer", None)
    limit = getattr(st_model, "max_seq_length", None)
    if st_model is None or not limit:
        return None
    texts = [text for _, text in docs]
    lengths = st_model.tokenizer(texts, add_special_tokens=True, verbose=False)  # no length warning
    return {doc_id for (doc_id, _), ids in zip(docs, lengths["input_ids"]) if len(ids) >= limit}


def embed_texts(encoder: Any, texts: Sequence[str], show_progress: bool) -> np.ndarray:
    """Embed as the retriever indexes (sentence-transformers' own encode when there is one)."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    st_model = getattr(encoder, "sentence_transformer", None)
    if st_model is not None:
        vectors = st_model.encode(
            list(texts), batch_size=64, show_progress_bar=show_progress, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)
    return np.asarray(encoder.embed_documents(list(texts), show_progress=show_progress))


ABLATABLE: dict[str, type] = {
    "tau": float,
    "k_aug": int,
    "context_threshold": float,
    "max_views": int,
    "view_discount": float,
    "targeting": str,
    "kb": str,
    "kb_match": str,
}
"""Settings :func:`evaluate` can vary per condition, with their types (``off`` gives ``None``:
no context check, no view budget). ``kb`` is a shipped KB's name
(:data:`argus_ir.kb.places.KB_NAMES`), a KB folder or a passages file. ``targeting`` is ``probe`` (the diagnoser's predicted RPS at
``tau``) or ``corpus`` (:mod:`argus_ir.remedy.targeting`: an entity is flagged where its own document is
not in the top 10 for the entity's name, measured on the evaluated index)."""

_OFF = ("context_threshold", "max_views")
_FUSION = ("view_discount",)  # query-time settings: the views stay, their folding changes


def _parse_value(key: str, raw: str, spec: str) -> Any:
    parse = ABLATABLE.get(key)
    if parse is None:
        raise ValueError(f"{spec!r}: {key!r} is not a setting; choose from {', '.join(ABLATABLE)}")
    if raw == "off" and key in _OFF:
        return None
    from argus_ir.remedy.targeting import TARGETINGS

    if key == "targeting" and raw not in TARGETINGS:
        raise ValueError(f"{spec!r}: targeting is one of {', '.join(TARGETINGS)}, got {raw!r}")
    try:
        return parse(raw)
    except ValueError:
        raise ValueError(f"{spec!r}: {raw!r} is not a valid {key}") from None


def parse_ablations(specs: Sequence[str]) -> dict[str, list[Any]]:
    """``["tau=0.1,0.2", "context_threshold=off,0.15"]`` -> ``{"tau": [0.1, 0.2], ...}``.

    Raises:
        ValueError: A spec without ``=``, an unknown setting or a value of the wrong type (the
            message quotes the spec).
    """
    out: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not values.strip():
            raise ValueError(f"ablation {spec!r}: expected SETTING=V1,V2 (e.g. tau=0.1,0.2)")
        for raw in (v.strip() for v in values.split(",")):
            out.setdefault(key, []).append(_parse_value(key, raw, f"ablation {spec}"))
    return out


def parse_variant(spec: str) -> tuple[str, str, dict[str, Any]]:
    """``"expansion max_views=2 view_discount=0.03"`` -> ``(name, "expansion", overrides)``.

    The name is the remedy followed by its settings as given, e.g.
    ``"expansion max_views=2 view_discount=0.03"``.

    Raises:
        ValueError: An unknown remedy or setting, a value of the wrong type, or a setting given
            twice (the message quotes the spec).
    """
    from argus_ir.remedy import KINDS

    words = spec.split()
    if not words or words[0] not in KINDS:
        raise ValueError(f"variant {spec!r}: start with a remedy, one of {', '.join(KINDS)}")
    overrides: dict[str, Any] = {}
    for word in words[1:]:
        key, sep, raw = word.partition("=")
        if not sep or not raw:
            raise ValueError(f"variant {spec!r}: expected SETTING=VALUE, got {word!r}")
        if key in overrides:
            raise ValueError(f"variant {spec!r}: {key} given twice")
        overrides[key] = _parse_value(key, raw, f"variant {spec}")
    return " ".join(words), words[0], overrides


def ablation_name(kind: str, key: str, value: Any) -> str:
    """The condition name of one ablation variant, e.g. ``"expansion tau=0.1"``."""
    return f"{kind} {key}={'off' if value is None else value}"


def evaluate(
    data: BeirData,
    *,
    remedies: Sequence[str] | None = None,
    ablations: Mapping[str, Sequence[Any]] | None = None,
    ablate: str | None = None,
    variants: Sequence[str] = (),
    depth: int = 100,
    metrics: Sequence[str] = METRICS,
    show_progress: bool = False,
    view_discount: float = DEFAULT_VIEW_DISCOUNT,
    vector_cache: str | Path | None = None,
    explain: bool = False,
    on_condition: Any = None,
    **settings: Any,
) -> EvalResult:
    """Index and search ``data`` under each condition; score and compare with ``original``.

    The corpus is embedded and diagnosed once; a variant re-flags the same predictions at its τ
    (:meth:`~argus_ir.diagnose.Diagnosis.at_tau`) and embeds only views no earlier condition had.

    Args:
        data: The dataset (see :func:`load_beir`).
        remedies: Conditions, among ``"original"`` and :data:`argus_ir.remedy.KINDS`;
            ``"original"`` is always evaluated (the reference). Default: ``original`` and
            :data:`argus_ir.remedy.DEFAULT_REMEDY`.
        ablations: Setting -> values, among :data:`ABLATABLE`: one more condition of remedy
            ``ablate`` per value, the other settings as given (named by :func:`ablation_name`).
        ablate: The remedy the ablations vary (default: the default remedy).
        variants: More conditions, each a remedy with settings of its own
            (:func:`parse_variant`: ``"descriptor max_views=1 view_discount=0.02"``).
        depth: Source documents ranked per query.
        metrics: ``ir-measures`` names.
        show_progress: Progress bars (diagnosis, view building, embedding).
        view_discount: How views fold into their sources (:func:`argus_ir.collapse.collapse`);
            a variant may set its own.
        vector_cache: A folder where every embedded text's vector is kept (npz shards per
            model, :mod:`argus_ir.encoder.cache`), so reruns and other conditions embed only new texts.
            Ingest seconds of texts read from it are estimated from this run's embedding rate
            (``ingest_estimated`` in the stats).
        explain: Keep each query's ranking with the entry behind every source, for
            :func:`explain_result` (``argus evaluate --explain``).
        on_condition: Called with the partial :class:`EvalResult` after every condition (a
            caller can write results as they come).
        **settings: :class:`~argus_ir.pipeline.Argus` settings (``retriever``, ``k_aug``, ``tau``,
            ``kb``, ``context_threshold``, ``max_views``, ``llm``, ...); one retriever serves
            every step.

    Raises:
        ValueError: An unknown remedy or setting.
    """
    from tqdm.auto import tqdm

    from argus_ir.pipeline import Argus
    from argus_ir.remedy import DEFAULT_REMEDY, KINDS, RemedyStats, apply_remedy

    remedies = (ORIGINAL, DEFAULT_REMEDY) if remedies is None else remedies
    ablate = DEFAULT_REMEDY if ablate is None else ablate
    unknown = [
        r for r in (*remedies, *([ablate] if ablations else [])) if r != ORIGINAL and r not in KINDS
    ]
    if unknown:
        raise ValueError(f"unknown remedies {unknown}; choose from {(ORIGINAL, *KINDS)}")
    bad = [k for k in ablations or {} if k not in ABLATABLE]
    if bad:
        raise ValueError(f"cannot ablate {bad}; choose from {list(ABLATABLE)}")
    # (condition name, remedy, setting overrides)
    plan: dict[str, tuple[str, dict[str, Any]]] = {
        r: (r, {}) for r in dict.fromkeys(remedies) if r != ORIGINAL
    }
    for key, values in (ablations or {}).items():
        for value in values:
            plan.setdefault(ablation_name(ablate, key, value), (ablate, {key: value}))
    for spec in variants:
        name, kind, overrides = parse_variant(spec)
        plan.setdefault(name, (kind, overrides))
    argus = Argus(
        **{**settings, "remedy": next(iter(plan.values()))[0] if plan else DEFAULT_REMEDY}
    )
    encoder = argus.diagnoser.encoder if plan else argus._get("encoder")
    qids = sorted(data.queries)
    qvec = embed_texts(encoder, [data.queries[q] for q in qids], False)
    embed = _EmbeddingCache(encoder, show_progress, vector_cache)

    texts = [(d.id, d.index_text) for d in data.corpus]
    doc_ids = [doc_id for doc_id, _ in texts]
    base, base_s = embed([text for _, text in texts])
    full = _filling_the_window(encoder, texts) if plan else None

    result = EvalResult(
        data.name,
        encoder.info.retriever_id,
        len(qids),
        len(doc_ids),
        {},
        None,
        dict(data.notes),
        data.subset,
        dict(data.query_split),
    )
    conditions = result.conditions
    rankings = dense_rankings(qvec, qids, base, doc_ids, {}, depth=depth)
    original_run = run = _as_run(rankings)
    agg, per_q = score_run(data.qrels, run, metrics)
    n_docs = len(doc_ids)
    conditions[ORIGINAL] = Condition(ORIGINAL, n_docs, 1.0, base_s, 0, {}, agg, per_q)
    if explain:
        result.rankings[ORIGINAL] = rankings
    if on_condition is not None:
        on_condition(result)

    diagnoses = None
    reached = None  # the diagnoses scored by in-corpus reach, once a condition asks for them
    diagnose_s = 0.0
    contexts: dict[float, Any] = {}
    for name, (kind, overrides) in plan.items():
        if diagnoses is None:
            t0 = time.perf_counter()
            diagnoses = list(
                tqdm(
                    argus.diagnose(data.corpus),
                    total=len(data.corpus),
                    desc=f"{data.name}: diagnosis",
                    unit="doc",
                    disable=not show_progress,
                )
            )
            diagnose_s = time.perf_counter() - t0
            max_rps = {d.doc_id: max(e.rps for e in d.entities) for d in diagnoses if d.entities}
            result.gold_inputs = (max_rps, data.qrels, original_run)
            result.gold_rps = rps_of_gold(max_rps, data.qrels, original_run)
        stats = RemedyStats()
        remedy_overrides = {
            k: v for k, v in overrides.items() if k not in ("tau", "targeting", *_FUSION)
        }
        cond_argus = Argus(**{**settings, **remedy_overrides, "remedy": kind})
        own_kb = "kb" in overrides or "kb_match" in overrides
        shared = ("encoder", "diagnoser") if own_kb else ("encoder", "diagnoser", "kb")
        cond_argus._loaded.update({k: v for k, v in argus._loaded.items() if k in shared})
        threshold = cond_argus.context_threshold
        if threshold is not None and threshold not in contexts:
            contexts[threshold] = cond_argus._get("context")
        tau = overrides.get("tau")
        discount = float(overrides.get("view_discount", view_discount))
        targeting = overrides.get("targeting", argus.targeting)
        flagged = diagnoses if tau is None else [d.at_tau(tau) for d in diagnoses]
        if targeting == "corpus":
            if reached is None:  # as Argus does it: the pool is the corpus's first documents
                from argus_ir.remedy import targeting as tg

                reach = tg.CorpusReach(
                    lambda t: embed(t)[0], k=tg.DEFAULT_REACH_K, pool_size=tg.DEFAULT_REACH_POOL
                )
                reach.add(diagnoses)
                reached = reach.score(diagnoses)
                result.targeting_scores["corpus"] = dict(tg.max_reach(reached))
            flagged = reached if tau is None else [d.at_tau(tau) for d in reached]
        t0 = time.perf_counter()
        views = [
            v
            for v in apply_remedy(
                tqdm(
                    texts,
                    desc=f"{data.name}: {name} views",
                    unit="doc",
                    disable=not show_progress,
                ),
                flagged,
                cond_argus.reference_kb,
                kind=kind,
                k_aug=cond_argus.k_aug,
                context=None if threshold is None else contexts[threshold],
                llm=cond_argus._get("llm"),
                prompt_version=cond_argus.prompt_version,
                stats=stats,
                show_progress=show_progress,
                max_views=cond_argus.max_views,
            )
            if not v.is_original
        ]
        remedy_s = time.perf_counter() - t0
        vvec, views_s = embed([v.text for v in views])
        entry_ids = doc_ids + [v.id for v in views]
        source_of = {v.id: v.source_id for v in views}
        vectors = np.vstack([base, vvec]) if len(views) else base
        rankings = dense_rankings(
            qvec, qids, vectors, entry_ids, source_of, depth=depth, view_discount=discount
        )
        run = _as_run(rankings)
        agg, per_q = score_run(data.qrels, run, metrics)
        reference = conditions[ORIGINAL].per_query
        sig = {m: paired_test(_metric(reference, m), _metric(per_q, m)) for m in metrics}
        conditions[name] = Condition(
            name,
            len(entry_ids),
            len(entry_ids) / max(n_docs, 1),
            base_s + diagnose_s + remedy_s + views_s,
            stats.llm_calls,
            {
                **stats.to_dict(),
                "remedy": kind,
                "views_of_window_filling_documents": (
                    None if full is None else sum(v.source_id in full for v in views)
                ),
                "overrides": overrides,
                "ingest_estimated": embed.estimated,
                "settings": {
                    "targeting": targeting,
                    "tau": (argus.diagnoser.tau if targeting == "probe" else 1.0)
                    if tau is None
                    else tau,
                    "k_aug": cond_argus.k_aug,
                    "context_threshold": threshold,
                    "max_views": cond_argus.max_views,
                    "view_discount": discount,
                    "precision": argus.diagnoser.encoder.precision,  # of the diagnosis pass
                },
            },
            agg,
            per_q,
            sig,
        )
        if explain:
            result.rankings[name] = rankings
            result.entries[name] = {
                v.id: _entry_info(v, cond_argus.reference_kb, full) for v in views
            }
        if on_condition is not None:
            on_condition(result)
    return result


def _as_run(
    rankings: Mapping[str, Sequence[tuple[str, float, str]]],
) -> dict[str, dict[str, float]]:
    return {q: {src: score for src, score, _ in ranked} for q, ranked in rankings.items()}


def _entry_info(view: Any, kb: Any, full: set[str] | None) -> Any:
    """What :mod:`argus_ir.eval.explain` needs to know of one view."""
    from argus_ir.eval.explain import EntryInfo

    kb_id = str(view.metadata.get("argus_kb_id", ""))
    passage = kb.passage(kb_id.split("|")[0]) if kb_id else None
    return EntryInfo(
        entry_id=view.id,
        source_id=view.source_id,
        kind=str(view.metadata.get("argus_view", "")),
        entity=str(view.metadata.get("argus_entity", "")),
        kb_id=kb_id,
        passage_title="" if passage is None else passage.title,
        passage_excerpt="" if passage is None else passage.text[:200],
        hidden=bool(full and view.source_id in full),
    )


def explain_result(
    result: EvalResult, data: BeirData, *, k: int = 10, metric: str = "nDCG@10"
) -> dict[str, Any]:
    """Per-query explanations of every remedy against ``original`` (needs ``explain=True``).

    Returns:
        Condition -> ``{"summary": ..., "queries": [QueryExplanation, ...]}`` for the queries
        whose ``metric`` changed (:func:`argus_ir.eval.explain.explain_query`).
    """
    from argus_ir.eval.explain import explain_query, summarize

    if ORIGINAL not in result.rankings:
        raise ArgusInputError("this result kept no rankings: evaluate it with explain=True")
    before = result.rankings[ORIGINAL]
    reference = result.conditions[ORIGINAL].per_query
    out: dict[str, Any] = {}
    for name, rankings in result.rankings.items():
        if name == ORIGINAL:
            continue
        per_q = result.conditions[name].per_query
        explanations = [
            explain_query(
                qid,
                data.queries.get(qid, ""),
                data.qrels.get(qid, {}),
                before[qid],
                rankings[qid],
                result.entries[name],
                k=k,
                before_metric=reference[qid][metric],
                after_metric=per_q[qid][metric],
                metric=metric,
            )
            for qid in sorted(rankings)
            if qid in reference and qid in per_q
        ]
        out[name] = {"summary": summarize(explanations), "queries": explanations}
    return out


def _finite(x: float) -> float | None:
    """JSON has no NaN: an undefined statistic is written as null."""
    return None if math.isnan(x) else x


def half_width(sig: Significance, level: float = 0.95) -> float:
    """Half the width of the ``level`` confidence interval of a paired mean difference.

    The standard error is ``delta / t`` of the paired t-test; no spread (``t`` undefined) gives 0.
    """
    from scipy import stats

    if sig.n < 2 or math.isnan(sig.t) or sig.t == 0:
        return 0.0
    return float(stats.t.ppf(0.5 + level / 2, sig.n - 1) * abs(sig.delta / sig.t))


def _metric(per_query: Mapping[str, Mapping[str, float]], metric: str) -> dict[str, float]:
    return {q: float(v[metric]) for q, v in per_query.items()}


def _cell(value: float, sig: Significance | None) -> str:
    text = f"{value:.4f}"
    if sig is None:
        return text
    mark = "**" if sig.p < 0.05 else ""
    return f"{text} ({sig.delta:+.4f}{mark}, p={sig.p:.3g})"


def results_markdown(results: Sequence[EvalResult], metrics: Sequence[str] | None = None) -> str:
    """A Table-2-style Markdown table: one row per dataset and condition, plus the average.

    Deltas against ``original`` follow each value with the paired t-test's p (bold when < 0.05).
    ``metrics`` defaults to those the results hold.
    """
    if metrics is None:
        first = next((c for r in results for c in r.conditions.values()), None)
        metrics = list(first.aggregate) if first is not None else list(METRICS)
    head = ["dataset", "retriever", "condition", *metrics, "index growth", "ingest s", "LLM calls"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    names: list[str] = []
    for r in results:
        for name, c in r.conditions.items():
            if name not in names:
                names.append(name)
            cells = [_cell(c.aggregate[m], c.significance.get(m)) for m in metrics]
            lines.append(
                f"| {r.dataset} | {r.retriever.split('/')[-1]} | {name} | "
                + " | ".join(cells)
                + f" | {c.index_growth:.2f} | {c.ingest_s:.1f} | {c.llm_calls} |"
            )
    by_retriever: dict[str, list[EvalResult]] = {}
    for r in results:
        if not r.subset:  # a subset's scores do not average with full datasets
            by_retriever.setdefault(r.retriever, []).append(r)
    for retriever, full in by_retriever.items():
        if len({r.dataset for r in full}) < 2:
            continue
        for name in names:
            have = [r.conditions[name] for r in full if name in r.conditions]
            if len(have) == len(full):
                means = [sum(c.aggregate[m] for c in have) / len(have) for m in metrics]
                growth = sum(c.index_growth for c in have) / len(have)
                lines.append(
                    f"| Full Benchmark Avg | {retriever.split('/')[-1]} | {name} | "
                    + " | ".join(f"{v:.4f}" for v in means)
                    + f" | {growth:.2f} | | |"
                )
    for r in results:
        if r.notes:
            lines.append(
                f"\n{r.dataset} notes: "
                + "; ".join(f"{count} {reason}" for reason, count in r.notes.items())
                + "."
            )
        g = r.gold_rps
        if g and g["retrieved"]["n"] and g["missed"]["n"]:
            p = g.get("mannwhitney_p", float("nan"))
            lines.append(
                f"\n{r.dataset}: highest predicted entity RPS of gold documents (App. E.1), "
                f"retrieved in the top {g['k']}: mean {g['retrieved']['mean']:.3f} "
                f"(n = {g['retrieved']['n']}); missed: mean {g['missed']['mean']:.3f} "
                f"(n = {g['missed']['n']}); Mann-Whitney p = {p:.3g}."
            )
        for targeting, g in r.gold_by_targeting.items():
            if g["retrieved"]["n"] and g["missed"]["n"]:
                p = g.get("mannwhitney_p", float("nan"))
                lines.append(
                    f"\n{r.dataset}: the same test for targeting={targeting} (highest entity "
                    f"score of gold documents): retrieved mean {g['retrieved']['mean']:.3f}, "
                    f"missed mean {g['missed']['mean']:.3f}; Mann-Whitney p = {p:.3g}."
                )
    return "\n".join(lines) + "\n"


def _sweeps(result: EvalResult, metric: str) -> dict[str, list[tuple[float, float, float, float]]]:
    """Setting -> (value, delta, half-width, growth) over a remedy's ablation variants and itself.

    A context check that is off is plotted at threshold -1 (a cosine floor that keeps everything).
    """
    # one-setting variants only: a variant that changes two settings is no point on a sweep
    varied = [c for c in result.conditions.values() if len(c.stats.get("overrides") or {}) == 1]
    if not varied:
        return {}
    kind = varied[0].stats["remedy"]
    base = result.conditions.get(kind)
    by_key: dict[str, list[Condition]] = {}
    for c in varied:
        if c.stats["remedy"] == kind:
            (key,) = c.stats["overrides"]
            by_key.setdefault(key, []).append(c)
    sweeps: dict[str, list[tuple[float, float, float, float]]] = {}
    for key, members in by_key.items():
        if base is not None and base.stats.get("settings"):
            members = [*members, base]
        points: dict[float, tuple[float, float, float, float]] = {}
        for c in members:
            value = c.stats["settings"][key]
            x = -1.0 if value is None else float(value)
            sig = c.significance[metric]
            points.setdefault(x, (x, sig.delta, half_width(sig), c.index_growth))
        sweeps[key] = list(points.values())
    return sweeps


def report_markdown(
    results: Sequence[EvalResult], folder: str | Path, metric: str = "nDCG@10"
) -> str:
    """The evaluation report: the table, a chart of every condition's change of ``metric`` with
    95% intervals (``delta.png``) and, when there are ablations, one panel per swept setting
    (``ablations.png``), both drawn into ``folder``."""
    from argus_ir import plots

    folder = Path(folder)
    retrievers = sorted({r.retriever.split("/")[-1] for r in results})
    lines = [
        "# Retrieval evaluation",
        "",
        f"Retriever: {', '.join(retrievers)}. Datasets: "
        + ", ".join(f"{r.dataset} ({r.documents} documents, {r.queries} queries)" for r in results)
        + ". Deltas are against the original index; p from a paired t-test over queries "
        "(bold below 0.05).",
        "",
        results_markdown(results),
    ]
    deltas = {
        f"{r.dataset} / {r.retriever.split('/')[-1]}": [
            (name, c.significance[metric].delta, half_width(c.significance[metric]))
            for name, c in r.conditions.items()
            if metric in c.significance
        ]
        for r in results
    }
    deltas = {k: v for k, v in deltas.items() if v}
    if deltas:
        plots.delta_chart(deltas, folder / "delta.png", metric=metric)
        lines += ["", f"![Change of {metric} per condition, 95% intervals](delta.png)"]
    sweeps: dict[str, dict[str, list[tuple[float, float, float, float]]]] = {}
    for r in results:
        for key, points in _sweeps(r, metric).items():
            sweeps.setdefault(key, {})[f"{r.dataset} / {r.retriever.split('/')[-1]}"] = points
    if sweeps:
        plots.ablation_chart(sweeps, folder / "ablations.png", metric=metric)
        lines += [
            "",
            "## Ablations",
            "",
            f"Each panel varies one setting of the remedy and keeps the others; Δ {metric} with "
            "95% intervals above, index growth below. A context threshold of -1 means the check "
            "is off (a cosine floor that keeps every passage).",
            "",
            f"![Ablations: change of {metric} and index growth](ablations.png)",
        ]
    return "\n".join(lines) + "\n"


def write_results(results: Sequence[EvalResult], out: str | Path) -> Path:
    """Write ``results.json``, ``per_query.jsonl`` and the report ``results.md`` (with its PNGs)
    into folder ``out``."""
    from argus_ir.io import atomic_path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "results.json") as tmp:
        tmp.write_text(json.dumps([r.to_dict() for r in results], indent=2) + "\n", "utf-8")
    with atomic_path(folder / "per_query.jsonl") as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for r in results:
            for name, c in r.conditions.items():
                for qid in sorted(c.per_query):
                    row: dict[str, Any] = {
                        "dataset": r.dataset,
                        "retriever": r.retriever,
                        "condition": name,
                        "query_id": qid,
                    }
                    row.update({k: round(v, 6) for k, v in c.per_query[qid].items()})
                    fh.write(json.dumps(row) + "\n")
    with atomic_path(folder / "results.md") as tmp:
        tmp.write_text(report_markdown(results, folder), "utf-8")
    return folder
