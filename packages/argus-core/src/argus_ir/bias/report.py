"""The bias audit's report: the statistics, pair counts and notes of one audit, read from and
written to ``results.json``, and the ``README.md`` table with its ``bias.png`` chart.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from argus_ir.bias.stats import BiasStat
from argus_ir.errors import ArgusInputError

D1_MEANS = {
    "answer_importance": "the evidence sentence over a head-only one",
    "position": "evidence first over evidence last",
    "literal": "the query's name form over another form",
    "brevity": "evidence alone over evidence + more text",
    "repetition": "more head mentions over fewer",
    "foil": "the evidence document over the foil",
}
"""What ``t > 0`` means in each setting (D1 preferred)."""


@dataclass
class BiasReport:
    """Every retriever's statistics, the pair counts and the notes of one audit.

    ``pairs_sha256`` fingerprints the built pairs (queries and both documents of every pair): two
    audits with the same fingerprint scored the same pairs, so one can take the other's statistics.
    ``pending`` names the steps not yet run (``retriever: settings``) while an audit is under way.
    """

    data: str
    stats: list[BiasStat]
    pairs: dict[str, int]
    notes: dict[str, int] = field(default_factory=dict)
    seed: int = 0
    pairs_sha256: str = ""
    pending: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "seed": self.seed,
            "pairs_sha256": self.pairs_sha256,
            "pending": self.pending,
            "pairs": self.pairs,
            "notes": self.notes,
            "stats": [
                {
                    k: (None if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in asdict(s).items()
                }
                for s in self.stats
            ],
        }


_FLOATS = ("t", "p", "mean_diff", "d_z", "d1_wins")


def load_bias_report(path: str | Path) -> BiasReport:
    """Read a ``results.json`` written by :func:`write_bias_report` (or the folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        raw = json.loads(path.read_text("utf-8"))
        stats = [
            BiasStat(
                setting=str(s["setting"]),
                retriever=str(s["retriever"]),
                n=int(s["n"]),
                **{k: math.nan if s[k] is None else float(s[k]) for k in _FLOATS},
            )
            for s in raw["stats"]
        ]
        return BiasReport(
            data=str(raw["data"]),
            stats=stats,
            pairs={str(k): int(v) for k, v in raw["pairs"].items()},
            notes={str(k): int(v) for k, v in raw.get("notes", {}).items()},
            seed=int(raw.get("seed", 0)),
            pairs_sha256=str(raw.get("pairs_sha256", "")),
            pending=[str(x) for x in raw.get("pending", [])],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArgusInputError(f"{path}: not a bias audit's results.json ({exc})") from exc


def _signed(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.2f}"


def write_bias_report(report: BiasReport, out: str | Path) -> Path:
    """Write ``results.json``, ``README.md`` and the chart ``bias.png`` into folder ``out``."""
    from argus_ir import plots
    from argus_ir.io import atomic_path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "results.json") as tmp:
        tmp.write_text(json.dumps(report.to_dict(), indent=2) + "\n", "utf-8")
    rows = [(s.setting, s.retriever, s.t, s.n) for s in report.stats]
    plots.bias_chart(rows, folder / "bias.png")
    with atomic_path(folder / "README.md") as tmp:
        tmp.write_text(bias_markdown(report, "bias.png"), "utf-8")
    return folder


def bias_markdown(report: BiasReport, chart: str | None = None) -> str:
    """The report: one row per setting and retriever, the chart, what each sign means, notes."""
    lines = [
        "# Retriever bias audit (ColDeR)",
        "",
        f"Data: {report.data}; seed {report.seed}. Each setting compares two documents per query "
        "that differ in one factor; `t` is the paired t statistic of score(D1) − score(D2) "
        "(scipy's `ttest_rel`), `d_z` the mean difference over its standard deviation, "
        "`D1 wins` the share of pairs scoring D1 higher (in `foil`, the accuracy).",
        "",
        "| setting | D1 over D2 | retriever | pairs | t | p | d_z | D1 wins |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for setting in dict.fromkeys(s.setting for s in report.stats):
        for s in (s for s in report.stats if s.setting == setting):
            lines.append(
                f"| {setting} | {D1_MEANS[setting.split('+')[0]]} | {s.retriever} | {s.n} | "
                f"{_signed(s.t)} | {s.p:.2g} | {_signed(s.d_z)} | {s.d1_wins:.1%} |"
            )
    if report.pending:
        lines += ["", "Not measured yet (the audit was stopped or is still running):", ""]
        lines += [f"- {step}" for step in report.pending]
    if chart:
        lines += ["", f"![t statistic per setting and retriever]({chart})"]
    if report.notes:
        lines += ["", "Samples and pairs (counts):", ""]
        lines += [f"- {count} {reason}" for reason, count in report.notes.items()]
    return "\n".join(lines) + "\n"
