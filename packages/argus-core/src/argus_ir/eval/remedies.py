"""The evaluation loop: index, search and score ``"original"`` and every remedy condition.

:func:`evaluate` embeds and diagnoses the corpus once, builds each condition's views, searches and
scores them against the reference; :func:`explain_result` turns the rankings it kept into
per-query explanations (:mod:`argus_ir.eval.explain`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
from argus_ir.errors import ArgusInputError
from argus_ir.eval.ablations import _FUSION, ABLATABLE, ablation_name, parse_variant
from argus_ir.eval.beir import BeirData
from argus_ir.eval.measures import METRICS, _metric, score_run
from argus_ir.eval.results import Condition, EvalResult
from argus_ir.eval.search import (
    _as_run,
    _EmbeddingCache,
    _filling_the_window,
    dense_rankings,
    embed_texts,
)
from argus_ir.eval.significance import paired_test, rps_of_gold
from argus_ir.lineage import ENTITY_KEY, KB_ID_KEY, KB_MATCH_KEY, KNOWLEDGE_KEY, VIEW_KEY
from argus_ir.remedy import ORIGINAL
from argus_ir.vectors import indexed_string

__all__ = ["evaluate", "explain_result"]


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
        ArgusInputError: An unknown remedy or setting.
    """
    from tqdm.auto import tqdm

    from argus_ir.pipeline import Argus
    from argus_ir.remedy import DEFAULT_REMEDY, KINDS, WINDOW_ONLY, RemedyStats, apply_remedy

    remedies = (ORIGINAL, DEFAULT_REMEDY) if remedies is None else remedies
    ablate = DEFAULT_REMEDY if ablate is None else ablate
    unknown = [
        r for r in (*remedies, *([ablate] if ablations else [])) if r != ORIGINAL and r not in KINDS
    ]
    if unknown:
        raise ArgusInputError(f"unknown remedies {unknown}; choose from {(ORIGINAL, *KINDS)}")
    bad = [k for k in ablations or {} if k not in ABLATABLE]
    if bad:
        raise ArgusInputError(f"cannot ablate {bad}; choose from {list(ABLATABLE)}")
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

    # the diagnoses, and their seconds, by how far each document is read (WINDOW_ONLY): a
    # remedy is evaluated on what argus augment would flag for it
    diagnosed: dict[bool, tuple[list[Any], float]] = {}
    reached_by: dict[bool, list[Any]] = {}  # scored by in-corpus reach, once a condition asks
    contexts: dict[float, Any] = {}
    for name, (kind, overrides) in plan.items():
        window_only = kind in WINDOW_ONLY
        if window_only not in diagnosed:
            t0 = time.perf_counter()
            found = list(
                tqdm(
                    argus.diagnose(data.corpus, window_only=window_only),
                    total=len(data.corpus),
                    desc=f"{data.name}: diagnosis",
                    unit="doc",
                    disable=not show_progress,
                )
            )
            diagnosed[window_only] = (found, time.perf_counter() - t0)
            if result.gold_inputs is None:  # the first condition's diagnoses
                max_rps = {d.doc_id: max(e.rps for e in d.entities) for d in found if d.entities}
                result.gold_inputs = (max_rps, data.qrels, original_run)
                result.gold_rps = rps_of_gold(max_rps, data.qrels, original_run)
        diagnoses, diagnose_s = diagnosed[window_only]
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
            reached = reached_by.get(window_only)
            if reached is None:  # as Argus does it: the pool is the corpus's first documents
                from argus_ir.remedy import targeting as tg

                reach = tg.CorpusReach(
                    lambda t: embed(t)[0], k=tg.DEFAULT_REACH_K, pool_size=tg.DEFAULT_REACH_POOL
                )
                reach.add(diagnoses)
                reached = reached_by[window_only] = reach.score(diagnoses)
                result.targeting_scores["corpus"] = dict(tg.max_reach(reached))
            flagged = reached if tau is None else [d.at_tau(tau) for d in reached]
        t0 = time.perf_counter()
        entries = [
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
        ]
        remedy_s = time.perf_counter() - t0
        views = [v for v in entries if not v.is_original]
        # originals enriched in place: their row is the embedding of their text and knowledge
        enriched = [v for v in entries if v.is_original and KNOWLEDGE_KEY in v.metadata]
        vvec, views_s = embed([v.text for v in views])
        entry_ids = doc_ids + [v.id for v in views]
        source_of = {v.id: v.source_id for v in views}
        own = base
        if enriched:
            evec, enrich_s = embed([indexed_string(v.text, v.metadata) for v in enriched])
            views_s += enrich_s
            own = base.copy()
            row = {doc_id: i for i, doc_id in enumerate(doc_ids)}
            own[[row[v.id] for v in enriched]] = evec
        vectors = np.vstack([own, vvec]) if len(views) else own
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
            # the diagnosis pass computes every original's vector (Diagnosis.doc_vector), so the
            # augmented index costs it, the remedy and the views (benchmarks/ingest_bench.py)
            diagnose_s + remedy_s + views_s,
            stats.llm_calls,
            {
                **stats.to_dict(),
                "remedy": kind,
                "views_of_window_filling_documents": (
                    None if full is None else sum(v.source_id in full for v in views)
                ),
                "overrides": overrides,
                "ingest_estimated": embed.estimated,
                "ingest_stages_s": {
                    "diagnosis": round(diagnose_s, 3),
                    "remedy": round(remedy_s, 3),
                    "view_embedding": round(views_s, 3),
                },
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


def _entry_info(view: Any, kb: Any, full: set[str] | None) -> Any:
    """What :mod:`argus_ir.eval.explain` needs to know of one view."""
    from argus_ir.eval.explain import EntryInfo

    kb_id = str(view.metadata.get(KB_ID_KEY, ""))
    passage = kb.passage(kb_id.split("|")[0]) if kb_id else None
    return EntryInfo(
        entry_id=view.id,
        source_id=view.source_id,
        kind=str(view.metadata.get(VIEW_KEY, "")),
        entity=str(view.metadata.get(ENTITY_KEY, "")),
        kb_id=kb_id,
        passage_title="" if passage is None else passage.title,
        passage_excerpt="" if passage is None else passage.text[:200],
        hidden=bool(full and view.source_id in full),
        kb_match=str(view.metadata.get(KB_MATCH_KEY, "")),
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
