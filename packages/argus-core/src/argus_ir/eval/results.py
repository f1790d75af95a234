"""What an evaluation returns: one :class:`Condition` per index, gathered in an :class:`EvalResult`.

An :class:`EvalResult` splits itself by query split (tests recomputed per split) and reads and
writes its JSON summary; the per-query values and the report are written by
:mod:`argus_ir.eval.report`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus_ir.eval.measures import _metric
from argus_ir.eval.significance import Significance, paired_test, rps_of_gold
from argus_ir.remedy import ORIGINAL

__all__ = ["Condition", "EvalResult"]


@dataclass
class Condition:
    """One indexed condition of one dataset.

    Attributes:
        name: ``"original"`` or a remedy.
        entries: Index entries (originals + views).
        index_growth: Entries over corpus size.
        ingest_s: Wall time to build the index, model loads apart: for ``original``, embedding
            every document; for a remedy, its diagnosis pass (which computes each original's
            vector too), the remedy and embedding the views (``stats["ingest_stages_s"]``).
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


def _finite(x: float) -> float | None:
    """JSON has no NaN: an undefined statistic is written as null."""
    return None if math.isnan(x) else x
