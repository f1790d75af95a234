"""Writing evaluation results: ``results.json``, ``per_query.jsonl`` and the Markdown report.

:func:`results_markdown` is the Table-2-style table; :func:`report_markdown` adds the charts of
every condition's change and of the ablation sweeps (drawn by :mod:`argus_ir.plots`);
:func:`write_results` writes all three files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from argus_ir.eval.measures import METRICS
from argus_ir.eval.results import Condition, EvalResult
from argus_ir.eval.significance import Significance, half_width

__all__ = ["report_markdown", "results_markdown", "write_results"]


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
