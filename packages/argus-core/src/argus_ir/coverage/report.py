"""The coverage audit's report: everything measured on one dataset, its ``results.json``, the
``README.md`` (coverage, micro vs macro averages, win rates, strata, gap queries) and the charts
``coverage.png`` and ``strata.png``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from argus_ir.coverage.gaps import SyntheticQuery
from argus_ir.coverage.stats import stratified_means
from argus_ir.coverage.strata import NO_ENTITIES, Strata


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
